"""The paper's numbers on the GPU's state while the kernels ran (the runs whose timed rows carry it, run-18 on:
pipeline/gpu_state.py), in the N sweep at the headline layout in float16: per N and entry, the median over repeats
of the SM clock NVML read over the samples, the mean power, the energy per call (the flushes' taken off), the useful
TFLOP/s and TFLOP/s per watt, and how many repeats saw the power cap (\\val{state}{<entry>@<N>}{<column>}); the run,
its repeats and samples per entry (\\StateRun, \\StateRepeats, \\StateMinSamples); and the throttle reasons seen."""

import sys
from pathlib import Path

import pandas as pd

from kernels.shapes import attention_flops

from pipeline.latex import Values, fixed, listing
from pipeline.selection import HEADLINE, run_number, where

# The entries whose state the text quotes: the leading Triton stage, the Gluon stages, the PyTorch backends.
ENTRIES = ("v13", "v19", "v20", "v21", "v22", "v23", "v24", "torch-cudnn", "torch-flash")
# How far a repeat's energy per call may differ from its mean power times its time for the table to give it.
ENERGY_AGREE = 0.25


def values(per_run: Path, timings: Path) -> Values:
    v = Values("state")
    pr = pd.read_csv(per_run)
    layout = {k: x for k, x in HEADLINE.items() if k != "N"}
    sw = pr[pr.set.fillna("").str.contains("n_sweep") & where(pr, **layout) & pr.sm_mhz.notna()
            & (pr.impl.ne("triton") | pr.own_tile)]
    runs = sorted(set(sw.run), key=run_number)
    if not runs:
        raise ValueError("the GPU-state paragraph describes the newest run with the state recorded; found none")
    run = runs[-1]                  # the newest run that recorded the state; the first one that did
    v.macro("StateRun", run)
    v.macro("StateFirstRun", runs[0])
    sw = sw[sw.run == run]
    t = pd.read_csv(timings)
    t = t[(t.run == run) & t.set.fillna("").str.contains("n_sweep") & (t.status == "ok")]
    reps = t.groupby("key").size()
    v.macro("StateRepeats", f"{reps.min()}" if reps.min() == reps.max() else f"{reps.min()}--{reps.max()}")
    v.macro("StateMinSamples", int(t.n_samples.min()))
    v.macro("StateLongMinSamples", int(t[t.N == t.N.max()].n_samples.min()))
    reasons = sorted({str(x) for x in t.throttle.dropna()})
    v.macro("StateThrottleSeen", listing([f"\\texttt{{{r}}}" for r in reasons]))
    long = t[t.N == t.N.max()]
    v.macro("StateLongCappedPct", fixed(100 * long.power_capped.astype(str).eq("True").mean()))
    v.macro("StateLongMhzMin", f"{long.sm_mhz.min():.0f}")
    v.macro("StateLongMhzMax", f"{long.sm_mhz.max():.0f}")
    v.macro("StateLongPowerMin", f"{long.power_w.min():.0f}")
    v.macro("StateLongPowerMax", f"{long.power_w.max():.0f}")
    # how far one entry's repeats differ in NVML's mean power at the longest N (the most of max/min over entries)
    per_key = long.groupby("key").power_w
    v.macro("StateLongPowerRepeatX", fixed((per_key.max() / per_key.min()).max(), 1))
    v.macro("StateMaxSamples", int(t.n_samples.max()))
    v.macro("StateShortMhz", f"{t[t.N == t.N.min()].sm_mhz.median():.0f}")
    # The table: the N sweep's own repeats (one job, one GPU), not the run's other sets that timed the same entry.
    own = t[where(t, **layout) & (t.impl.ne("triton") | t.own_tile.astype(str).eq("True"))
            & t.variant.isin(ENTRIES) & t.sm_mhz.notna()]
    off = []                                     # energy per call over mean power x time, where they disagree
    for (variant, n), g in own.groupby(["variant", "N"]):
        row = f"{variant.replace('torch-', '')}@{int(n)}"
        us = g.time_us.median()
        flops = attention_flops(g.B.iloc[0], g.H.iloc[0], n, g.D.iloc[0], g.causal.iloc[0])
        tflops = flops / (us * 1e-6) / 1e12
        v.put("state", row, "us", fixed(us, 1 if us < 1000 else 0))
        v.put("state", row, "mhz", f"{g.sm_mhz.median():.0f}")
        v.put("state", row, "watts", f"{g.power_w.median():.0f}")
        # NVML's energy counter resolves a call only where each repeat's energy per call (the flushes' taken off)
        # agrees with its mean power times its time (W x us = uJ); elsewhere the table leaves the energy out
        ratio = g.energy_mj / (g.power_w * g.time_us * 1e-3)
        if ((ratio - 1).abs() <= ENERGY_AGREE).all():
            mj = g.energy_mj.median()
            v.put("state", row, "mj", fixed(mj, 2 if mj < 10 else 1))
        else:
            v.put("state", row, "mj", "--")
            off.append(ratio)
        v.put("state", row, "tflops", fixed(tflops))
        v.put("state", row, "per_watt", fixed(tflops / g.power_w.median(), 2))   # the columns beside it, divided
        v.put("state", row, "capped", f"{int(g.power_capped.astype(str).eq('True').sum())}/{len(g)}")
    off = pd.concat(off) if off else pd.Series(dtype=float)
    v.macro("StateEnergyAgreePct", fixed(100 * ENERGY_AGREE))
    v.macro("StateEnergyOffRange", f"{fixed(off.min(), 1)} and {fixed(off.max(), 1)}" if len(off) else "--")
    v.macro("StateEnergyOffN", listing(sorted({str(int(n)) for n in own.loc[off.index].N}, key=int))
            if len(off) else "--")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
