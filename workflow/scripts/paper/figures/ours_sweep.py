"""Against sequence length, float16 (solid) and bfloat16 (dashed), at the headline layout: left, the article's last
stage's, our leading stage's (orange) and our last stage's time over cuDNN's (torch-cudnn) in the same run, the
kernels alone (per_n.csv's x_cudnn; below 1: faster than cuDNN; red dashed line: the goal for our Gluon stages,
pipeline.selection.GOAL_X), our other stages thin and grey behind them; right, useful TFLOP/s as a percentage of
the dense matrix-product rate measured in the same run and dtype (ceilings; dotted line: 100%, which a kernel may
pass, the roof being a measured rate). Median over runs, bands: lowest to highest run."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import FINAL, GOAL_X, OUR_STAGES

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
p = pd.read_csv(a.input.per_n)
shown = [FINAL] + [s for s in OUR_STAGES if s in set(p.variant)]
lines = shown + ["torch-flash", "torch-cudnn"]
p = p[p.variant.isin(lines)].assign(dtype=lambda d: d.dtype.map({"float16": "fp16", "bfloat16": "bf16"}))
LEAD = c.leader(a.input.leader)            # our fastest across lengths, in orange
# In front, with bands: the article's last stage, our leading and our last stage, the torch backends; behind them,
# thin and without bands, the rest of our stages (the stage table and the per-N table give their numbers).
front = [v for v in dict.fromkeys([FINAL, LEAD, shown[-1], "torch-flash", "torch-cudnn"]) if v in set(p.variant)]
behind = [s for s in shown if s not in front]
palette = {FINAL: "#1f77b4", LEAD: c.LAST_COLOR, **c.TORCH_COLORS}
palette.setdefault(shown[-1], "#8c564b")
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
for ax, col, label in ((left, "x_cudnn", "time / cuDNN's time (same run)"),
                       (right, "pct_roof", "% of the measured matrix roof")):
    data = p if col == "pct_roof" else p[p.variant != "torch-cudnn"]
    back = data[data.variant.isin(behind)].groupby(["variant", "dtype", "N"], as_index=False)[col].median()
    if not back.empty:
        sns.lineplot(back, x="N", y=col, units="variant", style="dtype", style_order=["fp16", "bf16"],
                     estimator=None, color="#b0b0b0", linewidth=0.7, alpha=0.7, ax=ax, legend=False)
    sns.lineplot(data[data.variant.isin(front)], x="N", y=col, hue="variant", style="dtype",
                 hue_order=[v for v in front if v in set(data.variant)], style_order=["fp16", "bf16"],
                 palette=palette, estimator="median", errorbar=("pi", 100), marker="o", markersize=4, linewidth=1.3,
                 ax=ax, legend=ax is right)
    ax.set(xscale="log", xlabel="sequence length N (B=2, H=16, H_kv=8, D=128)", ylabel=label)
    ax.set_xticks(sorted(p.N.unique()), [str(n) for n in sorted(p.N.unique())])
left.axhline(1.0, color="black", linestyle="--", linewidth=0.8)
# the Gluon goal (pipeline.selection.GOAL_X: the best Gluon stage at most that times cuDNN's time at every N)
left.axhline(GOAL_X, color="#d62728", linestyle="--", linewidth=0.9, zorder=1)
left.set_yscale("log")
left.set_ylim(0.5, None)
# its label in the empty band under the lines (they fill 0.75 ... 1.5 at every N), an arrow up to the line
left.annotate(f"goal for our Gluon stages: {GOAL_X:g} × cuDNN's time", xy=(0.1, GOAL_X), xytext=(0.04, 0.6),
              xycoords=left.get_yaxis_transform(), textcoords=left.get_yaxis_transform(), fontsize=7,
              color="#d62728", ha="left", va="center", arrowprops=dict(arrowstyle="->", color="#d62728", lw=0.7))
left.yaxis.set_minor_formatter(plt.NullFormatter())
left.set_yticks([0.5, 0.75, 1, 1.5, 2, 3, 4], ["0.5", "0.75", "1", "1.5", "2", "3", "4"])
# the measured roof is a measured rate, not a bound: a kernel may pass it, so the axis reaches the highest point drawn
# (a run's figure in the front lines' bands, a median behind them), and a dotted line marks 100%
drawn = pd.concat([p[p.variant.isin(front)].pct_roof,
                   p[p.variant.isin(behind)].groupby(["variant", "dtype", "N"]).pct_roof.median()])
right.set_ylim(0, max(100.0, float(drawn.max())) * 1.04)
right.axhline(100, color="black", linestyle=":", linewidth=0.8, zorder=1)
right.text(0.02, 100, "the measured roof (100%)", transform=right.get_yaxis_transform(), ha="left", va="bottom",
           fontsize=7)
handles, labels = right.get_legend_handles_labels()
if behind:
    handles.append(plt.Line2D([], [], color="#b0b0b0", linewidth=0.7))
    labels.append(f"our other stages\n({behind[0]}..{behind[-1]}, median of runs)")
right.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=7)
c.save(fig, a.out)
