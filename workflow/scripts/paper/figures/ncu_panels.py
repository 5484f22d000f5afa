"""Nsight Compute per stage at the headline shape (median over runs; the article's figures as red marks where it
gives them): L2 hit rate, DRAM bytes read (MB = 10^6 bytes), occupancy, registers, shared memory per block
(KB = 1000 bytes), executed instructions. Occupancy has two panels, one per denominator: ours, achieved (bars) and
theoretical (black dashes), as a percentage of the H200 SM's warps (Nsight's device__attribute_max_warps_per_multiprocessor);
the article's theoretical (red dashes), computed from the blocks per SM it gives, as a percentage of the warps its GPU
holds per SM (its occupancy limit in blocks times the warps of its tile's block)."""
import matplotlib.pyplot as plt
import pandas as pd

from pipeline import plotting as c
from pipeline.selection import ARTICLE_TILE, STAGES, TORCH

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
ncu = pd.read_csv(a.input.ncu, usecols=["run", "variant", "metric", "instance", "value"])
sm_warps = ncu[ncu.metric == "device__attribute_max_warps_per_multiprocessor"].value.median()
ncu = ncu[ncu.instance.isna() & ncu.variant.isin(STAGES + TORCH[:2])]
art = pd.read_csv(a.input.article_ncu)
art = art[art.kind == "absolute"]
OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"
ART_OCC = "article: theoretical occupancy"
panels = [  # (metric, title, scale to the axis unit, article unit -> same unit)
    ("lts__t_sector_hit_rate.pct", "L2 hit rate (%)", 1, {"%": 1}),
    ("dram__bytes_read.sum", "DRAM read (MB)", 1e-6, {"MB": 1}),
    (OCC, f"occupancy, ours:\n% of the H200 SM's {sm_warps:.0f} warps", 1, {}),
    (ART_OCC, "", 1, {}),
    ("launch__registers_per_thread", "registers / thread", 1, {"register/thread": 1}),
    ("launch__shared_mem_per_block_dynamic", "shared memory / block (KB)", 1e-3, {"KB": 1}),
    ("smsp__inst_executed.sum", "executed instructions (M)", 1e-6, {}),
]
order = STAGES + TORCH[:2]
fig, axes = plt.subplots(2, 4, figsize=(11, 5.2), sharex=True)
for ax, (metric, title, scale, art_units) in zip(axes.flat, panels):
    if metric == ART_OCC:
        at_tile = art.claim != "C9"                     # the article's C9 figure is at another tile (64x64)
        blocks = art[(art.metric == "blocks_per_sm") & at_tile].drop_duplicates("stage").set_index("stage").value
        per_sm = art[art.metric == "launch__occupancy_limit_warps"].value.iloc[0]   # blocks of a tile's warps per SM
        art_theo = (100 * blocks / per_sm).reindex([s for s in STAGES if s in blocks.index])
        ax.plot([order.index(s) for s in art_theo.index], art_theo.values, "_", color="#d62728", markersize=12,
                markeredgewidth=2)
        ax.set_ylim(0, 45)
        ax.set_title(f"occupancy, article (theoretical):\n% of its GPU's {per_sm * ARTICLE_TILE['num_warps']:.0f}"
                     " warps per SM", fontsize=9)
        ax.set_xticks(range(len(order)), [o.replace("torch-", "t-") for o in order], rotation=45, fontsize=7)
        ax.tick_params(labelbottom=True)
        continue
    m = ncu[ncu.metric == metric].groupby("variant").value.median().reindex(order) * scale
    ax.bar(range(len(order)), m.values, color=["#1f77b4"] * 8 + ["#7f7f7f"] * 2)
    pts = art[(art.metric == metric) & (metric != "sm__maximum_warps_per_active_cycle_pct")]
    for _, r in pts.iterrows():
        if r.unit in art_units and r.stage in STAGES:
            ax.plot(order.index(r.stage), r.value * art_units[r.unit], "o", color="#d62728", markersize=5)
    if metric == OCC:
        theo = ncu[ncu.metric == "sm__maximum_warps_per_active_cycle_pct"].groupby("variant").value.median()
        ax.plot(range(len(order)), theo.reindex(order).values, "_", color="black", markersize=12)
        ax.set_ylim(0, 45)
    ax.set_title(title, fontsize=9)
    ax.set_xticks(range(len(order)), [o.replace("torch-", "t-") for o in order], rotation=45, fontsize=7)
key = axes.flat[-1]
key.axis("off")
key.legend(handles=[plt.Rectangle((0, 0), 1, 1, color="#1f77b4", label="ours (median over runs)"),
                    plt.Rectangle((0, 0), 1, 1, color="#7f7f7f", label="PyTorch (t-flash, t-default)"),
                    plt.Line2D([], [], marker="o", color="#d62728", linestyle="", label="the article's figure"),
                    plt.Line2D([], [], marker="_", color="black", linestyle="", markersize=12,
                               label="theoretical occupancy, ours"),
                    plt.Line2D([], [], marker="_", color="#d62728", linestyle="", markersize=12, markeredgewidth=2,
                               label="theoretical occupancy, article")],
           loc="center", fontsize=8, frameon=False)
key.tick_params(labelbottom=False)
c.save(fig, a.out)
