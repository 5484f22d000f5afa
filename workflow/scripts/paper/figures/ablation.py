"""Each switch's effect at the headline shape: removed from the article's final stage (leave-one-out) and added to
the baseline (add-one-in), with our extensions; and removed from our last Triton stage (each variant at its own tile), with
our extensions; as the change of time in percent (median over runs, each change within one run on one GPU; bars from lowest to
highest)."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from kernels.stages import ALL_SWITCHES, STAGES as REGISTRY, launch_signature

from pipeline import plotting as c
from pipeline.selection import (BASELINE, EXTENSION_VARIANTS, FINAL, HEADLINE, SWITCHES, change_on_one_gpu,
                                pivot_with_gpus, resolve_variant, variant_name)

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
allpr = pd.read_csv(a.input.per_run)
allpr = allpr[allpr.headline]
pr = allpr[allpr.article_tile]
t, t_gpus = pivot_with_gpus(pr)
own = allpr[allpr.own_tile]
t_own, own_gpus = pivot_with_gpus(own)
F, B = FINAL, BASELINE
L = str(allpr[allpr["last"]].variant.iloc[0])          # our last measured stage
variants = {**{v: (F, "without " + sw) for v, sw in ((variant_name(resolve_variant(f"{F}-{s}")), s)
                                                      for s in SWITCHES)},
            **{v: (B, "with " + sw) for v, sw in ((variant_name(resolve_variant(f"{B}+{s}")), s)
                                                   for s in SWITCHES)},
            **{v: (F, "with " + v[len(F) + 1:]) for v in EXTENSION_VARIANTS}}
rows = []
for v, (base, label) in variants.items():
    if v in t and base in t:       # a leave-one-out that is a stage (v7 - const_strides = v6) is timed as the stage
        rows += [dict(panel=f"from {base}", change=x, label=label) for x in change_on_one_gpu(t, t_gpus, v, base)]
same = launch_signature(REGISTRY[L].switches, HEADLINE["D"], HEADLINE["N"])
last = {variant_name(resolve_variant(f"{L}-{s}")):
        "without " + s + (" (same launch)" if launch_signature(resolve_variant(f"{L}-{s}"), HEADLINE["D"],
                                                                HEADLINE["N"]) == same else "")
        for s in ALL_SWITCHES if s in REGISTRY[L].switches}
last.update({f"{L}+{s}": "with " + s for s in ALL_SWITCHES if s not in REGISTRY[L].switches
             and f"{L}+{s}" in t_own})
for v, label in last.items():
    if v in t_own and L in t_own:
        rows += [dict(panel=f"from {L}", change=x, label=label) for x in change_on_one_gpu(t_own, own_gpus, v, L)]
df = pd.DataFrame(rows)
panels = [p for p in (f"from {F}", f"from {B}", f"from {L}") if p in set(df.panel)]
TITLES = {f"from {F}": f"from {F}, the article's last stage (its tile):\na switch removed or an extension added",
          f"from {B}": f"from {B}, the baseline (the article's tile):\na switch added",
          f"from {L}": f"from {L}, our last Triton stage (own tiles):\na switch removed or an extension added"}
fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6))
for ax, panel in zip(axes, panels):
    d = df[df.panel == panel]
    order = d.groupby("label").change.median().sort_values().index
    sns.barplot(d, y="label", x="change", order=order, estimator="median", errorbar=("pi", 100), ax=ax,
                color="#1f77b4", capsize=0.2, err_kws={"linewidth": 1})
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set(ylabel="", xlabel=f"time change {panel}, %", title=TITLES[panel])
    ax.title.set_fontsize(9)
c.save(fig, a.out)
