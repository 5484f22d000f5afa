"""The kernel timer checked two ways: (left) the difference between its median and the median of Nsight Compute's
gpu__time_duration for every profiled entry of every run, with the stated bound as a band, each point coloured by its
run (a sequential colour in run order, the colourbar naming each run) and shaped by its kind (our Triton stages or
PyTorch); (right) the time of each profiled entry after a host sleep before its launch, by the kernel timer and by
CUDA events around the call (median over runs)."""
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

left.axhspan(-bound, bound, color="0.9")
left.axhline(0, color="0.5", lw=0.8)
cc["kind"] = np.where(cc.impl == "triton", "Triton (ours)", "PyTorch")
# the run by a sequential colour (oldest dark, newest light; the colourbar names each run), the kind by the marker;
# the newest runs, which profiled the most entries, drawn first, so that the older runs' few points stay in sight
colors = c.run_colors(cc.run)
KIND_MARKERS = {"Triton (ours)": "o", "PyTorch": "^"}
for run in reversed(list(colors)):
    for kind, marker in KIND_MARKERS.items():
        d = cc[(cc.run == run) & (cc.kind == kind)]
        left.scatter(d.ncu_us, d.diff_pct, s=18, marker=marker, color=colors[run], edgecolors="white",
                     linewidths=0.3, zorder=3)
reach = max(1.6 * bound, 1.1 * float(cc.diff_pct.abs().max()))
left.set(xscale="log", xlabel="Nsight Compute gpu__time_duration (µs, median of launches)",
         ylabel="kernel timer - Nsight (%)", ylim=(-reach, reach), title="Timer against Nsight Compute")
handles = [plt.Rectangle((0, 0), 1, 1, color="0.9", label=f"bound $\\pm${bound:g}%")]
handles += [plt.Line2D([], [], linestyle="", marker=m, color="0.35", label=k) for k, m in KIND_MARKERS.items()]
left.legend(handles=handles, fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.18))
c.run_colorbar(fig, left, colors, fraction=0.05, pad=0.02)

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
