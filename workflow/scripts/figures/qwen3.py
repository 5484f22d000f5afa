"""Time for the attention layouts of the Qwen3 models (B=2, N=1024, causal): the first and final stages, the final
stage at its best tile without warp specialization where measured, and PyTorch's backends."""
import common as c
import matplotlib.pyplot as plt
import seaborn as sns

a = c.args(__doc__)
pr = c.per_run(a.agg)
shown = [c.BASELINE, c.CAUSAL_SKIP_STAGE, c.FINAL]
q = pr[pr.set.str.contains("qwen3") & pr.variant.isin(shown + c.TORCH)]
q = q[(q.impl != "triton") | c.where(q, **c.ARTICLE_TILE)]
q = q.assign(layout=q.H.astype(str) + "/" + q.H_kv.astype(str) + " heads")
order = [f"{h}/8 heads" for h in sorted(q.H.unique())]
fig, ax = plt.subplots(figsize=(7, 3.2))
sns.barplot(q, x="layout", y="time_us", hue="variant", order=order, hue_order=shown + c.TORCH,
            estimator="median", errorbar=("pi", 100), ax=ax, palette="tab10")
ax.set(xlabel="Qwen3 layout (query / key-value heads, D=128)", ylabel="time (µs)")
ax.legend(fontsize=7, ncol=2, title=None)
c.save(fig, a.out)
