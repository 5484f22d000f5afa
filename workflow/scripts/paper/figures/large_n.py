"""What limits the KV loop at long sequences: Nsight Compute on our stages (each at its own tile) and cuDNN at the
headline layout with N = 4096 and 16384, and at every N of the sweep where the runs profiled it (plan.profile.large_n;
median over the runs that profiled each): the tensor pipe, instruction issue and resident warps, the L2 hit rate, and
the warp stalls per issued instruction by reason (their y axes: stall cycles per issued instruction). One marker per
N, each N its own colour and shape; a hollow marker is a single run's figure, not a median; under each stage, the
number of runs that profiled it. Grey lines part our Triton stages, our Gluon stages and cuDNN."""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pipeline import plotting as c
from pipeline.selection import GLUON_STAGES, OUR_STAGES

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
t = pd.read_csv(a.input.large_n_table)
order = [v for v in OUR_STAGES + ["torch-cudnn"] if v in set(t.variant)]
panels = ["Tensor", "Issue", "Warps", "Lhit", "StallWait", "StallBarrier", "StallLong", "StallShort"]
Ns = sorted(t.N.unique())
# a clearly stepped palette, ordered as the lengths (dark to light), and a marker each, so that the lengths are told
# apart in grey too
colors = dict(zip(Ns, plt.get_cmap("plasma")(np.linspace(0.0, 0.88, len(Ns)))))
markers = dict(zip(Ns, ["o", "s", "^", "D", "v", "P", "X", "*"]))
runs = t[t.short.isin(panels)].groupby("variant").runs.agg(["min", "max"])
ticks = [f"{v} ({runs.loc[v, 'min']}" + ("" if runs.loc[v, "min"] == runs.loc[v, "max"] else f"-{runs.loc[v, 'max']}")
         + ")" for v in order]
step = 0.7 / max(len(Ns) - 1, 1)            # the lengths of one stage side by side, within its slot
# where our Gluon stages begin and cuDNN: a grey line before each
parts = [i - 0.5 for i, v in enumerate(order) if i and (v == "torch-cudnn" or v == next(
    (g for g in order if g in GLUON_STAGES), None))]
fig, axes = plt.subplots(2, 4, figsize=(11, 5.8), sharex=True)
for ax, short in zip(axes.flat, panels):
    d = t[t.short == short].set_index(["variant", "N"])
    for j, n in enumerate(Ns):
        pts = [(i + (j - (len(Ns) - 1) / 2) * step, d.loc[(v, n)]) for i, v in enumerate(order) if (v, n) in d.index]
        if not pts:
            continue
        for one in (False, True):
            sel = [(x, r.value) for x, r in pts if (r.runs == 1) == one]
            if sel:
                xs, ys = zip(*sel)
                ax.scatter(xs, ys, s=18, marker=markers[n], linewidths=1.0, zorder=3,
                           facecolors="white" if one else colors[n], edgecolors=colors[n])
    for x in parts:
        ax.axvline(x, color="0.5", linewidth=1.0, zorder=1)
    # a stall metric (Nsight's ..._per_issue_active.ratio) counts the cycles warps spent stalled for its reason per
    # instruction issued: its unit on the y axis (the other panels' unit, %, is in their titles)
    unit = "stall cycles per issued instruction" if d.metric.iloc[0].endswith("_per_issue_active.ratio") else ""
    ax.set(title=d.label.iloc[0], xlabel="", ylim=(0, None))
    ax.set_ylabel(unit, fontsize=7)
    ax.title.set_fontsize(8)
    ax.set_xticks(range(len(order)), ticks)
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.tick_params(axis="x", rotation=90, labelsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="x", visible=False)
handles = [plt.Line2D([], [], linestyle="", marker=markers[n], markersize=5, color=colors[n], label=f"N = {n}")
           for n in Ns]
handles.append(plt.Line2D([], [], linestyle="", marker="o", markersize=5, markerfacecolor="white",
                          markeredgecolor="0.2", color="0.2", label="hollow: one run (no median)"))
fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(handles), fontsize=8,
           frameon=False)
c.save(fig, a.out)
