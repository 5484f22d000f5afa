"""Throughput against sequence length (useful FLOPs, kernels.shapes.attention_flops, over the median time),
each of the article's stages, our leading stage (the fastest of ours across the N sweep, workflow/scripts/aggregate/ours.py; at its own tile) and each PyTorch backend, with the measured dense
float16 matrix-product rate as the roof."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from kernels.shapes import attention_flops

from pipeline.selection import HEADLINE, STAGES, TORCH, where

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
LEAD = c.leader(a.input.leader)
pr = pd.read_csv(a.input.per_run)
sweep = pr[pr.set.str.contains("n_sweep") & where(pr, **{k: v for k, v in HEADLINE.items() if k != "N"})]
sweep = sweep[sweep.torch | (sweep.article_stage & sweep.article_tile) | ((sweep.variant == LEAD) & sweep.own_tile)]
SHOWN = STAGES + [LEAD]
sweep = sweep.assign(tflops=attention_flops(sweep.B, sweep.H, sweep.N, sweep.D, sweep.causal)
                     / (sweep.time_us * 1e-6) / 1e12)
med = sweep.groupby(["variant", "N"]).tflops.median().reset_index()
fig, ax = plt.subplots(figsize=(7, 3.8))
palette = dict(zip(STAGES, sns.color_palette("crest", len(STAGES))))
palette[LEAD] = c.LAST_COLOR
palette.update(c.TORCH_COLORS)
dashes = {**{s: "" for s in SHOWN}, **{t: (4, 2) for t in TORCH}}
shown = [v for v in SHOWN + TORCH if v in set(med.variant)]
sns.lineplot(med, x="N", y="tflops", hue="variant", style="variant", palette=palette, dashes=dashes, marker="o",
             ax=ax, hue_order=shown, style_order=shown, linewidth=1.0)
ceil = pd.read_csv(a.input.ceilings)
if not ceil.empty:
    peak = ceil[(ceil.quantity == "matmul_tflops") & (ceil.dtype == "float16")].value.median()
    ax.axhline(peak, color="black", linestyle="--", linewidth=0.8)
    ax.text(sweep.N.min(), peak * 1.08, f"dense fp16 matmul, measured: {peak:.0f} TFLOP/s", fontsize=7,
            ha="left", va="bottom")
    ax.set_ylim(top=peak * 1.6)
ax.set(xscale="log", yscale="log", xlabel="sequence length N (B=2, H=16, H_kv=8, D=128, causal)",
       ylabel="TFLOP/s")
ax.set_xticks(sorted(sweep.N.unique()), [str(n) for n in sorted(sweep.N.unique())])
ax.legend(fontsize=7, title=None, bbox_to_anchor=(1.01, 1), loc="upper left")
c.save(fig, a.out)
