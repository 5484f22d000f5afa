"""Nsight Compute per stage at the headline shape (median over runs; the article's figures as red marks where it
gives them): L2 hit rate, DRAM bytes read (MB = 10^6 bytes), occupancy (achieved as bars, theoretical as dashes,
ours black and the article's red, the article's computed from the blocks per SM it gives), registers, shared memory
per block (KB = 1000 bytes), executed instructions."""
import matplotlib.pyplot as plt
import pandas as pd

from pipeline import plotting as c
from pipeline.selection import STAGES, TORCH

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
ncu = pd.read_csv(a.input.ncu, usecols=["run", "variant", "metric", "instance", "value"])
ncu = ncu[ncu.instance.isna() & ncu.variant.isin(STAGES + TORCH[:2])]
art = pd.read_csv(a.input.article_ncu)
art = art[art.kind == "absolute"]
panels = [  # (metric, title, scale to the axis unit, article unit -> same unit)
    ("lts__t_sector_hit_rate.pct", "L2 hit rate (%)", 1, {"%": 1}),
    ("dram__bytes_read.sum", "DRAM read (MB)", 1e-6, {"MB": 1}),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy (%)", 1, {}),
    ("launch__registers_per_thread", "registers / thread", 1, {"register/thread": 1}),
    ("launch__shared_mem_per_block_dynamic", "shared memory / block (KB)", 1e-3, {"KB": 1}),
    ("smsp__inst_executed.sum", "executed instructions (M)", 1e-6, {}),
]
order = STAGES + TORCH[:2]
fig, axes = plt.subplots(2, 3, figsize=(9, 5), sharex=True)
for ax, (metric, title, scale, art_units) in zip(axes.flat, panels):
    m = ncu[ncu.metric == metric].groupby("variant").value.median().reindex(order) * scale
    ax.bar(range(len(order)), m.values, color=["#1f77b4"] * 8 + ["#7f7f7f"] * 2)
    pts = art[(art.metric == metric) & (metric != "sm__maximum_warps_per_active_cycle_pct")]
    for _, r in pts.iterrows():
        if r.unit in art_units and r.stage in STAGES:
            ax.plot(order.index(r.stage), r.value * art_units[r.unit], "o", color="#d62728", markersize=5)
    if metric == "sm__warps_active.avg.pct_of_peak_sustained_active":
        theo = ncu[ncu.metric == "sm__maximum_warps_per_active_cycle_pct"].groupby("variant").value.median()
        ax.plot(range(len(order)), theo.reindex(order).values, "_", color="black", markersize=12,
                label="theoretical, ours")
        at_tile = art.claim != "C9"                     # the article's C9 figure is at another tile (64x64)
        blocks = art[(art.metric == "blocks_per_sm") & at_tile].drop_duplicates("stage").set_index("stage").value
        per_sm = art[art.metric == "launch__occupancy_limit_warps"].value.iloc[0]   # blocks of 4 warps per SM
        art_theo = (100 * blocks / per_sm).reindex([s for s in STAGES if s in blocks.index])
        ax.plot([order.index(s) for s in art_theo.index], art_theo.values, "_", color="#d62728", markersize=12,
                markeredgewidth=2, label="theoretical, article")
        ax.set_ylim(0, 45)
        ax.legend(fontsize=7, loc="upper right", ncol=1)
    ax.set_title(title, fontsize=9)
    ax.set_xticks(range(len(order)), [o.replace("torch-", "t-") for o in order], rotation=45, fontsize=7)
c.save(fig, a.out)
