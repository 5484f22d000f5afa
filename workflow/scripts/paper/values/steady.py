"""The paper's numbers on the steady step (pipeline/steady_energy.py): NVML's energy counter over back-to-back calls
of each long-N entry, read between two of its updates, in the newest run that has the step. Per entry of the N
sweep at the headline layout in float16 (\\val{steady}{<entry>@<N>}{<column>}): the timer's kernel time of that
repeat (us), the loop's time per call (steady_us), the counter's mean power (watts), the median SM clock over the
span (mhz), the energy per call (mj) and the useful TFLOP/s per watt of the stream (per_watt = TFLOP per joule);
in both dtypes, against cuDNN's (\\val{steady}{<entry>@<N>}{fp16_x_cudnn|bf16_x_cudnn}: the loop's time;
fp16_mj_x_cudnn, bf16_mj_x_cudnn: the energy); over every steady row of the run: how many,
how many failed, the median span and the rows off its grid (GRID_TOL), and over the power-capped rows on the grid:
the counter's power, the instant readings against it, the stream's time and SM clock against the timer's; a row's
power and energy only where it is on the grid and its two power readings agree (AGREE_TOL)."""

import sys
from pathlib import Path

import pandas as pd

from kernels.shapes import attention_flops

from pipeline.latex import Values, fixed
from pipeline.selection import HEADLINE, run_number, where
from pipeline.steady_energy import MAX_SPAN_ERR

# The entries the table gives: the leading Triton stage, the last two Gluon stages, cuDNN and FlashAttention-2.
ENTRIES = ("v13", "v28", "v29", "torch-cudnn", "torch-flash")
DTYPES = {"float16": "fp16", "bfloat16": "bf16"}
# Each dtype's two columns against cuDNN: the stream's time per call and its energy per call.
RATIO_COLUMNS = {"fp16": ("fp16_x_cudnn", "fp16_mj_x_cudnn"), "bf16": ("bf16_x_cudnn", "bf16_mj_x_cudnn")}
# A row is power-capped over its span when at least this share of the span's readings had a power-cap reason.
CAPPED = 0.5
# NVML's counter moves on a fixed period, so that a span between two of its updates is a whole number of periods;
# the host sees an update up to one poll late, and a span off that grid by more than this share of the median span
# (an update seen late at one end) gives a power off by as much: such rows are counted, and left out of the power
# and energy figures.
GRID_TOL = 0.02
# A row's energy is given only where the instant power readings over its span agree with the counter's power
# within this share (two readings of one state); elsewhere one of them is off, and the row's energy is not known.
AGREE_TOL = 0.05
# The first run whose steady step timed an update at the middle of the poll that saw it (commit 1c7a071); the runs
# before it timed it at the reading that saw it.
MIDPOINT_RUN = "run-29"


def values(timings: Path) -> Values:
    v = Values("steady")
    t = pd.read_csv(timings, low_memory=False)
    if "steady_power_w" not in t:
        raise ValueError("no run has the steady step's columns (steady_power_w): the paragraph needs one")
    has = t[pd.to_numeric(t.steady_power_w, errors="coerce").notna()]
    if has.empty:
        raise ValueError("no timed row has the steady step: the paragraph needs a run with it")
    run = sorted(set(has.run), key=run_number)[-1]
    v.macro("SteadyRun", run)
    v.macro("SteadyFirstRun", sorted(set(has.run), key=run_number)[0])
    t = t[(t.run == run) & (t.status == "ok")]
    s = t[pd.to_numeric(t.steady_power_w, errors="coerce").notna()].copy()
    for c in ("steady_power_w", "steady_instant_w", "steady_mhz", "steady_capped_frac", "steady_s",
              "steady_call_us", "steady_energy_mj", "time_us", "kernels_us", "power_w", "power_limit_w"):
        s[c] = pd.to_numeric(s[c], errors="coerce")
    notes = t.note.fillna("").astype(str)
    failed = notes.str.startswith("steady step:")
    v.macro("SteadyRows", len(s))
    v.macro("SteadyFailed", "none" if not failed.any() else int(failed.sum()))
    # spans the host's polls could not time (pipeline.steady_energy.MAX_SPAN_ERR), and the longest poll they name
    polls = notes[failed].str.extract(r"polls that saw the span's updates took ([\d.]+) and ([\d.]+) ms").astype(float)
    polls = polls.dropna(how="all")
    v.macro("SteadyMaxSpanErrPct", fixed(100 * MAX_SPAN_ERR))
    v.macro("SteadyMidpointRun", MIDPOINT_RUN)
    v.macro("SteadyPollRefused", len(polls))
    v.macro("SteadyPollMaxMs", fixed(polls.max().max()) if len(polls) else "none")
    v.macro("SteadyMinN", int(s.N.min()))
    span = s.steady_s.median()
    s["on_grid"] = (s.steady_s / span - 1).abs() <= GRID_TOL
    s["agree"] = (s.steady_instant_w / s.steady_power_w - 1).abs() <= AGREE_TOL
    s["known"] = s.on_grid & s.agree
    v.macro("SteadyAgreeTolPct", fixed(100 * AGREE_TOL))
    v.macro("SteadyDisagree", int((s.on_grid & ~s.agree).sum()))
    v.macro("SteadySpanMedian", fixed(span, 2))
    v.macro("SteadyGridTolPct", fixed(100 * GRID_TOL))
    v.macro("SteadyOffGrid", int((~s.on_grid).sum()))
    capped = s[(s.steady_capped_frac >= CAPPED) & s.on_grid]
    v.macro("SteadyCappedRows", len(capped))
    v.macro("SteadyLimitW", f"{s.power_limit_w.median():.0f}")
    v.macro("SteadyCappedPowerMin", f"{capped.steady_power_w.min():.0f}")
    v.macro("SteadyCappedPowerMedian", f"{capped.steady_power_w.median():.0f}")
    v.macro("SteadyCappedPowerMax", f"{capped.steady_power_w.max():.0f}")
    v.macro("SteadyCappedWindowMin", f"{capped.power_w.min():.0f}")
    v.macro("SteadyCappedWindowMax", f"{capped.power_w.max():.0f}")
    gap = 100 * (capped.steady_instant_w / capped.steady_power_w - 1)
    v.macro("SteadyInstantMedianPct", fixed(gap.abs().median()))
    v.macro("SteadyInstantMaxPct", fixed(gap.abs().max()))
    loaded = 100 * (capped.steady_call_us / capped.time_us - 1)
    v.macro("SteadyLoadedMinPct", fixed(loaded.min()))
    v.macro("SteadyLoadedMedianPct", fixed(loaded.median()))
    v.macro("SteadyLoadedMaxPct", fixed(loaded.max()))
    clock = 100 * (capped.steady_mhz / pd.to_numeric(capped.sm_mhz, errors="coerce") - 1)
    v.macro("SteadyLoadedMhzPct", fixed(clock.median()))
    layout = {k: x for k, x in HEADLINE.items() if k not in ("N", "dtype")}

    def in_sweep(df: pd.DataFrame) -> pd.Series:
        """The N sweep's rows at the headline layout, our stages at their own tile."""
        return (df.set.fillna("").str.contains("n_sweep") & where(df, **layout)
                & (df.impl.ne("triton") | df.own_tile.astype(str).eq("True")))

    sweep = s[in_sweep(s)]
    # an entry whose step was refused (its note says why) keeps its timer's time; its steady columns read 'refused'
    timed = t[in_sweep(t) & t.N.isin(set(sweep.N)) & t.variant.isin(ENTRIES) & failed]
    for (variant, n, dtype), g in timed.groupby(["variant", "N", "dtype"]):
        if not sweep[(sweep.variant == variant) & (sweep.N == n) & (sweep.dtype == dtype)].empty:
            continue
        row, d = f"{variant.replace('torch-', '')}@{int(n)}", DTYPES[dtype]
        for col in RATIO_COLUMNS[d]:
            v.put("steady", row, col, "refused")
        if d == "fp16":
            v.put("steady", row, "us", f"{pd.to_numeric(g.iloc[0].time_us):.0f}")
            for col in ("steady_us", "mhz", "watts", "mj", "per_watt"):
                v.put("steady", row, col, "refused")
    for (variant, n, dtype), g in sweep[sweep.variant.isin(ENTRIES)].groupby(["variant", "N", "dtype"]):
        row, d = f"{variant.replace('torch-', '')}@{int(n)}", DTYPES[dtype]
        r = g.iloc[0]                                      # the first repeat's: the step runs there alone
        ref = sweep[(sweep.variant == "torch-cudnn") & (sweep.N == n) & (sweep.dtype == dtype)]
        if not ref.empty:
            c = ref.iloc[0]
            time_col, energy_col = RATIO_COLUMNS[d]
            v.put("steady", row, time_col, fixed(r.steady_call_us / c.steady_call_us, 2))
            v.put("steady", row, energy_col, fixed(r.steady_energy_mj / c.steady_energy_mj, 2)
                  if r.known and c.known else "--")
        else:                                              # cuDNN's own step was refused
            for col in RATIO_COLUMNS[d]:
                v.put("steady", row, col, "--")
        if d != "fp16":                                    # the table is float16's; bfloat16's ratios in the text
            continue
        flops = attention_flops(r.B, r.H, int(n), r.D, r.causal)
        v.put("steady", row, "us", f"{r.time_us:.0f}")
        v.put("steady", row, "steady_us", f"{r.steady_call_us:.0f}")
        v.put("steady", row, "mhz", f"{r.steady_mhz:.0f}")
        v.put("steady", row, "watts", f"{r.steady_power_w:.0f}" if r.known else "--")
        v.put("steady", row, "mj", f"{r.steady_energy_mj:.0f}" if r.known else "--")
        v.put("steady", row, "per_watt", fixed(flops / 1e12 / (r.steady_energy_mj * 1e-3), 2) if r.known else "--")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
