"""How long each step of the pipeline took, one row per job, from Snakemake's benchmark files (the `benchmark:` of
every rule), into results/aggregate/step_times.csv: the paper's step table and its macros read only that file.

- A measured run's GPU steps: Snakemake writes each step's benchmark file inside the run's staging folder
  (`benchmarks/<rule>.tsv`, `benchmarks/bench/<set>.tsv`), so that it is sealed with the data it timed; read, as
  every file of a run, only as the run's SHA256SUMS lists it, checksums verified.
- Runs sealed before the rules had benchmark files (run-6-x2 ... run-10-x2) hold none. For those runs alone, each
  job's time is read from the run's Snakemake log (data/<gpu>/snakemake-logs/<run>.log): from the stamp Snakemake
  printed as the job started to the stamp it printed when the job finished, whole seconds. Those rows say so
  (`source`: snakemake log) and the paper says which runs they are. A run with neither is an error. A log is read
  only sealed, as a run's files are: listed in the SHA256SUMS of its folder, which data/SEALS.csv records.
- This build's CPU steps: the benchmark files given with --cpu (benchmarks/ at the top of the repository, written by
  `make paper`: untracked).

A benchmark file is benchmarks/<rule>.tsv or benchmarks/<rule>/<wildcard value>.tsv: the rule and the job are read
from its path. Columns of the output: tier (`run`: a measured run's steps; `build`: this build's CPU steps), run,
rule, job, seconds (Snakemake's `s`, wall time of the job; the median of the rows where a rule repeats), max_rss_mb
(peak resident memory of the job's processes; empty from a log), source (`benchmark`, `snakemake log`), file, gpu
(the rule runs on a GPU: `resources: gpu=1`), order (the rule's place in the pipeline, within its tier).

    python workflow/scripts/step_times.py --runs data/nvidia-h200/run-* --logs data/nvidia-h200/snakemake-logs/*.log \\
        --cpu benchmarks/aggregate.tsv ... --out results/aggregate/step_times.csv
"""
from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime
from pathlib import Path

import pandas as pd

from pipeline import seal

BENCH = "benchmarks"
# The steps of a measured run, in the pipeline's order: the rules whose benchmark files are sealed in the run. The
# old logs also hold the jobs that ran beside them (build_variants, seal_run, aggregate): not the run's steps.
# qwen3_e2e: only in the runs whose plan has its section (plan.qwen3_e2e); in none sealed before the step existed.
RUN_RULES = ("gpu_check", "plan", "theory", "verify_gpu", "compile", "bench", "timer_check", "profile", "ceilings",
             "qwen3_e2e")
GPU_RULES = ("gpu_check", "verify_gpu", "compile", "bench", "timer_check", "profile", "ceilings",
             "qwen3_e2e")  # resources: gpu=1
BUILD_RULES = ("build_variants", "verify_cpu", "aggregate", "claims", "figure", "step_times", "tables", "macros",
               "paper", "seal_run")
COLUMNS = ["tier", "run", "rule", "job", "seconds", "max_rss_mb", "source", "file", "gpu", "order"]


def read_benchmark(path: Path) -> dict:
    """seconds and peak memory of one benchmark file (Snakemake's TSV: s, h:m:s, max_rss, ...); the median of its
    rows when the rule repeats (repeat())."""
    t = pd.read_csv(path, sep="\t")
    if "s" not in t or t.empty:
        raise ValueError(f"{path}: not a Snakemake benchmark file (no rows, or no column s)")
    rss = pd.to_numeric(t["max_rss"], errors="coerce") if "max_rss" in t else pd.Series(dtype=float)
    return {"seconds": float(pd.to_numeric(t["s"]).median()), "max_rss_mb": rss.max() if rss.notna().any() else None}


def rule_and_job(path: Path, root: Path) -> tuple:
    """benchmarks/<rule>.tsv -> (rule, ''); benchmarks/<rule>/<job>.tsv -> (rule, job)."""
    parts = path.relative_to(root).with_suffix("").parts
    if len(parts) not in (1, 2):
        raise ValueError(f"{path}: a benchmark file is {root}/<rule>.tsv or {root}/<rule>/<wildcard>.tsv")
    return parts[0], (parts[1] if len(parts) == 2 else "")


def from_benchmarks(files, root: Path, tier: str, run: str) -> list:
    rows = []
    for f in sorted(files):
        rule, job = rule_and_job(Path(f), root)
        rows.append(dict(tier=tier, run=run, rule=rule, job=job, **read_benchmark(Path(f)), source="benchmark",
                         file=str(f)))
    return rows


STAMP = re.compile(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]")


def from_log(log: Path) -> list:
    """Each job of a Snakemake log: rule, wildcards, seconds from its start stamp to its 'Finished jobid' stamp.
    Only for the runs sealed before the GPU rules had benchmark files."""
    stamp, block, started, jobs = None, None, {}, []
    for line in log.read_text().splitlines():
        if m := STAMP.match(line):
            stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif m := re.match(r"\s*(?:local)?rule (\w+):", line):
            block = {"rule": m.group(1), "start": stamp, "wildcards": {}}
        elif (m := re.match(r"\s*jobid: (\d+)", line)) and block:
            started[m.group(1)] = block
        elif (m := re.match(r"\s*wildcards: (.*)", line)) and block:
            block["wildcards"] = dict(kv.split("=", 1) for kv in m.group(1).split(", ") if "=" in kv)
        elif m := re.match(r"Finished jobid: (\d+)", line):
            job = started.pop(m.group(1), None)
            if job:
                jobs.append({**job, "seconds": (stamp - job["start"]).total_seconds()})
            block = None
    return jobs


def sealed_log(log: Path) -> Path:
    """The log, once its folder's seal holds (checksums, and the manifest's entry) and lists it."""
    log = Path(log)
    if not (log.parent / seal.NAME).exists():
        raise FileNotFoundError(f"{log}: the step table reads a Snakemake log only sealed, and {log.parent} has no "
                                f"{seal.NAME}: seal it (`python -m pipeline.seal write {log.parent}`, then "
                                f"`python -m pipeline.seal manifest data`) and commit both, as a reviewed change")
    if log.resolve() not in {p.resolve() for p in seal.verify(log.parent)}:
        raise ValueError(f"{log}: not listed in {log.parent / seal.NAME}: the step table reads a log only sealed")
    return log


def run_rows(run: Path, logs: dict) -> list:
    """A run's step times: its sealed benchmark files, or (runs sealed before them) its Snakemake log."""
    listed = seal.verify(run)
    files = [f for f in listed if f.relative_to(run).parts[0] == BENCH]
    if files:
        return from_benchmarks(files, run / BENCH, "run", run.name)
    log = logs.get(run.name)
    if log is None:
        raise FileNotFoundError(f"{run}: no benchmark files sealed in it ({BENCH}/) and no Snakemake log given for "
                                f"it (--logs .../{run.name}.log): its step times are unknown")
    rows = []
    for j in from_log(sealed_log(log)):
        if j["rule"] in RUN_RULES:
            job = ",".join(v for k, v in sorted(j["wildcards"].items()) if k != "run")
            rows.append(dict(tier="run", run=run.name, rule=j["rule"], job=job, seconds=j["seconds"],
                             max_rss_mb=None, source="snakemake log", file=str(log)))
    if not rows:
        raise ValueError(f"{log}: no job of the run's steps ({', '.join(RUN_RULES)}) found in it")
    return rows


def table(runs, logs, cpu, cpu_root: Path = Path(BENCH)) -> pd.DataFrame:
    logs = {Path(p).stem: Path(p) for p in logs}
    rows = [r for run in runs for r in run_rows(Path(run), logs)]
    rows += from_benchmarks(cpu, cpu_root, "build", "")
    unknown = sorted({r["rule"] for r in rows} - set(RUN_RULES) - set(BUILD_RULES))
    if unknown:
        raise ValueError(f"benchmark files of rules step_times.py does not know: {unknown} (add them to RUN_RULES "
                         f"or BUILD_RULES)")
    for r in rows:
        r["gpu"] = r["tier"] == "run" and r["rule"] in GPU_RULES
        r["order"] = (RUN_RULES if r["tier"] == "run" else BUILD_RULES).index(r["rule"])
    return pd.DataFrame(rows, columns=COLUMNS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, nargs="+", required=True, help="sealed run folders")
    ap.add_argument("--logs", type=Path, nargs="*", default=[],
                    help="Snakemake logs named <run>.log, read only for runs that hold no benchmark files")
    ap.add_argument("--cpu", type=Path, nargs="*", default=[], help=f"this build's benchmark files ({BENCH}/...)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    t = table(a.runs, a.logs, a.cpu)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    t.to_csv(a.out, index=False)
    print(f"{len(t)} jobs: " + ", ".join(f"{s} {n}" for s, n in t.source.value_counts().items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
