"""The paper's numbers from v29's first check on the GPU, before its run (data/<gpu>/probes/v29-check, sealed;
verify.py --stages v28 v29 and check_stages.py): the grid's cases and wrong ones (\\VtwonineCheckCases, \\VtwonineCheckWrong,
\\VtwonineCheckOk: v29's right ones), and per N (\\val{v29check}{<N>}{<column>}) v29's time against v28's (`step`, percent)
and over cuDNN's call (`x_cudnn`), each stage timed once, one entry after another, float16 at the headline."""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed


def values(seal_file: Path, correctness: Path, timing: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("v29check")
    c = pd.read_csv(correctness)
    if not (c.status == "ok").any():
        raise ValueError(f"{correctness}: no case passed")
    v.macro("VtwonineCheckCases", str(len(c)))
    v.macro("VtwonineCheckWrong", str(int((c.status == "WRONG").sum())))
    v.macro("VtwonineCheckOk", str(int(((c.variant == "v29") & (c.status == "ok")).sum())))
    t = pd.read_csv(timing)
    if (t.status != "ok").any():
        raise ValueError(f"{timing}: an entry is not ok: {list(t[t.status != 'ok'].key)}")
    us = t.pivot_table(index="N", columns="variant", values="time_us")
    for n, r in us.iterrows():
        v.put("v29check", str(n), "step", f"{100 * (r.v29 / r.v28 - 1):+.1f}")
        v.put("v29check", str(n), "x_cudnn", fixed(r.v29 / r["torch-cudnn"], 3))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
