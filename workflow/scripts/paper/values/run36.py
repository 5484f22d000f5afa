"""The paper's numbers from run-36 (data/nvidia-h100-80gb-hbm3/run-36: the lite plan at one commit on one H100, every
timed set, the timer check, the ceilings and Nsight's profile in one lease; its verify grid, compile and theory from an
earlier lease at the same commit on another H100, whose sets were timed too but which ended before Nsight's profile:
probes/run-36-unfinished): the goal's tally, Nsight's, v36's first measurement in a run beside v35, Qwen3's layouts,
the samples within an entry at the power cap and the rate at 16384.

- \\RunThirtySixCommit, \\RunThirtySixGpu, \\RunThirtySixGpuName, \\RunThirtySixRepeats: the commit (of every
  step, the verify step's included: refused where one differs), the one GPU of every timed set (refused where two
  sets ran on two), its name, the N sweep's repeats per entry; \\RunThirtySixVerifyGpu: the GPU of the verify step
  (the same kind, refused where another);
- \\RunThirtySixVerifyStages, \\RunThirtySixVerifyOk, \\RunThirtySixVerifyRefused, \\RunThirtySixVerifyWrong: the
  verify grid's stages and its cases right, refused (tiles or inputs a stage does not take, with its error) and wrong;
- \\val{r36best}{<N>}{fp16|bf16}: the fastest Gluon kernel's time over cuDNN's (the medians of the N sweep's
  repeats, kernels alone, the stages that launch one kernel pooled: pipeline.sweep.best_gluon), {fp16stage|bf16stage}
  its stages; \\RunThirtySixGoalMet of \\RunThirtySixGoalOf: the (N, dtype) points at most the goal's 0.90;
  \\RunThirtySixGoalWorstX, \\RunThirtySixGoalWorstAt: the highest ratio and where; \\RunThirtySixFastGoalMet,
  \\RunThirtySixFastWorstX, \\RunThirtySixFastWorstAt: the same by each entry's fastest sample of its kernels alone
  (min_us less the call's work beyond its kernels);
- \\val{r36rep}{<v35|v36>@16384}{fp16lo|fp16hi|bf16lo|bf16hi}: the lowest and highest of the stage's per-repeat
  ratios to cuDNN at N = 16384 (each repeat's kernel time over cuDNN's in the same repeat);
- \\val{r36ncubest}{<N>}{x|stage}: by Nsight's duration (float16, the profiled dtype; one replay per entry, every
  cache flushed) the fastest Gluon kernel's time over cuDNN's and its stages; \\RunThirtySixNcuGoalMet of
  \\RunThirtySixNcuGoalOf: the lengths where it is at most the goal's;
- \\val{r36step}{<N>}{fp16|bf16|fp16fast|bf16fast|pred}: v36's time against v35's, percent, by the medians over the
  repeats and by the fastest samples, and its prediction (float16, data/predictions/stages.csv);
  \\RunThirtySixHeld, \\RunThirtySixFastHeld of \\RunThirtySixPredOf: the float16 predictions that held by each;
- \\val{r36x}{<8192|16384>}{fp16|fast|pred|held|fastheld}: v36's time over cuDNN's (float16), by the medians and the
  fastest samples, its predicted range and verdicts;
- \\RunThirtySixQwMet of \\RunThirtySixQwOf: the Qwen3 layouts and lengths (the qwen3 set, float16, one repeat)
  where the fastest Gluon stage takes at most QW_GOAL_X of cuDNN's time; \\RunThirtySixQwWorstX,
  \\RunThirtySixQwWorstAt: the highest and where (with its stage);
- \\val{r36long}{<fp16|bf16>}{stage|tflops|mhzlo|mhzhi}: at N = 16384, the fastest Gluon kernel's (by the medians)
  causal TFLOP/s at its median time and the lowest and highest SM clock NVML read over its samples;
  \\val{r36long}{<fp16|bf16>}{faststage|tflopsfast}: the fastest Gluon kernel by the fastest samples and its rate at
  the median over the repeats of its fastest sample; \\RunThirtySixStretch: whether the medians' rate reached the stretch goal's
  TFLOP/s (\\StretchTflops) in both dtypes.
- Within an entry, sample by sample (sample_times, sample_mhz: the bench's record of each sample and the SM clock NVML
  read nearest it): \\RunThirtySixSlowed of \\RunThirtySixLongEntries, the entries at N = 16384 (every variant, both
  dtypes, both repeats) whose last third of samples took more than SLOWED_X times their first third's median time,
  by \\RunThirtySixSlowedLo to \\RunThirtySixSlowedHi percent; \\RunThirtySixSlowedClock of them, those where
  NVML's clock over the last third was no lower than over the first; \\RunThirtySixEarlyGoalMet,
  \\RunThirtySixEarlyWorstX, \\RunThirtySixEarlyWorstAt and \\RunThirtySixLateGoalMet, \\RunThirtySixLateWorstX,
  \\RunThirtySixLateWorstAt: the goal's tally by each entry's first third and by its last third of samples (their
  medians, the kernels alone); \\RunThirtySixLateQwMet, \\RunThirtySixLateQwWorstX: Qwen3's by the last thirds;
  \\val{r36third}{16384}{fp16early|fp16late|bf16early|bf16late}: the fastest Gluon kernel's ratio to cuDNN there by
  each.
"""
import json
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.selection import GOAL_X, HEADLINE, QW_GOAL_X, RATIO_TIME, STRETCH_TFLOPS
from pipeline.sweep import (best_gluon, by_third, check_run, fastest, goal_tally, medians, ncu_durations, one_gpu,
                            predicted, qwen3_points, qwen3_tally, rate, repeat_times, third, verdict, verify_counts,
                            worst)

NEW, BEFORE = "v36", "v35"        # the stage this run times for the first time, and its base
RATIO_N = (8192, 16384)           # v36's predicted ratios to cuDNN
LONG_N = 16384
THIRDS = {"float16": ("fp16early", "fp16late"), "bfloat16": ("bf16early", "bf16late")}    # r36third's columns
SLOWED_X = 1.05                   # an entry slowed within itself: its last third of samples over its first, medians
COLUMNS = {"float16": ("fp16", "fp16fast"), "bfloat16": ("bf16", "bf16fast")}   # r36step's: medians, fastest samples
STAGE_COLUMNS = {"float16": "fp16stage", "bfloat16": "bf16stage"}    # r36best's: the fastest kernel's stages
REPEAT_COLUMNS = {"float16": ("fp16lo", "fp16hi"), "bfloat16": ("bf16lo", "bf16hi")}   # r36rep's: lowest, highest


def values(seal_file: Path, n_sweep: Path, qwen3: Path, ncu_large_n: Path, correctness: Path, verify_env: Path,
           predictions: Path) -> Values:
    run = Path(seal_file).parent
    seal.verify(run)
    v = Values("run36")
    env = json.loads(Path(verify_env).read_text())
    check_run(run, env)
    v.macro("RunThirtySixCommit", env["project_commit"][:7])
    v.macro("RunThirtySixGpu", one_gpu(run)[:12])
    v.macro("RunThirtySixVerifyGpu", env["end"]["uuid"][:12])
    v.macro("RunThirtySixGpuName", env["gpu"].removeprefix("NVIDIA "))

    vc = verify_counts(correctness)
    v.macro("RunThirtySixVerifyStages", vc["stages"])
    v.macro("RunThirtySixVerifyOk", vc["ok"])
    v.macro("RunThirtySixVerifyRefused", vc["refused"])
    v.macro("RunThirtySixVerifyWrong", vc["wrong"])

    t, med, ratio = medians(n_sweep)
    v.macro("RunThirtySixRepeats", str(int(t.groupby("key").repeat.nunique().min())))
    best, fast = best_gluon(t), best_gluon(fastest(t))
    for (dtype, n), b in best.iterrows():
        v.put("r36best", str(n), COLUMNS[dtype][0], fixed(b.x, 3))
        v.put("r36best", str(n), STAGE_COLUMNS[dtype], b.stage)
    goal, fastgoal = goal_tally(best, GOAL_X), goal_tally(fast, GOAL_X)
    v.macro("RunThirtySixGoalMet", goal["met"])
    v.macro("RunThirtySixGoalOf", goal["of"])
    v.macro("RunThirtySixGoalWorstX", goal["worst_x"])
    v.macro("RunThirtySixGoalWorstAt", goal["worst_at"])
    v.macro("RunThirtySixFastGoalMet", fastgoal["met"])
    v.macro("RunThirtySixFastWorstX", fastgoal["worst_x"])
    v.macro("RunThirtySixFastWorstAt", fastgoal["worst_at"])
    by_rep = repeat_times(t)
    for dtype, (lo, hi) in REPEAT_COLUMNS.items():
        r = by_rep.loc[(dtype, LONG_N)]
        for st in (BEFORE, NEW):
            x = r[st] / r["torch-cudnn"]
            v.put("r36rep", f"{st}@{LONG_N}", lo, fixed(x.min(), 3))
            v.put("r36rep", f"{st}@{LONG_N}", hi, fixed(x.max(), 3))

    ncu = best_gluon(ncu_durations(ncu_large_n, HEADLINE["dtype"], HEADLINE["D"]))
    for (_, n), b in ncu.iterrows():
        v.put("r36ncubest", str(n), "x", fixed(b.x, 3))
        v.put("r36ncubest", str(n), "stage", b.stage)
    v.macro("RunThirtySixNcuGoalMet", str(int((ncu.x <= GOAL_X).sum())))
    v.macro("RunThirtySixNcuGoalOf", str(len(ncu)))

    pred = pd.read_csv(predictions)
    fmed = fastest(t).groupby(["dtype", "N", "variant"])[RATIO_TIME].median().unstack("variant")
    held = fast_held = of = 0
    for (dtype, n), m in med.iterrows():
        col, fcol = COLUMNS[dtype]
        step = 100 * (m[NEW] / m[BEFORE] - 1)
        fstep = 100 * (fmed.loc[(dtype, n), NEW] / fmed.loc[(dtype, n), BEFORE] - 1)
        v.put("r36step", str(n), col, f"{step:+.1f}")
        v.put("r36step", str(n), fcol, f"{fstep:+.1f}")
        p = predicted(pred, NEW, "time", n, dtype)
        if p and dtype == "float16":
            v.put("r36step", str(n), "pred", f"{p[0]:g} to {p[1]:g}")
            of += 1
            held += verdict(round(step, 1), *p) == "held"
            fast_held += verdict(round(fstep, 1), *p) == "held"
    v.macro("RunThirtySixHeld", str(held))
    v.macro("RunThirtySixFastHeld", str(fast_held))
    v.macro("RunThirtySixPredOf", str(of))
    fratio = fmed.div(fmed["torch-cudnn"], axis=0)
    for n in RATIO_N:
        x, fx = ratio.loc[("float16", n), NEW], fratio.loc[("float16", n), NEW]
        v.put("r36x", str(n), "fp16", fixed(x, 3))
        v.put("r36x", str(n), "fast", fixed(fx, 3))
        lo, hi = predicted(pred, NEW, "time_ratio", n, "float16")
        v.put("r36x", str(n), "pred", f"{1 + lo / 100:.3f} to {1 + hi / 100:.3f}")
        v.put("r36x", str(n), "held", verdict(round(100 * (x - 1), 1), lo, hi))
        v.put("r36x", str(n), "fastheld", verdict(round(100 * (fx - 1), 1), lo, hi))

    q = pd.read_csv(qwen3)
    qw = qwen3_tally(qwen3_points(q), QW_GOAL_X)
    v.macro("RunThirtySixQwMet", qw["met"])
    v.macro("RunThirtySixQwOf", qw["of"])
    v.macro("RunThirtySixQwWorstX", qw["worst_x"])
    v.macro("RunThirtySixQwWorstAt", qw["worst_at"])

    ft = fastest(t)
    stretch = []
    for dtype, (col, _) in COLUMNS.items():
        stages = best.loc[(dtype, LONG_N), "stage"].split("/")
        r = t[(t.N == LONG_N) & (t.dtype == dtype) & t.variant.isin(stages)]
        tflops = rate(t, stages, dtype, LONG_N, t[RATIO_TIME])
        stretch.append(tflops >= STRETCH_TFLOPS)
        v.put("r36long", col, "stage", "/".join(stages))
        v.put("r36long", col, "tflops", f"{tflops:.0f}")
        v.put("r36long", col, "mhzlo", f"{r.sm_min_mhz.min():.0f}")
        v.put("r36long", col, "mhzhi", f"{r.sm_max_mhz.max():.0f}")
        fstages = fast.loc[(dtype, LONG_N), "stage"].split("/")
        v.put("r36long", col, "faststage", "/".join(fstages))
        v.put("r36long", col, "tflopsfast", f"{rate(ft, fstages, dtype, LONG_N, ft[RATIO_TIME]):.0f}")
    v.macro("RunThirtySixStretch", "reached" if all(stretch) else "not reached")
    long = t[t.N == LONG_N]
    first, last = (long.sample_times.map(lambda s, e=e: third(s, e)) for e in (False, True))
    clock_first, clock_last = (long.sample_mhz.map(lambda s, e=e: third(s, e)) for e in (False, True))
    slowed = last / first > SLOWED_X
    v.macro("RunThirtySixLongEntries", str(len(long)))
    v.macro("RunThirtySixSlowed", str(int(slowed.sum())))
    v.macro("RunThirtySixSlowedLo", f"{100 * ((last / first)[slowed].min() - 1):.0f}")
    v.macro("RunThirtySixSlowedHi", f"{100 * ((last / first)[slowed].max() - 1):.0f}")
    v.macro("RunThirtySixSlowedClock", str(int((clock_last >= clock_first)[slowed].sum())))
    early, late = best_gluon(by_third(t, False)), best_gluon(by_third(t, True))
    v.macro("RunThirtySixEarlyGoalMet", str(int((early.x <= GOAL_X).sum())))
    x, at = worst(early)
    v.macro("RunThirtySixEarlyWorstX", x)
    v.macro("RunThirtySixEarlyWorstAt", at)
    for dtype, (ecol, lcol) in THIRDS.items():
        v.put("r36third", str(LONG_N), ecol, fixed(early.loc[(dtype, LONG_N), "x"], 3))
        v.put("r36third", str(LONG_N), lcol, fixed(late.loc[(dtype, LONG_N), "x"], 3))
    v.macro("RunThirtySixLateGoalMet", str(int((late.x <= GOAL_X).sum())))
    x, at = worst(late)
    v.macro("RunThirtySixLateWorstX", x)
    v.macro("RunThirtySixLateWorstAt", at)
    late_points = qwen3_points(by_third(q, True))
    v.macro("RunThirtySixLateQwMet", str(sum(x <= QW_GOAL_X for x, *_ in late_points)))
    v.macro("RunThirtySixLateQwWorstX", fixed(max(late_points)[0], 3))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
