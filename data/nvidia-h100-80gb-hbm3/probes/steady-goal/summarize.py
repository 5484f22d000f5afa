"""steady*.csv read (python summarize.py > summary.txt): per length and dtype, the medians over the rounds of each
round's ratio of v36 and v37 to cuDNN by the GPU's time per call in a steady stream of calls (steady_call_us), their
ranges over the rounds, the rounds in which v37 took longer than v36, and each entry's medians of the counter's
power, the SM clock and the energy of one call. The goal's bound is 0.90x cuDNN's time (issue 18)."""
import glob
import pandas as pd

t = pd.concat([pd.read_csv(f) for f in sorted(glob.glob("steady*.csv"))], ignore_index=True)
rows = []
for (n, dt), g in t.groupby(["N", "dtype"]):
    w = g.pivot_table(index="round", columns="variant", values="steady_call_us")
    r36, r37 = w.v36 / w["torch-cudnn"], w.v37 / w["torch-cudnn"]
    rows.append(dict(N=n, dtype=dt, v36_x=r36.median(), v36_x_min=r36.min(), v36_x_max=r36.max(),
                     v37_x=r37.median(), v37_x_min=r37.min(), v37_x_max=r37.max(),
                     v37_over_v36=(w.v37 / w.v36).median(), v37_slower_rounds=int((w.v37 > w.v36).sum()),
                     rounds=len(w), best_le_0_90=bool(min(r36.median(), r37.median()) <= 0.90)))
print(f"GPU {t.uuid.unique()}")
print(pd.DataFrame(rows).round(4).to_string(index=False))
print(t.groupby(["N", "dtype", "variant"])[["steady_power_w", "steady_mhz", "steady_energy_mj", "steady_call_us"]]
      .median().round(1).to_string())
