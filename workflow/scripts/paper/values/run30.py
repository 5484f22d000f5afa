"""The paper's numbers from run-30 (data/<gpu>/run-30: the lite plan at one commit, every set but `tuning` and the
ceilings on one H200, those two on another after the device budget had cut the run short): the first measurement
of v30 (paired_cvt) and v31 (rare_rescale).

- \\RunThirtyCommit, \\RunThirtyGpu, \\RunThirtyCases, \\RunThirtyWrong, \\RunThirtyRepeats: the commit, the GPU of
  the verify grid and the N sweep, the verify grid's cases and wrong ones, the N sweep's repeats per entry;
- \\val{p30}{<stage>@<N>}{fp16|bf16|pred|held}: the stage's time against the stage before it (percent, the medians of
  the N sweep's repeats, kernels alone), the float16 prediction (data/predictions/stages.csv) and whether it held;
- \\val{p30x}{<stage>@<N>}{fp16|bf16|pred|held}: the stage's time over cuDNN's (the same medians), and the float16
  prediction of that ratio and whether it held;
- \\val{p30best}{<N>}{fp16|bf16|fp16stage|bf16stage}: the best Gluon stage's ratio to cuDNN at each N and which
  stage (fp164: float16's ratio to four decimals); \\RunThirtyGoalMet, \\RunThirtyGoalMissed and
  \\RunThirtyGoalOf: the (N, dtype) points where it is at most the goal's 0.90, above it, and all;
- \\val{p30ncu}{<stage>@<N>}{cyc|cycstep|instr|tensor}: Nsight's large-N profile (float16, one profile per entry):
  active SM cycles over cuDNN's, their change and the instructions' against the stage before (percent), the tensor
  pipe's busy share;
- \\val{p30steady}{<stage>@<dtype>}{x}: at N = 16384, the steady stream's time per call over cuDNN's.
"""
import json
import sys
from pathlib import Path

import pandas as pd

from kernels.stages import previous_stage
from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.selection import GOAL_X
from pipeline.sweep import DTYPES, best_gluon, medians, predicted, verdict

STAGES = ("v29", "v30", "v31")      # the paragraph's: v30 and v31, and the stage before them
STAGE_COLUMN = {"fp16": "fp16stage", "bf16": "bf16stage"}     # p30best's column of the best stage, per dtype
FOUR_DIGITS = {"fp16": "fp164"}        # p30best's column of its ratio to four decimals (float16's: the margin is thin)


def values(seal_file: Path, n_sweep: Path, ncu_large_n: Path, correctness: Path, verify_env: Path,
           predictions: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("run30")
    env = json.loads(Path(verify_env).read_text())
    v.macro("RunThirtyCommit", env["project_commit"][:7])
    v.macro("RunThirtyGpu", env["end"]["uuid"][:12])
    c = pd.read_csv(correctness)
    v.macro("RunThirtyCases", str(len(c)))
    v.macro("RunThirtyWrong", str(int((c.status == "WRONG").sum())))

    t, med, ratio = medians(n_sweep)
    v.macro("RunThirtyRepeats", str(int(t.groupby("key").repeat.nunique().min())))
    best = best_gluon(t)
    pred = pd.read_csv(predictions)
    for (dtype, n), r in ratio.iterrows():
        col = DTYPES[dtype]
        for st in STAGES[1:]:
            step = 100 * (med.loc[(dtype, n), st] / med.loc[(dtype, n), previous_stage(st)] - 1)
            v.put("p30", f"{st}@{n}", col, f"{step:+.1f}")
            p = predicted(pred, st, "time", n, dtype)
            if dtype == "float16" and p:
                lo, hi = p
                v.put("p30", f"{st}@{n}", "pred", f"{lo:g} to {hi:g}")
                v.put("p30", f"{st}@{n}", "held", verdict(round(step, 1), lo, hi))
        for st in STAGES:
            v.put("p30x", f"{st}@{n}", col, fixed(r[st], 3))
            q = predicted(pred, st, "time_ratio", n, dtype)
            if q:
                lo, hi = q
                v.put("p30x", f"{st}@{n}", "pred", f"{1 + lo / 100:.2f} to {1 + hi / 100:.2f}")
                v.put("p30x", f"{st}@{n}", "held", verdict(round(100 * (r[st] - 1), 1), lo, hi))
        b = best.loc[(dtype, n)]
        v.put("p30best", str(n), col, fixed(b.x, 3))
        if col in FOUR_DIGITS:
            v.put("p30best", str(n), FOUR_DIGITS[col], fixed(b.x, 4))       # the goal's margin, where it is thin
        v.put("p30best", str(n), STAGE_COLUMN[col], b.stage)
    v.macro("RunThirtyGoalMet", str(int((best.x <= GOAL_X).sum())))
    v.macro("RunThirtyGoalOf", str(len(best)))
    v.macro("RunThirtyGoalMissed", str(int((best.x > GOAL_X).sum())))

    nc = pd.read_csv(ncu_large_n)
    nc = nc[nc.instance.isna()].copy()
    nc["N"] = nc.key.str.split("|").str[2].str.split(",").str[3].astype(int)
    nc = nc[nc.key.str.contains("float16")]

    def metric(name):
        return nc[nc.metric == name].pivot_table(index="N", columns="variant", values="value")
    cyc = metric("sm__cycles_active.avg")
    ins = metric("smsp__inst_executed.sum")
    ten = metric("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active")
    for n in cyc.index:
        for st in STAGES:
            v.put("p30ncu", f"{st}@{n}", "cyc", fixed(cyc.loc[n, st] / cyc.loc[n, "torch-cudnn"], 3))
            v.put("p30ncu", f"{st}@{n}", "tensor", fixed(ten.loc[n, st], 1))
            if st != STAGES[0]:
                prev = previous_stage(st)
                v.put("p30ncu", f"{st}@{n}", "cycstep", f"{100 * (cyc.loc[n, st] / cyc.loc[n, prev] - 1):+.1f}")
                v.put("p30ncu", f"{st}@{n}", "instr", f"{100 * (ins.loc[n, st] / ins.loc[n, prev] - 1):+.1f}")

    s = t[(t.N == 16384) & t.steady_call_us.notna()]
    steady = s.groupby(["dtype", "variant"]).steady_call_us.median().unstack("variant")
    for dtype, r in steady.iterrows():
        for st in STAGES:
            v.put("p30steady", f"{st}@{DTYPES[dtype]}", "x", fixed(r[st] / r["torch-cudnn"], 3))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
