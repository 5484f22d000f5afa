"""The paper's numbers on the cost of issue 22's clamp (every stage takes min(x, 0), NaN-propagating, of each
probability's exponent; kernels.launcher's note "The clamp"): each entry's change from the newest run before the
clamp (BEFORE) to the first run with it (AFTER), at the headline layout in float16, in percent
(\\val{clamp}{<entry>@<N>}{<column>}): the timer's kernel time (timer) and, from the large-N profile, Nsight's
active SM cycles (cycles, which do not depend on the clock) and instructions executed (inst); for v29 at N = 16384
the ALU pipe's share of active cycles before and after (alu_before, alu_after); and, for each prediction committed
before the change (data/predictions/probes.csv, probe exp_clamp), its range (pred) and whether the timer's change
fell in it (held). The two runs ran on different H200s: cuDNN's and the article's v7's changes, which the clamp
does not move or moves by one instruction in a loop of many others, are the control; the Gluon stages' timer
changes at N = 512 to 4096 (ClampShortFrom, ClampShortTo) are summarised by their median and range (ClampGluonMedian,
ClampGluonMin, ClampGluonMax)."""
import sys
from pathlib import Path

import pandas as pd

from pipeline.latex import Values, fixed
from pipeline.selection import GLUON_STAGES, HEADLINE, where

BEFORE, AFTER = "run-27", "run-28"      # the clamp landed in e56b76c, which run-28 measured first
ENTRIES = ("v7", "v13", "v19", "v29", "torch-cudnn")
LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)
SHORT = (512, 1024, 2048, 4096)         # below the power cap: the Gluon stages' range
NCU = {"cycles": "sm__cycles_active.avg", "inst": "smsp__inst_executed.sum"}
ALU = "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"


def key(variant: str, n: int) -> str:
    return f"{variant.removeprefix('torch-')}@{n}"


def pct(after: float, before: float) -> str:
    return f"{100 * (after / before - 1):+.1f}"


def values(per_run: Path, large_n: Path, predictions: Path) -> Values:
    v = Values("clamp")
    v.macro("ClampRunBefore", BEFORE)
    v.macro("ClampRunAfter", AFTER)
    p = pd.read_csv(per_run)
    layout = {k: val for k, val in HEADLINE.items() if k != "N"}     # the headline layout at every length
    p = p[where(p, **layout) & p.run.isin([BEFORE, AFTER]) & (p.own_tile | (p.impl != "triton"))]  # stages at their own tile
    t = p.pivot_table(index=["variant", "N"], columns="run", values="kernels_us", aggfunc="median")
    if t[[BEFORE, AFTER]].isna().any().any():
        raise ValueError(f"{per_run}: an entry lacks {BEFORE} or {AFTER}: {list(t[t.isna().any(axis=1)].index)}")
    for var in ENTRIES:
        for n in LENGTHS:
            v.put("clamp", key(var, n), "timer", pct(t.loc[(var, n), AFTER], t.loc[(var, n), BEFORE]))
    change = 100 * (t[AFTER] / t[BEFORE] - 1)
    gluon = change[[var in GLUON_STAGES and n in SHORT for var, n in change.index]]
    v.macro("ClampShortFrom", min(SHORT))
    v.macro("ClampShortTo", max(SHORT))
    v.macro("ClampGluonMedian", f"{gluon.median():+.1f}")
    v.macro("ClampGluonMin", f"{gluon.min():+.1f}")
    v.macro("ClampGluonMax", f"{gluon.max():+.1f}")

    d = pd.read_csv(large_n)
    d = d[d.run.isin([BEFORE, AFTER]) & d.key.str.contains(r"\|float16\|causal\|") & d.N.isin(LENGTHS)]
    m = d.pivot_table(index=["variant", "N", "metric"], columns="run", values="value", aggfunc="median")
    for var in ENTRIES:
        for n in LENGTHS:
            for column, metric in NCU.items():
                if (var, n, metric) in m.index:
                    v.put("clamp", key(var, n), column, pct(m.loc[(var, n, metric), AFTER],
                                                           m.loc[(var, n, metric), BEFORE]))
    v.put("clamp", key("v29", 16384), "alu_before", fixed(m.loc[("v29", 16384, ALU), BEFORE], 0))
    v.put("clamp", key("v29", 16384), "alu_after", fixed(m.loc[("v29", 16384, ALU), AFTER], 0))

    pred = pd.read_csv(predictions)
    pred = pred[pred.probe == "exp_clamp"]
    if pred.empty:
        raise ValueError(f"{predictions}: no exp_clamp prediction")
    for row in pred.itertuples():
        change = 100 * (t.loc[(row.variant, row.N), AFTER] / t.loc[(row.variant, row.N), BEFORE] - 1)
        v.put("clamp", key(row.variant, row.N), "pred", f"{row.low_pct:g} to +{row.high_pct:g}")
        v.put("clamp", key(row.variant, row.N), "held", "held" if row.low_pct <= change <= row.high_pct else "missed")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
