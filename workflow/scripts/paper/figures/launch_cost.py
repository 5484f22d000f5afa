"""Host time of a second call, every repeat of every run, at the headline shape: each stage (article tile) and each
PyTorch backend. The best of an entry's repeats is its host cost; slower repeats are other work on the host."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import STAGES, TORCH

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
t = pd.read_csv(a.input.timings)
t = t[(t.status == "ok") & t.headline & (t.torch | (t.article_stage & t.article_tile))]
order = [v for v in STAGES + TORCH if v in set(t.variant)]
fig, ax = plt.subplots(figsize=(8, 3.2))
sns.stripplot(data=t, x="variant", y="host_us", hue="run", order=order, dodge=True, size=3, jitter=0.25, ax=ax)
ax.set(xlabel="", ylabel="host time per call (µs)", ylim=(0, None),
       title="Host time of a second call, every repeat (two jobs share the host in these runs)")
ax.tick_params(axis="x", labelrotation=25)
ax.legend(fontsize=7, title=None, loc="upper left", bbox_to_anchor=(1.01, 1), ncol=1)
c.save(fig, a.out)
