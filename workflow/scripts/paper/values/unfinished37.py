"""The paper's numbers from probes/run-37-unfinished (data/nvidia-h100-80gb-hbm3/probes/run-37-unfinished: the lite
plan's run-37 on one H100, cut by the session's device time before the bfloat16 headline set, the ablations and
Qwen3 end to end, so sealed as a probe, not a run): the goal's tally at the N sweep's points, by Nsight's duration
and at Qwen3's layouts, and the steady stream's ratio at N = 16384.

- \\UnfinishedThirtySevenCommit, \\UnfinishedThirtySevenGpu, \\UnfinishedThirtySevenRepeats: the commit, the one GPU
  of every timed set (refused where they differ, or where the verify step's GPU is another), the N sweep's repeats
  per entry; \\UnfinishedThirtySevenNotReached: the steps of a run the folder lacks (from its files);
- \\UnfinishedThirtySevenVerifyStages, \\UnfinishedThirtySevenVerifyOk, \\UnfinishedThirtySevenVerifyRefused,
  \\UnfinishedThirtySevenVerifyWrong: the verify grid's stages and its cases right, refused and wrong;
- \\val{u37best}{<N>}{fp16|bf16|fp16stage|bf16stage}: the fastest Gluon kernel's time over cuDNN's (the medians of
  the N sweep's repeats, kernels alone, the stages that launch one kernel pooled: pipeline.sweep.best_gluon) and its
  stages; \\UnfinishedThirtySevenGoalMet of \\UnfinishedThirtySevenGoalOf: the (N, dtype) points at most the goal's
  GOAL_X; \\UnfinishedThirtySevenGoalWorstX, \\UnfinishedThirtySevenGoalWorstAt: the highest and where;
  \\UnfinishedThirtySevenFastGoalMet, \\UnfinishedThirtySevenFastWorstX: the same by each entry's fastest sample;
- \\UnfinishedThirtySevenNcuGoalMet of \\UnfinishedThirtySevenNcuGoalOf, \\val{u37ncubest}{16384}{x|stage}: the
  same by Nsight's duration (the long-sequence pass, float16, one replay per entry with every cache flushed);
- \\val{u37steady}{16384}{fp16|bf16}: v36's steady stream's time per call over cuDNN's at N = 16384 (the steady
  step, first repeat), where the power cap holds both;
- \\UnfinishedThirtySevenQwMet of \\UnfinishedThirtySevenQwOf, \\UnfinishedThirtySevenQwWorstX,
  \\UnfinishedThirtySevenQwWorstAt: the Qwen3 layouts and lengths where the fastest Gluon stage takes at most
  QW_GOAL_X of cuDNN's time, and the highest.
"""
import json
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.selection import GOAL_X, HEADLINE, QW_GOAL_X
from pipeline.sweep import (best_gluon, fastest, goal_tally, medians, ncu_durations, one_gpu, qwen3_points,
                            qwen3_tally, steady_ratios, verify_counts)

LONG_N = 16384
STEADY_STAGE = "v36"              # the leader whose steady stream the text quotes at 16384
COLUMNS = {"float16": ("fp16", "fp16stage"), "bfloat16": ("bf16", "bf16stage")}     # u37best's
# the steps of a finished run that this folder lacks, by the file each leaves, as the text names them
STEPS = {"bench-bf16/timings.csv": "the bfloat16 headline set", "bench-ablation/timings.csv": "the ablations",
         "qwen3_e2e/qwen3_e2e.csv": "Qwen3 end to end"}


def values(seal_file: Path, n_sweep: Path, qwen3: Path, ncu_large_n: Path, correctness: Path,
           verify_env: Path) -> Values:
    folder = Path(seal_file).parent
    seal.verify(folder)
    v = Values("unfinished37")
    env = json.loads(Path(verify_env).read_text())
    gpu = one_gpu(folder)
    if env["end"]["uuid"] != gpu:
        raise ValueError(f"{folder}: the verify step ran on {env['end']['uuid']}, the timed sets on {gpu}")
    v.macro("UnfinishedThirtySevenCommit", env["project_commit"][:7])
    v.macro("UnfinishedThirtySevenGpu", gpu[:12])
    missing = [name for f, name in STEPS.items() if not (folder / f).exists()]
    if not missing:
        raise ValueError(f"{folder}: every step of a run is here; seal it as a run, not a probe")
    v.macro("UnfinishedThirtySevenNotReached", ", ".join(missing[:-1]) + " and " + missing[-1]
            if len(missing) > 1 else missing[0])

    vc = verify_counts(correctness)
    v.macro("UnfinishedThirtySevenVerifyStages", vc["stages"])
    v.macro("UnfinishedThirtySevenVerifyOk", vc["ok"])
    v.macro("UnfinishedThirtySevenVerifyRefused", vc["refused"])
    v.macro("UnfinishedThirtySevenVerifyWrong", vc["wrong"])

    t, _, _ = medians(n_sweep)
    v.macro("UnfinishedThirtySevenRepeats", str(int(t.groupby("key").repeat.nunique().min())))
    best, fast = best_gluon(t), best_gluon(fastest(t))
    for (dtype, n), b in best.iterrows():
        col, scol = COLUMNS[dtype]
        v.put("u37best", str(n), col, fixed(b.x, 3))
        v.put("u37best", str(n), scol, b.stage)
    goal, fastgoal = goal_tally(best, GOAL_X), goal_tally(fast, GOAL_X)
    v.macro("UnfinishedThirtySevenGoalMet", goal["met"])
    v.macro("UnfinishedThirtySevenGoalOf", goal["of"])
    v.macro("UnfinishedThirtySevenGoalWorstX", goal["worst_x"])
    v.macro("UnfinishedThirtySevenGoalWorstAt", goal["worst_at"])
    v.macro("UnfinishedThirtySevenFastGoalMet", fastgoal["met"])
    v.macro("UnfinishedThirtySevenFastWorstX", fastgoal["worst_x"])

    ncu = best_gluon(ncu_durations(ncu_large_n, HEADLINE["dtype"], HEADLINE["D"]))
    v.macro("UnfinishedThirtySevenNcuGoalMet", str(int((ncu.x <= GOAL_X).sum())))
    v.macro("UnfinishedThirtySevenNcuGoalOf", str(len(ncu)))
    b = ncu.loc[(HEADLINE["dtype"], LONG_N)]
    v.put("u37ncubest", str(LONG_N), "x", fixed(b.x, 3))
    v.put("u37ncubest", str(LONG_N), "stage", b.stage)

    steady = steady_ratios(t, LONG_N)
    for dtype, (col, _) in COLUMNS.items():
        v.put("u37steady", str(LONG_N), col, fixed(steady.loc[dtype, STEADY_STAGE], 3))

    qw = qwen3_tally(qwen3_points(pd.read_csv(qwen3)), QW_GOAL_X)
    v.macro("UnfinishedThirtySevenQwMet", qw["met"])
    v.macro("UnfinishedThirtySevenQwOf", qw["of"])
    v.macro("UnfinishedThirtySevenQwWorstX", qw["worst_x"])
    v.macro("UnfinishedThirtySevenQwWorstAt", qw["worst_at"])
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
