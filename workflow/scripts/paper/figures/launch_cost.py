"""Host time of a second call, every repeat of every run, at the headline shape: each stage (article tile) and each
PyTorch backend. The best of an entry's repeats is its host cost; slower repeats are other work on the host. Within
each entry the runs stand side by side in run order, left to right, each coloured by its run (a sequential colour, the
colourbar naming each run)."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import STAGES, TORCH

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
t = pd.read_csv(a.input.timings)
t = t[(t.status == "ok") & t.headline & (t.torch | (t.article_stage & t.article_tile))]
order = [v for v in STAGES + TORCH if v in set(t.variant)]
colors = c.run_colors(t.run)
fig, ax = plt.subplots(figsize=(8.5, 3.4))
sns.stripplot(data=t, x="variant", y="host_us", hue="run", hue_order=list(colors), palette=colors, order=order,
              dodge=True, size=2.5, jitter=0.15, ax=ax, legend=False)
for i in range(1, len(order)):
    ax.axvline(i - 0.5, color="0.85", linewidth=0.6)
ax.grid(axis="x", visible=False)
ax.set(xlabel="", ylabel="host time per call (µs)", ylim=(0, None),
       title="Host time of a second call, every repeat (two jobs share the host in these runs)")
ax.tick_params(axis="x", labelrotation=25)
c.run_colorbar(fig, ax, colors, fraction=0.04, pad=0.015)
c.save(fig, a.out)
