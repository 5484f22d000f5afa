"""The paper's numbers from run-38 (data/nvidia-h100-80gb-hbm3/run-38: the goal's plan, config/goal.yaml, at one
commit on one H100 in one lease, the first run to time v38): the goal's tally by the medians, the fastest samples
and Nsight, Qwen3's, v38's change on v36 (its base) against its predictions, the host cost of every Gluon stage and the
rate at N = 16384.

- \\RunThirtyEightCommit, \\RunThirtyEightGpu, \\RunThirtyEightGpuName, \\RunThirtyEightRepeats: the commit (of
  every step: refused where one differs), the one GPU of every timed set and the verify step (refused where two),
  its name, the N sweep's repeats per entry; \\RunThirtyEightTimed: the stages its stage sets time;
- \\RunThirtyEightVerifyStages, \\RunThirtyEightVerifyOk, \\RunThirtyEightVerifyRefused,
  \\RunThirtyEightVerifyWrong: the verify grid's stages and its cases right, refused and wrong;
- \\val{r38best}{<N>}{fp16|bf16|fp16stage|bf16stage}: the fastest Gluon kernel's time over cuDNN's (the medians of
  the N sweep's repeats, kernels alone, the stages that launch one kernel pooled: pipeline.sweep.best_gluon) and its
  stages; \\RunThirtyEightGoalMet of \\RunThirtyEightGoalOf: the (N, dtype) points at most GOAL_X;
  \\RunThirtyEightGoalWorstX, \\RunThirtyEightGoalWorstAt: the highest and where; \\RunThirtyEightFastGoalMet,
  \\RunThirtyEightFastWorstX: the same by each entry's fastest sample;
- \\val{r38rep}{16384}{fp16lo|fp16hi|bf16lo|bf16hi}: the lowest and highest per-repeat ratio to cuDNN at N = 16384
  of the stages the medians' tally names there; \\RunThirtyEightRepsAbove: how many of those repeats (both dtypes)
  are above GOAL_X;
- \\val{r38ncubest}{<N>}{x|stage}: the same tally by Nsight's duration (the long-sequence pass, float16, one replay
  per entry with every cache flushed); \\RunThirtyEightNcuGoalMet of \\RunThirtyEightNcuGoalOf;
- \\val{r38step}{<N>}{fp16|bf16|pred}: v38's time against v36's, percent, by the medians, and its float16
  prediction (data/predictions/stages.csv); \\RunThirtyEightHeld of \\RunThirtyEightPredOf;
  \\RunThirtyEightStepFaster of \\RunThirtyEightStepOf: the points (N, dtype) where v38 took less time than v36;
- \\val{r38ratio}{<N>}{x|pred|verdict}: v38's float16 time over cuDNN's as a change in percent, against its
  time_ratio prediction, at the lengths that have one;
- \\val{r38steady}{<N>}{fp16|bf16}: v38's steady stream's time per call over cuDNN's at N = 8192 and 16384 (the
  bench's steady step: one stream per entry, in the first repeat);
- \\RunThirtyEightQwMet of \\RunThirtyEightQwOf, \\RunThirtyEightQwWorstX, \\RunThirtyEightQwWorstAt: the Qwen3
  layouts and lengths where the fastest Gluon stage takes at most QW_GOAL_X of cuDNN's time, and the highest;
- \\RunThirtyEightHostHi, \\RunThirtyEightHostAt: the highest median host cost of a Gluon stage's call in the
  headline set (us; the bench's host_us) and its stage;
- \\val{r38xc}{<v38|cudnn>}{pct|cyc}: at N = 16384 (float16), the bench's kernel time against Nsight's duration of
  the same entry, percent, and the same in SM cycles (the aggregate's cross-check of this GPU's runs);
- \\val{r38abl}{<ablation>}{pct}: each leave-one-out ablation of v38 the ablation set timed, against v38's time in the
  headline set (float16, the headline's shape; medians over each set's samples, not side by side), percent;
  \\RunThirtyEightAblations: how many;
- \\val{r38long}{<fp16|bf16>}{stage|tflops|mhzlo|mhzhi}: at N = 16384, the fastest Gluon kernel's causal TFLOP/s at
  its median time and the lowest and highest SM clock NVML read over its samples; \\RunThirtyEightStretch: whether
  that rate reached STRETCH_TFLOPS in both dtypes.
"""
import json
import sys
from pathlib import Path

import pandas as pd
import yaml

from pipeline import plan as bench_plan
from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.selection import GLUON_STAGES, GOAL_X, HEADLINE, QW_GOAL_X, STRETCH_TFLOPS, stage_ranges
from pipeline.sweep import (best_gluon, check_run, fastest, goal_tally, long_rate, medians, ncu_durations, one_gpu,
                            predicted, qwen3_points, qwen3_tally, repeat_times, steady_ratios, verdict, verify_counts)

NEW, BEFORE = "v38", "v36"        # the stage first timed in a sealed run here, and its base (v36 + one switch)
LONG_N = 16384
COLUMNS = {"float16": ("fp16", "fp16stage"), "bfloat16": ("bf16", "bf16stage")}     # r38best's, r38step's, r38long's
STEADY_N = (8192, 16384)
XC_IMPLS = {"v38": NEW, "cudnn": "torch-cudnn"}
REPEAT_COLUMNS = {"float16": ("fp16lo", "fp16hi"), "bfloat16": ("bf16lo", "bf16hi")}   # r38rep's: lowest, highest


def values(seal_file: Path, n_sweep: Path, qwen3: Path, headline: Path, ablation: Path, ncu_large_n: Path,
           correctness: Path, verify_env: Path, plan_file: Path, predictions: Path, crosscheck: Path) -> Values:
    run = Path(seal_file).parent
    seal.verify(run)
    v = Values("run38")
    env = json.loads(Path(verify_env).read_text())
    check_run(run, env)
    gpu = one_gpu(run)
    if env["end"]["uuid"] != gpu:
        raise ValueError(f"{run}: the verify step ran on {env['end']['uuid']}, the timed sets on {gpu}")
    v.macro("RunThirtyEightCommit", env["project_commit"][:7])
    v.macro("RunThirtyEightGpu", gpu[:12])
    v.macro("RunThirtyEightGpuName", env["gpu"].removeprefix("NVIDIA "))
    plan = yaml.safe_load(Path(plan_file).read_text())["plan"]
    v.macro("RunThirtyEightTimed", stage_ranges(bench_plan.timed_stages(plan)))

    vc = verify_counts(correctness)
    v.macro("RunThirtyEightVerifyStages", vc["stages"])
    v.macro("RunThirtyEightVerifyOk", vc["ok"])
    v.macro("RunThirtyEightVerifyRefused", vc["refused"])
    v.macro("RunThirtyEightVerifyWrong", vc["wrong"])

    t, med, _ = medians(n_sweep)
    v.macro("RunThirtyEightRepeats", str(int(t.groupby("key").repeat.nunique().min())))
    best, fast = best_gluon(t), best_gluon(fastest(t))
    for (dtype, n), b in best.iterrows():
        col, scol = COLUMNS[dtype]
        v.put("r38best", str(n), col, fixed(b.x, 3))
        v.put("r38best", str(n), scol, b.stage)
    goal, fastgoal = goal_tally(best, GOAL_X), goal_tally(fast, GOAL_X)
    v.macro("RunThirtyEightGoalMet", goal["met"])
    v.macro("RunThirtyEightGoalOf", goal["of"])
    v.macro("RunThirtyEightGoalWorstX", goal["worst_x"])
    v.macro("RunThirtyEightGoalWorstAt", goal["worst_at"])
    v.macro("RunThirtyEightFastGoalMet", fastgoal["met"])
    v.macro("RunThirtyEightFastWorstX", fastgoal["worst_x"])
    by_rep = repeat_times(t)
    above = 0
    for dtype, (lo, hi) in REPEAT_COLUMNS.items():
        r = by_rep.loc[(dtype, LONG_N)]
        x = r[best.loc[(dtype, LONG_N), "stage"].split("/")].median(axis=1) / r["torch-cudnn"]
        v.put("r38rep", str(LONG_N), lo, fixed(x.min(), 3))
        v.put("r38rep", str(LONG_N), hi, fixed(x.max(), 3))
        above += int((x > GOAL_X).sum())
    v.macro("RunThirtyEightRepsAbove", str(above))

    for n in STEADY_N:
        steady = steady_ratios(t, n)
        for dtype, (col, _) in COLUMNS.items():
            if pd.notna(steady.loc[dtype].get(NEW)):
                v.put("r38steady", str(n), col, fixed(steady.loc[dtype, NEW], 3))

    xc = pd.read_csv(crosscheck)
    xc = xc[(xc.run == run.name) & (xc.N == LONG_N) & xc.key.str.contains(f"|{HEADLINE['dtype']}|", regex=False)]
    for row, variant in XC_IMPLS.items():
        r = xc[xc.variant == variant]
        if len(r) != 1:
            raise ValueError(f"{crosscheck}: {len(r)} cross-check rows of {variant} at N = {LONG_N} in {run.name}")
        v.put("r38xc", row, "pct", f"{r.diff_pct.iloc[0]:+.1f}")
        v.put("r38xc", row, "cyc", f"{r.cycles_diff_pct.iloc[0]:+.1f}")

    ncu = best_gluon(ncu_durations(ncu_large_n, HEADLINE["dtype"], HEADLINE["D"]))
    for (_, n), b in ncu.iterrows():
        v.put("r38ncubest", str(n), "x", fixed(b.x, 3))
        v.put("r38ncubest", str(n), "stage", b.stage)
    v.macro("RunThirtyEightNcuGoalMet", str(int((ncu.x <= GOAL_X).sum())))
    v.macro("RunThirtyEightNcuGoalOf", str(len(ncu)))

    pred = pd.read_csv(predictions)
    held = of = faster = 0
    for (dtype, n), m in med.iterrows():
        step = 100 * (m[NEW] / m[BEFORE] - 1)
        faster += step < 0
        v.put("r38step", str(n), COLUMNS[dtype][0], f"{step:+.1f}")
        p = predicted(pred, NEW, "time", n, dtype)
        if p and dtype == "float16":
            v.put("r38step", str(n), "pred", f"{p[0]:g} to {p[1]:g}")
            of += 1
            held += verdict(round(step, 1), *p) == "held"
        q = predicted(pred, NEW, "time_ratio", n, dtype)
        if q:
            change = 100 * (m[NEW] / m["torch-cudnn"] - 1)
            v.put("r38ratio", str(n), "x", f"{change:+.1f}")
            v.put("r38ratio", str(n), "pred", f"{q[0]:g} to {q[1]:g}")
            v.put("r38ratio", str(n), "verdict", verdict(round(change, 1), *q))
    v.macro("RunThirtyEightStepFaster", str(faster))
    v.macro("RunThirtyEightStepOf", str(len(med)))
    v.macro("RunThirtyEightHeld", str(held))
    v.macro("RunThirtyEightPredOf", str(of))

    qw = qwen3_tally(qwen3_points(pd.read_csv(qwen3)), QW_GOAL_X)
    v.macro("RunThirtyEightQwMet", qw["met"])
    v.macro("RunThirtyEightQwOf", qw["of"])
    v.macro("RunThirtyEightQwWorstX", qw["worst_x"])
    v.macro("RunThirtyEightQwWorstAt", qw["worst_at"])

    h = pd.read_csv(headline)
    host = h[h.variant.isin(GLUON_STAGES)].groupby("variant").host_us.median()
    v.macro("RunThirtyEightHostHi", fixed(host.max(), 1))
    v.macro("RunThirtyEightHostAt", host.idxmax())

    at = (h.variant == NEW) & (h.N == HEADLINE["N"]) & (h.dtype == HEADLINE["dtype"])
    base = h[at].time_us.median()
    ab = pd.read_csv(ablation)
    ab = ab[ab.variant.str.startswith(f"{NEW}-") & (ab.N == HEADLINE["N"]) & (ab.dtype == HEADLINE["dtype"])]
    if ab.empty or pd.isna(base):
        raise ValueError(f"{ablation}, {headline}: no ablation of {NEW} or no {NEW} at the headline's shape, where the "
                         f"text compares them")
    for name, x in ab.groupby("variant").time_us.median().items():
        v.put("r38abl", name, "pct", f"{100 * (x / base - 1):+.1f}")
    v.macro("RunThirtyEightAblations", str(ab.variant.nunique()))

    stretch = []
    for dtype, (col, _) in COLUMNS.items():
        lr = long_rate(t, best, dtype, LONG_N)
        stretch.append(lr["tflops"] >= STRETCH_TFLOPS)
        v.put("r38long", col, "stage", lr["stage"])
        v.put("r38long", col, "tflops", f"{lr['tflops']:.0f}")
        v.put("r38long", col, "mhzlo", lr["mhzlo"])
        v.put("r38long", col, "mhzhi", lr["mhzhi"])
    v.macro("RunThirtyEightStretch", "reached" if all(stretch) else "not reached")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
