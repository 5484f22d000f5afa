"""The paper's numbers from the long-sequence Nsight profile (results/aggregate/large_n_table.csv): each metric for each
variant and N (\\val{ln}{<variant>@<N>}{<short>}, median over runs; DRAM in GB), each of our stages against the one
before it (\\val{ln_delta}{<stage>@<N>}{<short>}, percent) and its instructions against cuDNN's
(\\val{ln_vs_cudnn}{<stage>@<N>}{Instr}), each stage against the one before within the runs that profiled both
(\\val{ln_step}{<stage>@<N>}{<short>}), and the runs that profiled the large N (results/aggregate/large_n.csv), and one kernel's duration spread over the runs
that profiled it (\\val{ln_spread}{<stage>@<N>}{Time}, percent)."""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import previous_stage

from pipeline.latex import Values, fixed, listing
from pipeline.selection import OUR_STAGES


# The metrics the text quotes: absolute (ln), against the stage before (ln_delta), against cuDNN (ln_vs_cudnn).
QUOTED = {"ln": ("Tensor", "Issue", "Warps", "Exp", "Lhit", "Dram", "Regs", "StallWait", "StallBarrier"),
          "ln_delta": ("Fma", "Instr", "Time", "Warps", "Dram", "StallShort", "StallLong", "StallBarrier"),
          "ln_vs_cudnn": ("Instr",), "ln_step": ("Time", "Cycles", "Tensor", "StallBarrier", "StallLong", "Dram")}


def values(large_n_table: Path, large_n: Path) -> Values:
    v = Values("large_n")
    t = pd.read_csv(large_n_table)
    for r in t[t.short.isin(QUOTED["ln"])].itertuples():
        x = r.value / 1e9 if r.short == "Dram" else r.value
        digits = 2 if r.short.startswith("Stall") or r.short == "Dram" else 0
        v.put("ln", f"{r.variant.replace('torch-', '')}@{r.N}", r.short, fixed(x, digits))
    wide = t.pivot_table(index=["N", "short"], columns="variant", values="value")
    for st in OUR_STAGES:
        prev = previous_stage(st)
        if st in wide and prev in wide:
            for (n, short), r in wide[[prev, st]].dropna().iterrows():
                if short in QUOTED["ln_delta"]:
                    v.put("ln_delta", f"{st}@{n}", short, f"{100 * (r[st] / r[prev] - 1):+.0f}")
    # Each stage against the one before it within each run that profiled both (then the median over those runs):
    # \val{ln_step}{<stage>@<N>}{<short>}, percent, and the runs it rests on (\val{ln_step}{<stage>@<N>}{runs}).
    per_run = pd.read_csv(large_n, usecols=["run", "variant", "metric", "value", "N"])
    per_run = per_run.groupby(["run", "variant", "N", "metric"]).value.sum().unstack("variant")
    short_of = dict(zip(t.metric, t.short))
    for st in OUR_STAGES:
        prev = previous_stage(st)
        if st in per_run and prev in per_run:
            both = per_run[[prev, st]].dropna()
            for (n, metric), g in both.groupby(level=["N", "metric"]):
                short = short_of.get(metric)
                if short in QUOTED["ln_step"]:
                    v.put("ln_step", f"{st}@{n}", short, f"{100 * (g[st] / g[prev] - 1).median():+.1f}")
            for n, g in both.groupby(level="N"):
                v.put("ln_step", f"{st}@{n}", "runs", listing(sorted(set(g.index.get_level_values("run")))))
    # Nsight's own run-to-run spread of one kernel's duration (max / min - 1 over the runs that profiled it, percent):
    # \val{ln_spread}{<stage>@<N>}{Time}, for the stages that two or more runs profiled.
    duration = next((m for m, sh in short_of.items() if sh == "Time"), None)   # None: no duration profiled
    for (n, metric), g in per_run.groupby(level=["N", "metric"]):
        if duration is None or metric != duration:
            continue
        for st in [s for s in OUR_STAGES if s in g]:
            x = g[st].dropna()
            if len(x) >= 2:
                v.put("ln_spread", f"{st}@{n}", "Time", fixed(100 * (x.max() / x.min() - 1), 1))
    if "torch-cudnn" in wide:
        for st in [s for s in OUR_STAGES if s in wide]:
            for (n, short), r in wide[[st, "torch-cudnn"]].dropna().iterrows():
                if short in QUOTED["ln_vs_cudnn"]:
                    v.put("ln_vs_cudnn", f"{st}@{n}", short, f"{100 * (r[st] / r['torch-cudnn'] - 1):+.0f}")
    # The best tensor-pipe activity of our stages at the longest N profiled, the N where the text sets it beside
    # cuDNN's (one scope for the abstract, the section and the conclusion).
    ours = t[t.variant.isin(OUR_STAGES) & (t.short == "Tensor")]
    ours = ours[ours.N == ours.N.max()]
    if not ours.empty:
        top = ours.loc[ours.value.idxmax()]
        v.macro("LnOursTensorMax", fixed(ours.value.max()))
        v.macro("LnOursTensorMaxStage", top.variant)
        v.macro("LnOursTensorN", int(ours.N.max()))
        # how many runs that figure rests on, said where it is quoted (one run's figure is not a median)
        v.macro("LnOursTensorMaxRuns", "one run" if int(top.runs) == 1 else f"median of {int(top.runs)} runs")
    # Our stages whose long-sequence figures rest on one run's profile (the median of one is that run's figure).
    runs = t[t.variant.isin(OUR_STAGES)].groupby("variant").runs.max()
    v.macro("LnSingleRunStages", listing([s for s in OUR_STAGES if runs.get(s) == 1]))
    v.macro("LnRuns", listing(sorted(set(pd.read_csv(large_n, usecols=["run"]).run))))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
