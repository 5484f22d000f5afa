"""Waterfall of the stages: each bar runs from the time before a step to the time after it, as a percentage of
the baseline's time; the article's steps on the left, ours on the right (median over runs, whiskers: lowest to highest run
of the step's end). Green: the step saves time; red: it costs time."""
import matplotlib.pyplot as plt
import pandas as pd

from pipeline import plotting as c
from pipeline.selection import ARTICLE_TILE, BASELINE, STAGES

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
hs = c.headline_stages(pd.read_csv(a.input.per_run))
t = hs[hs.article_stage].pivot(index="run", columns="variant", values="time_us")[STAGES]
ours_runs = 100 * t.div(t[BASELINE], axis=0)
art = pd.read_csv(a.input.article_timings)
art = art[art.stage.isin(STAGES) & (art.block_m == ARTICLE_TILE["block_m"])].set_index("stage").time_us[STAGES]
series = {"article (its GPU)": (100 * art / art[BASELINE], None), "ours (H200)": (ours_runs.median(), ours_runs)}
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
for ax, (title, (level, runs)) in zip(axes, series.items()):
    prev = 100.0
    for i, st in enumerate(STAGES):
        if st == BASELINE:
            ax.bar(i, 100, color="#7f7f7f")
        else:
            now = level[st]
            ax.bar(i, now - prev, bottom=prev, color="#2ca02c" if now < prev else "#d62728")
            ax.plot([i - 1.4, i + 0.4], [prev, prev], color="black", linewidth=0.5)
            if runs is not None:
                ax.vlines(i, runs[st].min(), runs[st].max(), color="black", linewidth=1)
            prev = now
    ax.bar(len(STAGES), prev, color="#1f77b4")
    ax.set_xticks(range(len(STAGES) + 1), STAGES + ["final"])
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(f"time, % of {BASELINE}")
    ax.set_ylim(0, 110)
c.save(fig, a.out)
