"""Waterfall of the stages: each bar runs from the time before a step to the time after it, as a percentage of
the baseline's time; the article's steps on the left, ours on the right (median over runs, whiskers: lowest to highest run
of the step's end). Green: the step saves time; red: it costs time."""
import common as c
import matplotlib.pyplot as plt
import pandas as pd

a = c.args(__doc__)
hs = c.headline_stages(c.per_run(a.agg))
t = hs[hs.variant.isin(c.STAGES)].pivot(index="run", columns="variant", values="time_us")[c.STAGES]
ours_runs = 100 * t.div(t[c.BASELINE], axis=0)
art = pd.read_csv(a.article / "timings.csv")
art = c.select(art[art.stage.isin(c.STAGES)], block_m=c.ARTICLE_TILE["block_m"]).set_index("stage").time_us[c.STAGES]
series = {"article (its GPU)": (100 * art / art[c.BASELINE], None), "ours (H200)": (ours_runs.median(), ours_runs)}
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
for ax, (title, (level, runs)) in zip(axes, series.items()):
    prev = 100.0
    for i, st in enumerate(c.STAGES):
        if st == c.BASELINE:
            ax.bar(i, 100, color="#7f7f7f")
        else:
            now = level[st]
            ax.bar(i, now - prev, bottom=prev, color="#2ca02c" if now < prev else "#d62728")
            ax.plot([i - 1.4, i + 0.4], [prev, prev], color="black", linewidth=0.5)
            if runs is not None:
                ax.vlines(i, runs[st].min(), runs[st].max(), color="black", linewidth=1)
            prev = now
    ax.bar(len(c.STAGES), prev, color="#1f77b4")
    ax.set_xticks(range(len(c.STAGES) + 1), c.STAGES + ["final"])
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(f"time, % of {c.BASELINE}")
    ax.set_ylim(0, 110)
c.save(fig, a.out)
