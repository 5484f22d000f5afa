"""Snakemake in this tree, for the tests: one run at a time across pytest-xdist's workers (a file lock), so that the
tests that need the pipeline's build share one build instead of compiling it twice, and no two runs hold the
working directory's lock at once."""
import contextlib
import csv
import fcntl
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
LOCK = ROOT / "results" / ".tests-snakemake.lock"


@contextlib.contextmanager
def one_at_a_time():
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def snakemake(*args, timeout=1800):
    """`python -m snakemake ARGS` in the tree; runs that may write (all but dry runs and lint) wait for each other."""
    dry = any(a in ("-n", "--dry-run", "--lint", "--list-rules") for a in args)
    with contextlib.nullcontext() if dry else one_at_a_time():
        return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=ROOT, env=ENV, capture_output=True,
                              text=True, timeout=timeout)


def read_build(out: Path) -> dict:
    """(variant, arch, tile) -> metric -> value, from every build.csv below `out` (the build step's, or kernels.build's
    output folder)."""
    table = defaultdict(dict)
    for path in sorted(Path(out).rglob("build.csv")):
        with open(path) as f:
            for r in csv.DictReader(f):
                key = (r["variant"], int(r["arch"]), f"{r['block_m']}x{r['block_n']}w{r['num_warps']}s{r['num_stages']}")
                table[key][r["metric"]] = float(r["value"])
                table[key]["note"] = r["note"]
    return table


def pipeline_build() -> Path:
    """The pipeline's build step (every named variant for every architecture of the config, at its own tile), made
    once for the whole test run: results/build."""
    proc = snakemake("--cores", "2", "build_all")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return ROOT / "results" / "build"
