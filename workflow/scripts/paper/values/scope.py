"""The paper's numbers on where and how often each figure was measured: the samples and repeats behind each median
(\\val{reps}{<set>}{...}), the run-to-run variation at long sequences, the power cap and the clocks (the runs'
nvidia-smi snapshots, and the GPU-state probe, data/<gpu>/probes/gpu-state, which read NVML while the kernels ran),
the runs behind C1's figures where its premise holds, and the host time of our stages' calls in the runs."""

import json
import sys
from pathlib import Path

import pandas as pd

from kernels.stages import STAGES as REGISTRY

from pipeline import seal
from pipeline.latex import Values, fixed, listing
from pipeline.selection import HEADLINE, HOST_TARGET_US, OUR_STAGES, RATIO_TIME, TORCH, run_number, where


def _lohi(lo, hi, nd: int = 0) -> str:
    """'lo--hi', or one number where both round to the same."""
    return fixed(lo, nd) if fixed(lo, nd) == fixed(hi, nd) else f"{fixed(lo, nd)}--{fixed(hi, nd)}"


def pooled_against_own_set(timings: pd.DataFrame) -> pd.Series:
    """Per run, entry, N and dtype of the N sweep (headline layout, each stage at its own tile): the change, in %, of
    its ratio to cuDNN's time when each end is the median over every repeat of the run that timed it, whichever set's
    job and GPU it ran in (per_run.csv's pooling), against the ratio of the N sweep's own repeats alone (one job, on
    one GPU, the two ends interleaved)."""
    layout = {k: x for k, x in HEADLINE.items() if k not in ("N", "dtype")}
    t = timings[(timings.status == "ok") & where(timings, **layout)]
    t = t[t.impl.isin(TORCH) | t.own_tile.astype(str).eq("True")]
    keys = t[t.set == "n_sweep"].key.unique()
    t = t[t.key.isin(keys)]
    by = ["run", "key", "variant", "N", "dtype"]
    out = {}
    for name, rows in (("pooled", t), ("own", t[t.set == "n_sweep"])):
        m = rows.groupby(by)[RATIO_TIME].median().reset_index()
        cud = m[m.variant == "torch-cudnn"].set_index(["run", "N", "dtype"])[RATIO_TIME]
        m = m[m.variant != "torch-cudnn"].join(cud.rename("cudnn"), on=["run", "N", "dtype"])
        out[name] = (m[RATIO_TIME] / m.cudnn).set_axis(pd.MultiIndex.from_frame(m[by]))
    return (100 * (out["pooled"] / out["own"] - 1)).dropna()


def values(variation_n: Path, sampling: Path, snapshots: Path, per_run: Path, claims: Path, seal_file: Path,
           gpu_state: Path, timings: Path) -> Values:
    v = Values("scope")
    # What pooling an entry's repeats over the sets of a run does to a ratio, against the N sweep's own repeats.
    pool = pooled_against_own_set(pd.read_csv(timings, low_memory=False)).abs()
    v.macro("PoolMaxPct", fixed(pool.max(), 1))
    v.macro("PoolOverOnePct", int((pool > 1).sum()))
    v.macro("PoolEntries", len(pool))
    # Samples per repeat and repeats per run, per set of the plan.
    smp = pd.read_csv(sampling)
    v.macro("SamplesMin", fixed(smp.samples_lo.min()))
    v.macro("SamplesMax", fixed(smp.samples_hi.max()))
    longest = smp.N.max()
    v.macro("SamplesLongN", int(longest))
    v.macro("SamplesAtLongN", _lohi(smp[smp.N == longest].samples_lo.min(), smp[smp.N == longest].samples_hi.max()))
    # the shortest N from which some repeat took only the plan's minimum of samples
    at_min = smp[smp.samples_lo == smp.samples_lo.min()]
    v.macro("SamplesMinFromN", int(at_min.N.min()))
    for name, g in smp.groupby("set"):
        v.put("reps", name, "range", _lohi(g.repeats_lo.min(), g.repeats_hi.max()))
        v.put("reps", name, "runs", _lohi(g.runs.min(), g.runs.max()))
    # Run-to-run variation at the longest N of the sweep, float16: cuDNN's own time, and the stages'.
    var = pd.read_csv(variation_n)
    top = var[(var.N == var.N.max()) & (var.dtype == HEADLINE["dtype"])]
    v.macro("VarMaxN", int(var.N.max()))
    v.macro("VarCudnnMaxNPct", fixed(top.set_index("variant").time_var_pct["torch-cudnn"], 1))
    stages = top[top.group.isin(["article", "ours"])]
    v.macro("VarStageTimeMaxNPct", fixed(stages.time_var_pct.max(), 1))
    head = var[(var.N == HEADLINE["N"]) & (var.dtype == HEADLINE["dtype"])]
    v.macro("VarCudnnHeadPct", fixed(head.set_index("variant").time_var_pct["torch-cudnn"], 1))
    # The power cap in the runs' snapshots (nvidia-smi, at the start of each repeat and the end of each set).
    sn = pd.read_csv(snapshots)
    capped = sn[sn.power_capped]
    v.macro("SnapCount", len(sn))
    v.macro("SnapCappedCount", len(capped))
    v.macro("SnapCappedRuns", listing(sorted(set(capped.run), key=lambda r: int(r.split("-")[1]))))
    v.macro("SnapCappedMhz", _lohi(capped.sm_mhz.min(), capped.sm_mhz.max()))
    v.macro("SnapCappedPowerW", _lohi(capped.power_w.min(), capped.power_w.max()))
    v.macro("SnapPowerLimitW", _lohi(sn.power_limit_w.min(), sn.power_limit_w.max()))
    # The GPU-state probe: NVML read while each entry ran.
    seal.verify(Path(seal_file).parent)
    gs = json.loads(Path(gpu_state).read_text())
    rows = pd.DataFrame([{**e["row"], "key": e["key"], "N": int(e["key"].split("|")[2].split(",")[3]),
                          "impl": e["key"].split("|")[0]} for e in gs["entries"]])
    if not (rows.impl == "torch-cudnn").any():
        raise ValueError(f"{gpu_state}: no cuDNN entry: the text quotes cuDNN's state")
    cud = rows[rows.impl == "torch-cudnn"].set_index("N")
    long_n, short_n = cud.index.max(), cud.index.min()
    if long_n == short_n:
        raise ValueError(f"{gpu_state}: cuDNN at one N only: the text sets a long N against a short one")
    lg, sh = cud.loc[long_n], cud.loc[short_n]
    v.macro("GsLongN", int(long_n))
    v.macro("GsShortN", int(short_n))
    v.macro("GsPowerLimitW", fixed(gs["gpu"]["power_limit_w"]))
    v.macro("GsLongPowerW", fixed(lg.power_w))
    v.macro("GsShortPowerW", fixed(sh.power_w))
    v.macro("GsLongCappedPct", fixed(100 * lg.capped_frac))
    v.macro("GsLongMhz", fixed(lg.sm_mhz))
    v.macro("GsLongMhzRange", _lohi(lg.sm_min_mhz, lg.sm_max_mhz))
    v.macro("GsShortMhz", fixed(sh.sm_mhz))
    v.macro("GsLongSamples", int(lg.n_samples))
    # The runs behind C1's Nsight figures away from the headline (where its premise holds).
    c = pd.read_csv(claims)
    premise = c[(c.claim == "C1") & (c.N != HEADLINE["N"]) & c["quantity"].ne("time")]
    v.macro("CPremiseRuns", _lohi(premise.runs.min(), premise.runs.max()))
    # Host time of a plain call of our stages in the runs: the best repeat of all runs, per stage.
    pr = pd.read_csv(per_run)
    h = pr[pr.headline & pr.own_tile & pr.variant.isin(OUR_STAGES)]
    best = h.groupby("variant").host_min_us.min()
    desc = [s for s in OUR_STAGES if s in best.index and "host_descriptors" in REGISTRY[s].switches]
    ptr = [s for s in OUR_STAGES if s in best.index and s not in desc]
    v.macro("HostPtrFirst", ptr[0])
    v.macro("HostPtrLast", ptr[-1])
    v.macro("HostPtrRange", _lohi(best[ptr].min(), best[ptr].max(), 1))
    v.macro("HostDescFirst", desc[0])
    v.macro("HostDescLast", desc[-1])
    # The descriptor stages apart by run: the runs whose cached call expanded the descriptors itself (there the
    # descriptor stages' host time is within twice the pointer stages' of the same run) and the runs before them
    # (Triton's Python launcher making the descriptors on every call), each stage's best repeat.
    hd = h[h.variant.isin(desc)]
    per_run = hd.groupby("run").host_min_us.median()
    ptr_run = h[h.variant.isin(ptr)].groupby("run").host_min_us.median().reindex(per_run.index)
    cached = sorted(per_run.index[per_run < 2 * ptr_run], key=run_number)
    early = hd[~hd.run.isin(cached)].groupby("variant").host_min_us.min()
    late = hd[hd.run.isin(cached)].groupby("variant").host_min_us.min()
    v.macro("HostDescCachedFrom", cached[0] if cached else "--")
    v.macro("HostDescRange", _lohi(early.min(), early.max(), 1) if len(early) else "--")
    v.macro("HostDescEarlyLast", [s for s in desc if s in early.index][-1] if len(early) else "--")
    v.macro("HostDescLatestRange", _lohi(late.min(), late.max(), 1) if len(late) else "--")
    # The newest run alone (issue 20: at most HOST_TARGET_US per call for every stage, in one run): each registered
    # stage's best repeat at the headline and its own tile, their median and highest, and PyTorch's default there.
    newest = max(set(pr.run), key=run_number)
    now = pr[pr.headline & (pr.run == newest)]
    stages = now[now.own_tile & now.variant.isin(REGISTRY)].groupby("variant").host_min_us.min()
    v.macro("HostNewestRun", newest)
    v.macro("HostNewestStages", len(stages))
    v.macro("HostNewestAllStages", "every registered stage" if len(stages) == len(REGISTRY) else
            f"{len(stages)} of the {len(REGISTRY)} registered stages")
    v.macro("HostNewestMaxUs", fixed(stages.max(), 1))
    v.macro("HostNewestMaxStage", stages.idxmax())
    v.macro("HostNewestMedianUs", fixed(stages.median(), 1))
    over = int((stages > HOST_TARGET_US).sum())
    v.macro("HostNewestOver", "none" if over == 0 else over)
    v.macro("HostNewestSdpaUs", fixed(now[now.variant == "torch-default"].host_min_us.min(), 1))
    # the first run that timed v28 (whose host cost a probe measured before it)
    fold_runs = set(pr[pr.headline & (pr.variant == "v28")].run)
    v.macro("HostFoldFirstRun", min(fold_runs, key=run_number) if fold_runs else "--")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
