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
from pipeline.selection import HEADLINE, OUR_STAGES


def _lohi(lo, hi, nd: int = 0) -> str:
    """'lo--hi', or one number where both round to the same."""
    return fixed(lo, nd) if fixed(lo, nd) == fixed(hi, nd) else f"{fixed(lo, nd)}--{fixed(hi, nd)}"


def values(variation_n: Path, sampling: Path, snapshots: Path, per_run: Path, claims: Path, seal_file: Path,
           gpu_state: Path) -> Values:
    v = Values("scope")
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
    v.macro("HostDescRange", _lohi(best[desc].min(), best[desc].max(), 1))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
