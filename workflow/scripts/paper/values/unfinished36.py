"""The paper's numbers from probes/run-36-unfinished (data/nvidia-h100-80gb-hbm3/probes/run-36-unfinished: the lite plan's run-36
on one H100, every set timed, cut by the lease's end before the timer check, the ceilings and Nsight's cross-check,
so sealed as a probe, not a run): the goal's tally, v36's first measurement beside v35, Qwen3's layouts, the rate at
16384.

- \\UnfinishedRunCommit, \\UnfinishedRunGpu, \\UnfinishedRunGpuName, \\UnfinishedRunRepeats: the commit, the one GPU
  of every set and of the verify grid (refused where they differ), its name, the N sweep's repeats per entry;
  \\UnfinishedRunNotReached: the steps of a run the folder lacks (from its files);
- \\UnfinishedRunVerifyStages, \\UnfinishedRunVerifyOk, \\UnfinishedRunVerifyRefused, \\UnfinishedRunVerifyWrong: the
  verify grid's stages and its cases right, refused (tiles or inputs a stage does not take, with its error) and wrong;
- \\val{u36best}{<N>}{fp16|bf16}: the fastest Gluon kernel's time over cuDNN's (the medians of the N sweep's
  repeats, kernels alone, the stages that launch one kernel pooled: pipeline.sweep.best_gluon);
  \\UnfinishedRunGoalMet of \\UnfinishedRunGoalOf: the (N, dtype) points at most the goal's 0.90;
  \\UnfinishedRunGoalWorstX, \\UnfinishedRunGoalWorstAt: the highest ratio and where; \\UnfinishedRunFastGoalMet,
  \\UnfinishedRunFastWorstX, \\UnfinishedRunFastWorstAt: the same by each entry's fastest sample of its kernels alone
  (min_us less the call's work beyond its kernels);
- \\val{u36step}{<N>}{fp16|bf16|fp16fast|bf16fast|pred}: v36's time against v35's, percent, by the medians over the
  repeats and by the fastest samples, and its prediction (float16, data/predictions/stages.csv);
  \\UnfinishedRunHeld, \\UnfinishedRunFastHeld of \\UnfinishedRunPredOf: the float16 predictions that held by each;
- \\val{u36x}{<8192|16384>}{fp16|fast|pred|held|fastheld}: v36's time over cuDNN's (float16), by the medians and the
  fastest samples, its predicted range and verdicts;
- \\UnfinishedRunQwMet of \\UnfinishedRunQwOf: the Qwen3 layouts and lengths (the qwen3 set, float16, one repeat) where
  the fastest Gluon stage takes at most QW_GOAL_X of cuDNN's time; \\UnfinishedRunQwWorstX, \\UnfinishedRunQwWorstAt:
  the highest and where (with its stage);
- \\val{u36long}{<fp16|bf16>}{stage|tflops|mhzlo|mhzhi}: at N = 16384, the fastest Gluon kernel's (by the medians)
  causal TFLOP/s at its median time and the lowest and highest SM clock NVML read over its samples.
- Within an entry, sample by sample (sample_times, sample_mhz: the bench's record of each sample and the SM clock NVML
  read nearest it): \\UnfinishedRunSlowed of \\UnfinishedRunLongEntries, the entries at N = 16384 (every variant, both
  dtypes, both repeats) whose last third of samples took more than SLOWED_X times their first third's median time,
  by \\UnfinishedRunSlowedLo to \\UnfinishedRunSlowedHi percent; \\UnfinishedRunSlowedClock of them, those where NVML's
  clock over the last third was no lower than over the first; \\UnfinishedRunEarlyGoalMet, \\UnfinishedRunEarlyWorstX,
  \\UnfinishedRunEarlyWorstAt and \\UnfinishedRunLateGoalMet, \\UnfinishedRunLateWorstX, \\UnfinishedRunLateWorstAt: the
  goal's tally by each entry's first third and by its last third of samples (their medians, the kernels alone);
  \\UnfinishedRunLateQwMet, \\UnfinishedRunLateQwWorstX: Qwen3's by the last thirds;
  \\val{u36third}{16384}{fp16early|fp16late|bf16early|bf16late}: the fastest Gluon kernel's ratio to cuDNN there by each.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from kernels.shapes import attention_flops
from pipeline import seal
from pipeline.latex import Values, fixed, listing
from pipeline.selection import ALL_STAGES, GLUON_STAGES, GOAL_X, QW_GOAL_X, RATIO_TIME
from pipeline.sweep import best_gluon, kernels_alone, medians, one_gpu, predicted, verdict

NEW, BEFORE = "v36", "v35"        # the stage this folder times for the first time in a run's sets, and its base
RATIO_N = (8192, 16384)           # v36's predicted ratios to cuDNN
LONG_N = 16384
THIRDS = {"float16": ("fp16early", "fp16late"), "bfloat16": ("bf16early", "bf16late")}    # u36third's columns
SLOWED_X = 1.05                   # an entry slowed within itself: its last third of samples over its first, medians
COLUMNS = {"float16": ("fp16", "fp16fast"), "bfloat16": ("bf16", "bf16fast")}   # u36step's: medians, fastest samples
# the steps of a run, by the file each leaves in its folder, as the text names the ones missing
STEPS = {"timer_check/timer_check.csv": "the timer check", "ceilings/ceilings.csv": "the ceilings",
         "profile/ncu_duration.csv": "Nsight's duration pass (the timer's cross-check)",
         "profile/ncu_premise.csv": "its premise pass", "profile/ncu_large_n.csv": "its long-sequence pass"}


def fastest(t: pd.DataFrame) -> pd.DataFrame:
    """The rows with RATIO_TIME replaced by each entry's fastest sample of its kernels alone."""
    return kernels_alone(t, t.min_us)


def third(samples: str, last: bool) -> float:
    """The median of the first or the last third of an entry's samples (sample_times, ';'-separated, in order)."""
    x = [float(s) for s in str(samples).split(";")]
    k = max(1, len(x) // 3)
    return float(np.median(x[-k:] if last else x[:k]))


def by_third(t: pd.DataFrame, last: bool) -> pd.DataFrame:
    """The rows with RATIO_TIME replaced by the median of each entry's first or last third of samples, its kernels
    alone."""
    return kernels_alone(t, t.sample_times.map(lambda s: third(s, last)))


def worst(best: pd.DataFrame) -> tuple:
    """The highest ratio of a tally (best_gluon's rows) and where: ('0.891', 'bfloat16, $N=$ 8192')."""
    (dtype, n), b = max(best.iterrows(), key=lambda r: r[1].x)
    return fixed(b.x, 3), f"{dtype}, $N=$ {n}"


def qwen3_points(q: pd.DataFrame) -> list:
    """Per Qwen3 layout and N of the qwen3 set's rows q (float16): (x, stage, layout, N), the fastest Gluon stage's
    time over cuDNN's."""
    q = q[(q.dtype == "float16") & (q.status == "ok")]
    med = q.groupby(["layout", "N", "variant"])[RATIO_TIME].median().unstack("variant")
    ours = med[[s for s in GLUON_STAGES if s in med.columns]]
    x = ours.div(med["torch-cudnn"], axis=0)
    return [(float(r.min()), r.idxmin(), lay, int(n)) for (lay, n), r in x.iterrows()]


def values(seal_file: Path, n_sweep: Path, qwen3: Path, correctness: Path, verify_env: Path,
           predictions: Path) -> Values:
    folder = Path(seal_file).parent
    seal.verify(folder)
    v = Values("unfinished36")
    env = json.loads(Path(verify_env).read_text())
    v.macro("UnfinishedRunCommit", env["project_commit"][:7])
    gpu = one_gpu(folder)
    if env["end"]["uuid"] != gpu:
        raise ValueError(f"{verify_env}: the verify step ran on {env['end']['uuid']}, the sets on {gpu}")
    v.macro("UnfinishedRunGpu", gpu[:12])
    v.macro("UnfinishedRunGpuName", env["gpu"].removeprefix("NVIDIA "))
    missing = [words for f, words in STEPS.items() if not (folder / f).exists()]
    v.macro("UnfinishedRunNotReached", listing(missing) if missing else "none")

    c = pd.read_csv(correctness)
    stages = [s for s in ALL_STAGES if (c.variant == s).any()]
    if stages != ALL_STAGES[:len(stages)]:
        raise ValueError(f"{correctness}: stages {stages}, the text says a range from {ALL_STAGES[0]}")
    v.macro("UnfinishedRunVerifyStages", f"{stages[0]}-{stages[-1]}")
    v.macro("UnfinishedRunVerifyOk", str(int((c.status == "ok").sum())))
    v.macro("UnfinishedRunVerifyRefused", str(int((c.status == "refused").sum())))
    v.macro("UnfinishedRunVerifyWrong", str(int((c.status == "WRONG").sum())))
    if set(c.status) - {"ok", "refused", "WRONG"}:
        raise ValueError(f"{correctness}: statuses {sorted(set(c.status))}, the text counts ok, refused and WRONG")

    t, med, ratio = medians(n_sweep)
    v.macro("UnfinishedRunRepeats", str(int(t.groupby("key").repeat.nunique().min())))
    best, fast = best_gluon(t), best_gluon(fastest(t))
    for (dtype, n), b in best.iterrows():
        v.put("u36best", str(n), COLUMNS[dtype][0], fixed(b.x, 3))
    v.macro("UnfinishedRunGoalMet", str(int((best.x <= GOAL_X).sum())))
    v.macro("UnfinishedRunGoalOf", str(len(best)))
    x, at = worst(best)
    v.macro("UnfinishedRunGoalWorstX", x)
    v.macro("UnfinishedRunGoalWorstAt", at)
    v.macro("UnfinishedRunFastGoalMet", str(int((fast.x <= GOAL_X).sum())))
    x, at = worst(fast)
    v.macro("UnfinishedRunFastWorstX", x)
    v.macro("UnfinishedRunFastWorstAt", at)

    pred = pd.read_csv(predictions)
    fmed = fastest(t).groupby(["dtype", "N", "variant"])[RATIO_TIME].median().unstack("variant")
    held = fast_held = of = 0
    for (dtype, n), m in med.iterrows():
        col, fcol = COLUMNS[dtype]
        step = 100 * (m[NEW] / m[BEFORE] - 1)
        fstep = 100 * (fmed.loc[(dtype, n), NEW] / fmed.loc[(dtype, n), BEFORE] - 1)
        v.put("u36step", str(n), col, f"{step:+.1f}")
        v.put("u36step", str(n), fcol, f"{fstep:+.1f}")
        p = predicted(pred, NEW, "time", n, dtype)
        if p and dtype == "float16":
            v.put("u36step", str(n), "pred", f"{p[0]:g} to {p[1]:g}")
            of += 1
            held += verdict(round(step, 1), *p) == "held"
            fast_held += verdict(round(fstep, 1), *p) == "held"
    v.macro("UnfinishedRunHeld", str(held))
    v.macro("UnfinishedRunFastHeld", str(fast_held))
    v.macro("UnfinishedRunPredOf", str(of))
    fratio = fmed.div(fmed["torch-cudnn"], axis=0)
    for n in RATIO_N:
        x, fx = ratio.loc[("float16", n), NEW], fratio.loc[("float16", n), NEW]
        v.put("u36x", str(n), "fp16", fixed(x, 3))
        v.put("u36x", str(n), "fast", fixed(fx, 3))
        lo, hi = predicted(pred, NEW, "time_ratio", n, "float16")
        v.put("u36x", str(n), "pred", f"{1 + lo / 100:.3f} to {1 + hi / 100:.3f}")
        v.put("u36x", str(n), "held", verdict(round(100 * (x - 1), 1), lo, hi))
        v.put("u36x", str(n), "fastheld", verdict(round(100 * (fx - 1), 1), lo, hi))

    q = pd.read_csv(qwen3)
    points = qwen3_points(q)
    v.macro("UnfinishedRunQwMet", str(sum(x <= QW_GOAL_X for x, *_ in points)))
    v.macro("UnfinishedRunQwOf", str(len(points)))
    x, stage, lay, n = max(points)
    v.macro("UnfinishedRunQwWorstX", fixed(x, 3))
    v.macro("UnfinishedRunQwWorstAt", f"{lay}, $N=$ {n}, {stage}")

    for dtype, (col, _) in COLUMNS.items():
        stages = best.loc[(dtype, LONG_N), "stage"].split("/")
        r = t[(t.N == LONG_N) & (t.dtype == dtype) & t.variant.isin(stages)]
        one = r.iloc[0]
        rate = attention_flops(int(one.B), int(one.H), LONG_N, int(one.D), bool(one.causal)) / r[RATIO_TIME].median() / 1e6
        v.put("u36long", col, "stage", "/".join(stages))
        v.put("u36long", col, "tflops", f"{rate:.0f}")
        v.put("u36long", col, "mhzlo", f"{r.sm_min_mhz.min():.0f}")
        v.put("u36long", col, "mhzhi", f"{r.sm_max_mhz.max():.0f}")
    long = t[t.N == LONG_N]
    first, last = (long.sample_times.map(lambda s, e=e: third(s, e)) for e in (False, True))
    clock_first, clock_last = (long.sample_mhz.map(lambda s, e=e: third(s, e)) for e in (False, True))
    slowed = last / first > SLOWED_X
    v.macro("UnfinishedRunLongEntries", str(len(long)))
    v.macro("UnfinishedRunSlowed", str(int(slowed.sum())))
    v.macro("UnfinishedRunSlowedLo", f"{100 * ((last / first)[slowed].min() - 1):.0f}")
    v.macro("UnfinishedRunSlowedHi", f"{100 * ((last / first)[slowed].max() - 1):.0f}")
    v.macro("UnfinishedRunSlowedClock", str(int((clock_last >= clock_first)[slowed].sum())))
    early, late = best_gluon(by_third(t, False)), best_gluon(by_third(t, True))
    v.macro("UnfinishedRunEarlyGoalMet", str(int((early.x <= GOAL_X).sum())))
    x, at = worst(early)
    v.macro("UnfinishedRunEarlyWorstX", x)
    v.macro("UnfinishedRunEarlyWorstAt", at)
    for dtype, (ecol, lcol) in THIRDS.items():
        v.put("u36third", str(LONG_N), ecol, fixed(early.loc[(dtype, LONG_N), "x"], 3))
        v.put("u36third", str(LONG_N), lcol, fixed(late.loc[(dtype, LONG_N), "x"], 3))
    v.macro("UnfinishedRunLateGoalMet", str(int((late.x <= GOAL_X).sum())))
    x, at = worst(late)
    v.macro("UnfinishedRunLateWorstX", x)
    v.macro("UnfinishedRunLateWorstAt", at)
    late_points = qwen3_points(by_third(q, True))
    v.macro("UnfinishedRunLateQwMet", str(sum(x <= QW_GOAL_X for x, *_ in late_points)))
    v.macro("UnfinishedRunLateQwWorstX", fixed(max(late_points)[0], 3))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
