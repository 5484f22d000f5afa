"""What limits the KV loop at long sequences: Nsight Compute on our stages (each at its own tile) and cuDNN at the
headline layout with N = 4096 and 16384 (plan.profile.large_n; median over the runs that profiled each): the tensor
pipe, instruction issue and resident warps, the L2 hit rate, and the warp stalls per issued instruction."""
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from pipeline import plotting as c
from pipeline.selection import OUR_STAGES

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
t = pd.read_csv(a.input.large_n_table)
order = [v for v in OUR_STAGES + ["torch-cudnn"] if v in set(t.variant)]
panels = ["Tensor", "Issue", "Warps", "Lhit", "StallWait", "StallBarrier", "StallLong", "StallShort"]
fig, axes = plt.subplots(2, 4, figsize=(11, 5), sharex=True)
for ax, short in zip(axes.flat, panels):
    d = t[t.short == short]
    sns.barplot(d, x="variant", y="value", hue="N", order=order, ax=ax, palette="crest",
                legend=ax is axes.flat[0])
    ax.set(title=d.label.iloc[0], xlabel="", ylabel="")
    ax.title.set_fontsize(8)
    ax.tick_params(axis="x", rotation=60, labelsize=7)
sns.move_legend(axes.flat[0], "lower left", fontsize=7, title="N")
c.save(fig, a.out)
