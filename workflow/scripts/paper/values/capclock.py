"""The paper's numbers from probes/cap-clock (data/nvidia-h100-80gb-hbm3, sealed): v36 and cuDNN at N = 16384, float16
and bfloat16, on one H100: Nsight Compute's count of each launch's cycles and clock deep in a stream of calls (clocks
as found, below the power cap: Nsight's gaps between launches), and the steady probe at the cap with NVML's clock
event reasons.

- \\val{capclock}{<v36|cudnn>@<fp16|bf16>}{mcyc|mhz}: the median over the profiled launches of the elapsed SM cycles
  per call (millions) and of the clock Nsight measured (elapsed cycles per second, MHz);
- \\val{capclock}{<fp16|bf16>}{cycx|timex}: v36's elapsed cycles and Nsight's duration over cuDNN's (the medians);
- \\val{capsteady}{<fp16|bf16>}{x|ex|mhz36|mhzcu|w36|wcu|mcyc36|mcyccu}: at the cap, v36's time and energy per call
  over cuDNN's, each entry's SM clock (MHz) and power (W), and NVML's clock times the time per call (millions of
  cycles), the medians over the rounds;
- \\CapClockReasons: NVML's clock event reasons that any reading of the steady probe gave, by name;
  \\CapClockGpu: the probe's GPU; \\CapClockCommit: its commit.
"""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.nsight import stream_launches

SHORT = {"float16": "fp16", "bfloat16": "bf16"}
ENTRIES = {"v36": "v36", "cudnn": "torch-cudnn"}
# NVML's clock event reasons (nvmlClocksEventReason*), the bits the text may name; any other bit is refused.
REASONS = {0x1: "GPU idle", 0x4: "software power cap", 0x8: "hardware slowdown", 0x20: "software thermal slowdown",
           0x40: "hardware thermal slowdown", 0x80: "hardware power brake"}


def reason_names(bits: int) -> str:
    """NVML's clock event reasons in a bitmask, by name; a bit the text has no name for is refused."""
    unknown = bits & ~sum(REASONS)
    if unknown:
        raise ValueError(f"clock event reason bits {unknown:#x} that the text has no name for (NVML's "
                         f"nvmlClocksEventReason*): name them in REASONS")
    return ", ".join(name for bit, name in REASONS.items() if bits & bit) or "none"


def values(seal_file: Path, ncu: list, steady: Path) -> Values:
    folder = Path(seal_file).parent
    seal.verify(folder)
    v = Values("capclock")
    v.macro("CapClockCommit", (folder / "commit.txt").read_text().strip()[:7])
    med = {}
    for path in map(Path, ncu):
        entry, dtype = path.stem.removeprefix("ncu-").rsplit("-", 1)
        row = next(k for k, e in ENTRIES.items() if e == entry)
        w = stream_launches(path).median()
        med[(row, dtype)] = w
        v.put("capclock", f"{row}@{SHORT[dtype]}", "mcyc", fixed(w["sm__cycles_elapsed.avg"] / 1e6, 2))
        v.put("capclock", f"{row}@{SHORT[dtype]}", "mhz", f"{w['sm__cycles_elapsed.avg.per_second'] / 1e6:.0f}")
    for dtype, col in SHORT.items():
        a, b = med[("v36", dtype)], med[("cudnn", dtype)]
        v.put("capclock", col, "cycx", fixed(a["sm__cycles_elapsed.avg"] / b["sm__cycles_elapsed.avg"], 3))
        v.put("capclock", col, "timex", fixed(a["gpu__time_duration.sum"] / b["gpu__time_duration.sum"], 3))

    s = pd.read_csv(steady)
    gpus = s.uuid.unique()
    if len(gpus) != 1:
        raise ValueError(f"{steady}: rows from {len(gpus)} GPUs, where the text names one")
    v.macro("CapClockGpu", gpus[0][:12])
    bits = 0
    for x in s.throttle_any:
        bits |= int(str(x), 16)
    v.macro("CapClockReasons", reason_names(bits))
    m = s.groupby(["dtype", "variant"])[["steady_call_us", "steady_energy_mj", "steady_mhz", "steady_power_w"]].median()
    for dtype, col in SHORT.items():
        a, b = m.loc[(dtype, "v36")], m.loc[(dtype, "torch-cudnn")]
        v.put("capsteady", col, "x", fixed(a.steady_call_us / b.steady_call_us, 3))
        v.put("capsteady", col, "ex", fixed(a.steady_energy_mj / b.steady_energy_mj, 3))
        v.put("capsteady", col, "mhz36", f"{a.steady_mhz:.0f}")
        v.put("capsteady", col, "mhzcu", f"{b.steady_mhz:.0f}")
        v.put("capsteady", col, "w36", f"{a.steady_power_w:.0f}")
        v.put("capsteady", col, "wcu", f"{b.steady_power_w:.0f}")
        v.put("capsteady", col, "mcyc36", fixed(a.steady_call_us * a.steady_mhz / 1e6, 2))
        v.put("capsteady", col, "mcyccu", fixed(b.steady_call_us * b.steady_mhz / 1e6, 2))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
