"""The whole GPU measurement, one command: bench (timings.csv), Nsight Compute (profile.ncu-rep, ncu.csv), the
theoretical traffic (theory.csv), the environment (env.json, snapshots.jsonl), then checksums (SHA256SUMS).

Each run writes a folder of its own, <gpu-dir>/<run>; an existing, finished run is never overwritten. Run the same
command again after an interruption and it resumes where it stopped: finished timings are kept, a finished
profile is not redone.

    python3 workflow/scripts/measure.py --gpu-dir data/nvidia-h200 --run run-1
"""
from __future__ import annotations

import argparse
import csv
import datetime
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench  # noqa: E402
import bench_plan  # noqa: E402
import checksums  # noqa: E402
import gpu_env  # noqa: E402

from kernels.theory import traffic  # noqa: E402

HERE = Path(__file__).resolve().parent


class Log:
    """Print with a timestamp and keep a copy in the run folder."""

    def __init__(self, path: Path):
        self.f = open(path, "a")
        self.t0 = time.time()

    def __call__(self, msg: str) -> None:
        line = f"{time.time() - self.t0:6.0f}s  {msg}"
        print(line, flush=True)
        self.f.write(line + "\n")
        self.f.flush()


def write_theory(entries, path: Path) -> None:
    rows = []
    for e in entries:
        if e.impl != "triton":
            continue
        t = traffic(e.shape, e.tile.block_m, e.tile.block_n, "causal_skip" in e.switches)
        rows += [{"key": e.key, **e.row(), "quantity": q, "value": v} for q, v in t.items()]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def profile(cfg_path: Path, run: Path, log) -> None:
    rep, order = run / "profile.ncu-rep", run / "profile_order.json"
    if (run / "ncu.csv").exists():
        log("profile: already done")
        return
    if rep.exists() and order.exists():
        log("profile: the report exists; reading it")
        _tidy(rep, order, run, log)
        return
    ncu = shutil.which("ncu")
    if ncu is None:
        raise RuntimeError("ncu (Nsight Compute) is not on the PATH; install it or add its folder to PATH")
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--set", "full", "--import-source", "no",
           "--nvtx", "-f", "-o", str(rep.with_suffix("")), sys.executable, str(HERE / "profile_target.py"),
           "--config", str(cfg_path), "--order", str(order)]
    log("profile: " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith(("profile target", "==PROF==", "==ERROR==", "==WARNING==")) and "Profiling" not in line:
            log("  " + line)
    if proc.returncode != 0:
        raise RuntimeError(f"ncu failed ({proc.returncode}): {proc.stderr[-2000:]}")
    _tidy(rep, order, run, log)


def _tidy(rep: Path, order: Path, run: Path, log) -> None:
    """Report -> ncu.csv, then keep the report gzipped. The reader runs in a process of its own: loaded beside
    torch it has crashed."""
    tidy = subprocess.run([sys.executable, str(HERE / "ncu_tidy.py"), str(rep), str(order), str(run / "ncu.csv")],
                          capture_output=True, text=True)
    if tidy.returncode != 0 or not (run / "ncu.csv").exists():
        raise RuntimeError(f"reading the report failed ({tidy.returncode}): {tidy.stderr[-2000:]}")
    with open(rep, "rb") as src, gzip.open(rep.with_suffix(".ncu-rep.gz"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    rep.unlink()
    log(f"profile: {tidy.stdout.strip()}; report kept as {rep.name}.gz")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu-dir", type=Path, required=True, help="data/<gpu>, e.g. data/nvidia-h200")
    ap.add_argument("--run", default=None, help="run folder name (default: run-<UTC date and time>)")
    ap.add_argument("--config", type=Path, default=Path("config/config.yaml"))
    ap.add_argument("--sets", nargs="+", default=list(bench_plan.SETS), choices=bench_plan.SETS)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--workers", type=int, default=max(1, min(12, (os.cpu_count() or 2) - 2)))
    ap.add_argument("--commit", default="", help="the artifact's git commit, recorded in env.json")
    a = ap.parse_args(argv)
    name = a.run or "run-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run = a.gpu_dir / name
    if (run / checksums.NAME).exists():
        raise SystemExit(f"{run} holds a finished run; it is never overwritten: choose another --run name")
    run.mkdir(parents=True, exist_ok=True)
    log = Log(run / "measure.log")
    cfg = bench_plan.load_config(a.config)
    entries = bench_plan.expand(cfg, a.sets)
    env_path = run / "env.json"
    if not env_path.exists():
        gpu_env.write(env_path, {**gpu_env.collect(), "argv": sys.argv, "commit": a.commit, "config": cfg,
                                 "sets": a.sets, "start": gpu_env.snapshot()})
    log(f"run {run}: {len(entries)} entries; GPU {json.loads(env_path.read_text()).get('gpu')}")
    write_theory(entries, run / "theory.csv")
    bench.run(cfg, entries, run, a.workers, log)
    if not a.no_profile:
        profile(a.config, run, log)
    env = json.loads(env_path.read_text())
    env.setdefault("end", gpu_env.snapshot())
    gpu_env.write(env_path, env)
    log(f"done: sealing {run} with {checksums.NAME}")
    log.f.close()
    checksums.write(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
