"""Host time of a second call, every repeat of every run, at the headline shape: each stage (article tile) and each
PyTorch backend. The best of an entry's repeats is its host cost; slower repeats are other work on the host."""
import common as c
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

a = c.args(__doc__)
t = pd.read_csv(a.agg / "timings.csv")
t = t[(t.status == "ok") & c.where(t, **c.HEADLINE)]
t = t[t.impl.isin(c.TORCH) | (t.variant.isin(c.STAGES) & c.where(t, **c.ARTICLE_TILE))]
order = [v for v in c.STAGES + c.TORCH if v in set(t.variant)]
fig, ax = plt.subplots(figsize=(8, 3.2))
sns.stripplot(data=t, x="variant", y="host_us", hue="run", order=order, dodge=True, size=3, jitter=0.25, ax=ax)
ax.set(xlabel="", ylabel="host time per call (µs)", ylim=(0, None),
       title="Host time of a second call, every repeat (two jobs share the host in these runs)")
ax.tick_params(axis="x", labelrotation=25)
ax.legend(fontsize=7, title=None)
c.save(fig, a.out)
