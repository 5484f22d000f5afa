"""The paper's numbers from run-35 (data/<gpu>/run-35: the lite plan at one commit, every set and Nsight's profile on
one GPU in one lease): the first measurement in a run of v33 (fused_exponent), v34 (short_reductions) and v35
(lane_sums), and the goal's tally there.

- \\RunThirtyFiveCommit, \\RunThirtyFiveGpu, \\RunThirtyFiveRepeats: the commit, the one GPU of every set (refused
  where two sets ran on two GPUs) and the N sweep's repeats per entry; \\RunThirtyFiveOrder: how its benches ordered a
  shape's entries (the aggregate's runs.csv, entry_order);
- \\val{p35}{<stage>@<N>}{fp16|bf16|pred}: each new stage's time against the stage its prediction names
  (data/predictions/stages.csv's compared_to: v32 for v33, v33 for v34 and v35), percent, the medians of the N
  sweep's repeats (kernels alone); the prediction's range (float16's);
  \\val{p35held}{<stage>}{held|of}: of the stage's float16 time predictions, those that held and those checked;
- \\val{p35x}{<stage>@<N>}{fp16}: v32 to v35's time over cuDNN's (float16); {pred|held}: the ratio's prediction and its
  verdict, where one was made;
- \\val{p35best}{<N>}{fp16|bf16|fp16stage|fp164|bf164}: the fastest Gluon kernel's ratio to cuDNN (the
  stages that launch one kernel pooled, best_gluon) and its stages (float16's), the ratio also to four decimals;
  \\RunThirtyFiveGoalMet, \\RunThirtyFiveGoalMissed, \\RunThirtyFiveGoalOf: the (N, dtype) points at most the goal's
  0.90, above it, and all; \\RunThirtyFiveGoalMissedAt: where it is above (the lengths, each with its dtypes);
- \\val{p35gm}{<stage>}{x}: v32 to v35's geometric mean over the sweep's points of their time over cuDNN's (within
  the run, each stage apart);
- \\val{p35rep}{<stage>@<8192|16384>}{fp16lo|fp16hi|bf16lo|bf16hi}: the lowest and highest of the stage's per-repeat
  ratios to cuDNN at the power-capped lengths;
- \\val{p35steady}{<stage>@<fp16|bf16>}{x}: at N = 16384, the steady stream's time per call over cuDNN's;
- \\val{p35ncubest}{<N>}{x|stage}: by Nsight's duration (float16, one replay per entry, every cache flushed) the
  fastest Gluon kernel's over cuDNN's, and its stages; \\RunThirtyFiveNcuGoalMet of \\RunThirtyFiveNcuGoalOf: the
  lengths where it is at most the goal's 0.90, \\RunThirtyFiveNcuGoalMissedAt those where it is not;
  \\val{p35ncux}{<stage>@<N>}{x}: the new stages' there;
- \\val{p35ncu}{<v33|v35|cudnn>@16384}{<NSIGHT key>}: Nsight's counters at N = 16384 (float16): the tensor pipe's and
  the issue slots' busy percent, the warps' stalls per issued instruction (fixed-latency wait, barrier, short
  scoreboard), the mean SM's active cycles (millions) and of them those with the tensor pipe active (tcycles,
  millions); \\val{p35ncu}{v35-cudnn@16384}{cycles}: v35's over cuDNN's; \\val{p35ncu}{v35@16384}{idlebar}: of v35's
  barrier stalls per issued instruction, those of its producer warpgroup's idle warps (kernels.stages'
  PRODUCER_IDLE_WARPS x the SM's active cycles x the SMs, over the instructions issued), {restbar} the rest;
- \\val{p35long}{<v35|cudnn>@<fp16|bf16>}{lo|hi}: at N = 16384, the lowest and highest of the entry's repeats (kernel
  time, us); \\val{p35long}{v35@<dtype>}{tflops|tflopslo|tflopshi|tflopsslow|mhz|mhzlo|mhzhi}: v35's causal TFLOP/s
  there (the median and range over its repeats, and at its samples' upper quartile, the slowest over the repeats) and the SM clock NVML read over its samples (the median of the repeats' medians,
  the lowest and highest reading); \\RunThirtyFiveStretch: whether v35's median reached the stretch goal's TFLOP/s
  (\\StretchTflops) in both dtypes.
- \\val{p35fast}{<v35|v33>@<8192|16384>}{fp16lo|fp16hi|bf16lo|bf16hi}: the lowest and highest over the repeats of the
  stage's fastest sample over cuDNN's (min_us: each entry's fastest of its samples, all of a call's GPU work);
  \\val{p35fast}{v35-v33@16384}{...}: v35's fastest sample against v33's, percent; \\val{p35quart}{<v35|cudnn>@16384}
  {q25|q75lo|q75hi}: float16's lower quartile of the samples (the lowest over the repeats) and upper quartile (its
  range), the two groups of samples at the power cap; \\val{p35memset}{cudnn@16384}{us}: cuDNN's call's GPU work
  beyond its kernels there (median over the repeats, float16), which min_us holds and kernels_us does not;
  \\RunThirtyFiveFastGoalMet, \\RunThirtyFiveFastGoalMissedAt: the goal's tally by the fastest samples (min_us less
  the row's work beyond its kernels), and \\val{p35fastbest}{16384}{fp16|bf16} its ratios at 16384;
  \\val{p35need}{v35@16384}{fp16|bf16}: the percent v35's fastest sample would have to lose for its highest ratio
  over the repeats to reach the goal's.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed
from kernels.shapes import attention_flops
from kernels.stages import PRODUCER_IDLE_WARPS
from pipeline.selection import GOAL_X, HEADLINE, RATIO_TIME, STRETCH_TFLOPS
from pipeline.sweep import (DTYPES, best_gluon, kernels_alone, medians, ncu_durations, one_gpu, predicted,
                            repeat_times, steady_ratios, verdict)

ORDER = {"alternating": "each shape's entries in reverse order every second repeat",     # runs.csv's entry_order
         "fixed": "each shape's entries in one fixed order"}
NEW = ("v33", "v34", "v35")      # the stages run-35 measured in a run for the first time
SHOWN = ("v32", *NEW)            # the stages whose ratio to cuDNN the text gives
LONG_N = 16384                   # the sweep's longest, at the power cap: the steady stream's length
CAPPED_N = (8192, 16384)         # the lengths at the power cap, where p35rep gives each repeat's ratio
REPEAT_COLUMNS = {"float16": ("fp16lo", "fp16hi"), "bfloat16": ("bf16lo", "bf16hi")}   # p35rep's lowest, highest
FOUR_DIGITS = {"fp16": "fp164", "bf16": "bf164"}             # p35best's column of its ratio to four decimals
NSIGHT = {"tensor": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",    # p35ncu's columns
          "issue": "sm__issue_active.avg.pct_of_peak_sustained_elapsed",
          "wait": "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
          "barrier": "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
          "short": "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
          "cycles": "sm__cycles_active.avg"}
ISSUED, SMS = "smsp__inst_executed.sum", "launch__sm_count"     # p35ncu's idlebar: the issued instructions, the SMs
NSIGHT_ROWS = {"v33": "v33", "v35": "v35", "torch-cudnn": "cudnn"}   # the entries p35ncu gives, by its row name


def missed_at(best: pd.DataFrame) -> str:
    """The points of a tally (best_gluon's rows) above the goal, as the text says them: '$N=$ 16384 in float16 and
    bfloat16', lengths joined by 'and' ('none' where every point is within)."""
    out = best[best.x > GOAL_X]
    if out.empty:
        return "none"
    parts = [f"{n} in {' and '.join(sorted(g.index.get_level_values('dtype'), reverse=True))}"
             for n, g in out.groupby(level="N")]
    return "$N=$ " + " and ".join(parts)


def compared_to(pred: pd.DataFrame, stage: str) -> str:
    """The stage a stage's time predictions are against (compared_to of its quantity-time rows): one, or ValueError."""
    c = set(pred[(pred.stage == stage) & (pred.quantity == "time")].compared_to)
    if len(c) != 1:
        raise ValueError(f"{stage}: its time predictions compare with {sorted(c)}, one stage expected")
    return c.pop()


def values(seal_file: Path, n_sweep: Path, ncu_large_n: Path, verify_env: Path, predictions: Path,
           runs: Path) -> Values:
    run = Path(seal_file).parent
    seal.verify(run)
    v = Values("run35")
    env = json.loads(Path(verify_env).read_text())
    gpu = one_gpu(run)
    if env["end"]["uuid"] != gpu:
        raise ValueError(f"{verify_env}: the verify step ran on {env['end']['uuid']}, the sets on {gpu}")
    v.macro("RunThirtyFiveCommit", env["project_commit"][:7])
    v.macro("RunThirtyFiveGpu", gpu[:12])
    t, med, ratio = medians(n_sweep)
    v.macro("RunThirtyFiveRepeats", str(int(t.groupby("key").repeat.nunique().min())))
    order = pd.read_csv(runs).set_index("run").entry_order.astype(str)[run.name]
    if order not in ORDER:
        raise ValueError(f"{runs}: {run.name}'s entry order is {order!r}, not one the text can say ({sorted(ORDER)})")
    v.macro("RunThirtyFiveOrder", ORDER[order])
    pred = pd.read_csv(predictions)

    for stage in NEW:
        before = compared_to(pred, stage)
        held = of = 0
        for (dtype, n), m in med.iterrows():
            col = DTYPES[dtype]
            step = 100 * (m[stage] / m[before] - 1)
            v.put("p35", f"{stage}@{n}", col, f"{step:+.1f}")
            p = predicted(pred, stage, "time", n, dtype)
            if p:
                if col == "fp16":
                    v.put("p35", f"{stage}@{n}", "pred", f"{p[0]:g} to {p[1]:g}")
                    of += 1
                    held += verdict(round(step, 1), *p) == "held"
        v.put("p35held", stage, "held", str(held))
        v.put("p35held", stage, "of", str(of))

    for (dtype, n), r in ratio.iterrows():
        if dtype != "float16":
            continue                     # the text gives the ratios in float16, the goal's tally both dtypes
        for st in SHOWN:
            v.put("p35x", f"{st}@{n}", "fp16", fixed(r[st], 3))
        for st in NEW:
            q = predicted(pred, st, "time_ratio", n, dtype)
            if q:
                lo, hi = q
                v.put("p35x", f"{st}@{n}", "pred", f"{1 + lo / 100:.2f} to {1 + hi / 100:.2f}")
                v.put("p35x", f"{st}@{n}", "held", verdict(round(100 * (r[st] - 1), 1), lo, hi))

    best = best_gluon(t)
    for (dtype, n), b in best.iterrows():
        col = DTYPES[dtype]
        v.put("p35best", str(n), col, fixed(b.x, 3))
        v.put("p35best", str(n), FOUR_DIGITS[col], fixed(b.x, 4))
        if col == "fp16":
            v.put("p35best", str(n), "fp16stage", b.stage)
    v.macro("RunThirtyFiveGoalMet", str(int((best.x <= GOAL_X).sum())))
    v.macro("RunThirtyFiveGoalOf", str(len(best)))
    v.macro("RunThirtyFiveGoalMissed", str(int((best.x > GOAL_X).sum())))
    v.macro("RunThirtyFiveGoalMissedAt", missed_at(best))
    for st in SHOWN:
        v.put("p35gm", st, "x", fixed(float(np.exp(np.log(ratio[st]).mean())), 3))

    long = t[(t.N == LONG_N) & t.variant.isin(["v35", "torch-cudnn"])].copy()
    long["tflops"] = attention_flops(long.B, long.H, long.N, long.D, long.causal) / long[RATIO_TIME] / 1e6
    stretch = []
    for (dtype, st), r in long.groupby(["dtype", "variant"]):
        row = f"{'cudnn' if st == 'torch-cudnn' else st}@{DTYPES[dtype]}"
        v.put("p35long", row, "lo", f"{r[RATIO_TIME].min():.0f}")
        v.put("p35long", row, "hi", f"{r[RATIO_TIME].max():.0f}")
        if st == "v35":
            v.put("p35long", row, "tflops", f"{r.tflops.median():.0f}")
            v.put("p35long", row, "tflopslo", f"{r.tflops.min():.0f}")
            v.put("p35long", row, "tflopshi", f"{r.tflops.max():.0f}")
            # the slower group of samples: the rate at the samples' upper quartile (the slowest over the repeats)
            slow = attention_flops(r.B, r.H, r.N, r.D, r.causal) / r.q75_us / 1e6
            v.put("p35long", row, "tflopsslow", f"{slow.min():.0f}")
            v.put("p35long", row, "mhz", f"{r.sm_mhz.median():.0f}")
            v.put("p35long", row, "mhzlo", f"{r.sm_min_mhz.min():.0f}")
            v.put("p35long", row, "mhzhi", f"{r.sm_max_mhz.max():.0f}")
            stretch.append(r.tflops.median() >= STRETCH_TFLOPS)
    v.macro("RunThirtyFiveStretch", "reached" if all(stretch) else "not reached")
    v.macro("StretchTflops", str(STRETCH_TFLOPS))

    by_rep = repeat_times(t)
    for (dtype, n), r in by_rep.groupby(level=["dtype", "N"]):
        if n not in CAPPED_N:
            continue
        for st in ("v32", "v33", "v35"):
            x = r[st] / r["torch-cudnn"]
            lo, hi = REPEAT_COLUMNS[dtype]
            v.put("p35rep", f"{st}@{n}", lo, fixed(x.min(), 3))
            v.put("p35rep", f"{st}@{n}", hi, fixed(x.max(), 3))

    # each entry's fastest sample: at the power cap an entry's samples fall in two groups (the clock's states), and
    # the median of 25 lands in either; the fastest are the same group's (samples: all of a call's GPU work)
    fast = t.pivot_table(index=["dtype", "N", "repeat"], columns="variant", values="min_us")
    for (dtype, n), r in fast.groupby(level=["dtype", "N"]):
        if n not in CAPPED_N:
            continue
        lo, hi = REPEAT_COLUMNS[dtype]
        for st in ("v33", "v35"):
            x = r[st] / r["torch-cudnn"]
            v.put("p35fast", f"{st}@{n}", lo, fixed(x.min(), 3))
            v.put("p35fast", f"{st}@{n}", hi, fixed(x.max(), 3))
        if n == LONG_N:
            need = 100 * (1 - GOAL_X / (r["v35"] / r["torch-cudnn"]).max())
            v.put("p35need", f"v35@{n}", DTYPES[dtype], f"{need:.1f}")
            step = 100 * (r["v35"] / r["v33"] - 1)
            v.put("p35fast", f"v35-v33@{n}", lo, f"{step.min():+.1f}")
            v.put("p35fast", f"v35-v33@{n}", hi, f"{step.max():+.1f}")
    # the goal's tally again by each entry's fastest sample, its kernels alone: min_us less the row's work beyond its
    # kernels (time_us - kernels_us: cuDNN's memset, none for ours), pooled as best_gluon pools the medians
    fastest = best_gluon(kernels_alone(t, t.min_us))
    v.macro("RunThirtyFiveFastGoalMet", str(int((fastest.x <= GOAL_X).sum())))
    v.macro("RunThirtyFiveFastGoalMissedAt", missed_at(fastest))
    for dtype, col in DTYPES.items():
        v.put("p35fastbest", str(LONG_N), col, fixed(fastest.loc[(dtype, LONG_N), "x"], 3))
    long16 = t[(t.N == LONG_N) & (t.dtype == HEADLINE["dtype"])]
    for st, row in (("v35", "v35"), ("torch-cudnn", "cudnn")):
        r = long16[long16.variant == st]
        v.put("p35quart", f"{row}@{LONG_N}", "q25", f"{r.q25_us.min():.0f}")
        v.put("p35quart", f"{row}@{LONG_N}", "q75lo", f"{r.q75_us.min():.0f}")
        v.put("p35quart", f"{row}@{LONG_N}", "q75hi", f"{r.q75_us.max():.0f}")
    c = long16[long16.variant == "torch-cudnn"]
    v.put("p35memset", f"cudnn@{LONG_N}", "us", fixed((c.time_us - c.kernels_us).median(), 1))

    for dtype, r in steady_ratios(t, LONG_N).iterrows():
        for st in ("v33", "v35"):
            v.put("p35steady", f"{st}@{DTYPES[dtype]}", "x", fixed(r[st], 3))

    dur = ncu_durations(ncu_large_n, HEADLINE["dtype"], HEADLINE["D"])
    ncu_best = best_gluon(dur)
    by_n = dur.pivot_table(index="N", columns="variant", values=RATIO_TIME)
    for n, r in by_n.iterrows():
        for st in NEW:
            v.put("p35ncux", f"{st}@{n}", "x", fixed(r[st] / r["torch-cudnn"], 3))
    for (_, n), b in ncu_best.iterrows():
        v.put("p35ncubest", str(n), "x", fixed(b.x, 3))
        v.put("p35ncubest", str(n), "stage", b.stage)
    v.macro("RunThirtyFiveNcuGoalMet", str(int((ncu_best.x <= GOAL_X).sum())))
    v.macro("RunThirtyFiveNcuGoalOf", str(len(ncu_best)))
    v.macro("RunThirtyFiveNcuGoalMissedAt", missed_at(ncu_best))

    nc = pd.read_csv(ncu_large_n)
    nc = nc[nc.instance.isna() & nc.key.str.contains(f"|{HEADLINE['dtype']}|", regex=False)
            & nc.key.str.contains(f",{LONG_N},", regex=False) & nc.metric.isin([*NSIGHT.values(), ISSUED, SMS])]
    m = nc.pivot_table(index="variant", columns="metric", values="value")
    for st, row in NSIGHT_ROWS.items():
        for col, metric in NSIGHT.items():
            x = m.loc[st, metric]
            v.put("p35ncu", f"{row}@{LONG_N}", col, f"{x / 1e6:.2f}" if col == "cycles" else
                  (f"{x:.1f}" if col in ("tensor", "issue") else f"{x:.2f}"))
    v.put("p35ncu", f"v35-cudnn@{LONG_N}", "cycles",
          fixed(m.loc["v35", NSIGHT["cycles"]] / m.loc["torch-cudnn", NSIGHT["cycles"]], 3))
    for st, row in NSIGHT_ROWS.items():
        v.put("p35ncu", f"{row}@{LONG_N}", "tcycles",
              f"{m.loc[st, NSIGHT['tensor']] / 100 * m.loc[st, NSIGHT['cycles']] / 1e6:.2f}")
    # v35's barrier stalls per issued instruction that its producer warpgroup's idle warps make by waiting at the
    # warp-specialization barrier in every active cycle: their warps x the SM's active cycles x the SMs, over the
    # instructions issued; the rest, at the consumers' and the producer's own barriers
    idle = (PRODUCER_IDLE_WARPS * m.loc["v35", NSIGHT["cycles"]] * m.loc["v35", SMS]) / m.loc["v35", ISSUED]
    v.put("p35ncu", f"v35@{LONG_N}", "idlebar", f"{idle:.2f}")
    v.put("p35ncu", f"v35@{LONG_N}", "restbar", f"{m.loc['v35', NSIGHT['barrier']] - idle:.2f}")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
