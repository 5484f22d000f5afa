"""Aggregate step: the given sealed runs (checksums verified first) into tidy tables.

    python workflow/scripts/aggregate/aggregate.py --runs data/nvidia-h200/run-1 data/nvidia-h200/run-2 \
        --build results/build/sm_90/build.csv --out results/aggregate

Before anything is computed, each run is checked: its checksums, and its seal against the manifest (data/SEALS.csv,
pipeline.seal); then its content (check_timings, check_envs): no row twice, every time of a timed row finite and
positive and in the order of its own statistics, the kernel time equal to its kernels' sum, every env.json of the
GPU its folder names and of a commit git knows. A run that fails any of these is refused, naming the rows.

A run folder holds its timings either flat (timings.csv) or per set (bench-<set>/timings.csv), its Nsight rows in
ncu.csv or profile/ncu.csv, and, from run-3 on, ceilings/ceilings.csv: every such file below the run is read.

Writes:
- timings.csv: every timing row of every run, with the run's name and the rows' roles (ROLES below);
- per_run.csv: one row per run x entry: the median over repeats of the per-repeat kernel-time medians, the lowest
  and highest repeat median, the number of repeats, and the medians over repeats of the call time and host time;
  and the rows' roles, so that no later step derives them again (ROLES below); last, the GPU's state (STATE below:
  empty for runs timed before it was recorded): the medians over repeats of the SM clock, the power and the energy
  per call, the number of power-capped repeats, and the useful TFLOP/s per watt;
- headline.csv: the stages at the headline shape and the article's tile, per run, with their ratios to torch-flash
  and torch-default (both ends' selection.RATIO_TIME, the kernels alone: the backends' as <impl>_kernels_us beside
  their time_us), beside the article's time and ratio; headline_median.csv: the same, median over runs;
- stage_table.csv: the paper's stage table, one row per stage of the article: the article's figures beside ours
  (time: median over runs and the lowest and highest run; ratios: median of the per-run ratios; Nsight's registers,
  shared memory, L2 hit rate and instructions: median over runs);
- variation.csv: run-to-run variation of each stage's time and of each ratio (max/min - 1 over runs);
- ncu.csv: the Nsight Compute rows of every run;
- ceilings.csv: the measured matrix rate and copy bandwidth of every run that has them;
- build.csv: the static build report of every architecture built;
- crosscheck.csv: for every profiled entry of every run, the kernel timer's median beside the median of Nsight
  Compute's gpu__time_duration; a difference over --crosscheck-max-pct fails this step, naming the entry, unless
  --crosscheck-waivers names it (then the row carries the waiver's reason);
- timer_check.csv: the kernel time and the event time of each profiled entry after each host sleep, per run, with
  the kernel time's change from no sleep (the same bound applies);
- runs.csv: per run, its start, commit(s), the GPU's L2 size and the UUIDs of the GPUs it recorded;
- correctness.csv: every correctness check of every run (the GPU verify step), with the run's name;
- environment.csv: one row per env.json of every run (each GPU step writes one): the GPU, its UUID, the driver,
  CUDA, torch, Triton, cuDNN and Nsight versions, the project's commit, the SM clock and throttle reasons that
  nvidia-smi read at the step's start and end;
- premise.csv: the Nsight metrics of the premise entries (where a claim's premise holds and the headline's does
  not), with their sequence length N;
- large_n.csv: the Nsight metrics of the long-sequence entries (plan.profile.large_n), with their N;
  large_n_table.csv: the metrics of LARGE_N_METRICS, median over the runs that profiled each (variant, N), with
  their short names and what each says;
- launch_cost.csv: per run (with its commit and start), the host time of a plain call (best and median of the
  run's repeats), the event-timed call and the kernel time of each stage and PyTorch backend at the headline shape;
- sampling.csv: per set of the plan, dtype and N: the runs that timed it, the repeats of each entry in a run (lowest
  and highest over the runs and entries) and the samples of each repeat (lowest and highest): how many measurements
  each median of the paper rests on;
- snapshots.csv: every nvidia-smi snapshot of the bench steps (snapshots.jsonl: one at the start of each repeat,
  one at the end of the set, the GPU between two entries), with its SM clock (MHz), power draw and limit (W), throttle
  reasons, and whether the software power cap (reason 0x4) was active.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from kernels.shapes import Shape, attention_flops
from pipeline import git, gpu_env, gpu_state, keys, run_checks, seal, selection, settle, steady_energy
from pipeline.kernel_timer import SAMPLE_COLUMNS, TIMER, is_kernel_name

TORCH = tuple(selection.TORCH)
# The roles of a per-run row, as columns of per_run.csv (each True or False), so that the steps after this one read
# which rows they mean instead of deriving it again.
ROLES = {
    "headline": "at the headline shape (kernels.shapes.HEADLINE)",
    "torch": "a PyTorch backend",
    "article_stage": "one of the article's stages (v0 ... its last)",
    "our_stage": "one of our stages beyond the article",
    "baseline": "the article's first stage",
    "final": "the article's last stage",
    "last": "our last Triton stage that has been measured (at the headline shape, at its own tile)",
    "article_tile": "a Triton row at the article's tile",
    "own_tile": "a Triton row at its variant's own default tile (kernels.stages.default_tile)",
    "paper_row": "a row the paper means: the article's stages at its tile, ours at their own, and the PyTorch backends",
}
# The long-sequence Nsight metrics the paper and its figure read: short name -> (Nsight metric, what it says). Stall
# ratios are warp cycles spent in that state per issued instruction.
LARGE_N_METRICS = {
    "Tensor": ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
               "tensor pipe active, % of active cycles"),
    "Issue": ("sm__issue_active.avg.pct_of_peak_sustained_elapsed", "instruction issue, % of cycles"),
    "Warps": ("sm__warps_active.avg.pct_of_peak_sustained_active", "warps resident, % of the SM's 64"),
    "Exp": ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active", "XU pipe (exp2), % of active cycles"),
    "Fma": ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", "FMA pipe active, % of active cycles"),
    "Lhit": ("lts__t_sector_hit_rate.pct", "L2 hit rate, %"),
    "Dram": ("dram__bytes_read.sum", "DRAM read, bytes"),
    "Instr": ("smsp__inst_executed.sum", "instructions executed (warp level)"),
    "Regs": ("launch__registers_per_thread", "registers per thread"),
    "StallWait": ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", "stall: fixed-latency wait"),
    "StallBarrier": ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "stall: barrier"),
    "StallLong": ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
                  "stall: long scoreboard"),
    "StallShort": ("smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
                   "stall: short scoreboard"),
    "Time": ("gpu__time_duration.sum", "duration, ns"),
    "Cycles": ("sm__cycles_active.avg", "SM active cycles (mean over SMs)"),
}


_SEALED: dict = {}  # run folder -> its listed files, once verified
# How a run's seal is read: against its checksums and the manifest that anchors the paper's data (seal.verify), or,
# for a reviewer's run given to `make compare` (--unanchored), which is no part of the paper's data and which no
# manifest of this repository records, against its checksums alone (seal.check).
READ_SEAL = {"read": seal.verify}


def read_seal(run: Path) -> list:
    return READ_SEAL["read"](run)


def verified(run_dirs) -> list:
    run_dirs = [Path(r) for r in run_dirs]
    if not run_dirs:
        raise ValueError("no runs given")
    for p in run_dirs:
        _SEALED[p] = read_seal(p)
    problems = [x for p in run_dirs for x in run_checks.json_problems(_SEALED[p])]
    if problems:                      # every reader takes their fields by name: refused before any reads them
        raise DataError("files no step of this project writes: " + " | ".join(problems))
    return run_dirs


def load(run_dirs, name: str, required: bool = True, step_gpu: bool = False) -> pd.DataFrame:
    """Every file called `name` that a run's SHA256SUMS lists (and only those), with the run's name in a first
    column; with step_gpu, a column `step_gpu` too: the UUID of the GPU that the file's step recorded in its
    env.json (the folder's; empty where the step wrote none)."""
    frames = []
    for run in run_dirs:
        run = Path(run)
        sealed = _SEALED.get(run) or read_seal(run)
        files = sorted(f for f in sealed if f.name == name)
        if not files and required:
            raise FileNotFoundError(f"{run}: no {name}")
        for f in files:
            df = pd.read_csv(f).assign(run=Path(run).name)
            if step_gpu:
                df["step_gpu"] = _step_uuid(f.parent / "env.json", sealed)
            frames.append(df)
    if not frames:
        return pd.DataFrame(columns=["run"])
    df = pd.concat(frames, ignore_index=True)
    return df[["run"] + [c for c in df.columns if c != "run"]]


def _step_uuid(env_path: Path, sealed) -> str:
    """The UUID of the GPU a step's env.json recorded at its start ("" where the step has no sealed env.json)."""
    if env_path not in set(sealed):
        return ""
    e = json.loads(env_path.read_text())
    return str((e.get("start") or e.get("before") or {}).get("uuid") or "")


MEASURED = ("n_samples", "kernels", "n_kernels", "host_calls", "timer", "step_gpu",  # measured, not descriptive
            *gpu_state.STATE_COLUMNS, *settle.COLUMNS, *steady_energy.COLUMNS, *SAMPLE_COLUMNS)
# per_run's columns of the GPU's state, last in its rows: the medians over repeats of the SM clock (MHz, each
# repeat's median over its timed samples), the mean power (W) and the energy per call (mJ); the number of repeats
# with a power-capped reading; and the useful TFLOP/s (kernels.shapes.attention_flops over the median time) per
# watt of the median power. Then the steady step's (pipeline.steady_energy, long N, the first repeats): the medians
# of NVML's energy counter's mean power over back-to-back calls (W), of the energy of one call in that stream (mJ),
# and of the SM clock over it (MHz), and the TFLOP/s per watt of that stream (the FLOPs of a call over its
# steady_energy_mj). Empty (NaN) for a run whose timings.csv has no such columns (timed before they were).
STATE_MEDIANS = ("sm_mhz", "power_w", "energy_mj", "steady_power_w", "steady_energy_mj", "steady_mhz")
STATE = (*STATE_MEDIANS, "capped_repeats", "tflops_per_watt", "steady_tflops_per_watt")


def canonical_names(timings: pd.DataFrame) -> pd.DataFrame:
    """Name every Triton row by its switches as the registry names them today. An ablation is named after the last
    stage of the run that timed it (v10-tma in run-10-x2); once a later stage exists, the same kernel has another
    name (or none but its switch label), so that rows of one kernel from different runs meet under one name and
    key. Stage names never change (the registry only appends)."""
    t = timings.copy()
    tri = t.impl == "triton"
    names = {lab: selection.variant_name(selection.parse_switches_label(lab)) for lab in set(t.loc[tri, "switches"])}
    new = t.loc[tri, "switches"].map(names)
    t.loc[tri, "key"] = [keys.renamed(k, n) for k, n in zip(t.loc[tri, "key"], new)]
    t.loc[tri, "variant"] = new
    return t


def check_timer(timings: pd.DataFrame) -> None:
    """Every timed row must come from the kernel timer: runs timed otherwise (data/<gpu>/history/) are never mixed in."""
    ok = timings[timings.status == "ok"]
    if "timer" not in ok:
        bad = sorted(set(ok.run))
    else:
        bad = sorted(set(ok[ok.timer != TIMER].run))
    if bad:
        raise ValueError(f"run(s) {bad} hold timings not made by the kernel timer ({TIMER}): they were timed with "
                         f"CUDA events around each call and are kept as history only (data/<gpu>/history/)")


class DataError(ValueError):
    """A sealed run whose content cannot be a measurement."""


# The kernel timer's figures of a timed row (pipeline.kernel_timer.measure), each in microseconds: every one finite
# and positive in every timed row; the other *_us columns (the call and host times) wherever a run has them.
TIMER_TIMES = ("time_us", "min_us", "q25_us", "q75_us", "max_us", "mean_us", "kernels_us")
# Each a chain that a row's statistics keep: lowest <= quartile <= median <= quartile <= highest, and the mean
# within the extremes.
ORDERS = (("min_us", "q25_us", "time_us", "q75_us", "max_us"), ("min_us", "mean_us", "max_us"),
          ("call_q25_us", "call_us", "call_q75_us"))
SHOWN = 5  # rows named per problem


def _rows(df: pd.DataFrame) -> str:
    named = [f"{r.run} {r.key} repeat {r.repeat}" for r in df.head(SHOWN).itertuples()]
    return "; ".join(named) + (f"; and {len(df) - SHOWN} more" if len(df) > SHOWN else "")


def check_timings(timings: pd.DataFrame) -> None:
    """Refuse (DataError, naming the rows) what no measurement writes:
    - a row twice: one (run, set, key, repeat) in two rows; or one key, seed and kernel time in two rows (of one run
      or two): every repeat draws a fresh seed, so such rows are one row copied;
    - a timed row (status ok) with a time (TIMER_TIMES, and the call and host times where the run has them) that is
      empty, not finite or not positive, or out of the order of its own statistics (ORDERS);
    - a kernel time that is not its own kernel sum. `kernels` names what one sample put on the GPU, `n_kernels` how
      many of those are kernels; time_us sums all of it and kernels_us the kernels alone (kernel_timer.measure). So
      n_kernels must count the kernels of `kernels`; where everything is a kernel, time_us equals kernels_us; where
      a memset or copy is there too, kernels_us is at most time_us."""
    problems = []
    twice = timings[timings.duplicated(["run", "set", "key", "repeat"], keep=False)]
    if not twice.empty:
        problems.append(f"rows listed twice (one run, set, key and repeat): {_rows(twice)}")
    ok = timings[timings.status == "ok"]
    copied = ok[ok.duplicated(["key", "seed", "time_us"], keep=False)]
    if not copied.empty:
        problems.append(f"rows with one key, seed and time (a row copied: every repeat draws its own seed): "
                        f"{_rows(copied)}")
    # the median and the mean of hundreds of samples, both to the nanosecond: no two of the committed runs' 24,313
    # timed rows share them; a run copied with its seeds redrawn shares all
    same = ok[ok.duplicated(["key", "time_us", "mean_us"], keep=False)] if "mean_us" in ok else ok.iloc[:0]
    if not same.empty:
        problems.append(f"rows with one key, median and mean time (a row copied, its seed redrawn or not): "
                        f"{_rows(same)}")
    missing = [c for c in (*TIMER_TIMES, "kernels", "n_kernels") if c not in ok]
    if missing:
        raise DataError(f"timings without the kernel timer's columns {missing}: " + _rows(ok))
    num = {c: pd.to_numeric(ok[c], errors="coerce") for c in ok.columns if c.endswith("_us")}
    for c, v in num.items():
        has = v.notna().groupby(ok.run).transform("any")     # a column the run records at all
        bad = ~np.isfinite(v) | (v <= 0)
        bad &= has if c not in TIMER_TIMES else True
        if c in steady_energy.COLUMNS:                        # the steady step's: filled on some rows only
            bad = (ok[c].notna() & v.isna()) | (v.notna() & ~(np.isfinite(v) & (v > 0)))
        if bad.any():
            problems.append(f"{c} empty, not finite or not positive: {_rows(ok[bad])}")
    for chain in ORDERS:
        chain = [c for c in chain if c in num]
        for lo, hi in zip(chain, chain[1:]):
            bad = num[lo] > num[hi]
            if bad.any():
                problems.append(f"{lo} above {hi}: {_rows(ok[bad])}")
    names = ok.kernels.fillna("").astype(str).str.split(";")
    counted = names.map(lambda ns: sum(map(is_kernel_name, ns)))
    n = pd.to_numeric(ok.n_kernels, errors="coerce")
    bad = counted != n
    if bad.any():
        problems.append(f"n_kernels is not the number of kernels that `kernels` names: {_rows(ok[bad])}")
    pure = names.map(len) == n
    t, k = num["time_us"], num["kernels_us"]
    bad = pure & ((t - k).abs() > 1e-9 * t.abs())
    if bad.any():
        problems.append(f"time_us is not its kernels' sum (kernels_us; the row's GPU work is kernels alone): "
                        f"{_rows(ok[bad])}")
    bad = ~pure & (k > t * (1 + 1e-9))
    if bad.any():
        problems.append(f"kernels_us above time_us (the kernels alone above all the row's GPU work): "
                        f"{_rows(ok[bad])}")
    if problems:
        raise DataError("timings no measurement writes: " + " | ".join(problems))


# The fixed bound of a 16-bit output (kernels.accuracy.TOLERANCE), by the dtype's name: a bench row's, which does
# not record the bound it was judged against (pipeline.run_checks.within_tolerance).
FIXED_BOUND = run_checks.fixed_bounds()


def _plan_of(env_path: Path) -> tuple:
    """(plan, sets) that a bench step recorded in its env.json; a DataError where it recorded none."""
    try:
        e = json.loads(env_path.read_text())
    except json.JSONDecodeError:
        return None, None                                  # said by run_checks.env_problems
    if not isinstance(e.get("plan"), dict) or not e.get("sets"):
        raise DataError(f"{env_path}: no plan and sets recorded (bench.py writes both): the rows beside it cannot "
                        f"be compared with what was asked; {run_checks.FIX}")
    return e["plan"], list(e["sets"])


def check_contents(run_dirs) -> None:
    """Refuse (DataError) a run whose files are not what its steps write (pipeline.run_checks): rows not its bench
    steps' plans' (an entry missing, a repeat missing, made up, twice or negative), a status no step writes, a row
    judged ok above its bound, a correctness case twice, a measurement without its env.json or an env.json without
    a SHA-256 of its code, a ceiling negative or not finite. Every problem of every run is named at once."""
    from pipeline import plan as plan_lib

    problems = []
    for run in run_dirs:
        sealed = _SEALED.get(Path(run)) or read_seal(run)
        problems += run_checks.env_problems(sealed)
        files = {f: pd.read_csv(f) for f in sorted(sealed) if f.name == "timings.csv"}
        named = {f: canonical_names(df) if "switches" in df else df for f, df in files.items()}
        variants_run = {v for df in named.values() if "impl" in df for v in df.loc[df.impl == "triton", "variant"]}
        for f, df in files.items():
            problems += run_checks.statuses(df, f) + run_checks.within_tolerance(df, f, FIXED_BOUND)
            if f.parent / "env.json" not in set(sealed):
                continue                                   # said by env_problems
            m, sets = _plan_of(f.parent / "env.json")
            if m is None:
                continue
            expected = {e.key: (e.impl, e.variant, plan_lib.repeats(e, m)) for e in plan_lib.expand(m, sets)}
            problems += run_checks.rows_against_plan(named[f], f, expected, variants_run)
        for f in sorted(x for x in sealed if x.name == "correctness.csv"):
            df = pd.read_csv(f)
            problems += (run_checks.statuses(df, f) + run_checks.within_tolerance(df, f)
                         + run_checks.recorded_bounds(df, f) + run_checks.duplicated_cases(df, f))
        for f in sorted(x for x in sealed if x.name == "ceilings.csv"):
            problems += run_checks.ceilings_problems(pd.read_csv(f), f)
    if problems:
        raise DataError("files no step of this project writes: " + " | ".join(problems))


COMMIT = re.compile(r"[0-9a-f]{7,40}")
# A run whose env.json files name a commit by a slip (a PROJECT_COMMIT typed by hand on a machine without .git) is
# listed in data/COMMIT_CORRECTIONS.csv: its folder (<gpu>/<run>), the commit recorded and the commit meant. The
# correction is taken only when git knows the commit meant and its tree's code hashes to the source_sha256 that every
# env.json of the run recorded (pipeline.git.source_sha256_at): the correction names the code, it cannot change it.
CORRECTIONS = "COMMIT_CORRECTIONS.csv"


# The one committed run whose recorded code is no commit's: run-10-x2 recorded 46e7b5cd and a source_sha256 that no
# commit from 46e7b5cd to the one that added the run (f97ea0b) hashes to (over that commit's SOURCE_GLOBS): its tree
# held code git did not mark dirty (gpu_env then ran `git status --untracked-files=no`, blind to untracked files).
# Taken by (folder, recorded source_sha256) alone, so any other run, or another hash here, is still refused.
UNMATCHED_CODE = {("nvidia-h200/run-10-x2", "c6d4a8341f5316aed2810f106eb29b0af7ccb2f3ee1538360a0fd9bd3049e5cc"):
                  "its code matches no commit from 46e7b5cd to f97ea0b (uncommitted code, unmarked)"}


def commit_corrections(run) -> dict:
    """(recorded commit -> commit meant) for this run, from data/COMMIT_CORRECTIONS.csv beside its GPU folder."""
    path = Path(run).resolve().parent.parent / CORRECTIONS
    if not path.exists():
        return {}
    folder = f"{Path(run).resolve().parent.name}/{Path(run).name}"
    return {r["recorded"]: r["commit"] for r in pd.read_csv(path, dtype=str).to_dict("records")
            if r["folder"] == folder}


def recorded_commit(run, env: dict) -> str:
    """The project commit of one env.json of run, corrected where COMMIT_CORRECTIONS.csv lists it."""
    c = str(env.get("project_commit") or "")
    return commit_corrections(run).get(c.removesuffix("-dirty"), c)


def check_one_gpu(run_dirs) -> None:
    """Refuse (DataError) runs of two GPU models pooled: each GPU's runs are read apart, by the folder each run is in
    (data/<gpu slug>/<run>/), naming the GPUs and their runs. That every env.json of a run names its folder's GPU is
    check_envs'."""
    by_gpu = {}
    for run in run_dirs:
        by_gpu.setdefault(Path(run).resolve().parent.name, []).append(Path(run).name)
    if len(by_gpu) > 1:
        raise DataError("runs of more than one GPU are never pooled: " + "; ".join(
            f"{g}: {', '.join(sorted(r))}" for g, r in sorted(by_gpu.items()))
            + " (aggregate each GPU's data/<gpu>/ runs apart)")


def check_envs(run_dirs) -> None:
    """Refuse (DataError) an env.json whose GPU is not the one its run's folder names (data/<gpu slug>/<run>/,
    gpu_env.gpu_slug), whose project commit ('-dirty' or not) git does not know, or (not '-dirty', nor listed in
    UNMATCHED_CODE) whose source_sha256 is not that commit's code (git.source_sha256_at); the commit checks are
    skipped, saying so, where the tree has no git history (a copy without .git)."""
    problems, commits, codes = [], {}, {}
    for run in run_dirs:
        folder_gpu = Path(run).resolve().parent.name
        for path in env_files(run):
            e = json.loads(path.read_text())
            gpu = str(e.get("gpu") or "")
            if gpu_env.gpu_slug(gpu) != folder_gpu:
                problems.append(f"{path}: the GPU {gpu!r} (data/{gpu_env.gpu_slug(gpu) or '?'}/) is not its folder's, "
                                f"data/{folder_gpu}/")
            recorded = str(e.get("project_commit") or "").removesuffix("-dirty")
            meant = commit_corrections(run).get(recorded)
            if meant is not None and git.history() and not git.unknown_commits({meant}):
                code = git.source_sha256_at(meant)
                if e.get("source_sha256") != code:
                    problems.append(f"{path}: COMMIT_CORRECTIONS.csv names {meant[:12]} for the recorded commit "
                                    f"{recorded!r}, but that commit's code hashes to {code[:12]}..., not the "
                                    f"source_sha256 {str(e.get('source_sha256'))[:12]}... the run recorded")
                    continue
                recorded = meant
            commits.setdefault(recorded, []).append(path)
            folder = f"{Path(run).resolve().parent.name}/{Path(run).name}"
            if (not str(e.get("project_commit") or "").endswith("-dirty")
                    and (folder, e.get("source_sha256")) not in UNMATCHED_CODE):
                codes.setdefault(recorded, []).append((path, e.get("source_sha256")))
    if not git.history():
        print(f"aggregate: the env.json commits were not checked: {git.ROOT} has no git history (.git), the "
              f"witness of which commits exist", file=sys.stderr)
    else:
        named = {c for c in commits if COMMIT.fullmatch(c)}
        for c in sorted(problems_of_commits(commits, named)):
            where = ", ".join(map(str, commits[c][:SHOWN])) + (" ..." if len(commits[c]) > SHOWN else "")
            problems.append(f"{where}: the project commit {c or '(none)'!r} is not a commit of this repository's "
                            f"history: the code that made the data is unknown")
        for c in sorted(set(codes) - set(problems_of_commits(commits, named))):
            code = git.source_sha256_at(c)
            for path, recorded_code in codes[c]:
                if recorded_code != code:
                    problems.append(f"{path}: source_sha256 {str(recorded_code)[:12]}... is not the code of its "
                                    f"project commit {c[:12]} (whose tree hashes to {code[:12]}...): the commit or the "
                                    f"code recorded is not the run's; a commit named by a slip is corrected in "
                                    f"data/{CORRECTIONS}, never by editing the run")
    if problems:
        raise DataError("env.json files no run of this project writes: " + " | ".join(problems))


def problems_of_commits(commits: dict, named: set) -> set:
    """The commits of `commits` that are no commit git knows (not named like one, or unknown)."""
    return (set(commits) - named) | git.unknown_commits(named)


def with_roles(pr: pd.DataFrame) -> pd.DataFrame:
    """per_run's rows with a column per role of ROLES."""
    pr = pr.copy()
    tri = pr.impl == "triton"
    pr["headline"] = selection.at_headline(pr)
    pr["torch"] = pr.impl.isin(TORCH)
    pr["article_stage"] = tri & pr.variant.isin(selection.STAGES)
    pr["our_stage"] = tri & pr.variant.isin(selection.OUR_STAGES)
    pr["baseline"] = tri & (pr.variant == selection.BASELINE)
    pr["final"] = tri & (pr.variant == selection.FINAL)
    pr["article_tile"] = tri & selection.at_article_tile(pr)
    pr["own_tile"] = tri & selection.at_own_tile(pr)
    pr["paper_row"] = pr.torch | (pr.article_stage & pr.article_tile) | (pr.our_stage & pr.own_tile)
    measured = set(pr[pr.our_stage & pr.own_tile & pr.headline].variant)
    ours = [s for s in selection.TRITON_OURS if s in measured]     # the Triton kernel's; the Gluon ones apart
    pr["last"] = tri & (pr.variant == (ours[-1] if ours else selection.FINAL))
    return pr[[c for c in pr.columns if c not in ROLES] + list(ROLES)]


# A shape of a run: the entries that one ratio (a stage's time over cuDNN's) sets against each other.
SHAPE = ["run", "B", "H", "H_kv", "N", "D", "dtype", "causal"]
# The entry that anchors a shape's GPU: the reference of the paper's ratios.
ANCHOR = "torch-cudnn"


def row_gpu(timings: pd.DataFrame) -> pd.Series:
    """The GPU of each row: the UUID it recorded (run-18 on), else its step's env.json's (step_gpu); '' if neither."""
    row = timings["gpu_uuid"].fillna("").astype(str) if "gpu_uuid" in timings else pd.Series("", index=timings.index)
    step = timings["step_gpu"].fillna("").astype(str) if "step_gpu" in timings else pd.Series("", index=timings.index)
    return row.where(row != "", step)


def _most(df: pd.DataFrame, by: list) -> pd.Series:
    """Per group of `by`: the GPU with the most rows (a tie: the first UUID in sort order)."""
    n = df.groupby(by + ["gpu"]).size().rename("n").reset_index()
    n = n.sort_values(by + ["n", "gpu"], ascending=[True] * len(by) + [False, True]).drop_duplicates(by)
    return n.set_index(by).gpu


def one_gpu(ok: pd.DataFrame) -> pd.DataFrame:
    """The rows per_run takes, with their GPU (column gpu). An entry that a run timed on several GPUs (its sets on
    different GPUs: the x2 runs, run-26) keeps the rows of one: its shape's GPU (SHAPE), the one that timed most of
    cuDNN's rows at that shape (ANCHOR; where cuDNN was not timed there, most of the shape's rows), so that its
    median and its ratio to cuDNN come from one GPU; where the entry has no row on that GPU, the GPU that timed most
    of its own rows. An entry timed on one GPU keeps its rows."""
    ok = ok.assign(gpu=row_gpu(ok))
    anchor = _most(ok[ok.variant == ANCHOR], SHAPE).rename("anchor_gpu")
    shape = _most(ok, SHAPE).rename("shape_gpu")
    own = _most(ok, ["run", "key"]).rename("own_gpu")
    ok = ok.join(anchor, on=SHAPE).join(shape, on=SHAPE).join(own, on=["run", "key"])
    target = ok.anchor_gpu.fillna(ok.shape_gpu)
    there = (ok.gpu == target).groupby([ok.run, ok.key]).transform("any")
    return ok[ok.gpu == target.where(there, ok.own_gpu)].drop(columns=["anchor_gpu", "shape_gpu", "own_gpu"])


def check_ratio_gpus(pr: pd.DataFrame) -> None:
    """Raise DataError where an entry of the paper's rows (paper_row) took another GPU than cuDNN's at its shape in
    its run: a ratio of the two would set one GPU against another."""
    ref = pr[pr.variant == ANCHOR].set_index(SHAPE).gpu.rename("anchor_gpu")
    if ref.index.duplicated().any():
        raise DataError(f"cuDNN twice at one shape of a run: {list(ref.index[ref.index.duplicated()])[:5]}")
    j = pr[pr.paper_row].join(ref, on=SHAPE)
    bad = j[j.anchor_gpu.notna() & (j.gpu != j.anchor_gpu)]
    if not bad.empty:
        raise DataError("entries timed on another GPU than cuDNN at their shape in their run (no ratio may pair "
                        "two GPUs): " + "; ".join(f"{r.run} {r.key} on {r.gpu}, cuDNN on {r.anchor_gpu}"
                                                   for r in bad.head(10).itertuples()))


def per_run(timings: pd.DataFrame) -> pd.DataFrame:
    """Per run and entry: the medians over its repeats (on one GPU: one_gpu) of the times, their range and count,
    its descriptive columns, the sets that timed it (on any GPU), the GPU (gpu) and the GPU's state."""
    every = timings[timings.status == "ok"]
    ok = one_gpu(every)
    g = ok.groupby(["run", "key"])
    stats = g.time_us.agg(time_us="median", lo_us="min", hi_us="max", repeats="count")
    extra = [c for c in ("kernels_us", "call_us", "host_us") if c in ok]
    stats = stats.join(g[extra].median())
    if "host_us" in ok:
        stats = stats.join(g.host_us.min().rename("host_min_us"))
    stats = stats.reset_index()
    desc = ok.drop_duplicates("key").drop(columns=["run", "repeat", "seed", "status", "rel_error", "note"] + [
        c for c in ok.columns if c.endswith("_us") or c in MEASURED])
    # an entry timed by several sets' jobs belongs to all of them (each job writes only its own set's name)
    sets = every.groupby("key").set.agg(lambda x: ",".join(sorted({n for v in x.dropna() for n in v.split(",")})))
    desc = desc.drop(columns=["set", "gpu"]).merge(sets.rename("set"), left_on="key", right_index=True)
    stats = stats.join(g.gpu.first(), on=["run", "key"])
    pr = with_roles(stats.merge(desc, on="key"))
    return pr.merge(gpu_state_per_run(ok), on=["run", "key"], how="left").assign(
        tflops_per_watt=lambda p: attention_flops(p.B, p.H, p.N, p.D, p.causal) / (p.time_us * 1e-6) / 1e12
        / p.power_w,
        steady_tflops_per_watt=lambda p: attention_flops(p.B, p.H, p.N, p.D, p.causal) / 1e12
        / (p.steady_energy_mj * 1e-3))[[*pr.columns, *STATE]]


def gpu_state_per_run(ok: pd.DataFrame) -> pd.DataFrame:
    """Per run and key: the medians of STATE_MEDIANS over the repeats that have them, and capped_repeats, the
    number of repeats with power_capped true (NaN where no repeat recorded the state)."""
    state = pd.DataFrame({"run": ok.run, "key": ok.key})
    for c in STATE_MEDIANS:
        state[c] = pd.to_numeric(ok[c], errors="coerce") if c in ok else float("nan")
    capped = ok["power_capped"] if "power_capped" in ok else pd.Series(float("nan"), index=ok.index)
    state["capped"] = capped.map({True: 1.0, False: 0.0, "True": 1.0, "False": 0.0})
    g = state.groupby(["run", "key"])
    return g[list(STATE_MEDIANS)].median().join(g.capped.sum(min_count=1).rename("capped_repeats")).reset_index()


class CrossCheckError(ValueError):
    """The kernel timer and Nsight Compute disagree beyond the stated bound."""


def timer_per_gpu(timings: pd.DataFrame) -> pd.DataFrame:
    """The kernel timer per run, entry and GPU (the UUID a row recorded, else its step's): the median over repeats
    of the kernels' time and of the SM clock (NaN where the run recorded none), the time and the kernel count, so
    that a cross-check compares the timer with Nsight on the GPU Nsight ran on."""
    ok = timings[timings.status == "ok"].copy()
    ok["gpu"] = row_gpu(ok)
    ok["sm_mhz"] = pd.to_numeric(ok["sm_mhz"], errors="coerce") if "sm_mhz" in ok else float("nan")
    cols = [c for c in ("kernels_us", "time_us", "sm_mhz") if c in ok]
    g = ok.groupby(["run", "key", "gpu"])
    out = g[cols].median().join(g.size().rename("repeats"))
    desc = [c for c in ("n_kernels", "impl", "variant", "block_m", "block_n", "num_warps", "num_stages") if c in ok]
    return out.join(g[desc].first()).reset_index()


# What Nsight reads beside each duration: the SM clock over the kernel (Hz), read in the same replay pass.
NCU_CLOCK = "sm__cycles_elapsed.avg.per_second"


def crosscheck(pr: pd.DataFrame, durations: pd.DataFrame, max_pct: float, waivers=()) -> pd.DataFrame:
    """Per run and profiled entry (at any N): Nsight's duration of one launch (its kernels summed), median over
    launches, beside the kernel timer's median of the kernels alone (kernels_us: Nsight profiles no memset), each
    on the same GPU: where `durations` and `pr` name their GPU (columns step_gpu and gpu, from timer_per_gpu), the
    timer's rows of another GPU are not compared (an entry timed only there is a row with timed False).

    The bound: |timer / Nsight - 1| <= max_pct percent, in time. Where both sides recorded the SM clock (Nsight's
    NCU_CLOCK in its duration pass, the timer's NVML median over its samples: run-18 on), the clocks and the
    difference in SM cycles (time x clock) are reported beside it, not judged: in run-18 NVML's clock was 2-19% above
    Nsight's at N = 1024-4096, where the times agree within a few percent, so the two clock readings do not measure
    the same thing and the cycles cannot correct the times. Raises CrossCheckError naming every
    entry beyond both, unless a waiver (config `crosscheck_waivers`: run, variant, reason) names it: a waived
    entry stays outside the bound in the table, with its reason, for the paper to print. A waiver that names no
    entry beyond the bound raises too (it would hide nothing, or a typo)."""
    if durations.empty:
        raise CrossCheckError("no Nsight durations (profile/ncu_duration.csv) in the runs: nothing to cross-check")
    by_gpu = "step_gpu" in durations and "gpu" in pr
    rows = []
    for (run, key), d in durations.groupby(["run", "key"], sort=False):
        d = d.sort_values("index")
        names = list(d.kernel)
        gpu = str(d.step_gpu.iloc[0]) if by_gpu else ""
        timer = pr[(pr.run == run) & (pr.key == key)]
        elsewhere = not timer.empty
        if by_gpu and gpu:
            timer = timer[timer.gpu == gpu]
        if timer.empty:
            # Profiled but not timed in this run, or timed on another GPU than Nsight's (run-12-x2's lighter plan
            # left two profiled tiles out of its bench sets): nothing to compare; kept as a row, outside the bound,
            # and counted in the paper.
            k = keys.parse(key)
            rows.append(dict(run=run, key=key, impl=k.impl, variant=k.variant, N=k.N, gpu=gpu, timed=False,
                             untimed="on another GPU" if elsewhere else "not timed"))
            continue
        per_launch = int(timer.n_kernels.iloc[0]) if "n_kernels" in timer and not pd.isna(
            timer.n_kernels.iloc[0]) else 1
        if len(names) % per_launch:
            raise CrossCheckError(f"{run} {key}: Nsight profiled {len(names)} kernels, not a multiple of the "
                                  f"{per_launch} the timer saw per call")
        launches = d.duration_ns.to_numpy().reshape(-1, per_launch).sum(axis=1) / 1e3
        ncu_us = float(pd.Series(launches).median())
        ncu_mhz = (float(pd.to_numeric(d.sm_hz, errors="coerce").median()) / 1e6 if "sm_hz" in d
                   else float("nan"))
        t = timer.iloc[0]
        timer_mhz = float(t.sm_mhz) if "sm_mhz" in t and not pd.isna(t.sm_mhz) else float("nan")
        rows.append(dict(run=run, key=key, impl=t.impl if "impl" in t else keys.parse(key).impl,
                         variant=t.variant if "variant" in t else keys.parse(key).variant,
                         N=keys.parse(key).N, gpu=gpu,
                         **{c: t[c] for c in ("block_m", "block_n", "num_warps", "num_stages") if c in t},
                         time_us=t.time_us, timer_us=t.kernels_us, ncu_us=ncu_us, ncu_lo_us=float(launches.min()),
                         ncu_hi_us=float(launches.max()), ncu_launches=len(launches),
                         diff_pct=100 * (t.kernels_us / ncu_us - 1), timer_mhz=timer_mhz, ncu_mhz=ncu_mhz,
                         cycles_diff_pct=100 * (t.kernels_us * timer_mhz / (ncu_us * ncu_mhz) - 1), timed=True,
                         untimed=""))
    if not any(r["timed"] for r in rows):
        raise CrossCheckError("no profiled entry was also timed in its run: nothing to cross-check")
    out = pd.DataFrame(rows)
    for c in ("diff_pct", "cycles_diff_pct", "timer_mhz", "ncu_mhz"):
        out[c] = pd.to_numeric(out.get(c), errors="coerce")
    out["within"] = (out.diff_pct.abs() <= max_pct) | ~out.timed
    out["max_pct"] = max_pct
    reasons = {(w["run"], w["variant"]): w["reason"] for w in waivers}
    out["waiver"] = [reasons.get((r.run, r.variant), "") if not r.within else "" for r in out.itertuples()]
    stale = sorted(set(reasons) - {(r.run, r.variant) for r in out.itertuples() if r.waiver})
    if stale:
        raise CrossCheckError(f"crosscheck_waivers name entries that are within {max_pct:g}% of Nsight or were not "
                              f"profiled: {stale}; remove them from the config")
    bad = out[~out.within & (out.waiver == "")]
    if not bad.empty:
        raise CrossCheckError(
            f"the kernel timer and Nsight Compute's gpu__time_duration differ by more than {max_pct:g}% for: " +
            "; ".join(f"{r.run} {r.key}: timer {r.timer_us:.1f} us, Nsight {r.ncu_us:.1f} us ({r.diff_pct:+.1f}%"
                      + (f"; in SM cycles {r.cycles_diff_pct:+.1f}%, at {r.timer_mhz:.0f} and {r.ncu_mhz:.0f} MHz)"
                         if not pd.isna(r.cycles_diff_pct) else ")")
                      for r in bad.itertuples()))
    return out


def timer_check(checks: pd.DataFrame, max_pct: float) -> pd.DataFrame:
    """Each entry's kernel time after each host sleep, relative to no sleep; raises if one moves by > max_pct."""
    ok = checks[checks.status == "ok"].copy()
    if ok.empty:
        raise CrossCheckError("no timer check (timer_check/timer_check.csv) in the runs")
    base = ok[ok.sleep_us == 0].set_index(["run", "key"])
    ok["kernel_change_pct"] = [100 * (r.time_us / base.loc[(r.run, r.key), "time_us"] - 1) for r in ok.itertuples()]
    ok["event_change_pct"] = [100 * (r.event_us / base.loc[(r.run, r.key), "event_us"] - 1) for r in ok.itertuples()]
    bad = ok[ok.kernel_change_pct.abs() > max_pct]
    if not bad.empty:
        raise CrossCheckError(f"the kernel time moved with a host sleep by more than {max_pct:g}%: " + "; ".join(
            f"{r.run} {r.key} sleep {r.sleep_us:g} us: {r.kernel_change_pct:+.1f}%" for r in bad.itertuples()))
    return ok


def sampling(timings: pd.DataFrame) -> pd.DataFrame:
    """Per set, dtype and N: the runs, the repeats per entry in a run and the samples per repeat, lowest and highest
    (each row of timings.csv is one repeat of one entry, its n_samples the samples behind its median)."""
    ok = timings[timings.status == "ok"]
    reps = ok.groupby(["set", "dtype", "N", "run", "key"]).repeat.nunique().rename("repeats").reset_index()
    g = reps.groupby(["set", "dtype", "N"])
    s = ok.groupby(["set", "dtype", "N"]).n_samples
    out = pd.DataFrame({"runs": g.run.nunique(), "entries": g.key.nunique(), "repeats_lo": g.repeats.min(),
                        "repeats_hi": g.repeats.max(), "samples_lo": s.min(), "samples_hi": s.max()})
    return out.reset_index().astype({"N": int, "repeats_lo": int, "repeats_hi": int, "samples_lo": int,
                                     "samples_hi": int})


SNAPSHOT_COLUMNS = ["run", "set", "repeat", "uuid", "sm_mhz", "power_w", "power_limit_w", "reasons", "power_capped"]
POWER_CAP = 0x4   # nvidia-smi's clocks_event_reasons: software power cap


def _number(text) -> float:
    """'1980 MHz' -> 1980.0, '547.91 W' -> 547.91; NaN for what nvidia-smi did not give."""
    m = re.match(r"\s*([-+0-9.]+)", str(text))
    return float(m.group(1)) if m else float("nan")


def snapshots(run_dirs) -> pd.DataFrame:
    """Every line of every sealed snapshots.jsonl (the bench steps' nvidia-smi snapshots), one row each."""
    rows = []
    for run in run_dirs:
        for f in sorted(p for p in (_SEALED.get(Path(run)) or read_seal(run)) if p.name == "snapshots.jsonl"):
            for n, line in enumerate(f.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    e = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DataError(f"{f}: line {n} is not a JSON object ({err.msg}, column {err.colno}): a torn "
                                    f"or edited snapshot; {run_checks.FIX}") from None
                if not isinstance(e, dict):
                    raise DataError(f"{f}: line {n} is not a JSON object (a {type(e).__name__}): a torn or edited "
                                    f"snapshot; {run_checks.FIX}")
                reasons = str(e.get("clocks_event_reasons.active", ""))
                mask = int(reasons, 16) if re.fullmatch(r"0x[0-9a-fA-F]+", reasons) else 0
                rows.append(dict(run=Path(run).name, set=f.parent.name.removeprefix("bench-"),
                                 repeat=str(e.get("repeat", "")), uuid=e.get("uuid", ""),
                                 sm_mhz=_number(e.get("clocks.sm")), power_w=_number(e.get("power.draw")),
                                 power_limit_w=_number(e.get("power.limit")), reasons=reasons,
                                 power_capped=bool(mask & POWER_CAP)
                                 or e.get("clocks_event_reasons.sw_power_cap") == "Active"))
    return pd.DataFrame(rows, columns=SNAPSHOT_COLUMNS)


def env_files(run) -> list:
    """The env.json files a sealed run lists, in path order."""
    return sorted(p for p in (_SEALED.get(Path(run)) or read_seal(run)) if p.name == "env.json")


SHAPE_COLUMNS = [f.name for f in dataclasses.fields(Shape)]    # a bench row's shape (B, H, H_kv, N, D, dtype, causal)


def entry_order(timings: list) -> str:
    """How a run's bench ordered the entries of a shape within a repeat, read from its timings files (their rows in
    the order they were timed): 'alternating' where repeat 1 took every shape's entries in the reverse of repeat 0's
    order (pipeline.plan.timing_order), 'fixed' where in the same order (the runs up to run-32), '' where no shape
    had two entries timed in both repeats or the files say neither."""
    seen = set()
    for f in timings:
        t = pd.read_csv(f, usecols=["key", "repeat", *SHAPE_COLUMNS])
        t = t[t.repeat.isin([0, 1])]
        for _, g in t.groupby(SHAPE_COLUMNS, sort=False):
            first, second = list(g[g.repeat == 0].key), list(g[g.repeat == 1].key)
            both = [k for k in first if k in set(second)]
            if len(both) < 2:
                continue
            later = [k for k in second if k in set(both)]
            seen.add("fixed" if later == both else "alternating" if later == both[::-1] else "other")
    return seen.pop() if len(seen) == 1 and seen != {"other"} else ""


def run_info(run_dirs) -> pd.DataFrame:
    """Per run: when it started (the earliest env.json start), the project's commit(s) it ran, the GPU's L2 size,
    the UUIDs of the GPUs it recorded, the GPU's compute capability (env.json), the variants its plan skipped as
    that GPU cannot run them (its sealed plan.yaml's record, pipeline.plan.adapt: empty for none, and for the runs
    sealed before the record) and how its bench ordered a shape's entries within a repeat (entry_order)."""
    from pipeline import plan as plan_lib

    rows = []
    for run in run_dirs:
        envs = [json.loads(p.read_text()) for p in env_files(run)]
        listed = _SEALED.get(Path(run)) or read_seal(run)
        arch = plan_lib.skipped_of(Path(run) / "plan.yaml") if Path(run) / "plan.yaml" in listed else {"skipped": []}
        capability = " ".join(sorted({str(e["capability"]) for e in envs if e.get("capability")}))
        starts = sorted((e.get("start") or {}).get("time", "") for e in envs)
        commits = sorted({recorded_commit(run, e) or "not recorded" for e in envs})
        l2 = sorted({e["l2_bytes"] for e in envs if e.get("l2_bytes")})
        uuids = sorted({(e.get("start") or {}).get("uuid") for e in envs} - {None, ""})
        timings = [p for p in listed if p.name == "timings.csv" and p.parent.name.startswith("bench-")]
        rows.append(dict(run=Path(run).name, started=starts[0] if starts else "", commit=" ".join(commits),
                         l2_bytes=l2[0] if len(l2) == 1 else None, gpu_uuids=" ".join(uuids),
                         capability=capability, skipped=" ".join(arch["skipped"]),
                         entry_order=entry_order(sorted(timings))))
    return pd.DataFrame(rows).sort_values("started").reset_index(drop=True)


def environment(run_dirs) -> pd.DataFrame:
    """One row per env.json of the runs (sealed: verified with the run), as each GPU step recorded it."""
    rows = []
    for run in run_dirs:
        for env_path in env_files(run):
            e = json.loads(env_path.read_text())
            start, end = e.get("start") or e.get("before") or {}, e.get("end") or e.get("after") or {}
            rows.append(dict(run=Path(run).name,
                             step=env_path.parent.name if env_path.parent != Path(run) else "all",
                             gpu=e.get("gpu", ""), uuid=start.get("uuid") or "",
                             driver=start.get("driver_version", ""), cuda=e.get("cuda_runtime", ""),
                             torch=e.get("torch", ""), triton=e.get("triton", ""), cudnn=str(e.get("cudnn", "")),
                             ncu=str(e.get("ncu") or "").split(" ")[0], commit=recorded_commit(run, e),
                             sm_clock_start=start.get("clocks.sm", ""), sm_clock_end=end.get("clocks.sm", ""),
                             throttle_start=start.get("clocks_event_reasons.active", ""),
                             throttle_end=end.get("clocks_event_reasons.active", "")))
    return pd.DataFrame(rows)


def launch_cost(pr: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """Per run: host time of a plain call (the best and the median of the run's repeats), event-timed call and
    kernel time (medians) of each stage (article tile), our extensions and each PyTorch backend at the headline
    shape, with the run's commit and start (the host path can change between runs: each run's figure belongs to its
    commit). The best of repeats is the host cost itself; slower repeats are the host's other work interfering
    (another job on the same machine, a shared core), as Python's timeit documentation says of its own minimum."""
    h = pr[selection.at_headline(pr)]
    h = h[h.impl.isin(TORCH) | ((h.stage.fillna("") != "") & selection.at_article_tile(h))
          | (h.variant.isin(selection.EXTENSION_VARIANTS) & selection.at_article_tile(h))]
    out = h[["run", "variant", "host_min_us", "host_us", "call_us", "time_us"]].rename(columns={"variant": "entry"})
    out = out.merge(info, on="run")
    order = {e: i for i, e in enumerate(selection.STAGES + selection.EXTENSION_VARIANTS + list(TORCH))}
    return out.sort_values(["started", "entry"], key=lambda s: s.map(order) if s.name == "entry" else s
                           ).reset_index(drop=True)


RATIO_SUFFIX = "_" + selection.RATIO_TIME      # headline.csv's column of a backend's time for ratios


def headline(pr: pd.DataFrame, article: pd.DataFrame) -> pd.DataFrame:
    h = pr[selection.at_headline(pr)]
    stages = h[(h.impl == "triton") & (h.stage.fillna("") != "") & selection.at_article_tile(h)]
    backends = h[h.impl.isin(TORCH)]
    torch = backends.pivot(index="run", columns="impl", values="time_us")
    # each end of a ratio takes selection.RATIO_TIME (the kernels alone): the backends' as <impl>_<RATIO_TIME>
    ratio_of = backends.pivot(index="run", columns="impl", values=selection.RATIO_TIME).add_suffix(RATIO_SUFFIX)
    ratio = stages[selection.RATIO_TIME].rename("ratio_us")
    out = stages[["run", "stage", "time_us", "lo_us", "hi_us", "repeats"]].join(ratio).merge(
        torch, left_on="run", right_index=True).merge(ratio_of, left_on="run", right_index=True)
    for impl in TORCH:
        out[f"pct_of_{impl}"] = 100 * out.ratio_us / out[impl + RATIO_SUFFIX]
    out = out.drop(columns="ratio_us")
    art = article[(article.impl == "triton") & (article.block_m == selection.ARTICLE_TILE["block_m"])]
    art = art[["stage", "time_us"]].rename(
        columns={"time_us": "article_us"})
    torch_art = article.loc[article.impl == "torch-default", "time_us"].iloc[0]
    out = out.merge(art, on="stage", how="left")
    out["article_pct_of_torch"] = 100 * out.article_us / torch_art
    return out.sort_values(["run", "stage"]).reset_index(drop=True)


def headline_median(head: pd.DataFrame) -> pd.DataFrame:
    """headline.csv's numbers, each the median over runs of its per-run value, one row per stage."""
    return head.groupby("stage").median(numeric_only=True).reset_index()


def variation(head: pd.DataFrame) -> pd.DataFrame:
    cols = ["time_us", *[f"pct_of_{i}" for i in TORCH]]
    g = head.groupby("stage")[cols]
    return (100 * (g.max() / g.min() - 1)).add_suffix("_run_to_run_pct").reset_index()


def stage_table(head: pd.DataFrame, ncu: pd.DataFrame, article_timings: Path, article_ncu: Path) -> pd.DataFrame:
    """The paper's stage table, unformatted: one row per stage of the article, its figures beside ours."""
    ncu = ncu[ncu.instance.isna()].groupby(["variant", "metric"]).value.median()
    art_t = pd.read_csv(article_timings)
    art_torch = art_t.loc[art_t.impl == "torch-default", "time_us"].iloc[0]
    art_n = pd.read_csv(article_ncu)
    art_n = art_n[art_n.kind == "absolute"]

    def art_metric(stage, metric):
        v = art_n[(art_n.stage == stage) & (art_n.metric == metric)].value
        return float(v.iloc[0]) if len(v) else float("nan")

    rows = []
    for st in selection.STAGES:
        r = head[head.stage == st]
        art_us = art_t[(art_t.stage == st) & (art_t.block_m == selection.ARTICLE_TILE["block_m"])].time_us.iloc[0]
        rows.append(dict(
            stage=st, article_us=art_us, ours_us=r.time_us.median(), ours_lo=r.time_us.min(),
            ours_hi=r.time_us.max(), article_pct=100 * art_us / art_torch,
            pct_flash=r["pct_of_torch-flash"].median(), pct_default=r["pct_of_torch-default"].median(),
            article_regs=art_metric(st, "launch__registers_per_thread"),
            ours_regs=ncu.get((st, "launch__registers_per_thread"), float("nan")),
            article_smem_kb=art_metric(st, "launch__shared_mem_per_block_dynamic"),
            ours_smem_kb=ncu.get((st, "launch__shared_mem_per_block_dynamic"), float("nan")) / 1000,
            ours_l2_hit=ncu.get((st, "lts__t_sector_hit_rate.pct"), float("nan")),
            ours_inst_m=ncu.get((st, "smsp__inst_executed.sum"), float("nan")) / 1e6))
    return pd.DataFrame(rows)


def large_n_table(large_n: pd.DataFrame) -> pd.DataFrame:
    """variant, N, short, metric, label, value (median over the runs that profiled it), runs: the metrics of
    LARGE_N_METRICS at the long-sequence entries."""
    columns = ["variant", "N", "short", "metric", "label", "value", "runs"]
    if large_n.empty:
        return pd.DataFrame(columns=columns)
    d = large_n[large_n.instance.isna()]
    short = {metric: s for s, (metric, _) in LARGE_N_METRICS.items()}
    d = d[d.metric.isin(short)].assign(short=lambda x: x.metric.map(short))
    g = d.groupby(["variant", "N", "short", "metric"])
    t = g.value.median().to_frame().join(g.run.nunique().rename("runs")).reset_index()
    t["label"] = t.short.map(lambda s: LARGE_N_METRICS[s][1])
    return t[columns]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, nargs="+", required=True, help="sealed run folders")
    ap.add_argument("--build", type=Path, nargs="*", default=[], help="build.csv files of the build step")
    ap.add_argument("--article-timings", type=Path, required=True, help="the article's times, as transcribed")
    ap.add_argument("--article-ncu", type=Path, required=True, help="the article's Nsight figures, as transcribed")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--unanchored", action="store_true",
                    help="read the runs' seals against their checksums alone (a reviewer's run for make compare)")
    ap.add_argument("--crosscheck-max-pct", type=float, default=5.0,
                    help="largest allowed difference between the kernel timer and Nsight's duration (percent)")
    ap.add_argument("--crosscheck-waivers", type=json.loads, default=[],
                    help="JSON list of {run, variant, reason}: entries beyond the bound that are reported, not fatal")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    if a.unanchored:
        READ_SEAL["read"] = seal.check
    run_dirs = verified(a.runs)
    check_one_gpu(run_dirs)
    recorded = load(run_dirs, "timings.csv", step_gpu=True)
    check_timer(recorded)
    check_timings(recorded)
    check_envs(run_dirs)
    check_contents(run_dirs)
    timings = canonical_names(recorded)
    with_roles(timings).to_csv(a.out / "timings.csv", index=False)
    pr = per_run(timings)
    check_ratio_gpus(pr)
    pr.to_csv(a.out / "per_run.csv", index=False)
    head = headline(pr, pd.read_csv(a.article_timings))
    head.to_csv(a.out / "headline.csv", index=False)
    headline_median(head).to_csv(a.out / "headline_median.csv", index=False)
    variation(head).to_csv(a.out / "variation.csv", index=False)
    crosscheck(timer_per_gpu(timings), load(run_dirs, "ncu_duration.csv", required=False, step_gpu=True),
               a.crosscheck_max_pct, a.crosscheck_waivers).to_csv(
        a.out / "crosscheck.csv", index=False)
    timer_check(load(run_dirs, "timer_check.csv", required=False), a.crosscheck_max_pct).to_csv(
        a.out / "timer_check.csv", index=False)
    info = run_info(run_dirs)
    info.to_csv(a.out / "runs.csv", index=False)
    environment(run_dirs).to_csv(a.out / "environment.csv", index=False)
    launch_cost(pr, info).to_csv(a.out / "launch_cost.csv", index=False)
    sampling(timings).to_csv(a.out / "sampling.csv", index=False)
    snapshots(run_dirs).to_csv(a.out / "snapshots.csv", index=False)
    for name in ("premise", "large_n"):      # Nsight away from the headline N: the N is the key's
        extra = load(run_dirs, f"ncu_{name}.csv", required=False)
        if not extra.empty:
            extra["N"] = keys.field(extra.key, "N")
        extra.to_csv(a.out / f"{name}.csv", index=False)
        if name == "large_n":
            large_n_table(extra).to_csv(a.out / "large_n_table.csv", index=False)
    ncu = load(run_dirs, "ncu.csv")
    ncu.to_csv(a.out / "ncu.csv", index=False)
    stage_table(head, ncu, a.article_timings, a.article_ncu).to_csv(a.out / "stage_table.csv", index=False)
    load(run_dirs, "correctness.csv", required=False).to_csv(a.out / "correctness.csv", index=False)
    load(run_dirs, "ceilings.csv", required=False, step_gpu=True).to_csv(a.out / "ceilings.csv", index=False)
    build = pd.concat([pd.read_csv(b) for b in a.build], ignore_index=True) if a.build else pd.DataFrame()
    build.to_csv(a.out / "build.csv", index=False)
    pd.set_option("display.width", 200)
    print(headline_median(head).round(1).to_string(index=False))
    print(variation(head).round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
