"""The paper's numbers from run-31 (data/<gpu>/run-31: the lite plan at one commit; the N sweep on another GPU than
the other sets, a later lease's): the first measurement of v32 (small_n_tile) in a run, and the goal's tally there.

- \\RunThirtyOneCommit, \\RunThirtyOneRepeats: the commit and the N sweep's repeats per entry; \\RunThirtyOneSweepGpu
  and \\RunThirtyOneGpu: the GPU of the N sweep and that of the other sets (the verify grid's, Nsight's);
- \\val{p31}{v32@<N>}{fp16|bf16|pred|held}: v32's time against v31's (percent, the medians of the N sweep's
  repeats, kernels alone), the prediction (data/predictions/stages.csv, where one was made) and whether it held;
  \\val{p31}{v32-v19@512}{fp16|bf16}: against v19's at 512, whose kernel v32 runs there;
- \\val{p31x}{<v31|v32>@<N>}{fp16|bf16}: the stage's time over cuDNN's; {pred|held} at 512 for v32: the prediction
  and its verdict;
- \\val{p31steady}{<v31|v32>@<dtype>}{x}: at N = 16384, the steady stream's time per call over cuDNN's;
- \\val{p31rep}{<v31|v32>@<8192|16384>}{fp16lo|fp16hi|bf16lo|bf16hi}: the lowest and highest of the stage's
  per-repeat ratios to cuDNN (each repeat's times); \\RunThirtyOnePairs, \\RunThirtyOnePairsFaster and
  \\val{p31pair}{16384}{lo|hi}: at 16384, where v32 runs v31's kernel, the (dtype, repeat) pairs, those where v32 was
  the faster, and the lowest and highest change of v32 against v31 (percent);
- \\val{p31best}{<N>}{fp16|bf16|fp16stage|bf16stage|bf164}: the fastest Gluon stage's ratio to cuDNN and the stage
  (bf164: bfloat16's ratio to four decimals, where the goal's margin is thin); \\RunThirtyOneGoalMet,
  \\RunThirtyOneGoalMissed, \\RunThirtyOneGoalOf: the (N, dtype) points at most the goal's 0.90, above it, and all;
- \\val{p31ncu}{<variant>@512}{max|min|dur|instmax}: Nsight's profile at 512 (float16, one profile per entry, every
  cache flushed): the busiest and the idlest SM's active cycles, the duration (us) and the busiest sub-partition's
  instructions; \\val{p31ncu}{v32-v19@512}{max|dur|instmax}: v32's against v19's (percent);
- \\val{p31ncubest}{<N>}{x|stage}: by Nsight's duration at every N of the profile (float16), the fastest Gluon
  kernel's over cuDNN's and its stages (pooled as in best_gluon); \\RunThirtyOneNcuGoalMet of
  \\RunThirtyOneNcuGoalOf: the lengths where it is at most the goal's 0.90.
"""
import json
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.selection import GOAL_X, HEADLINE, RATIO_TIME
from pipeline.sweep import (DTYPES, NCU_DURATION, best_gluon, medians, ncu_durations, predicted, repeat_times,
                            steady_ratios, verdict)

STAGE, BEFORE, KERNEL_AT_SHORT = "v32", "v31", "v19"   # v32, the stage before it, the kernel it runs at N <= 512
SHORT_N, LONG_N = 512, 16384     # v32's N with v19's kernel; the sweep's longest, at the power cap
CAPPED_N = (8192, 16384)         # the lengths at the power cap, where p31rep gives each repeat's ratio
REPEAT_COLUMNS = {"fp16": ("fp16lo", "fp16hi"), "bf16": ("bf16lo", "bf16hi")}   # p31rep's columns per dtype
STAGE_COLUMN = {"fp16": "fp16stage", "bf16": "bf16stage"}   # p31best's column of the best stage, per dtype
HELD_COLUMN = {"fp16": "held", "bf16": "bf16held"}    # p31's column of a prediction's verdict, per dtype
FOUR_DIGITS = {"bf16": "bf164"}      # p31best's column of its ratio to four decimals (bfloat16's: the margin is thin)
# Nsight's metrics at N = 512 (ncu_large_n.csv, float16), per p31ncu column
NCU = {"max": "sm__cycles_active.max", "min": "sm__cycles_active.min", "dur": NCU_DURATION,
       "instmax": "smsp__inst_executed.max"}


def values(seal_file: Path, n_sweep: Path, ncu_large_n: Path, verify_env: Path, predictions: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("run31")
    env = json.loads(Path(verify_env).read_text())
    v.macro("RunThirtyOneCommit", env["project_commit"][:7])
    v.macro("RunThirtyOneGpu", env["end"]["uuid"][:12])
    t, med, ratio = medians(n_sweep)
    v.macro("RunThirtyOneSweepGpu", t.gpu_uuid.iloc[0][:12])
    v.macro("RunThirtyOneRepeats", str(int(t.groupby("key").repeat.nunique().min())))
    pred = pd.read_csv(predictions)
    best = best_gluon(t)
    for (dtype, n), r in ratio.iterrows():
        col = DTYPES[dtype]
        step = 100 * (med.loc[(dtype, n), STAGE] / med.loc[(dtype, n), BEFORE] - 1)
        v.put("p31", f"{STAGE}@{n}", col, f"{step:+.1f}")
        p = predicted(pred, STAGE, "time", n, dtype)
        if p:
            if col == "fp16":       # the range is quoted once, float16's (bfloat16's is the same where made)
                v.put("p31", f"{STAGE}@{n}", "pred", f"{p[0]:g} to {p[1]:g}")
            v.put("p31", f"{STAGE}@{n}", HELD_COLUMN[col], verdict(round(step, 1), *p))
        if n == SHORT_N:
            snake = 100 * (med.loc[(dtype, n), STAGE] / med.loc[(dtype, n), KERNEL_AT_SHORT] - 1)
            v.put("p31", f"{STAGE}-{KERNEL_AT_SHORT}@{n}", col, f"{snake:+.1f}")
            q = predicted(pred, STAGE, "time_ratio", n, dtype)
            if q:
                lo, hi = q
                v.put("p31x", f"{STAGE}@{n}", "pred", f"{1 + lo / 100:.2f} to {1 + hi / 100:.2f}")
                v.put("p31x", f"{STAGE}@{n}", "held", verdict(round(100 * (r[STAGE] - 1), 1), lo, hi))
        for st in (BEFORE, STAGE):
            v.put("p31x", f"{st}@{n}", col, fixed(r[st], 3))
        b = best.loc[(dtype, n)]
        v.put("p31best", str(n), col, fixed(b.x, 3))
        if col in FOUR_DIGITS:
            v.put("p31best", str(n), FOUR_DIGITS[col], fixed(b.x, 4))
        v.put("p31best", str(n), STAGE_COLUMN[col], b.stage)
    v.macro("RunThirtyOneGoalMet", str(int((best.x <= GOAL_X).sum())))
    v.macro("RunThirtyOneGoalOf", str(len(best)))
    v.macro("RunThirtyOneGoalMissed", str(int((best.x > GOAL_X).sum())))

    # per repeat, at the power-capped lengths: each stage's time over cuDNN's of the same repeat, lowest and highest
    by_rep = repeat_times(t)
    for (dtype, n), r in by_rep.groupby(level=["dtype", "N"]):
        if n not in CAPPED_N:
            continue
        for st in (BEFORE, STAGE):
            x = r[st] / r["torch-cudnn"]
            v.put("p31rep", f"{st}@{n}", REPEAT_COLUMNS[DTYPES[dtype]][0], fixed(x.min(), 3))
            v.put("p31rep", f"{st}@{n}", REPEAT_COLUMNS[DTYPES[dtype]][1], fixed(x.max(), 3))
    # at LONG_N, where v32 runs v31's kernel: v32 against v31 in each (dtype, repeat), timed one after the other
    pairs = 100 * (by_rep[STAGE] / by_rep[BEFORE] - 1)
    pairs = pairs[pairs.index.get_level_values("N") == LONG_N]
    v.macro("RunThirtyOnePairs", str(len(pairs)))
    v.macro("RunThirtyOnePairsFaster", str(int((pairs < 0).sum())))
    v.put("p31pair", str(LONG_N), "lo", f"{pairs.min():+.1f}")
    v.put("p31pair", str(LONG_N), "hi", f"{pairs.max():+.1f}")

    for dtype, r in steady_ratios(t, LONG_N).iterrows():
        for st in (BEFORE, STAGE):
            v.put("p31steady", f"{st}@{DTYPES[dtype]}", "x", fixed(r[st], 3))

    nc = pd.read_csv(ncu_large_n)
    nc = nc[nc.instance.isna() & nc.key.str.contains("float16") & nc.metric.isin(NCU.values())].copy()
    nc["N"] = nc.key.str.split("|").str[2].str.split(",").str[3].astype(int)
    m = nc[nc.N == SHORT_N].pivot_table(index="variant", columns="metric", values="value")
    for st in (KERNEL_AT_SHORT, STAGE):
        v.put("p31ncu", f"{st}@{SHORT_N}", "max", f"{m.loc[st, NCU['max']]:.0f}")
        v.put("p31ncu", f"{st}@{SHORT_N}", "min", f"{m.loc[st, NCU['min']]:.0f}")
        v.put("p31ncu", f"{st}@{SHORT_N}", "dur", fixed(m.loc[st, NCU["dur"]] / 1e3, 2))
        v.put("p31ncu", f"{st}@{SHORT_N}", "instmax", f"{m.loc[st, NCU['instmax']]:.0f}")
    for col in ("max", "dur", "instmax"):
        change = 100 * (m.loc[STAGE, NCU[col]] / m.loc[KERNEL_AT_SHORT, NCU[col]] - 1)
        v.put("p31ncu", f"{STAGE}-{KERNEL_AT_SHORT}@{SHORT_N}", col, f"{change:+.1f}")
    # the goal's points by Nsight's duration instead of the timer (float16, one profile per entry, every cache
    # flushed, on the other GPU): the fastest Gluon kernel (stages that launch one kernel pooled, as best_gluon)
    dur = ncu_durations(ncu_large_n, HEADLINE["dtype"], HEADLINE["D"])
    ncu_best = best_gluon(dur)
    for (_, n), b in ncu_best.iterrows():
        v.put("p31ncubest", str(n), "x", fixed(b.x, 3))
        v.put("p31ncubest", str(n), "stage", b.stage)
    v.macro("RunThirtyOneNcuGoalMet", str(int((ncu_best.x <= GOAL_X).sum())))
    v.macro("RunThirtyOneNcuGoalOf", str(len(ncu_best)))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
