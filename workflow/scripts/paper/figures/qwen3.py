"""The attention layouts of the Qwen3 models (B=2, causal, D=128) at each N of plan.qwen3_N: the article's first,
causal-skip and final stages (at its tile), our leading Triton stage (the fastest Triton stage across the N sweep,
workflow/scripts/aggregate/ours.py; at its own tile), the Gluon leader (gluon_leader.csv, brown; at its own tile;
the runs that timed it) and PyTorch's backends, as a percentage of cuDNN's time in the
same run (the kernels alone; median over runs, whiskers: lowest to highest run)."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import BASELINE, CAUSAL_SKIP_STAGE, FINAL, HEADLINE, RATIO_TIME, TORCH

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
fig, axes = plt.subplots(1, len(ns), figsize=(4.6 * len(ns), 3.4), sharey=True, squeeze=False)
for ax, n in zip(axes[0], ns):
    sns.barplot(q[q.N == n], x="layout", y="pct", hue="variant", order=order, hue_order=hue, estimator="median",
                errorbar=("pi", 100), ax=ax, palette=palette, legend=ax is axes[0][-1])
    ax.axhline(100, color="black", linestyle="--", linewidth=0.8)
    ax.set(yscale="log", title=f"N = {n}", xlabel="Qwen3 layout (query / key-value heads)",
           ylabel="time, % of cuDNN's (same run)")
    ax.set_yticks([50, 100, 200, 400, 800, 1600], ["50", "100", "200", "400", "800", "1600"])
    ax.yaxis.set_minor_formatter(plt.NullFormatter())
sns.move_legend(axes[0][-1], "upper left", bbox_to_anchor=(1.02, 1), fontsize=7, title=None)
c.save(fig, a.out)
