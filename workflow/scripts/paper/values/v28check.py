"""The paper's numbers from v28's GPU check (data/<gpu>/probes/v28-check and v28-xcheck, sealed; one H200, one
session, outside a run: run-24 did not finish in the session's device time). From v28-check: the verify grid of the
Gluon stages (workflow/scripts/verify/verify.py --stages v19 ... v28: cases, wrong, each stage's ok) and the timing
of v27, v28 and cuDNN at N = 512 and 1024 (workflow/scripts/tools/check_stages.py: the bench's timer, every kernel and
memset of a call); from v28-xcheck (workflow/scripts/tools/crosscheck_cause.py) the four ways of the same entries in
float16: the timer with and without its L2 flush, Nsight with every cache flushed and with none, cuDNN's attention
kernel alone. \\val{fold}{<quantity>@<N>}{<dtype or way>}: v28's change against v27 (`step`), v28's ratio to cuDNN
(`ratio`)."""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed

DTYPES = {"float16": "fp16", "bfloat16": "bf16"}
WAYS = ("timer_flush", "timer_warm", "ncu_all", "ncu_none")


def values(seal_file: Path, xseal_file: Path, correctness: Path, timing: Path, cause: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    seal.verify(Path(xseal_file).parent)
    v = Values("v28check")
    c = pd.read_csv(correctness)
    if (c.status == "WRONG").any() or not set(c.status) <= {"ok", "refused"}:
        raise ValueError(f"{correctness}: a case is wrong or did not run")
    ok = c[c.status == "ok"].groupby("variant").size()
    if sorted(ok.index) != [f"v{i}" for i in range(19, 29)]:
        raise ValueError(f"{correctness}: the grid is not v19 to v28's")
    v.macro("FoldCases", len(c))
    v.macro("FoldOkEach", int(ok.min()) if ok.min() == ok.max() else f"{ok.min()}-{ok.max()}")
    t = pd.read_csv(timing)
    if not (t.status == "ok").all():
        raise ValueError(f"{timing}: a row is not ok")
    us = t.set_index(["variant", "N", "dtype"]).time_us
    for (n, dt) in sorted({(r.N, r.dtype) for r in t.itertuples()}):
        v.put("fold", f"step@{n}", DTYPES[dt], f"{100 * (us['v28', n, dt] / us['v27', n, dt] - 1):+.1f}")
        v.put("fold", f"ratio@{n}", DTYPES[dt], fixed(us["v28", n, dt] / us["torch-cudnn", n, dt], 3))
        v.put("fold", f"ratio27@{n}", DTYPES[dt], fixed(us["v27", n, dt] / us["torch-cudnn", n, dt], 3))
        for var in ("v27", "v28", "torch-cudnn"):
            v.put("fold", f"{var.removeprefix('torch-')}@{n}", DTYPES[dt], fixed(us[var, n, dt], 2))
    v.macro("FoldSamplesMin", int(t.n_samples.min()))
    # the README's (float16, the bench's timer)
    fall = 100 * (1 - us["v28", 512, "float16"] / us["v27", 512, "float16"])
    if fall <= 0:
        raise ValueError(f"{timing}: v28 is not faster than v27 at 512, as the README says")
    v.macro("FoldFallShort", f"{fall:.1f}")
    v.macro("FoldRatioShort", fixed(us["v28", 512, "float16"] / us["torch-cudnn", 512, "float16"], 3))
    d = pd.read_csv(cause)
    w = d.pivot_table(index=["variant", "N"], columns="way", values="us")
    if set(w.columns) != set(WAYS) or w.isna().any().any():
        raise ValueError(f"{cause}: every entry needs its four ways")
    for n in sorted({n for _, n in w.index}):
        for way in WAYS:
            v.put("fold", f"step@{n}", way, f"{100 * (w.loc[('v28', n), way] / w.loc[('v27', n), way] - 1):+.1f}")
            v.put("fold", f"ratio@{n}", way, fixed(w.loc[("v28", n), way] / w.loc[("torch-cudnn", n), way], 3))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
