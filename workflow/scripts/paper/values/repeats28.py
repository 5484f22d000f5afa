"""The paper's numbers from six passes of v27, v28 and cuDNN on one H200 (data/<gpu>/probes/v28-repeats, sealed;
workflow/scripts/tools/check_stages.py: the bench's timer, every kernel and memset of a call, outside a run).
\\val{rep}{<stage>@<N>}{min|median|max}: the stage's time over cuDNN's in the same pass, over the passes."""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed


def values(seal_file: Path, passes: list) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("repeats28")
    d = pd.concat([pd.read_csv(p).assign(rep=i) for i, p in enumerate(passes)])
    if not (d.status == "ok").all():
        raise ValueError("a row of the passes is not ok")
    t = d.pivot_table(index=["rep", "N"], columns="variant", values="time_us")
    if t.isna().any().any():
        raise ValueError("every pass needs v27, v28 and cuDNN at each N")
    v.macro("RepPasses", len(passes))
    for n, g in t.groupby(level="N"):
        for s in ("v27", "v28"):
            r = g[s] / g["torch-cudnn"]
            for stat in ("min", "median", "max"):
                v.put("rep", f"{s}@{n}", stat, fixed(getattr(r, stat)(), 3))
        step = 100 * (g["v28"] / g["v27"] - 1)
        v.put("rep", f"step@{n}", "min", f"{step.min():+.1f}")
        v.put("rep", f"step@{n}", "max", f"{step.max():+.1f}")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(seal_file=snakemake.input.seal_file, passes=list(snakemake.input.passes)).write(snakemake.output[0])  # noqa: F821
