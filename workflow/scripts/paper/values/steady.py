"""The paper's numbers on the steady step (pipeline/steady_energy.py): NVML's energy counter over back-to-back calls
of each long-N entry, read between two of its updates, in the newest run that has the step. Per entry of the N
sweep at the headline layout in float16 (\\val{steady}{<entry>@<N>}{<column>}): the timer's kernel time of that
repeat (us), the loop's time per call (steady_us), the counter's mean power (watts), the median SM clock over the
span (mhz), the energy per call (mj) and the useful TFLOP/s per watt of the stream (per_watt = TFLOP per joule);
in both dtypes, against cuDNN's (\\val{steady}{<entry>@<N>}{fp16_x_cudnn|bf16_x_cudnn}: the loop's time;
fp16_mj_x_cudnn, bf16_mj_x_cudnn: the energy); over every steady row of the run: how many,
how many failed, the span, the counter's power where the power cap held, the instant readings against the counter,
and the loop's time against the timer's (the loaded state)."""

import sys
from pathlib import Path

import pandas as pd

from kernels.shapes import attention_flops

from pipeline.latex import Values, fixed
from pipeline.selection import HEADLINE, run_number, where

# The entries the table gives: the leading Triton stage, the last two Gluon stages, cuDNN and FlashAttention-2.
ENTRIES = ("v13", "v28", "v29", "torch-cudnn", "torch-flash")
DTYPES = {"float16": "fp16", "bfloat16": "bf16"}
# Each dtype's two columns against cuDNN: the stream's time per call and its energy per call.
RATIO_COLUMNS = {"fp16": ("fp16_x_cudnn", "fp16_mj_x_cudnn"), "bf16": ("bf16_x_cudnn", "bf16_mj_x_cudnn")}
# A row is power-capped over its span when at least this share of the span's readings had a power-cap reason.
CAPPED = 0.5


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
    t = t[(t.run == run) & (t.status == "ok")]
    s = t[pd.to_numeric(t.steady_power_w, errors="coerce").notna()].copy()
    for c in ("steady_power_w", "steady_instant_w", "steady_mhz", "steady_capped_frac", "steady_s",
              "steady_call_us", "steady_energy_mj", "time_us", "kernels_us", "power_w", "power_limit_w"):
        s[c] = pd.to_numeric(s[c], errors="coerce")
    failed = t.note.fillna("").astype(str).str.startswith("steady step:")
    v.macro("SteadyRows", len(s))
    v.macro("SteadyFailed", "none" if not failed.any() else int(failed.sum()))
    v.macro("SteadyMinN", int(s.N.min()))
    v.macro("SteadySpanMin", fixed(s.steady_s.min(), 2))
    v.macro("SteadySpanMax", fixed(s.steady_s.max(), 2))
    capped = s[s.steady_capped_frac >= CAPPED]
    v.macro("SteadyCappedRows", len(capped))
    v.macro("SteadyLimitW", f"{s.power_limit_w.median():.0f}")
    v.macro("SteadyCappedPowerMin", f"{capped.steady_power_w.min():.0f}")
    v.macro("SteadyCappedPowerMedian", f"{capped.steady_power_w.median():.0f}")
    v.macro("SteadyCappedPowerMax", f"{capped.steady_power_w.max():.0f}")
    v.macro("SteadyCappedWindowMin", f"{capped.power_w.min():.0f}")
    v.macro("SteadyCappedWindowMax", f"{capped.power_w.max():.0f}")
    gap = 100 * (s.steady_instant_w / s.steady_power_w - 1)
    v.macro("SteadyInstantMedianPct", fixed(gap.abs().median()))
    v.macro("SteadyInstantMaxPct", fixed(gap.abs().max()))
    loaded = 100 * (capped.steady_call_us / capped.time_us - 1)
    v.macro("SteadyLoadedMinPct", fixed(loaded.min()))
    v.macro("SteadyLoadedMedianPct", fixed(loaded.median()))
    v.macro("SteadyLoadedMaxPct", fixed(loaded.max()))
    layout = {k: x for k, x in HEADLINE.items() if k not in ("N", "dtype")}
    sweep = s[s.set.fillna("").str.contains("n_sweep") & where(s, **layout)
              & (s.impl.ne("triton") | s.own_tile.astype(str).eq("True"))]
    for (variant, n, dtype), g in sweep[sweep.variant.isin(ENTRIES)].groupby(["variant", "N", "dtype"]):
        row, d = f"{variant.replace('torch-', '')}@{int(n)}", DTYPES[dtype]
        r = g.iloc[0]                                      # the first repeat's: the step runs there alone
        ref = sweep[(sweep.variant == "torch-cudnn") & (sweep.N == n) & (sweep.dtype == dtype)]
        if not ref.empty:
            c = ref.iloc[0]
            time_col, energy_col = RATIO_COLUMNS[d]
            v.put("steady", row, time_col, fixed(r.steady_call_us / c.steady_call_us, 3))
            v.put("steady", row, energy_col, fixed(r.steady_energy_mj / c.steady_energy_mj, 3))
        if d != "fp16":                                    # the table is float16's; bfloat16's ratios in the text
            continue
        flops = attention_flops(r.B, r.H, int(n), r.D, r.causal)
        v.put("steady", row, "us", f"{r.time_us:.0f}")
        v.put("steady", row, "steady_us", f"{r.steady_call_us:.0f}")
        v.put("steady", row, "watts", f"{r.steady_power_w:.0f}")
        v.put("steady", row, "mhz", f"{r.steady_mhz:.0f}")
        v.put("steady", row, "mj", f"{r.steady_energy_mj:.0f}")
        v.put("steady", row, "per_watt", fixed(flops / 1e12 / (r.steady_energy_mj * 1e-3), 2))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
