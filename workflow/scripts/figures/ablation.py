"""Each switch's effect at the headline shape: removed from the final stage (leave-one-out) and added to the baseline
(add-one-in), and our extension (Q prescaled), as the change of time in percent (median over runs; bars from lowest
to highest)."""
import common as c
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

a = c.args(__doc__)
pr = c.select(c.per_run(a.agg), **c.HEADLINE, **c.ARTICLE_TILE)
t = pr.pivot_table(index="run", columns="variant", values="time_us")
F, B = c.FINAL, c.BASELINE
variants = {**{v: (F, "without " + sw) for v, sw in ((c.variant_name(c.resolve_variant(f"{F}-{s}")), s)
                                                      for s in c.SWITCHES)},
            **{v: (B, "with " + sw) for v, sw in ((c.variant_name(c.resolve_variant(f"{B}+{s}")), s)
                                                   for s in c.SWITCHES)},
            **{v: (F, "with " + v[len(F) + 1:]) for v in c.EXTENSION_VARIANTS}}
rows = []
for v, (base, label) in variants.items():
    if v in t and base in t:       # a leave-one-out that is a stage (v7 - const_strides = v6) is timed as the stage
        rows += [dict(panel=f"from {base}", change=x, label=label) for x in (100 * (t[v] / t[base] - 1)).dropna()]
df = pd.DataFrame(rows)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
for ax, panel in zip(axes, [f"from {F}", f"from {B}"]):
    d = df[df.panel == panel]
    order = d.groupby("label").change.median().sort_values().index
    sns.barplot(d, y="label", x="change", order=order, estimator="median", errorbar=("pi", 100), ax=ax,
                color="#1f77b4", capsize=0.2, err_kws={"linewidth": 1})
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set(ylabel="", xlabel=f"time change {panel}, %")
c.save(fig, a.out)
