"""The paper's numbers from the probe of why Nsight Compute and the kernel timer disagree at short N (data/<gpu>/
probes/crosscheck-cause, sealed; workflow/scripts/tools/crosscheck_cause.py): per entry and N (\\val{xc}{<variant>@<N>}
{<column>}), the time of what Nsight's flush clears beyond the L2 (`beyond_us`: (ncu_all - ncu_none) - (timer_flush -
timer_warm); `beyond_pct` of the timer's time) and NVML's clock against Nsight's (`clock_pct`: NVML's over the
timer's samples over Nsight's sm__cycles_elapsed.avg.per_second, minus 1); and, over the entries at the two short
lengths (macros), Nsight's time with every cache flushed against the timer's with its L2 flush, the two with nothing
flushed, and the clocks' ratio."""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed

SHORT = (512, 1024)       # the lengths where Nsight reads longer times than the timer


def values(seal_file: Path, cause: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("xcause")
    d = pd.read_csv(cause)
    w = d.pivot_table(index=["variant", "N"], columns="way", values="us")
    mhz = d.pivot_table(index=["variant", "N"], columns="way", values="sm_mhz")
    if set(w.columns) != {"timer_flush", "timer_warm", "ncu_all", "ncu_none"} or w.isna().any().any():
        raise ValueError(f"{cause}: every entry needs its four ways")
    rows = []
    for (var, n), r in w.iterrows():
        key = f"{var.removeprefix('torch-')}@{n}"
        all_pct = 100 * (r.ncu_all / r.timer_flush - 1)
        none_pct = 100 * (r.ncu_none / r.timer_warm - 1)
        beyond = (r.ncu_all - r.ncu_none) - (r.timer_flush - r.timer_warm)
        clock_pct = 100 * (mhz.loc[(var, n), "timer_flush"] / mhz.loc[(var, n), "ncu_all"] - 1)
        v.put("xc", key, "beyond_us", fixed(beyond, 2))
        v.put("xc", key, "beyond_pct", f"{100 * beyond / r.timer_flush:.1f}")
        v.put("xc", key, "clock_pct", f"{clock_pct:+.1f}")
        rows.append(dict(N=n, var=var, all_pct=all_pct, none_pct=none_pct, clock_pct=clock_pct))
    t = pd.DataFrame(rows)
    s = t[t.N.isin(SHORT)]
    v.macro("XcShortAllMin", fixed(s.all_pct.min(), 1))
    v.macro("XcShortAllMax", fixed(s.all_pct.max(), 1))
    v.macro("XcShortNoneMin", fixed(s.none_pct.min(), 1))
    v.macro("XcShortNoneMax", fixed(s.none_pct.max(), 1))
    v.macro("XcShortClockMin", fixed(s.clock_pct.min(), 1))
    v.macro("XcShortClockMax", fixed(s.clock_pct.max(), 1))
    longest = t[t.N == t.N.max()]
    v.macro("XcLongN", int(t.N.max()))
    v.macro("XcLongAllMaxAbs", fixed(longest.all_pct.abs().max(), 1))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
