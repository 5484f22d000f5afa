"""Time of the final stage by tile (BM x BN), with and without warp specialization, for 4 and 8 warps, the best
pipeline depth of each (median over runs; blank: Triton refuses the tile)."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import FINAL, FINAL_NO_WS

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
pr = pd.read_csv(a.input.per_run)
t = pr[pr.variant.isin([FINAL, FINAL_NO_WS]) & pr.headline]
t = t.astype({"block_m": int, "block_n": int, "num_warps": int, "num_stages": int})
med = t.groupby(["variant", "num_warps", "block_m", "block_n", "num_stages"]).time_us.median().reset_index()
best = med.groupby(["variant", "num_warps", "block_m", "block_n"]).time_us.min().reset_index()
vmin, vmax = best.time_us.min(), best.time_us.quantile(0.95)
fig, axes = plt.subplots(2, 2, figsize=(8, 6.4))
for i, variant in enumerate([FINAL, FINAL_NO_WS]):
    for j, warps in enumerate([4, 8]):
        grid = best[(best.variant == variant) & (best.num_warps == warps)].pivot(
            index="block_m", columns="block_n", values="time_us")
        sns.heatmap(grid, annot=True, fmt=".0f", cmap="viridis_r", vmin=vmin, vmax=vmax, ax=axes[i, j],
                    cbar=False, annot_kws={"fontsize": 8})
        label = f"{FINAL} (warp-specialized)" if variant == FINAL else f"{FINAL} without warp specialization"
        axes[i, j].set_title(f"{label}, {warps} warps (µs)", fontsize=9)
        axes[i, j].set(xlabel="BLOCK_N", ylabel="BLOCK_M")
c.save(fig, a.out)
