"""The long-sequence Nsight Compute profile (plan.profile.large_n -> results/aggregate/large_n.csv), one place for
what the paper and the figure read from it: the short name of each metric shown, and a table of the median over
runs of each (variant, N, metric), with the number of runs.

    import large_n; t = large_n.table(Path("results/aggregate"))
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

# Short name -> (Nsight metric, what it says). Stall ratios are warp cycles spent in that state per issued instruction.
METRICS = {
    "Tensor": ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
               "tensor pipe active, % of active cycles"),
    "Issue": ("sm__issue_active.avg.pct_of_peak_sustained_elapsed", "instruction issue, % of cycles"),
    "Warps": ("sm__warps_active.avg.pct_of_peak_sustained_active", "warps resident, % of the SM's 64"),
    "Exp": ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", "XU pipe (exp2), % of active cycles"),
    "Fma": ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "FMA pipe active, % of active cycles"),
    "Lhit": ("lts__t_sector_hit_rate.pct", "L2 hit rate, %"),
    "Dram": ("dram__bytes_read.sum", "DRAM read, bytes"),
    "Instr": ("smsp__inst_executed.sum", "instructions executed (warp level)"),
    "Regs": ("launch__registers_per_thread", "registers per thread"),
    "StallWait": ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "stall: fixed-latency wait"),
    "StallBarrier": ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "stall: barrier"),
    "StallLong": ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
                  "stall: long scoreboard"),
    "StallShort": ("smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
                   "stall: short scoreboard"),
    "Time": ("gpu__time_duration.sum", "duration, ns"),
}


def table(agg: Path) -> pd.DataFrame:
    """variant, N, short, metric, value (median over the runs that profiled it), runs."""
    d = pd.read_csv(agg / "large_n.csv")
    if d.empty:
        return pd.DataFrame(columns=["variant", "N", "short", "metric", "value", "runs"])
    d = d[d.instance.isna()]
    short = {metric: s for s, (metric, _) in METRICS.items()}
    d = d[d.metric.isin(short)].assign(short=lambda x: x.metric.map(short))
    g = d.groupby(["variant", "N", "short", "metric"])
    return g.value.median().to_frame().join(g.run.nunique().rename("runs")).reset_index()
