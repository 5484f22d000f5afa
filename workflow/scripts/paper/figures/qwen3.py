"""The attention layouts of the Qwen3 models (B=2, causal, D=128) at each N of plan.qwen3_N: the article's first,
causal-skip and final stages (at its tile), our leading Triton stage (the fastest Triton stage across the N sweep,
workflow/scripts/aggregate/ours.py; at its own tile), the Gluon leader (gluon_leader.csv, brown; at its own tile;
the runs that timed it) and PyTorch's backends, as a percentage of cuDNN's time in the same run (the kernels alone;
median over runs, whiskers: lowest to highest run; log axis). Below, the Gluon leader alone on a linear axis
(a hollow marker: one run's figure, not a median). Black dashed line: cuDNN; red dashed line: the goal for our
Gluon stages at these layouts (pipeline.selection.QW_GOAL_X)."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import BASELINE, CAUSAL_SKIP_STAGE, FINAL, HEADLINE, QW_GOAL_X, RATIO_TIME, TORCH

GOAL_COLOR = "#d62728"

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
LEAD = c.leader(a.input.leader)
GLUON_LEAD = c.leader(a.input.gluon_leader)
pr = pd.read_csv(a.input.per_run)
shown = [BASELINE, CAUSAL_SKIP_STAGE, FINAL, LEAD, GLUON_LEAD]
q = pr[pr.set.str.contains("qwen3") & pr.variant.isin(shown + TORCH) & (pr.dtype == HEADLINE["dtype"])]
q = q[q.torch | (q.article_stage & q.article_tile) | (q.variant.isin([LEAD, GLUON_LEAD]) & q.own_tile)]
cudnn = q[q.variant == "torch-cudnn"].set_index(["run", "H", "N"])[RATIO_TIME].rename("cudnn_us")
q = q.join(cudnn, on=["run", "H", "N"]).assign(pct=lambda d: 100 * d[RATIO_TIME] / d.cudnn_us)
q = q.assign(layout=q.H.astype(str) + "/" + q.H_kv.astype(str) + " heads")
order = [f"{h}/8 heads" for h in sorted(q.H.unique())]
hue = [v for v in shown + TORCH if v in set(q.variant)]
ns = sorted(q.N.unique())
palette = {**dict(zip(shown[:3], sns.color_palette("crest", 3))), LEAD: c.LAST_COLOR, GLUON_LEAD: "#8c564b",
           **c.TORCH_COLORS}
goal = 100 * QW_GOAL_X          # the Gluon goal at these layouts (pipeline.selection.QW_GOAL_X), % of cuDNN's time
# top: every kernel, on a log axis; below: the Gluon leader alone against cuDNN and the goal, on a linear axis that
# spans its runs, so that its margin to the goal can be read
fig, axes = plt.subplots(2, len(ns), figsize=(4.6 * len(ns), 5.6), sharey="row", squeeze=False,
                         gridspec_kw=dict(height_ratios=[3.4, 1.9]))
for ax, n in zip(axes[0], ns):
    sns.barplot(q[q.N == n], x="layout", y="pct", hue="variant", order=order, hue_order=hue, estimator="median",
                errorbar=("pi", 100), ax=ax, palette=palette, legend=ax is axes[0][-1])
    ax.axhline(100, color="black", linestyle="--", linewidth=0.8)
    ax.axhline(goal, color=GOAL_COLOR, linestyle="--", linewidth=0.8)
    ax.set(yscale="log", title=f"N = {n}", xlabel="",
           ylabel="time, % of cuDNN's (same run)" if ax is axes[0][0] else "")
    ax.set_yticks([50, 100, 200, 400, 800, 1600], ["50", "100", "200", "400", "800", "1600"])
    ax.yaxis.set_minor_formatter(plt.NullFormatter())
LINES = [plt.Line2D([], [], color="black", linestyle="--", linewidth=0.8, label="cuDNN (100%)"),
         plt.Line2D([], [], color=GOAL_COLOR, linestyle="--", linewidth=0.8,
                    label=f"goal for our Gluon stages:\n{goal:g}% of cuDNN's time")]
bars, names = axes[0][-1].get_legend_handles_labels()
axes[0][-1].legend(bars + LINES, names + [h.get_label() for h in LINES], loc="upper left", bbox_to_anchor=(1.02, 1),
                   fontsize=7)
g = q[q.variant == GLUON_LEAD].groupby(["N", "layout"]).pct.agg(["median", "min", "max", "size"])
lo = min(float(g["min"].min()), goal)
hi = max(float(g["max"].max()), 100.0)
pad = 0.25 * (hi - lo)
for ax, n in zip(axes[1], ns):
    ax.axhline(100, color="black", linestyle="--", linewidth=0.8)
    ax.axhline(goal, color=GOAL_COLOR, linestyle="--", linewidth=0.8)
    for x, layout in enumerate(order):
        if (n, layout) not in g.index:
            continue
        r = g.loc[(n, layout)]
        one = r["size"] == 1                       # one run's figure, not a median: a hollow marker
        ax.vlines(x, r["min"], r["max"], color=palette[GLUON_LEAD], linewidth=1.2)
        ax.plot(x, r["median"], marker="o", markersize=6, color=palette[GLUON_LEAD],
                markerfacecolor="white" if one else palette[GLUON_LEAD], markeredgewidth=1.2)
        ax.text(x + 0.12, r["median"], f"{r['median']:.0f}", ha="left", va="center", fontsize=7)
    ax.set_xticks(range(len(order)), order)
    ax.set(xlim=(-0.5, len(order) - 0.5), ylim=(lo - pad, hi + pad),
           xlabel="Qwen3 layout (query / key-value heads)",
           ylabel=f"{GLUON_LEAD}'s time, % of cuDNN's" if ax is axes[1][0] else "")
    ax.set_title(f"{GLUON_LEAD} (the Gluon leader) alone, linear axis", fontsize=8)
    ax.grid(axis="x", visible=False)
handles = []
if (g["size"] > 1).any():
    handles.append(plt.Line2D([], [], color=palette[GLUON_LEAD], marker="o", linestyle="",
                              label=f"{GLUON_LEAD}: median over runs,\nwhisker: lowest to highest run"))
if (g["size"] == 1).any():
    handles.append(plt.Line2D([], [], color=palette[GLUON_LEAD], marker="o", markerfacecolor="white", linestyle="",
                              label=f"{GLUON_LEAD}, hollow: one run's\nfigure, not a median"))
handles += LINES
axes[1][-1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=7)
c.save(fig, a.out)
