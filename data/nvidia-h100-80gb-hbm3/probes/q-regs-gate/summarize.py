"""ab.csv read (python summarize.py > summary.txt): per length and dtype, the medians over the rounds of each
round's ratio of v37 to v36 and of each to cuDNN, by the kernels' median (kernels_us) and by each entry's fastest
sample of its kernels alone (min_us less the call's work beyond its kernels), the rounds in which v37 took longer
than v36, and the SM clock's median over the samples (NVML, the readings nearest each sample)."""
import pandas as pd

t = pd.read_csv("ab.csv")
fast = t.assign(kernels_us=t.min_us - (t.time_us - t.kernels_us))
rows = []
for (n, dt), g in t.groupby(["N", "dtype"]):
    w = g.pivot_table(index="round", columns="variant", values="kernels_us")
    f = fast[(fast.N == n) & (fast.dtype == dt)].pivot_table(index="round", columns="variant", values="kernels_us")
    mhz = pd.Series([float(x) for s in g.sample_mhz for x in str(s).split(";")]).median()
    rows.append(dict(N=n, dtype=dt, v37_over_v36=(w.v37 / w.v36).median(),
                     v37_over_v36_fastest=(f.v37 / f.v36).median(), v36_x=(w.v36 / w["torch-cudnn"]).median(),
                     v37_x=(w.v37 / w["torch-cudnn"]).median(), v36_x_fastest=(f.v36 / f["torch-cudnn"]).median(),
                     v37_x_fastest=(f.v37 / f["torch-cudnn"]).median(), v37_slower_rounds=int((w.v37 > w.v36).sum()),
                     rounds=len(w), sm_mhz=mhz))
print(f"GPU {t.uuid.unique()}")
print(pd.DataFrame(rows).round(4).to_string(index=False))
