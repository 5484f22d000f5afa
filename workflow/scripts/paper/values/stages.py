"""The paper's numbers on the article's stages at the headline (\\val{stage}{<stage>}{...}), the PyTorch backends'
times (\\val{torch}{<backend>}{us}), the run-to-run variation and the runs themselves."""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import BASELINE, BEYOND

from pipeline import seal
from pipeline.latex import Values, count_word, fixed, listing
from pipeline.selection import STAGES, TORCH, run_number

# An article stage whose time in the run of the largest variation is this far (%) from its other runs' median is named
# as moved there; the largest move of the others is the same run's control.
MOVED_PCT = 2
# probes/exact-registers' builds, by the source commit of run-27, run-28 and run-29 (the last two: before and after)
REGISTER_BUILDS = ("07056d7", "e56b76c", "1c7a071")


def values(stage_table: Path, headline_median: Path, variation: Path, runs: Path, per_run: Path,
           registers_seal: Path) -> Values:
    v = Values("stages")
    for r in pd.read_csv(stage_table).itertuples():
        v.put("stage", r.stage, "us", fixed(r.ours_us, 1))
        v.put("stage", r.stage, "article_us", fixed(r.article_us))
        v.put("stage", r.stage, "pct_flash", fixed(r.pct_flash))
        v.put("stage", r.stage, "pct_default", fixed(r.pct_default))
        v.put("stage", r.stage, "article_pct", fixed(r.article_pct, 1))
        v.put("stage", r.stage, "regs", fixed(r.ours_regs))
        v.put("stage", r.stage, "smem_kb", fixed(r.ours_smem_kb, 1))
    # The backends' times beside the first stage's, median over the runs that hold it.
    med = pd.read_csv(headline_median).set_index("stage").loc[BASELINE]
    for impl in TORCH:
        v.put("torch", impl, "us", fixed(med[impl], 1))
    var = pd.read_csv(variation)
    v.macro("MaxTimeVariation", fixed(var.time_us_run_to_run_pct.max(), 1))
    # where the largest comes from: that stage's run farthest from the median of its other runs (at the headline and
    # the article's tile, as variation.csv takes them)
    worst = str(var.loc[var.time_us_run_to_run_pct.idxmax(), "stage"])
    pr = pd.read_csv(per_run)
    a = pr[pr.headline & pr.article_tile & pr.variant.isin(STAGES)].pivot_table(index="run", columns="variant",
                                                                                  values="time_us")

    def off(run: str, stage: str) -> float:
        """A stage's time in one run against the median of its other runs, in percent."""
        return 100 * (a.loc[run, stage] / a[stage].drop(run).dropna().median() - 1)

    far = max(a[worst].dropna().index, key=lambda run: abs(off(run, worst)))
    v.macro("MaxTimeVariationStage", worst)
    v.macro("MaxTimeVariationRun", far)
    v.macro("MaxTimeVariationRunPct", fixed(off(far, worst), 1))
    # the article's stages in that run, each against the median of its other runs: those beyond MOVED_PCT, and the
    # largest move of the rest (the control within the same run and GPU)
    dev = pd.Series({st: off(far, st) for st in STAGES if st in a})
    moved = [st for st in STAGES if st in dev and abs(dev[st]) > MOVED_PCT]
    v.macro("MaxTimeVariationMoved", listing(moved))
    lo, hi = fixed(dev[moved].min(), 1), fixed(dev[moved].max(), 1)
    v.macro("MaxTimeVariationMovedPct", lo if lo == hi else f"{lo} to {hi}")
    v.macro("MaxTimeVariationRestPct", fixed(dev.drop(moved).abs().max(), 1))
    # the moved stages' build at the source before that run's and at its own (probes/exact-registers: one CSV per
    # source commit, REGISTER_BUILDS): registers per thread and the programs per SM the register file holds
    folder = Path(registers_seal).parent
    seal.verify(folder)
    builds = {c: pd.read_csv(folder / f"build-{c}.csv") for c in REGISTER_BUILDS}

    def metric(commit: str, stage: str, name: str) -> int:
        b = builds[commit]
        return int(b[(b.variant == stage) & (b.metric == name)].value.iloc[0])

    before, after = REGISTER_BUILDS[-2], REGISTER_BUILDS[-1]

    def of_moved(commit: str, name: str) -> str:
        return listing(sorted({str(metric(commit, st, name)) for st in moved}))

    v.macro("MovedBuildRegsBefore", of_moved(before, "registers"))
    v.macro("MovedBuildRegsAfter", of_moved(after, "registers"))
    v.macro("MovedBuildBlocksBefore", of_moved(before, "blocks_limit_registers"))
    v.macro("MovedBuildBlocksAfter", of_moved(after, "blocks_limit_registers"))
    same = [st for st in builds[after].variant.unique() if st not in moved
            and metric(before, st, "blocks_limit_registers") == metric(after, st, "blocks_limit_registers")]
    v.macro("MovedBuildSameStages", listing(sorted(same)))
    v.macro("MaxRatioVariation", fixed(var[["pct_of_torch-flash_run_to_run_pct",
                                             "pct_of_torch-default_run_to_run_pct"]].max().max(), 1))
    # Our Triton switches that also turn off switches they replace (kernels/stages.py: Switch.replaces).
    v.macro("OursReplacingCount", count_word(sum(1 for s in BEYOND.values() if s.replaces)))
    r = pd.read_csv(runs, keep_default_na=False)
    v.macro("NumRuns", len(r))
    v.macro("NumGPUsRecorded", len({u for uuids in r.gpu_uuids for u in uuids.split()}))
    two, one = runs_per_gpu_count(r)
    v.macro("NumRunsTwoGpus", two)
    v.macro("RunsOneGpu", one)
    v.macro("EntryOrderPhrase", entry_order_phrase(r))
    return v


def entry_order_phrase(runs: pd.DataFrame) -> str:
    """How the runs' benches ordered a shape's entries within a repeat (runs.csv's entry_order), as the method says
    it: every run in one fixed order, or which runs in which (a run whose order the files do not tell is named)."""
    order = runs.set_index("run").entry_order.astype(str)
    fixed_runs = sorted(order.index[order == "fixed"], key=run_number)
    alternating = sorted(order.index[order == "alternating"], key=run_number)
    unknown = sorted(order.index[~order.isin(["fixed", "alternating"])], key=run_number)
    if len(fixed_runs) == len(order):
        return "in every run of this paper in one fixed order within a repeat"
    parts = ([f"in one fixed order within a repeat in {listing(fixed_runs)}"] if fixed_runs else []) + (
        [f"each shape's entries reversed every second repeat in {listing(alternating)}"] if alternating else []) + (
        [f"in an order its files do not tell in {listing(unknown)}"] if unknown else [])
    return "; ".join(parts)


def runs_per_gpu_count(runs: pd.DataFrame) -> tuple:
    """How many runs were spread over more than one GPU (their UUIDs, runs.csv's gpu_uuids), and the runs on one."""
    gpus = runs.gpu_uuids.map(lambda u: len(set(str(u).split())))
    return int((gpus > 1).sum()), listing(sorted(runs.run[gpus == 1], key=run_number), none="none")


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
