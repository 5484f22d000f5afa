"""The paper's numbers from the probe of why the kernel timer reads long N slower than Nsight Compute (data/<gpu>/
probes/settle-cause, sealed; workflow/scripts/tools/crosscheck_cause.py --settle --cool-s): per entry and N
(\\val{settle}{<variant>@<N>}{<column>}) the timer on a cooled GPU (`cooled`: timer_flush after the idle seconds) and
settled as the bench settles long N (`settled`: timer_settled) against Nsight's duration (ncu_all), in percent;
v28's time over cuDNN's both ways (\\val{settle}{ratio@<N>}{cooled or settled}); and, over every entry, the macros
of the ranges the text quotes."""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed

WAYS = {"timer_flush", "timer_warm", "timer_settled", "ncu_all", "ncu_none"}
BOUND_PCT = 5       # the cross-check's bound (config crosscheck_max_pct), which the cooled timer must meet


def values(seal_file: Path, cause: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("settle")
    d = pd.read_csv(cause)
    w = d.pivot_table(index=["variant", "N"], columns="way", values="us")
    mhz = d.pivot_table(index=["variant", "N"], columns="way", values="sm_mhz")
    if set(w.columns) != WAYS or w.isna().any().any():
        raise ValueError(f"{cause}: every entry needs its five ways ({sorted(WAYS)})")
    cooled = 100 * (w.timer_flush / w.ncu_all - 1)
    settled = 100 * (w.timer_settled / w.ncu_all - 1)
    if (cooled.abs() > BOUND_PCT).any():
        raise ValueError(f"{cause}: the cooled timer is beyond {BOUND_PCT}% of Nsight for "
                         f"{list(cooled[cooled.abs() > BOUND_PCT].index)}: the text's cause no longer holds")
    for (var, n) in w.index:
        key = f"{var.removeprefix('torch-')}@{n}"
        v.put("settle", key, "cooled", f"{cooled[var, n]:+.1f}")
        v.put("settle", key, "settled", f"{settled[var, n]:+.1f}")
    for n in sorted({n for _, n in w.index}):
        for way, col in (("cooled", "timer_flush"), ("settled", "timer_settled")):
            v.put("settle", f"ratio@{n}", way, fixed(w.loc[("v28", n), col] / w.loc[("torch-cudnn", n), col], 3))
    v.macro("SettleCooledMaxAbs", fixed(cooled.abs().max(), 1))
    v.macro("SettledMin", fixed(settled.min(), 1))
    v.macro("SettledMax", fixed(settled.max(), 1))
    v.macro("SettledMhzMin", f"{mhz.timer_settled.min():.0f}")
    v.macro("SettledMhzMax", f"{mhz.timer_settled.max():.0f}")
    v.macro("SettleCooledMhz", f"{mhz.timer_flush.median():.0f}")
    v.macro("SettleNcuMhzMin", f"{mhz.ncu_all.min():.0f}")
    v.macro("SettleNcuMhzMax", f"{mhz.ncu_all.max():.0f}")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
