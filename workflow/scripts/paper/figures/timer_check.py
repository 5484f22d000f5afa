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
sns.scatterplot(data=cc, x="ncu_us", y="diff_pct", hue="kind", style="run", ax=left, s=30)
left.set(xscale="log", xlabel="Nsight Compute gpu__time_duration (µs, median of launches)",
         ylabel="kernel timer - Nsight (%)", ylim=(-1.6 * bound, 1.6 * bound), title="Timer against Nsight Compute")
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
