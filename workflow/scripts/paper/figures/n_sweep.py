"""Time over cuDNN's time (torch-cudnn) in the same run against sequence length, at the headline layout in float16:
each of the article's stages (at its tile), our leading Triton stage (the fastest Triton stage across the N sweep,
workflow/scripts/aggregate/ours.py; at its own tile) and the other PyTorch backends; the ratio on a linear axis
(1: cuDNN's time, above it slower), N on a doubling axis. Lines: the median over runs of the per-run ratios; bands:
lowest to highest run."""
import matplotlib.pyplot as plt
import pandas as pd

from pipeline import plotting as c

from pipeline.selection import HEADLINE, STAGES, TORCH, where

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
LEAD = c.leader(a.input.leader)
pr = pd.read_csv(a.input.per_run)
sweep = pr[pr.set.str.contains("n_sweep") & where(pr, **{k: v for k, v in HEADLINE.items() if k != "N"})]
sweep = sweep[sweep.torch | (sweep.article_stage & sweep.article_tile) | ((sweep.variant == LEAD) & sweep.own_tile)]
band = c.run_band(c.over_cudnn(sweep), "x_cudnn", ["variant", "N"])
style = {s: dict(color=col, marker=m, linestyle="-") for s, col, m in zip(STAGES, c.QUALITATIVE, c.MARKERS)}
style[LEAD] = dict(color=c.LAST_COLOR, marker="o", linestyle="-", linewidth=2.0)
style.update({t: dict(color=c.TORCH_COLORS[t], marker="o", linestyle=(0, (4, 2))) for t in TORCH})
shown = [v for v in STAGES + [LEAD] + TORCH if v in set(band.variant) and v != "torch-cudnn"]
fig, ax = plt.subplots(figsize=(7, 4.2))
for v in shown:
    d = band[band.variant == v].sort_values("N")
    kw = dict(linewidth=1.2, markersize=4) | style[v]
    ax.fill_between(d.N, d.lo, d.hi, color=kw["color"], alpha=0.2, linewidth=0)
    ax.plot(d.N, d["median"], label=v, **kw)
ax.axhline(1.0, color=c.TORCH_COLORS["torch-cudnn"], linestyle="--", linewidth=0.9, label="torch-cudnn (1)")
ax.set_xscale("log", base=2)
ax.set_xticks(sorted(sweep.N.unique()), [str(n) for n in sorted(sweep.N.unique())])
ax.xaxis.set_minor_locator(plt.NullLocator())
ax.set_ylim(bottom=0)
ax.set(xlabel="sequence length N (B=2, H=16, H_kv=8, D=128, causal)", ylabel="time / cuDNN's time (same run)")
ax.legend(fontsize=7, title=None, bbox_to_anchor=(1.01, 1), loc="upper left")
c.save(fig, a.out)
