"""The paper's numbers on the timer and the launch: the kernel timer's cross-check with Nsight (and the waived entries:
\\val{waived}{<backend>}{...}), its host-sleep check, and what a call costs the host (\\val{launch}{<backend>}{...})."""

import sys
from pathlib import Path

import pandas as pd

from pipeline.latex import Values, fixed, listing, signed
from pipeline.selection import ALL_STAGES, FINAL, STAGES, TORCH, run_number


def in_registry_order(variant: str) -> int:
    """A variant's place in the registry's stages, then the PyTorch baselines (anything else last)."""
    order = ALL_STAGES + TORCH
    return order.index(variant) if variant in order else len(order)


def values(crosscheck: Path, timer_check: Path, launch_cost: Path) -> Values:
    v = Values("timing")
    cc = pd.read_csv(crosscheck)
    untimed = cc[~cc.timed]
    v.macro("CrossUntimed", int((untimed.untimed == "not timed").sum()))
    v.macro("CrossUntimedRuns", listing(sorted(set(untimed[untimed.untimed == "not timed"].run))))
    v.macro("CrossOtherGpu", int((untimed.untimed == "on another GPU").sum()))
    v.macro("CrossOtherGpuRuns", listing(sorted(set(untimed[untimed.untimed == "on another GPU"].run),
                                                key=run_number)))
    cc = cc[cc.timed]
    v.macro("CrossPairs", len(cc))
    waived = cc[cc.waiver.fillna("") != ""]
    v.macro("CrossMaxPct", fixed(cc.diff_pct.abs().max(), 1))
    v.macro("CrossMaxUnwaivedPct", fixed(cc[cc.waiver.fillna("") == ""].diff_pct.abs().max(), 1))
    v.macro("CrossWaivedCount", len(waived))
    v.macro("CrossWaivedList", listing([f"{r.variant} in {r.run} ({r.diff_pct:+.1f}\\%)"
                                        for r in waived[waived.cycles_diff_pct.isna()].itertuples()]))
    v.macro("CrossWaivedRuns", listing(sorted(set(waived[waived.cycles_diff_pct.isna()].run), key=run_number)))
    # The runs with the SM clock on both sides (run-18 on): how far the two clock readings differ where the times
    # agree, and the waived entries there (beyond the bound in time), at which N and how far.
    clocked = cc[cc.cycles_diff_pct.notna()]
    v.macro("CrossClockRuns", listing(sorted(set(clocked.run), key=run_number)))
    agree = clocked[clocked.waiver.fillna("") == ""]
    clock_pct = 100 * (agree.timer_mhz / agree.ncu_mhz - 1)
    v.macro("CrossClockAgreeMinPct", signed(clock_pct.min(), 0))
    v.macro("CrossClockAgreeMaxPct", signed(clock_pct.max(), 0))
    v.macro("CrossClockAgreeTimeMaxPct", fixed(agree.diff_pct.abs().max(), 1))
    unexplained = waived[waived.cycles_diff_pct.notna()]
    v.macro("CrossClockWaivedCount", len(unexplained))
    v.macro("CrossClockWaivedRuns", listing(sorted(set(unexplained.run), key=run_number)))
    v.macro("CrossClockWaivedN", listing(sorted({str(int(n)) for n in unexplained.N}, key=int))
            if len(unexplained) else "--")
    for n, g in unexplained.groupby("N"):
        v.put("cross_waived", int(n), "cycles", f"{fixed(g.cycles_diff_pct.min(), 1)} to {fixed(g.cycles_diff_pct.max(), 1)}")
        # the same entries in a phrase the text can carry (the table crosscheck_n has them one by one)
        runs = sorted(set(g.run), key=run_number)
        v.put("cross_waived", int(n), "summary",
              f"{len(g)} entries ({listing(sorted(set(g.variant), key=in_registry_order))}"
              f" in {runs[0] if len(runs) == 1 else f'{len(runs)} runs, {runs[0]} to {runs[-1]}'}; "
              f"{g.diff_pct.min():+.1f} to {g.diff_pct.max():+.1f}\\%)")
    # A waived PyTorch kernel of the runs without clocks (the same kernel in every run): the timer's time of it in
    # the first waived run against its range over the runs where it is not waived, and Nsight's time of it in
    # every run.
    old_waived = waived[waived.cycles_diff_pct.isna()]
    for variant, w in old_waived[old_waived.impl != "triton"].groupby("variant"):
        r = w.sort_values("run", key=lambda runs: runs.map(run_number)).iloc[0]
        others = cc[(cc.key == r.key) & ~cc.run.isin(w.run)]
        lo, hi = others.timer_us.min(), others.timer_us.max()
        v.put("waived", variant, "timer_us", fixed(r.timer_us, 1))
        v.put("waived", variant, "run", r.run)
        v.put("waived", variant, "others_timer_range", f"{fixed(lo, 1)}--{fixed(hi, 1)}")
        v.put("waived", variant, "timer_place", "below" if r.timer_us < lo else "above" if r.timer_us > hi else "within")
        by_run = cc[cc.key == r.key].sort_values("run", key=lambda runs: runs.map(run_number))
        v.put("waived", variant, "ncu_by_run",
              ", ".join("--" if pd.isna(x) else fixed(x, 1) for x in by_run.ncu_us))   # --: not compared
        v.put("waived", variant, "runs_from", by_run.run.iloc[0])
        v.put("waived", variant, "runs_to", by_run.run.iloc[-1])
    # Our waived stages (runs without clocks) in the runs where they are not waived.
    ours = old_waived[old_waived.impl == "triton"]
    elsewhere = cc[cc.variant.isin(ours.variant) & ~cc.set_index(["run", "variant"]).index.isin(
        ours.set_index(["run", "variant"]).index) & cc.cycles_diff_pct.isna()]
    v.macro("CrossWaivedOursElsewhereRuns", elsewhere.run.nunique())
    v.macro("CrossWaivedOursElsewhereMaxPct", fixed(elsewhere.diff_pct.abs().max(), 1) if len(elsewhere) else "--")
    v.macro("CrossBoundPct", f"{cc.max_pct.iloc[0]:g}")
    v.macro("CrossEntries", cc.key.nunique())
    v.macro("CrossRuns", cc.run.nunique())
    v.macro("CrossLaunches", int(cc.ncu_launches.min()))
    tc = pd.read_csv(timer_check)
    longest = tc.sleep_us.max()
    v.macro("SleepMaxUs", f"{longest:g}")
    v.macro("SleepKernelMaxPct", fixed(tc.kernel_change_pct.abs().max(), 1))
    at = tc[tc.sleep_us == longest]
    v.macro("SleepEventMinPct", fixed(at.event_change_pct.min()))
    v.macro("SleepEventMaxPct", fixed(at.event_change_pct.max()))
    lc = pd.read_csv(launch_cost)
    is_stage = lc.entry.isin(STAGES)
    best = lc.groupby("entry").host_min_us.min()                  # the best repeat of all runs: the cost itself
    stages = best[[e for e in best.index if e in STAGES]]
    v.macro("HostStageMaxUs", fixed(stages.max(), 1))
    v.macro("HostStageMinUs", fixed(stages.min(), 1))
    worst = lc[is_stage].sort_values("host_min_us").iloc[-1]        # the slowest best-of-a-run, and where
    v.macro("HostWorstRunBestUs", fixed(worst.host_min_us, 1))
    v.macro("HostWorstRunBestEntry", worst.entry)
    v.macro("HostWorstRun", worst.run)
    v.macro("HostStageMedianMaxUs", fixed(lc[is_stage].groupby("entry").host_us.median().max(), 1))
    v.macro("HostStageMedianMinUs", fixed(lc[is_stage].groupby("entry").host_us.median().min(), 1))
    med = lc.groupby("entry")[["call_us", "time_us"]].median()
    for impl in TORCH:
        v.put("launch", impl, "host_best_us", fixed(best[impl], 1))
        v.put("launch", impl, "host_median_us", fixed(lc[lc.entry == impl].host_us.median(), 1))
        v.put("launch", impl, "call_over_pct", fixed(100 * (med.loc[impl, "call_us"] / med.loc[impl, "time_us"] - 1)))
    v.macro("CallOverFinalPct", fixed(100 * (med.loc[FINAL, "call_us"] / med.loc[FINAL, "time_us"] - 1)))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
