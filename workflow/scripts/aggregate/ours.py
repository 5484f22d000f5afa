"""Our stages beyond the article, as tidy tables from the aggregated runs (results/aggregate):

- ours_stages.csv: each stage from the article's last to ours at the headline shape, each at its own tile, per run:
  time, and percent of cuDNN's (torch-cudnn) and FlashAttention-2's (torch-flash) time in the same run;
- per_n.csv: every stage and PyTorch backend at each N of the sweep, float16 and bfloat16, per run: time, useful
  TFLOP/s, percent of the matrix roof measured in the same run (ceilings: a float16/bfloat16 matmul), and the
  ratio to cuDNN's time in the same run;
- best_per_n.csv: at each N and dtype, the fastest of our stages (lowest median over its runs of its within-run
  ratio to cuDNN), that ratio, the last and the leading stage's, and the leading stage's standing against cuDNN there
  (faster, level or behind) by the paper's one rule for a change over runs (pipeline.noise.moved: the median of the
  per-run changes beyond NEGLIGIBLE_PCT and a sign test over the runs that timed both), with the per-run changes'
  median, the runs faster and the runs paired; the same rule applied to the twins, PyTorch's default SDPA against SDPA
  forced to cuDNN (the same cuDNN kernel on the H200), whose standing should be level;
- leader.csv: our Triton stages (v8 ... v18) timed at every N of the sweep, by the geometric mean of their ratio to
  cuDNN over the N and dtypes; the first is the leading stage, the one the paper's Triton sections follow across
  lengths and layouts (our last stage need not be our fastest); its column `leader` says so, as per_n.csv's and
  ours_stages.csv's do of their rows; gluon_leader.csv: the same for the Gluon stages (v19 on), apart, since they
  are a second kernel, sm_90 only, measured from run-18 on.
- variation_n.csv: at each N and dtype of the sweep, each stage's and backend's run-to-run variation (highest run
  over lowest, minus 1, in percent) of its time and of its ratio to cuDNN, the runs that hold it and the repeats
  behind each run's median (lowest and highest): the noise of each per-N figure, which grows with N.

Our last stage is the last measured Triton one (per_run.csv's role `last`): a stage registered but not yet measured is in
none of these tables.

cuDNN is `torch-cudnn` (SDPA with the cuDNN backend forced) throughout.

Ratios are taken within a run (both measured side by side, interleaved) before any median over runs, each end's
time the column selection.RATIO_TIME (the kernels alone: cuDNN's call also launches a memset, which time_us holds);
the times in microseconds are time_us.
"""

import statistics
import sys

import numpy as np
import pandas as pd

from kernels.shapes import attention_flops

from pipeline import noise, selection

SHOWN = [selection.FINAL] + selection.OUR_STAGES


def last_stage(pr: pd.DataFrame) -> str:
    """Our last measured stage (the role `last` of per_run.csv)."""
    return str(pr[pr["last"]].variant.iloc[0])


def ours_stages(pr: pd.DataFrame) -> pd.DataFrame:
    h = pr[pr.headline & (pr.own_tile | pr.torch)]
    t = h.pivot_table(index="run", columns="variant", values="time_us", aggfunc="median")
    r = h.pivot_table(index="run", columns="variant", values=selection.RATIO_TIME, aggfunc="median")
    rows = []
    for st in SHOWN:
        if st not in t:
            continue
        for run, us in t[st].dropna().items():
            rows.append(dict(run=run, stage=st, time_us=us,
                             pct_cudnn=100 * r.loc[run, st] / r.loc[run, "torch-cudnn"],
                             pct_flash=100 * r.loc[run, st] / r.loc[run, "torch-flash"]))
    return pd.DataFrame(rows)


def per_n(pr: pd.DataFrame, ceilings: pd.DataFrame) -> pd.DataFrame:
    layout = {k: v for k, v in selection.HEADLINE.items() if k not in ("N", "dtype")}
    s = pr[selection.where(pr, **layout) & pr.set.fillna("").str.contains("n_sweep")]
    s = s[s.own_tile | s.torch]
    # the roof measured on the GPU that timed the entry (the ceilings step's, step_gpu): where a run's ceilings ran
    # on another GPU than its sweep (the x2 runs, run-26), that run has no roof for it (NaN), never another GPU's
    ceil = ceilings[ceilings.quantity == "matmul_tflops"]
    by_gpu = "step_gpu" in ceil and "gpu" in pr
    if by_gpu:
        ceil = ceil.assign(gpu=ceil.step_gpu.fillna("").astype(str))
    keys_roof = ["run", "dtype", "gpu"] if by_gpu else ["run", "dtype"]
    roof = ceil.groupby(keys_roof).value.median().rename("roof_tflops")
    keep = s.variant.isin(selection.ALL_STAGES) | s.impl.isin(selection.TORCH)
    ratio_time = [selection.RATIO_TIME] if selection.RATIO_TIME != "time_us" else []
    s = s[keep].reindex(columns=["run", "variant", "impl", "N", "dtype", "time_us", *ratio_time, "repeats", "gpu", "B",
                                 "H", "D", "causal"])    # repeats: NaN where per_run has none
    s["gpu"] = s.gpu.fillna("").astype(str)
    s["tflops"] = attention_flops(s.B, s.H, s.N, s.D, s.causal) / (s.time_us * 1e-6) / 1e12
    s = s.join(roof, on=keys_roof)
    s["pct_roof"] = 100 * s.tflops / s.roof_tflops
    cudnn = s[s.variant == "torch-cudnn"].set_index(["run", "N", "dtype"])[selection.RATIO_TIME].rename("cudnn_us")
    s = s.join(cudnn, on=["run", "N", "dtype"])
    s["x_cudnn"] = s[selection.RATIO_TIME] / s.cudnn_us          # cudnn_us: cuDNN's RATIO_TIME
    return s.drop(columns=["B", "H", "D", "causal"]).sort_values(["dtype", "N", "variant", "run"])


def paired(same: pd.DataFrame, entry: str, against: str = "torch-cudnn") -> dict:
    """`entry` against `against` at one N and dtype, paired by run (`same`: one row per run, one column per variant,
    each the run's RATIO_TIME): the per-run changes in percent (each taken within a run) over the runs that timed
    both, their median, how many runs are faster and how many there are, and the standing by pipeline.noise's rule
    (standing). Empty ('' and NaN) where no run timed both."""
    both = entry in same and against in same
    change = (100 * (same[entry] / same[against] - 1)).dropna() if both else pd.Series(dtype=float)
    return dict(change_pct=float(change.median()) if len(change) else float("nan"),
                faster_runs=int((change < 0).sum()), runs=len(change),
                sign_p=noise.sign_test_p(change) if len(change) else float("nan"), standing=standing(change))


def standing(change_pct) -> str:
    """Per-run changes in percent (one entry against another, each within a run) by the paper's one rule for a change
    over runs (pipeline.noise.moved): 'faster' or 'behind' where they have moved, by the sign of their median;
    'level' where they have not; '' where there is none. No band from the spread of the runs enters: runs that all
    fall one way have moved however widely they spread, and runs scattered on both sides of zero have not."""
    change = [float(c) for c in change_pct]
    if not change:
        return ""
    if not noise.moved(change):
        return "level"
    return "faster" if statistics.median(change) < 0 else "behind"


def best_per_n(p: pd.DataFrame, lead: str, last: str) -> pd.DataFrame:
    """At each N and dtype, our stage with the lowest ratio to cuDNN: each stage's ratios are taken within a run and
    their median is over the runs that hold the stage (a stage measured in fewer runs carries that run's noise);
    the last stage's and the leading stage's ratios beside it, the leading stage's standing against cuDNN there by
    the paired rule (standing), and the same rule applied to the twins (PyTorch's default SDPA against SDPA forced to
    cuDNN, the same kernel)."""
    rows = []
    for (dtype, N), g in p.groupby(["dtype", "N"]):
        ours = g[g.variant.isin(selection.OUR_STAGES)]
        if ours.empty:
            continue
        med = ours.groupby("variant").x_cudnn.median()
        best = med.idxmin()
        b = ours[ours.variant == best]
        same = g.pivot_table(index="run", columns="variant", values=selection.RATIO_TIME, aggfunc="median")
        ld, tw = paired(same, lead), paired(same, "torch-default")
        rows.append(dict(dtype=dtype, N=int(N), best=best, time_us=b.time_us.median(), x_cudnn=b.x_cudnn.median(),
                         x_lo=b.x_cudnn.min(), x_hi=b.x_cudnn.max(), runs=b.run.nunique(),
                         last=last, last_x_cudnn=med.get(last, float("nan")),
                         leader=lead, leader_x_cudnn=med.get(lead, float("nan")),
                         leader_change_pct=ld["change_pct"], leader_faster_runs=ld["faster_runs"],
                         leader_paired_runs=ld["runs"], leader_sign_p=ld["sign_p"], leader_standing=ld["standing"],
                         twin_change_pct=tw["change_pct"], twin_faster_runs=tw["faster_runs"],
                         twin_paired_runs=tw["runs"], twin_standing=tw["standing"]))
    return pd.DataFrame(rows)


def leader_table(p: pd.DataFrame, stages=tuple(selection.TRITON_OURS)) -> pd.DataFrame:
    """Each of our stages (of `stages`: the Triton kernel's, or the Gluon kernel's) timed at every N of the sweep in
    both dtypes: the geometric mean over (N, dtype) of its median ratio to cuDNN, and the number of runs; the
    leading stage (the fastest across lengths) has the lowest."""
    ours = p[p.variant.isin(stages)]
    points = ours.groupby(["variant", "dtype", "N"]).x_cudnn.median().reset_index()
    full = points.groupby(["dtype", "N"]).ngroups
    rows = []
    for st, g in points.groupby("variant"):
        if len(g) < full:
            continue
        rows.append(dict(stage=st, geomean_x_cudnn=float(np.exp(np.log(g.x_cudnn).mean())), points=len(g),
                         runs=ours[ours.variant == st].run.nunique()))
    columns = ["stage", "geomean_x_cudnn", "points", "runs"]
    t = pd.DataFrame(rows, columns=columns).sort_values("geomean_x_cudnn").reset_index(drop=True)
    t["leader"] = t.index == 0         # none where no stage of ours was timed at every N (a run alone, before v8)
    return t


def group(variant: str) -> str:
    """'article' (v0-v7), 'ours' (our stages), or the PyTorch backend's name."""
    return ("article" if variant in selection.STAGES else "ours" if variant in selection.OUR_STAGES else variant)


def variation_n(p: pd.DataFrame) -> pd.DataFrame:
    """Per dtype, N and variant of per_n.csv: the run-to-run variation (max/min - 1, percent) of the time and of the
    within-run ratio to cuDNN, the runs, and the repeats behind a run's median (lowest, highest)."""
    columns = ["dtype", "N", "variant", "group", "runs", "time_var_pct", "x_cudnn_var_pct", "repeats_lo",
               "repeats_hi"]
    if p.empty:
        return pd.DataFrame(columns=columns)
    g = p.groupby(["dtype", "N", "variant"])
    out = pd.DataFrame({"runs": g.run.nunique(), "time_var_pct": 100 * (g.time_us.max() / g.time_us.min() - 1),
                        "x_cudnn_var_pct": 100 * (g.x_cudnn.max() / g.x_cudnn.min() - 1),
                        "repeats_lo": g.repeats.min(), "repeats_hi": g.repeats.max()}).reset_index()
    out["group"] = out.variant.map(group)
    return out[columns]


def main(input, output) -> None:
    pr = pd.read_csv(input.per_run)
    p = per_n(pr, pd.read_csv(input.ceilings))
    lead = leader_table(p)
    leader = str(lead.stage.iloc[0]) if len(lead) else None
    stages = ours_stages(pr)
    stages.assign(leader=stages.stage == leader).to_csv(output.stages, index=False)
    p.assign(leader=p.variant == leader).to_csv(output.per_n, index=False)
    lead.to_csv(output.leader, index=False)
    if getattr(output, "gluon_leader", None):     # the paper's aggregate and each other GPU's (make compare's has none)
        leader_table(p, tuple(selection.GLUON_STAGES)).to_csv(output.gluon_leader, index=False)
    best_per_n(p, leader, last_stage(pr)).to_csv(output.best, index=False)
    variation_n(p).to_csv(output.variation_n, index=False)


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    main(snakemake.input, snakemake.output)  # noqa: F821
