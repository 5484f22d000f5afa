"""The paper's numbers on the cost of issue 22's clamp (every stage took min(x, 0), NaN-propagating, of each
probability's exponent, from run-28 until the exact maximum replaced it: kernels.launcher's note "The exact
exponent"): each entry's change from the newest run before the clamp to the first run with it (workflow/rules/paper.smk: CLAMP_BEFORE, CLAMP_AFTER; their plans name them), at the headline layout in float16, in percent
(\\val{clamp}{<entry>@<N>}{<column>}), for every entry and length that both runs timed: the timer's kernel time
(timer) and, where the large-N profile holds the entry, Nsight's active SM cycles (cycles, which the SM clock does
not scale) and instructions executed (inst); for each prediction committed before the change
(data/predictions/probes.csv, probe exp_clamp), its range (pred), whether the timer's change fell in it (held), and
the ALU pipe's share of active cycles before and after (alu_before, alu_after). The two runs ran on different H200s:
cuDNN, which the clamp does not touch, is the control. The Gluon stages' timer changes below the lengths the later run's plan
counts as long (its steady step's steady_min_N: the power-capped ones) are summarised by their median and range
(ClampShortFrom, ClampShortTo, ClampGluonMedian, ClampGluonMin, ClampGluonMax). The same changes from the run before
the clamp to the first run of the exact exponent, which replaced it (plan_exact's run; \\val{exactrun}{<entry>@<N>}{timer,
cycles, inst}), say whether the exact exponent won the clamp's cycles back."""
import sys
from pathlib import Path

import pandas as pd

from pipeline.latex import Values, fixed
from pipeline.plan import load_config
from pipeline.selection import GLUON_STAGES, HEADLINE, where

PROBE = "exp_clamp"                     # the predictions' probe name in data/predictions/probes.csv
NCU = {"cycles": "sm__cycles_active.avg", "inst": "smsp__inst_executed.sum"}
ALU = "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"


def key(variant: str, n: int) -> str:
    return f"{variant.removeprefix('torch-')}@{n}"


def pct_change(after: float, before: float) -> str:
    return f"{100 * (after / before - 1):+.1f}"


def values(per_run: Path, large_n: Path, predictions: Path, plan_before: Path, plan_after: Path,
           plan_exact: Path) -> Values:
    BEFORE, AFTER = Path(plan_before).parent.name, Path(plan_after).parent.name
    EXACT = Path(plan_exact).parent.name
    v = Values("clamp")
    v.macro("ClampRunBefore", BEFORE)
    v.macro("ClampRunAfter", AFTER)
    v.macro("ExactRunFirst", EXACT)
    p = pd.read_csv(per_run)
    layout = {k: val for k, val in HEADLINE.items() if k != "N"}     # the headline layout at every length
    p = p[where(p, **layout) & p.run.isin([BEFORE, AFTER, EXACT]) & (p.own_tile | (p.impl != "triton"))]  # own tiles
    every = p.pivot_table(index=["variant", "N"], columns="run", values="kernels_us", aggfunc="median")
    t = every[[BEFORE, AFTER]].dropna()                               # what both runs timed
    exact = every[[BEFORE, EXACT]].dropna()
    for (var, n), pct in (100 * (exact[EXACT] / exact[BEFORE] - 1)).items():
        v.put("exactrun", key(var, n), "timer", f"{pct:+.1f}")
    change = 100 * (t[AFTER] / t[BEFORE] - 1)
    for (var, n), pct in change.items():
        v.put("clamp", key(var, n), "timer", f"{pct:+.1f}")
    long_n = load_config(plan_after)["bench"]["steady_min_N"]
    short = sorted(n for n in set(t.index.get_level_values("N")) if n < long_n)
    v.macro("ClampShortFrom", short[0])
    v.macro("ClampShortTo", short[-1])
    gluon = change[[var in GLUON_STAGES and n in short for var, n in change.index]]
    v.macro("ClampGluonMedian", f"{gluon.median():+.1f}")
    v.macro("ClampGluonMin", f"{gluon.min():+.1f}")
    v.macro("ClampGluonMax", f"{gluon.max():+.1f}")

    d = pd.read_csv(large_n)
    d = d[d.run.isin([BEFORE, AFTER, EXACT]) & d.key.str.contains(r"\|float16\|causal\|")]
    every = d.pivot_table(index=["variant", "N", "metric"], columns="run", values="value", aggfunc="median")
    m = every[[BEFORE, AFTER]].dropna()
    mx = every[[BEFORE, EXACT]].dropna()
    for column, metric in NCU.items():
        for (var, n, _), row in m.xs(metric, level="metric", drop_level=False).iterrows():
            v.put("clamp", key(var, n), column, pct_change(row[AFTER], row[BEFORE]))
        for (var, n, _), row in mx.xs(metric, level="metric", drop_level=False).iterrows():
            v.put("exactrun", key(var, n), column, pct_change(row[EXACT], row[BEFORE]))

    pred = pd.read_csv(predictions)
    pred = pred[pred.probe == PROBE]
    if pred.empty:
        raise ValueError(f"{predictions}: no {PROBE} prediction")
    for row in pred.itertuples():
        if (row.variant, row.N) not in change.index:
            raise ValueError(f"{predictions}: {PROBE} predicts {row.variant} at N = {row.N}, which {BEFORE} and "
                             f"{AFTER} did not both time")
        pct = change[(row.variant, row.N)]
        v.put("clamp", key(row.variant, row.N), "pred", f"{row.low_pct:g} to +{row.high_pct:g}")
        v.put("clamp", key(row.variant, row.N), "held", "held" if row.low_pct <= pct <= row.high_pct else "missed")
        if (row.variant, row.N, ALU) in m.index:
            v.put("clamp", key(row.variant, row.N), "alu_before", fixed(m.loc[(row.variant, row.N, ALU), BEFORE], 0))
            v.put("clamp", key(row.variant, row.N), "alu_after", fixed(m.loc[(row.variant, row.N, ALU), AFTER], 0))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
