"""The memory each GPU step asks of a scheduler (Snakemake's mem_mb, which the SLURM executor sends as --mem): the
largest peak that step reached in the committed runs, times a margin, rounded up.

The peaks are Snakemake's own measurements, the `max_rss` column (MB) of the benchmark file each step writes into its
run (data/<gpu>/run-*/benchmarks/<step>.tsv, and benchmarks/bench/<set>.tsv for the bench sets): the resident memory
of the step's processes, summed over them (an upper bound of what they held at once: shared pages count once per
process). Every GPU folder's runs count, whatever GPU the new run is on: the host memory of a step is its Python
processes', not the GPU's. A step no committed run has a benchmark file of (gpu_check and qwen3_e2e, newer than the
runs) gets no mem_mb here, so the profile's default-resources applies to it; it gets one once a run with it is
committed.

    python -m pipeline.job_memory [data]     # the table: step, peak MB, the run it is from, mem_mb
"""
from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARGIN = 1.5        # over the largest peak: the runs' peaks moved by 5% (verify_gpu, runs 11 to 17); the rest headroom
ROUND_MB = 1000     # requests in whole GB (1000 MB)
# The GPU steps (the rules with `gpu=1`) and where each writes its benchmark file within a run.
GPU_STEPS = {"gpu_check": "gpu_check.tsv", "verify_gpu": "verify_gpu.tsv", "compile": "compile.tsv",
             "bench": "bench/*.tsv", "timer_check": "timer_check.tsv", "profile": "profile.tsv",
             "ceilings": "ceilings.tsv", "qwen3_e2e": "qwen3_e2e.tsv"}


def peaks(data: Path = ROOT / "data") -> dict:
    """step -> (largest max_rss in MB, the benchmark file it is from) over every sealed run of every GPU folder."""
    out = {}
    for run in sorted(p for p in data.glob("*/run-*") if (p / "SHA256SUMS").exists()):
        for step, pattern in GPU_STEPS.items():
            for tsv in sorted((run / "benchmarks").glob(pattern)):
                with open(tsv, newline="") as f:
                    for row in csv.DictReader(f, delimiter="\t"):
                        try:
                            rss = float(row["max_rss"])
                        except (KeyError, ValueError):  # "NA": Snakemake could not read the process
                            continue
                        if math.isfinite(rss) and rss > out.get(step, (0.0, None))[0]:
                            out[step] = (rss, tsv.relative_to(data).as_posix())
    return out


def request(peak_mb: float) -> int:
    """mem_mb for a step whose largest peak is peak_mb: times MARGIN, rounded up to ROUND_MB."""
    return int(math.ceil(peak_mb * MARGIN / ROUND_MB) * ROUND_MB)


def mem_mb(data: Path = ROOT / "data") -> dict:
    """step -> its mem_mb, for the GPU steps with a committed peak."""
    return {step: request(peak) for step, (peak, _) in peaks(data).items()}


def resources(step: str, data: Path = ROOT / "data") -> dict:
    """The resources a rule adds for its memory (`**job_memory.resources("bench")` in its resources:),
    {"mem_mb": ...}, or none where no committed run measured the step."""
    if step not in GPU_STEPS:
        raise KeyError(f"{step!r} is not a GPU step of pipeline.job_memory ({sorted(GPU_STEPS)})")
    asked = _cached(data).get(step)
    return {} if asked is None else {"mem_mb": asked}


_CACHE: dict = {}


def _cached(data: Path) -> dict:
    key = Path(data).resolve()
    if key not in _CACHE:
        _CACHE[key] = mem_mb(key)
    return _CACHE[key]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    data = Path(argv[0]) if argv else ROOT / "data"
    found = peaks(data)
    print("step\tpeak_mb\tfrom\tmem_mb")
    for step in GPU_STEPS:
        peak, where = found.get(step, (None, None))
        print(f"{step}\t{'' if peak is None else f'{peak:.0f}'}\t{where or 'no committed benchmark'}\t"
              f"{request(peak) if peak else 'the profile default'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
