"""raw.csv read (python summarize.py > summary.txt): per kernel (v35, v36, cuDNN; N = 16384, float16, one launch
each), Nsight Compute's duration, the mean SM's active cycles and its clock, the tensor pipe's share of the active
cycles, the instructions issued, the issue slots used and the warps' stalls per issued instruction; and v36 over v35
and over cuDNN."""
import pandas as pd

r = pd.read_csv("raw.csv", skiprows=[1])            # the second row holds the units
r.index = r["Kernel Name"].str.split("/").str[0]
m = {"duration_ms": "gpu__time_duration.sum", "sm_cycles_active_M": "sm__cycles_active.avg",
     "clock_GHz": "gpc__cycles_elapsed.avg.per_second", "instructions_G": "smsp__inst_executed.sum",
     "tensor_pct": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
     "issue_pct": "sm__issue_active.avg.pct_of_peak_sustained_elapsed",
     "stall_short_scoreboard": "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
     "stall_wait": "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
     "stall_barrier": "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
     "stall_long_scoreboard": "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"}
t = pd.DataFrame({k: pd.to_numeric(r[c]) for k, c in m.items()})
t["sm_cycles_active_M"] /= 1e6
t["instructions_G"] /= 1e9
print(t.round(4).to_string())
print(f"v36/v35: duration {t.duration_ms['v36'] / t.duration_ms['v35']:.4f}, "
      f"cycles {t.sm_cycles_active_M['v36'] / t.sm_cycles_active_M['v35']:.4f}; "
      f"v36/cuDNN duration {t.duration_ms['v36'] / t.duration_ms['torch-cudnn']:.4f}, "
      f"v35/cuDNN {t.duration_ms['v35'] / t.duration_ms['torch-cudnn']:.4f}")
