"""The stages at the headline shape, the article's (v0 ... v7, at its tile) and then ours (at their own tiles), as a
percentage of cuDNN's time in the same run (the kernels alone, without cuDNN's memset; median over the runs that
hold the stage; whiskers: lowest to highest run; under each stage, the number of runs that hold it; a stage measured
in one run is hatched and marked "1 run" over its bar, its bar that run's figure, not a median). Each stage is drawn
as a step from the one before, except where a new kernel begins: our first Gluon stage (v19) is not a switch on top
of the last Triton stage but the Triton stage whose schedule it takes into Gluon (v13) written anew, so the Gluon
stages have a panel of their own, on their own y axis (not from zero, so that their steps show): v19's bar starts
from zero (cut at the axis' foot), with that Triton stage's level dotted across it, and the Gluon stages step on from
it. Dashed horizontal lines: cuDNN (100%) and FlashAttention-2 (torch-flash), median over runs."""
import matplotlib.pyplot as plt
import pandas as pd

from kernels.stages import GLUON_BASE, STAGES as REGISTRY

from pipeline import plotting as c
from pipeline.selection import ALL_STAGES, BASELINE, GLUON_STAGES, RATIO_TIME, STAGES, TRITON_OURS

GLUON_COLOR = "#8c564b"          # the Gluon stages, brown as in the sweep's figure
ONE_RUN_COLOR = "#d62728"        # the mark of a stage measured in one run

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
pr = pd.read_csv(a.input.per_run)
h = pr[pr.headline & pr.paper_row]
t = h.pivot_table(index="run", columns="variant", values=RATIO_TIME, aggfunc="median")   # the kernels alone
pct = 100 * t.div(t["torch-cudnn"], axis=0)
stages = [s for s in ALL_STAGES if s in pct]
runs_of = {st: int(pct[st].notna().sum()) for st in stages}
# where a new kernel begins (a bar from zero, not a step): the first stage, and the first Gluon stage, which takes the
# schedule of the Triton stage whose switches it fixes (GLUON_BASE: v13) into Gluon; the Gluon stages get their own
# panel and y axis, their steps (a few percent of cuDNN's time) being too small to see on the article's scale
gluon_first = next((s for s in stages if s in GLUON_STAGES), None)
gluon_from = next((s for s in TRITON_OURS if REGISTRY[s].switches == GLUON_BASE), None)
new_base = {stages[0], gluon_first}
split = stages.index(gluon_first) if gluon_first else len(stages)
groups = [stages[:split]] + ([stages[split:]] if gluon_first else [])
fig, axes = plt.subplots(1, len(groups), figsize=(9.5, 3.9), squeeze=False,
                         gridspec_kw=dict(width_ratios=[len(g) for g in groups]))
axes = list(axes[0])
flash = pct["torch-flash"].median()
top_of = pct[BASELINE].median() * 1.2
# the y range of each panel: the first from zero; the Gluon panel over its stages' whiskers, the level of the Triton
# stage it starts from and cuDNN's 100%, with room above for the labels
limits = [(0.0, top_of)]
if gluon_first:
    g = pct[groups[1]]
    levels = [g.min().min(), g.max().max(), 100.0] + ([pct[gluon_from].median()] if gluon_from in pct else [])
    lo, hi = min(levels), max(levels)
    span = hi - lo
    limits.append((lo - 0.35 * span, hi + 0.45 * span))
labels = {id(ax): [] for ax in axes}        # the value labels of each panel, which must not overlap
fixed = {id(ax): [] for ax in axes}         # the texts they must not overlap (the reference lines' labels, notes)
marks = {}                                  # a value label's "1 run" mark, which moves with it


def bar(ax, i, st, prev, ylim):
    """One stage's bar (a step from `prev`, or from zero where prev is None), its whisker, its value label and, where
    one run holds it, its mark; returns its level."""
    runs = pct[st].dropna()
    now = runs.median()
    color = ("#7f7f7f" if st == BASELINE else "#1f77b4" if st in STAGES else GLUON_COLOR if st in GLUON_STAGES
             else c.LAST_COLOR)
    one = len(runs) == 1
    hatch = c.ONE_RUN_HATCH if one else None          # one run's figure, not a median
    if prev is None:
        ax.bar(i, now, color=color, hatch=hatch, edgecolor="white" if hatch else color)
        if ylim[0] > 0:                                   # cut at the axis' foot: a break across the bar
            y0 = ylim[0] + 0.025 * (ylim[1] - ylim[0])
            for dy in (0.0, 0.02 * (ylim[1] - ylim[0])):
                ax.plot([i - 0.5, i + 0.5], [y0 + dy - 0.012 * (ylim[1] - ylim[0]), y0 + dy + 0.012 * (
                    ylim[1] - ylim[0])], color="white", linewidth=1.6, zorder=4, clip_on=True)
    else:
        ax.bar(i, now - prev, bottom=prev, color=color, alpha=1.0 if now < prev else 0.45, hatch=hatch,
               edgecolor="#d62728" if now > prev else ("white" if hatch else color), linewidth=0.8)
        ax.plot([i - 1.4, i + 0.4], [prev, prev], color="black", linewidth=0.5)
    ax.vlines(i, runs.min(), runs.max(), color="black", linewidth=1)
    # the label above the bar, or below it where a reference line (cuDNN's 100%, FlashAttention-2's) would cross it;
    # below the bar a whisker may pass, so a white box. A bar from zero has no room below: its label goes inside its
    # top. Labels that would still touch are moved apart once the figure is laid out (see below).
    label_h = 0.05 * (ylim[1] - ylim[0])              # 7 pt of the axis' height, about
    pad = 0.015 * (ylim[1] - ylim[0])
    top, bottom = max(now, prev or 0), min(now, prev if prev is not None else 0)
    if any(top <= ref <= top + pad + label_h for ref in (100, flash)):
        y, va = (min(bottom, runs.min()) - pad, "top") if prev is not None else (min(now, runs.min()) - pad, "top")
    else:
        y, va = max(top, runs.max()) + pad, "bottom"
    txt = ax.text(i, y, f"{now:.0f}", ha="center", va=va, fontsize=7, zorder=5,
                  bbox=dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none"))
    labels[id(ax)].append(txt)
    if one:                                            # named on the bar itself: a thin bar's hatching cannot be seen
        mark = ax.annotate("1 run", xy=(0.5, 1.0), xycoords=txt, xytext=(0, 2), textcoords="offset points",
                           ha="center", va="bottom", rotation=90, fontsize=6.5, color=ONE_RUN_COLOR, zorder=5,
                           fontweight="bold")
        marks[id(txt)] = mark
    return now


for k, (ax, group, ylim) in enumerate(zip(axes, groups, limits)):
    ax.set_ylim(*ylim)
    ax.set_xlim(-0.6, len(group) - 0.4)
    prev = None
    for i, st in enumerate(group):
        prev = bar(ax, i, st, None if st in new_base else prev, ylim)
    # the reference lines, named: in the first panel at its left, over the line (under the tall bars' feet); in the
    # Gluon panel at its right, under the line (over the low bars)
    for ref, name in ((100, "cuDNN (torch-cudnn): 100%"), (flash, f"FlashAttention-2 (torch-flash): {flash:.0f}%")):
        if ylim[0] < ref < ylim[1]:
            ax.axhline(ref, color="black" if ref == 100 else "0.45", linestyle="--", linewidth=0.8)
            off = 0.012 * (ylim[1] - ylim[0])
            fixed[id(ax)].append(ax.text(0.6, ref + off, name, ha="left", va="bottom", fontsize=7) if k == 0 else
                                 ax.text(len(group) - 0.5, ref - off, name, ha="right", va="top", fontsize=7))
    # x ticks: the stage, and under it the number of runs that hold it (a one-run stage's in red)
    ax.set_xticks(range(len(group)), [f"{st}\n{runs_of[st]}" for st in group])
    for tick, st in zip(ax.get_xticklabels(), group):
        if runs_of[st] == 1:
            tick.set_color(ONE_RUN_COLOR)
    ax.tick_params(axis="x", labelsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="x", visible=False)
axes[0].set_ylabel("time, % of cuDNN's (same run)")
axes[0].set_xlabel("stage; under it, the runs that hold it", fontsize=7)
# the sections of the first panel: the article's, ours in Triton
bounds = [0, min(len(STAGES), len(groups[0])), len(groups[0])]
for k, (lo_, hi_) in enumerate(zip(bounds[:-1], bounds[1:])):
    if hi_ <= lo_:
        continue
    if k:
        axes[0].axvline(lo_ - 0.5, color="0.6", linewidth=0.8)
    fixed[id(axes[0])].append(axes[0].text((lo_ + hi_) / 2 - 0.5, limits[0][1] * 0.93,
                                           ["the article's stages", "ours in Triton, on Hopper"][k], ha="center",
                                           fontsize=8))
if gluon_first:
    right = axes[1]
    right.set_title("ours in Gluon: a new kernel (own y axis, not from zero)", fontsize=8)
    right.set_xlabel("stage; under it, the runs that hold it", fontsize=7)
    right.set_ylabel("time, % of cuDNN's (same run)", fontsize=7)
    # the new kernel against the Triton stage whose schedule it takes: that stage's level across the new base's bar
    if gluon_from in pct:
        level = pct[gluon_from].median()
        right.plot([-0.45, 0.45], [level, level], color="black", linewidth=1.4, linestyle=":", zorder=6)
        ylim = limits[1]
        # its note above cuDNN's line, a line down to the dotted level between the first two bars (the note's
        # text alone is what the value labels keep clear of)
        note_y = ylim[1] - 0.05 * (ylim[1] - ylim[0])
        fixed[id(right)].append(right.text(
            0.35, note_y, f"dotted: {gluon_from} ({level:.0f}), whose schedule {gluon_first} takes into Gluon",
            fontsize=7, ha="left", va="top", bbox=dict(boxstyle="square,pad=0.15", facecolor="white",
                                                       edgecolor="none")))
        right.annotate("", xy=(0.45, level), xytext=(0.5, note_y - 0.05 * (ylim[1] - ylim[0])),
                       arrowprops=dict(arrowstyle="-", color="0.3", linewidth=0.6))

# No two labels overlap: once laid out, a value label that touches a label or text before it (left to right) moves
# away from its bar (up, or down for a label under its bar) by the overlap, until none touches.
fig.tight_layout()
for ax in axes:
    placed = list(fixed[id(ax)])
    for txt in labels[id(ax)]:
        mark = marks.get(id(txt))
        for _ in range(20):
            fig.canvas.draw()
            box = txt.get_window_extent().padded(2)          # 2 pixels of white between two labels, at least
            boxes = [box] + ([mark.get_window_extent().padded(2)] if mark is not None else [])
            hits = [o.get_window_extent() for o in placed if any(b.overlaps(o.get_window_extent()) for b in boxes)]
            if not hits:
                break
            up = txt.get_va() == "bottom"
            shift = (max(o.y1 for o in hits) - box.y0 + 1) if up else -(box.y1 - min(o.y0 for o in hits) + 1)
            x, y = txt.get_position()
            y_disp = ax.transData.transform((x, y))[1] + shift
            txt.set_y(ax.transData.inverted().transform((0, y_disp))[1])
        placed += [txt] + ([mark] if mark is not None else [])
fig.canvas.draw()
for ax in axes:                              # what the moves could not part is refused, not printed over
    texts = fixed[id(ax)] + labels[id(ax)] + [marks[id(t)] for t in labels[id(ax)] if id(t) in marks]
    boxes = [t.get_window_extent() for t in texts]
    clash = [(texts[i].get_text(), texts[j].get_text()) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
             if boxes[i].overlaps(boxes[j])]
    if clash:
        raise ValueError(f"value labels overlap: {clash}")
c.save(fig, a.out)
