"""The stages at the headline shape, the article's (v0 ... v7, at its tile) and then ours (at their own tiles), as a
percentage of cuDNN's time in the same run (the kernels alone, without cuDNN's memset; median over the runs that
hold the stage; whiskers: lowest to highest run; hatched: a stage measured in one run, its bar that run's figure, not a
median). Each stage is drawn as a step from the one before, except where a new kernel begins: our first Gluon stage
(v19) is not a switch on top of the last Triton stage but the Triton stage whose schedule it takes into Gluon (v13)
written anew, so its bar starts from zero after a break (a dashed vertical line), with that Triton stage's level
dotted across it, and the Gluon stages step on from it. Dashed horizontal lines: cuDNN (100%) and FlashAttention-2
(torch-flash), median over runs."""
import matplotlib.pyplot as plt
import pandas as pd

from kernels.stages import GLUON_BASE, STAGES as REGISTRY

from pipeline import plotting as c
from pipeline.selection import ALL_STAGES, BASELINE, GLUON_STAGES, RATIO_TIME, STAGES, TRITON_OURS

GLUON_COLOR = "#8c564b"          # the Gluon stages, brown as in the sweep's figure

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
pr = pd.read_csv(a.input.per_run)
h = pr[pr.headline & pr.paper_row]
t = h.pivot_table(index="run", columns="variant", values=RATIO_TIME, aggfunc="median")   # the kernels alone
pct = 100 * t.div(t["torch-cudnn"], axis=0)
stages = [s for s in ALL_STAGES if s in pct]
# where a new kernel begins (a bar from zero, not a step): the first stage, and the first Gluon stage, which takes the
# schedule of the Triton stage whose switches it fixes (GLUON_BASE: v13) into Gluon
gluon_first = next((s for s in stages if s in GLUON_STAGES), None)
gluon_from = next((s for s in TRITON_OURS if REGISTRY[s].switches == GLUON_BASE), None)
new_base = {stages[0], gluon_first}
fig, ax = plt.subplots(figsize=(8.5, 3.6))
flash = pct["torch-flash"].median()
LABEL_H = 0.05 * pct[BASELINE].median() * 1.2          # 7 pt of the axis' height, about
prev = None
for i, st in enumerate(stages):
    runs = pct[st].dropna()
    now = runs.median()
    if st in new_base:
        prev = None
    color = ("#7f7f7f" if st == BASELINE else "#1f77b4" if st in STAGES else GLUON_COLOR if st in GLUON_STAGES
             else c.LAST_COLOR)
    hatch = c.ONE_RUN_HATCH if len(runs) == 1 else None          # one run's figure, not a median
    if prev is None:
        ax.bar(i, now, color=color, hatch=hatch, edgecolor="white" if hatch else color)
    else:
        ax.bar(i, now - prev, bottom=prev, color=color, alpha=1.0 if now < prev else 0.45, hatch=hatch,
               edgecolor="#d62728" if now > prev else ("white" if hatch else color), linewidth=0.8)
        ax.plot([i - 1.4, i + 0.4], [prev, prev], color="black", linewidth=0.5)
    ax.vlines(i, runs.min(), runs.max(), color="black", linewidth=1)
    # The label above the bar, or below it where a reference line (cuDNN's 100%, FlashAttention-2's) would cross it
    # (a label spans about LABEL_H percent of the axis); below the bar a whisker may pass, so a white box. A bar from
    # zero has no room below: its label goes inside its top.
    top, bottom = max(now, prev or 0), min(now, prev if prev is not None else 0)
    if any(top <= ref <= top + 6 + LABEL_H for ref in (100, flash)):
        y, va = (min(bottom, runs.min()) - 4, "top") if prev is not None else (min(now, runs.min()) - 3, "top")
    else:
        y, va = max(top, runs.max()) + 4, "bottom"
    ax.text(i, y, f"{now:.0f}", ha="center", va=va, fontsize=7, zorder=5,
            bbox=dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none"))
    prev = now
# the new kernel against the Triton stage whose schedule it takes: that stage's level across the new base's bar
note_top = None     # the top of the note on the new kernel's base, which the one-run label must clear
if gluon_first is not None and gluon_from in pct:
    i, level = stages.index(gluon_first), pct[gluon_from].median()
    note_top = level + 0.13 * pct[BASELINE].median() + 1.5 * LABEL_H     # its two lines, centred on xytext
    ax.plot([i - 0.45, i + 0.45], [level, level], color="black", linewidth=1.4, linestyle=":", zorder=6)
    ax.annotate(f"dotted: {gluon_from} ({level:.0f}), whose schedule\n{gluon_first} takes into Gluon",
                xy=(i + 0.45, level), xytext=(i + 1.2, level + 0.13 * pct[BASELINE].median()), fontsize=7,
                ha="left", va="center", arrowprops=dict(arrowstyle="-", color="0.3", linewidth=0.6),
                bbox=dict(boxstyle="square,pad=0.15", facecolor="white", edgecolor="none"))
# the stages measured in one run, named over their bars (a thin bar's hatching is too small to see)
single = [i for i, st in enumerate(stages) if pct[st].notna().sum() == 1]
if single:
    # above each bar's top (a step's bar starts at the stage before) and its value label
    top_single = max(max(pct[stages[i]].median(), pct[stages[i - 1]].median() if i and stages[i] not in new_base
                         else 0) for i in single)
    y = top_single + 6 + 2 * LABEL_H
    if note_top is not None:                                     # above the note, which spans to the right
        y = max(y, note_top + LABEL_H)
    while any(abs(y - ref) < LABEL_H for ref in (100, flash)):     # off the reference lines
        y += LABEL_H
    ax.plot([min(single) - 0.4, max(single) + 0.4], [y, y], color="0.3", linewidth=0.8)
    ax.text((min(single) + max(single)) / 2, y + 2, "one run each (hatched)", ha="center", va="bottom", fontsize=7)
ax.axhline(100, color="black", linestyle="--", linewidth=0.8)
ax.axhline(flash, color="0.45", linestyle="--", linewidth=0.8)
ax.text(-0.4 + 1, 100 + 4, "cuDNN (torch-cudnn): 100%", ha="left", fontsize=7)
ax.text(-0.4 + 1, flash + 4, f"FlashAttention-2 (torch-flash): {flash:.0f}%", ha="left", fontsize=7)
# the sections: the article's, ours in Triton, and (after a break: a new kernel) ours in Gluon
bounds = [0, len(STAGES)] + ([stages.index(gluon_first)] if gluon_first else []) + [len(stages)]
names = ["the article's stages", "ours in Triton, on Hopper", "ours in Gluon: a new kernel"]
for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
    if k:
        ax.axvline(lo - 0.5, color="0.6" if k == 1 else "0.3", linewidth=0.8 if k == 1 else 1.4,
                   linestyle="-" if k == 1 else (0, (4, 2)))
    ax.text((lo + hi) / 2 - 0.5, pct[BASELINE].median() * 1.08, names[k], ha="center", fontsize=8)
ax.set_xticks(range(len(stages)), stages)
ax.tick_params(axis="x", labelsize=7)
ax.set_ylabel("time, % of cuDNN's (same run)")
ax.set_ylim(0, pct[BASELINE].median() * 1.2)
c.save(fig, a.out)
