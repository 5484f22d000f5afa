"""Throughput against sequence length (useful FLOPs: the causal half of 4*N^2*D per head, over the median time),
each stage and each PyTorch backend, with the measured dense float16 matrix-product rate as the roof."""
import common as c
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

a = c.args(__doc__)
pr = c.per_run(a.agg)
sweep = pr[pr.set.str.contains("n_sweep") & (pr.H == 16) & (pr.dtype == "float16")]
sweep = sweep[(sweep.impl != "triton") | (sweep.variant.isin(c.STAGES) & c.where(sweep, **c.ARTICLE_TILE))]
sweep = sweep.assign(tflops=4 * sweep.B * sweep.H * sweep.N ** 2 * sweep.D / 2 / (sweep.time_us * 1e-6) / 1e12)
med = sweep.groupby(["variant", "N"]).tflops.median().reset_index()
fig, ax = plt.subplots(figsize=(7, 3.8))
palette = dict(zip(c.STAGES, sns.color_palette("viridis", 8)))
palette.update({"torch-flash": "#d62728", "torch-default": "#ff7f0e", "torch-cudnn": "#8c564b"})
sns.lineplot(med, x="N", y="tflops", hue="variant", palette=palette, marker="o", ax=ax,
             hue_order=c.STAGES + c.TORCH)
ceil = pd.read_csv(a.agg / "ceilings.csv")
if not ceil.empty:
    peak = ceil[(ceil.quantity == "matmul_tflops") & (ceil.dtype == "float16")].value.median()
    ax.axhline(peak, color="black", linestyle="--", linewidth=0.8)
    ax.text(sweep.N.max(), peak * 0.9, f"dense fp16 matmul, measured: {peak:.0f} TFLOP/s", fontsize=7,
            ha="right", va="top")
ax.set(xscale="log", yscale="log", xlabel="sequence length N (B=2, H=16, H_kv=8, D=128, causal)",
       ylabel="TFLOP/s")
ax.set_xticks(sorted(sweep.N.unique()), [str(n) for n in sorted(sweep.N.unique())])
ax.legend(fontsize=7, title=None, bbox_to_anchor=(1.01, 1), loc="upper left")
c.save(fig, a.out)
