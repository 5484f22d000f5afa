"""Time of each stage as a percentage of PyTorch's, ours (H200: against torch-flash and torch-default, the kernels
alone, each run a point, the bar the median over runs) beside the article's (its GPU, its torch)."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import ARTICLE_TILE, RATIO_TIME, STAGES

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
hs = c.headline_stages(pd.read_csv(a.input.per_run))
torch = hs[hs.torch].pivot(index="run", columns="impl", values=RATIO_TIME)     # the kernels alone, both ends
st = hs[hs.article_stage].merge(torch, left_on="run", right_index=True)
rows = []
for ref in ("torch-flash", "torch-default"):
    pct = 100 * st[RATIO_TIME] / st[ref]
    rows.append(st.assign(pct=pct, series=f"ours / {ref}")[["stage", "run", "pct", "series"]])
art = pd.read_csv(a.input.article_timings)
art_torch = art.loc[art.impl == "torch-default", "time_us"].iloc[0]
art = art[art.stage.isin(STAGES) & (art.block_m == ARTICLE_TILE["block_m"])]
rows.append(pd.DataFrame({"stage": art.stage, "run": "article", "pct": 100 * art.time_us / art_torch,
                          "series": "article / its torch"}))
df = pd.concat(rows, ignore_index=True)
fig, ax = plt.subplots(figsize=(7.5, 3.4))
sns.barplot(df, x="stage", y="pct", hue="series", estimator="median", errorbar=("pi", 100), palette=c.PALETTE,
            order=STAGES, ax=ax, capsize=0.15, err_kws={"linewidth": 1})
ax.axhline(100, color="black", linewidth=0.8, linestyle="--")
ax.set(xlabel="stage", ylabel="time, % of PyTorch's")
ax.legend(title=None, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
c.save(fig, a.out)
