"""Change of time from each stage to the next: ours (median over runs, bars from the lowest to the highest run)
beside the article's."""
import common as c
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

a = c.args(__doc__)
hs = c.headline_stages(c.per_run(a.agg))
t = hs[hs.variant.isin(c.STAGES)].pivot(index="run", columns="variant", values="time_us")[c.STAGES]
ours = (100 * (t / t.shift(axis=1) - 1)).drop(columns="v0").melt(ignore_index=False, value_name="change")
ours = ours.reset_index().rename(columns={"variant": "stage"}).assign(series="ours (H200)")
art = pd.read_csv(a.article / "timings.csv")
art = c.select(art[art.stage.isin(c.STAGES)], block_m=32).set_index("stage").time_us[c.STAGES]
art = (100 * (art / art.shift() - 1)).dropna().rename("change").reset_index().assign(series="article")
df = pd.concat([ours, art], ignore_index=True)
fig, ax = plt.subplots(figsize=(7.5, 3.2))
sns.barplot(df, x="stage", y="change", hue="series", estimator="median", errorbar=("pi", 100),
            palette={"ours (H200)": "#1f77b4", "article": "#d62728"}, ax=ax, capsize=0.15,
            err_kws={"linewidth": 1})
ax.axhline(0, color="black", linewidth=0.8)
ax.set(xlabel="stage (change from the stage before)", ylabel="time change, %")
ax.legend(title=None, fontsize=8)
c.save(fig, a.out)
