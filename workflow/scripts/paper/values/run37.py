"""The paper's numbers from run-37 (data/nvidia-h100-80gb-hbm3/run-37: the goal's plan, config/goal.yaml, at one
commit on one H100 in one lease: the lite plan with its stage sets timing the Triton leader v13 and the Gluon stages
only, every other step of a run included): the goal's tally, Nsight's, Qwen3's, v37's change on v36, the host cost of
every Gluon stage and the rate at N = 16384.

- \\RunThirtySevenCommit, \\RunThirtySevenGpu, \\RunThirtySevenGpuName, \\RunThirtySevenRepeats: the commit (of
  every step: refused where one differs), the one GPU of every timed set and the verify step (refused where two),
  its name, the N sweep's repeats per entry; \\RunThirtySevenTimed: the stages its stage sets time (plan.stages of
  its plan.yaml, expanded);
- \\RunThirtySevenVerifyStages, \\RunThirtySevenVerifyOk, \\RunThirtySevenVerifyRefused, \\RunThirtySevenVerifyWrong:
  the verify grid's stages and its cases right, refused and wrong;
- \\val{r37best}{<N>}{fp16|bf16|fp16stage|bf16stage}: the fastest Gluon kernel's time over cuDNN's (the medians of
  the N sweep's repeats, kernels alone, the stages that launch one kernel pooled: pipeline.sweep.best_gluon) and its
  stages; \\RunThirtySevenGoalMet of \\RunThirtySevenGoalOf: the (N, dtype) points at most GOAL_X;
  \\RunThirtySevenGoalWorstX, \\RunThirtySevenGoalWorstAt: the highest and where; \\RunThirtySevenFastGoalMet,
  \\RunThirtySevenFastWorstX: the same by each entry's fastest sample;
- \\val{r37rep}{16384}{fp16lo|fp16hi|bf16lo|bf16hi}: the lowest and highest per-repeat ratio to cuDNN at N = 16384
  of the stages the medians' tally names there (each repeat's time over cuDNN's in the same repeat);
- \\val{r37ncubest}{<N>}{x|stage}: the same tally by Nsight's duration (the long-sequence pass, float16, one replay
  per entry with every cache flushed); \\RunThirtySevenNcuGoalMet of \\RunThirtySevenNcuGoalOf;
- \\val{r37step}{<N>}{fp16|bf16|pred}: v37's time against v36's, percent, by the medians, and its float16
  prediction (data/predictions/stages.csv); \\RunThirtySevenHeld of \\RunThirtySevenPredOf;
  \\RunThirtySevenStepSlower of \\RunThirtySevenStepOf: the points (N, dtype) where v37 took longer than v36;
- \\RunThirtySevenQwMet of \\RunThirtySevenQwOf, \\RunThirtySevenQwWorstX, \\RunThirtySevenQwWorstAt: the Qwen3
  layouts and lengths where the fastest Gluon stage takes at most QW_GOAL_X of cuDNN's time, and the highest;
- \\RunThirtySevenHostHi, \\RunThirtySevenHostAt: the highest median host cost of a Gluon stage's call in the
  headline set (us; the bench's host_us, the same measurement as the Triton stages') and its stage;
- \\val{r37steady}{<N>}{fp16|bf16}: v36's steady stream's time per call over cuDNN's at N = 8192 and 16384 (the
  bench's steady step: one stream per entry, in the first repeat);
- \\val{r37l2}{<v36|cudnn>}{gb|pct|tensor}: at N = 16384 in Nsight's long-sequence pass (float16), the L2's bytes
  per call (GB, lts__t_bytes.sum), its throughput in percent of its peak over the kernel's time, and the tensor pipe's
  active share of the SMs' active cycles, of v36 and cuDNN;
- \\val{r37xc}{<v36|cudnn>}{pct|cyc}: at N = 16384 (float16), the bench's kernel time against Nsight's duration of
  the same entry, percent, and the same in SM cycles (the aggregate's cross-check of this GPU's runs);
  \\RunThirtySevenXcGluonLo, \\RunThirtySevenXcGluonHi: the lowest and highest of the first over the Gluon stages
  (every one above Nsight's: refused otherwise);
- \\val{r37dt}{16384}{<v36|cudnn>}: the float16 time over the bfloat16 time at N = 16384 (medians of the repeats);
- \\val{r37long}{<fp16|bf16>}{stage|tflops|mhzlo|mhzhi}: at N = 16384, the fastest Gluon kernel's causal TFLOP/s at
  its median time and the lowest and highest SM clock NVML read over its samples; \\RunThirtySevenStretch: whether
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

NEW, BEFORE = "v37", "v36"        # the stage first timed in a sealed run here, and its base
LONG_N = 16384
COLUMNS = {"float16": ("fp16", "fp16stage"), "bfloat16": ("bf16", "bf16stage")}     # r37best's, r37step's, r37long's
STEADY_STAGE = "v36"              # the leader whose steady stream and whose Nsight counters the text quotes
STEADY_N = (8192, 16384)
L2_METRICS = {"gb": ("lts__t_bytes.sum", 1e-9),          # r37l2's columns: the metric and its scale
              "pct": ("lts__throughput.avg.pct_of_peak_sustained_elapsed", 1),
              "tensor": ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", 1)}
L2_IMPLS = {"v36": STEADY_STAGE, "cudnn": "torch-cudnn"}
REPEAT_COLUMNS = {"float16": ("fp16lo", "fp16hi"), "bfloat16": ("bf16lo", "bf16hi")}   # r37rep's: lowest, highest


def values(seal_file: Path, n_sweep: Path, qwen3: Path, headline: Path, ncu_large_n: Path, correctness: Path,
           verify_env: Path, plan_file: Path, predictions: Path, crosscheck: Path) -> Values:
    run = Path(seal_file).parent
    seal.verify(run)
    v = Values("run37")
    env = json.loads(Path(verify_env).read_text())
    check_run(run, env)
    gpu = one_gpu(run)
    if env["end"]["uuid"] != gpu:
        raise ValueError(f"{run}: the verify step ran on {env['end']['uuid']}, the timed sets on {gpu}")
    v.macro("RunThirtySevenCommit", env["project_commit"][:7])
    v.macro("RunThirtySevenGpu", gpu[:12])
    v.macro("RunThirtySevenGpuName", env["gpu"].removeprefix("NVIDIA "))
    plan = yaml.safe_load(Path(plan_file).read_text())["plan"]
    v.macro("RunThirtySevenTimed", stage_ranges(bench_plan.timed_stages(plan)))

    vc = verify_counts(correctness)
    v.macro("RunThirtySevenVerifyStages", vc["stages"])
    v.macro("RunThirtySevenVerifyOk", vc["ok"])
    v.macro("RunThirtySevenVerifyRefused", vc["refused"])
    v.macro("RunThirtySevenVerifyWrong", vc["wrong"])

    t, med, _ = medians(n_sweep)
    v.macro("RunThirtySevenRepeats", str(int(t.groupby("key").repeat.nunique().min())))
    best, fast = best_gluon(t), best_gluon(fastest(t))
    for (dtype, n), b in best.iterrows():
        col, scol = COLUMNS[dtype]
        v.put("r37best", str(n), col, fixed(b.x, 3))
        v.put("r37best", str(n), scol, b.stage)
    goal, fastgoal = goal_tally(best, GOAL_X), goal_tally(fast, GOAL_X)
    v.macro("RunThirtySevenGoalMet", goal["met"])
    v.macro("RunThirtySevenGoalOf", goal["of"])
    v.macro("RunThirtySevenGoalWorstX", goal["worst_x"])
    v.macro("RunThirtySevenGoalWorstAt", goal["worst_at"])
    v.macro("RunThirtySevenFastGoalMet", fastgoal["met"])
    v.macro("RunThirtySevenFastWorstX", fastgoal["worst_x"])
    by_rep = repeat_times(t)
    for dtype, (lo, hi) in REPEAT_COLUMNS.items():
        r = by_rep.loc[(dtype, LONG_N)]
        x = r[best.loc[(dtype, LONG_N), "stage"].split("/")].median(axis=1) / r["torch-cudnn"]
        v.put("r37rep", str(LONG_N), lo, fixed(x.min(), 3))
        v.put("r37rep", str(LONG_N), hi, fixed(x.max(), 3))

    for n in STEADY_N:
        steady = steady_ratios(t, n)
        for dtype, (col, _) in COLUMNS.items():
            v.put("r37steady", str(n), col, fixed(steady.loc[dtype, STEADY_STAGE], 3))

    nc = pd.read_csv(ncu_large_n)
    nc = nc[nc.instance.isna() & nc.key.str.contains(f"|{HEADLINE['dtype']}|", regex=False)]
    nc = nc[nc.key.str.split("|").str[2].str.split(",").str[3].astype(int) == LONG_N]
    for row, variant in L2_IMPLS.items():
        for col, (metric, scale) in L2_METRICS.items():
            x = nc[(nc.variant == variant) & (nc.metric == metric)].value
            if len(x) != 1:
                raise ValueError(f"{ncu_large_n}: {len(x)} values of {metric} for {variant} at N = {LONG_N}, "
                                 f"where the text quotes one")
            v.put("r37l2", row, col, fixed(x.iloc[0] * scale, 1))

    xc = pd.read_csv(crosscheck)
    xc = xc[(xc.run == run.name) & (xc.N == LONG_N) & xc.key.str.contains(f"|{HEADLINE['dtype']}|", regex=False)]
    for row, variant in L2_IMPLS.items():
        r = xc[xc.variant == variant]
        if len(r) != 1:
            raise ValueError(f"{crosscheck}: {len(r)} cross-check rows of {variant} at N = {LONG_N} in {run.name}")
        v.put("r37xc", row, "pct", f"{r.diff_pct.iloc[0]:+.1f}")
        v.put("r37xc", row, "cyc", f"{r.cycles_diff_pct.iloc[0]:+.1f}")
    g = xc[xc.variant.isin(GLUON_STAGES)].diff_pct
    if g.min() <= 0:
        raise ValueError(f"{crosscheck}: a Gluon stage's bench time at N = {LONG_N} is not above Nsight's "
                         f"({g.min():+.1f}%), where the text says every one is")
    v.macro("RunThirtySevenXcGluonLo", fixed(g.min(), 1))
    v.macro("RunThirtySevenXcGluonHi", fixed(g.max(), 1))
    for row, variant in L2_IMPLS.items():
        v.put("r37dt", str(LONG_N), row, fixed(med.loc[("float16", LONG_N), variant] / med.loc[("bfloat16", LONG_N), variant], 3))

    ncu = best_gluon(ncu_durations(ncu_large_n, HEADLINE["dtype"], HEADLINE["D"]))
    for (_, n), b in ncu.iterrows():
        v.put("r37ncubest", str(n), "x", fixed(b.x, 3))
        v.put("r37ncubest", str(n), "stage", b.stage)
    v.macro("RunThirtySevenNcuGoalMet", str(int((ncu.x <= GOAL_X).sum())))
    v.macro("RunThirtySevenNcuGoalOf", str(len(ncu)))

    pred = pd.read_csv(predictions)
    held = of = slower = 0
    for (dtype, n), m in med.iterrows():
        step = 100 * (m[NEW] / m[BEFORE] - 1)
        slower += step > 0
        v.put("r37step", str(n), COLUMNS[dtype][0], f"{step:+.1f}")
        p = predicted(pred, NEW, "time", n, dtype)
        if p and dtype == "float16":
            v.put("r37step", str(n), "pred", f"{p[0]:g} to {p[1]:g}")
            of += 1
            held += verdict(round(step, 1), *p) == "held"
    v.macro("RunThirtySevenStepSlower", str(slower))
    v.macro("RunThirtySevenStepOf", str(len(med)))
    v.macro("RunThirtySevenHeld", str(held))
    v.macro("RunThirtySevenPredOf", str(of))

    qw = qwen3_tally(qwen3_points(pd.read_csv(qwen3)), QW_GOAL_X)
    v.macro("RunThirtySevenQwMet", qw["met"])
    v.macro("RunThirtySevenQwOf", qw["of"])
    v.macro("RunThirtySevenQwWorstX", qw["worst_x"])
    v.macro("RunThirtySevenQwWorstAt", qw["worst_at"])

    h = pd.read_csv(headline)
    host = h[h.variant.isin(GLUON_STAGES)].groupby("variant").host_us.median()
    v.macro("RunThirtySevenHostHi", fixed(host.max(), 1))
    v.macro("RunThirtySevenHostAt", host.idxmax())

    stretch = []
    for dtype, (col, _) in COLUMNS.items():
        lr = long_rate(t, best, dtype, LONG_N)
        stretch.append(lr["tflops"] >= STRETCH_TFLOPS)
        v.put("r37long", col, "stage", lr["stage"])
        v.put("r37long", col, "tflops", f"{lr['tflops']:.0f}")
        v.put("r37long", col, "mhzlo", lr["mhzlo"])
        v.put("r37long", col, "mhzhi", lr["mhzhi"])
    v.macro("RunThirtySevenStretch", "reached" if all(stretch) else "not reached")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
