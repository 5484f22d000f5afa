"""What limits the KV loop at long sequences: Nsight Compute on our stages (each at its own tile) and cuDNN at the
headline layout with N = 4096 and 16384 (plan.profile.large_n; median over the runs that profiled each): the tensor
pipe, instruction issue and resident warps, the L2 hit rate, and the warp stalls per issued instruction. A hatched
bar is a single run's figure, not a median; under each stage, the number of runs that profiled it."""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import OUR_STAGES

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
t = pd.read_csv(a.input.large_n_table)
order = [v for v in OUR_STAGES + ["torch-cudnn"] if v in set(t.variant)]
panels = ["Tensor", "Issue", "Warps", "Lhit", "StallWait", "StallBarrier", "StallLong", "StallShort"]
Ns = sorted(t.N.unique())
colors = dict(zip(Ns, sns.color_palette("crest", as_cmap=True)(np.linspace(0.05, 1.0, len(Ns)))))  # far apart
runs = t[t.short.isin(panels)].groupby("variant").runs.agg(["min", "max"])
ticks = [f"{v} ({runs.loc[v, 'min']}" + ("" if runs.loc[v, "min"] == runs.loc[v, "max"] else f"-{runs.loc[v, 'max']}")
         + ")" for v in order]
width = 0.8 / len(Ns)
fig, axes = plt.subplots(2, 4, figsize=(11, 5.4), sharex=True)
for ax, short in zip(axes.flat, panels):
    d = t[t.short == short].set_index(["variant", "N"])
    for j, n in enumerate(Ns):
        for i, v in enumerate(order):
            if (v, n) in d.index:
                r = d.loc[(v, n)]
                ax.bar(i + (j - (len(Ns) - 1) / 2) * width, r.value, width, color=colors[n],
                       hatch=c.ONE_RUN_HATCH if r.runs == 1 else None, edgecolor="white", linewidth=0.3)
    ax.set(title=d.label.iloc[0], xlabel="", ylabel="")
    ax.title.set_fontsize(8)
    ax.set_xticks(range(len(order)), ticks)
    ax.tick_params(axis="x", rotation=90, labelsize=7)
handles = [plt.Rectangle((0, 0), 1, 1, color=colors[n], label=f"N = {n}") for n in Ns]
handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="0.6", hatch=c.ONE_RUN_HATCH, edgecolor="white",
                             label="one run (no median)"))
fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(handles), fontsize=8,
           frameon=False)
c.save(fig, a.out)
