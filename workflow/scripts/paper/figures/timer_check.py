"""The kernel timer checked two ways: (left) the difference between its median and the median of Nsight Compute's
gpu__time_duration for every profiled entry of every run, with the stated bound as a band, each point coloured and
shaped by its kernel family (the article's stages, ours in Triton, ours in Gluon, PyTorch's backends); (right) the
time of each profiled entry after a host sleep before its launch, by the kernel timer and by CUDA events around the
call (median over runs)."""
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import GLUON_STAGES, STAGES, TORCH, TRITON_OURS

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
cc = pd.read_csv(a.input.crosscheck)
cc = cc[cc.timed].copy()
tc = pd.read_csv(a.input.timer_check)
bound = cc.max_pct.iloc[0]
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4.6))

left.axhspan(-bound, bound, color="0.9")
left.axhline(0, color="0.5", lw=0.8)
# each entry by its kernel family, in the colours of the other figures (the article's stages blue, ours in Triton
# orange, ours in Gluon brown, PyTorch grey) and a marker each, for print in grey; an article's ablation (v7+...,
# v7-...) is of the family of the stage it changes
FAMILIES = {"the article's stages": (STAGES, "#1f77b4", "o"), "ours in Triton": (TRITON_OURS, c.LAST_COLOR, "s"),
            "ours in Gluon": (GLUON_STAGES, "#8c564b", "D"), "PyTorch": (TORCH, "0.45", "^")}


def base(variant: str) -> str:
    """The stage an entry is of (v7 for v7+prescale_q), or the PyTorch backend."""
    m = re.match(r"v\d+", variant)
    return variant if variant in TORCH else m.group(0) if m else variant


def family(variant: str) -> str:
    found = [f for f, (members, _, _) in FAMILIES.items() if base(variant) in members]
    if len(found) != 1:
        raise ValueError(f"crosscheck.csv: the entry {variant!r} is of no kernel family of the figure")
    return found[0]


cc["family"] = cc.variant.map(family)
# the families with the most points first, so that the smaller ones stay in sight
for fam in cc.family.value_counts().index:
    members, color, marker = FAMILIES[fam]
    d = cc[cc.family == fam]
    left.scatter(d.ncu_us, d.diff_pct, s=16, marker=marker, color=color, edgecolors="white", linewidths=0.3,
                 alpha=0.85, zorder=3)
reach = max(1.6 * bound, 1.1 * float(cc.diff_pct.abs().max()))
left.set(xscale="log", xlabel="Nsight Compute gpu__time_duration (µs, median of launches)",
         ylabel="kernel timer - Nsight (%)", ylim=(-reach, reach), title="Timer against Nsight Compute")
handles = [plt.Rectangle((0, 0), 1, 1, color="0.9", label=f"bound $\\pm${bound:g}%")]
for fam, (members, color, marker) in FAMILIES.items():
    held = set(cc[cc.family == fam].variant.map(base))
    shown = [v for v in members if v in held]                       # in the registry's order
    if shown:
        names = ", ".join(shown) if fam == "PyTorch" else f"{shown[0]}–{shown[-1]}" if len(shown) > 1 else shown[0]
        handles.append(plt.Line2D([], [], linestyle="", marker=marker, color=color, label=f"{fam} ({names})"))
left.legend(handles=handles, fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.18))

tc["entry"] = tc.variant + np.where(tc.impl == "triton", " " + tc.block_m.fillna(0).astype(int).astype(str) + "x"
                                    + tc.block_n.fillna(0).astype(int).astype(str), "")
long = pd.concat([tc.assign(timer="kernel timer", us=tc.time_us), tc.assign(timer="CUDA events", us=tc.event_us)])
med = long.groupby(["timer", "sleep_us", "entry"], as_index=False).us.median()
# colours of neither kernel family on the left
sns.lineplot(data=med, x="sleep_us", y="us", hue="timer", units="entry", estimator=None, ax=right, lw=0.8,
             marker="o", markersize=3, palette={"CUDA events": "#9467bd", "kernel timer": "#2ca02c"})
right.set(yscale="log", xlabel="host sleep before each launch (µs)", ylabel="measured time (µs)",
          title="Host time: events see it, the kernel timer does not")
right.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.18))
c.save(fig, a.out)
