"""Each switch's effect at the headline shape: removed from v7 (leave-one-out) and added to v0 (add-one-in), and
our extension (Q prescaled), as the change of time in percent (median over runs; bars from lowest to highest)."""
import common as c
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

a = c.args(__doc__)
pr = c.select(c.per_run(a.agg), **c.HEADLINE, **c.ARTICLE_TILE)
t = pr.pivot_table(index="run", columns="variant", values="time_us")
rows = []
for v in t.columns:
    if v.startswith("v7-") or v.startswith("v7+"):
        base, label = "v7", ("without " if v.startswith("v7-") else "with ") + v[3:]
        panel = "from v7"
    elif v.startswith("v0+"):
        base, label, panel = "v0", "with " + v[3:], "from v0"
    else:
        continue
    ch = (100 * (t[v] / t[base] - 1)).dropna()
    rows += [dict(panel=panel, change=x, label=label) for x in ch]
if "v6" in t and "v1" in t:  # v7 - const_strides is v6; v0 + grid_order is v1
    rows += [dict(panel="from v7", change=x, label="without const_strides") for x in (100 * (t.v6 / t.v7 - 1))]
    rows += [dict(panel="from v0", change=x, label="with grid_order") for x in (100 * (t.v1 / t.v0 - 1))]
df = pd.DataFrame(rows)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
for ax, panel in zip(axes, ["from v7", "from v0"]):
    d = df[df.panel == panel]
    order = d.groupby("label").change.median().sort_values().index
    sns.barplot(d, y="label", x="change", order=order, estimator="median", errorbar=("pi", 100), ax=ax,
                color="#1f77b4", capsize=0.2, err_kws={"linewidth": 1})
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set(ylabel="", xlabel=f"time change {panel}, %")
c.save(fig, a.out)
