"""The kernel timer checked two ways: (left) the difference between its median and the median of Nsight Compute's
gpu__time_duration for every profiled entry of every run, with the stated bound as a band; (right) the time of each profiled entry
after a host sleep before its launch, by the kernel timer and by CUDA events around the call."""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from pipeline import plotting as c

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
cc = pd.read_csv(a.input.crosscheck)
cc = cc[cc.timed].copy()
tc = pd.read_csv(a.input.timer_check)
bound = cc.max_pct.iloc[0]
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4.6))

left.axhspan(-bound, bound, color="0.9", label=f"bound $\\pm${bound:g}%")
left.axhline(0, color="0.5", lw=0.8)
cc["kind"] = np.where(cc.impl == "triton", "Triton (ours)", "PyTorch")
# one marker per run (seaborn's default set repeats after ten; the newest runs, with the clocks, get the most
# distinct shapes), and every entry inside the axis
MARKERS = ["o", "s", "D", "^", "v", "<", ">", "P", "X", "*", "d", "p", "h", "8", "H"]
runs = sorted(cc.run.unique(), key=lambda r: int(r.split("-")[1]))
newest_first = runs[::-1]
sns.scatterplot(data=cc, x="ncu_us", y="diff_pct", hue="kind", style="run", style_order=runs,
                markers={r: MARKERS[i % len(MARKERS)] for i, r in enumerate(newest_first)}, ax=left, s=30)
reach = max(1.6 * bound, 1.1 * float(cc.diff_pct.abs().max()))
left.set(xscale="log", xlabel="Nsight Compute gpu__time_duration (µs, median of launches)",
         ylabel="kernel timer - Nsight (%)", ylim=(-reach, reach), title="Timer against Nsight Compute")
left.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, -0.18))

tc["entry"] = tc.variant + np.where(tc.impl == "triton", " " + tc.block_m.fillna(0).astype(int).astype(str) + "x"
                                    + tc.block_n.fillna(0).astype(int).astype(str), "")
long = pd.concat([tc.assign(timer="kernel timer", us=tc.time_us), tc.assign(timer="CUDA events", us=tc.event_us)])
med = long.groupby(["timer", "sleep_us", "entry"], as_index=False).us.median()
sns.lineplot(data=med, x="sleep_us", y="us", hue="timer", units="entry", estimator=None, ax=right, lw=0.8,
             marker="o", markersize=3)
right.set(yscale="log", xlabel="host sleep before each launch (µs)", ylabel="measured time (µs)",
          title="Host time: events see it, the kernel timer does not")
right.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.18))
c.save(fig, a.out)
