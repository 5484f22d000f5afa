"""What limits the KV loop at long sequences: Nsight Compute on our stages (each at its own tile) and cuDNN at the
headline layout with N = 4096 and 16384 (plan.profile.large_n; median over the runs that profiled each): the tensor
pipe, instruction issue and resident warps, the L2 hit rate, and the warp stalls per issued instruction."""
import sys
from pathlib import Path

import common as c
import matplotlib.pyplot as plt
import seaborn as sns

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import large_n  # noqa: E402

a = c.args(__doc__)
t = large_n.table(a.agg)
order = [v for v in c.OUR_STAGES + ["torch-cudnn"] if v in set(t.variant)]
panels = ["Tensor", "Issue", "Warps", "Lhit", "StallWait", "StallBarrier", "StallLong", "StallShort"]
fig, axes = plt.subplots(2, 4, figsize=(11, 5), sharex=True)
for ax, short in zip(axes.flat, panels):
    d = t[t.short == short]
    sns.barplot(d, x="variant", y="value", hue="N", order=order, ax=ax, palette="crest",
                legend=ax is axes.flat[0])
    ax.set(title=large_n.METRICS[short][1], xlabel="", ylabel="")
    ax.title.set_fontsize(8)
    ax.tick_params(axis="x", rotation=60, labelsize=7)
sns.move_legend(axes.flat[0], "lower left", fontsize=7, title="N")
c.save(fig, a.out)
