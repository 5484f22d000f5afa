"""Profile step: Nsight Compute on every profiled entry (config plan.profile) at the headline shape.

Two passes, each running profile_target.py, which launches each entry after warm-up in its own NVTX range and
profiler window, with the clocks as found (--clock-control none) and the caches flushed before every kernel
(--cache-control all, ncu's default):
- the full metric set (--set full), one launch per entry -> ncu.csv (every numeric metric) and the report, gzipped;
- the duration alone (gpu__time_duration.sum, one replay pass), `duration_launches` launches per entry ->
  ncu_duration.csv, which the aggregate step compares with the kernel timer (the cross-check);
- the premise entries (plan.profile.premise: where a claim's premise holds and the headline's does not, e.g. a
  working set larger than the L2 for the grid order of C1), a few memory metrics -> ncu_premise.csv;
- the long-sequence entries (plan.profile.large_n: our last stages and cuDNN where the KV loop dominates), the
  metrics that say what limits the loop (pipes, issue, stalls, occupancy) -> ncu_large_n.csv.
Each report is read by pipeline.nsight in a process of its own (loaded beside torch the report library has crashed).
A run interrupted after a report was written resumes at its reading.

    python workflow/scripts/profile.py --config config/config.yaml --out data/<gpu>/<run>/profile
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline import gpu_env, nsight

HERE = Path(__file__).resolve().parent


def _ncu(args: list, target_args: list, log) -> None:
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu (Nsight Compute) is not on the PATH: install it, or add its folder to PATH")
    cmd = [ncu, "--clock-control", "none", "--cache-control", "all", "--profile-from-start", "off",
           "--import-source", "no", "--nvtx", "-f", *args, sys.executable, str(HERE / "profile_target.py"),
           *target_args]
    log("profile: " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith(("profile target", "==ERROR==", "==WARNING==")) or "Report:" in line:
            log("  " + line)
    if proc.returncode != 0:
        raise SystemExit(f"ncu failed ({proc.returncode}): {proc.stderr[-2000:]}")


def _tidy(mode: str, rep: Path, order: Path, csv_path: Path, log) -> None:
    tidy = subprocess.run([sys.executable, "-m", "pipeline.nsight", mode, str(rep), str(order), str(csv_path)],
                          capture_output=True, text=True)
    if tidy.returncode != 0 or not csv_path.exists():
        raise SystemExit(f"reading {rep} failed ({tidy.returncode}): {tidy.stderr[-2000:]}")
    log(f"profile: {tidy.stdout.strip()}")


def _gzip(rep: Path, log) -> None:
    with open(rep, "rb") as src, gzip.open(rep.with_suffix(".ncu-rep.gz"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    rep.unlink()
    log(f"profile: report kept as {rep.name}.gz")


def _pass(out: Path, name: str, csv_name: str, mode: str, ncu_args: list, target_args: list, log) -> None:
    """One Nsight pass: run it (unless its report is there), read the report into csv_name, keep it gzipped; skipped
    when csv_name exists (an interrupted step resumes at the reading)."""
    rep, order, csv_path = out / f"{name}.ncu-rep", out / f"{name}_order.json", out / csv_name
    if csv_path.exists():
        log(f"profile: {csv_name} already done")
        return
    if not rep.exists():
        _ncu([*ncu_args, "-o", str(rep.with_suffix(""))], [*target_args, "--order", str(order)], log)
    _tidy(mode, rep, order, csv_path, log)
    _gzip(rep, log)


def profile(cfg_path: Path, out: Path, log=print) -> None:
    from pipeline import plan

    cfg = plan.load_config(cfg_path)
    target = ["--config", str(cfg_path)]
    _pass(out, "profile", "ncu.csv", "full", ["--set", "full"], target, log)
    _pass(out, "duration", "ncu_duration.csv", "duration", ["--metrics", "gpu__time_duration.sum"],
          [*target, "--launches", str(int(cfg["profile"]["duration_launches"]))], log)
    for name in ("premise", "large_n"):
        extra = cfg["profile"].get(name)
        csv_name = f"ncu_{name}.csv"
        if not extra:
            nsight.write([], out / csv_name)       # the step's declared output, with no rows
            log(f"profile: no {name} entries asked for")
            continue
        _pass(out, name, csv_name, "full", ["--metrics", ",".join(extra["metrics"])],
              [*target, "--entries", name], log)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the plan: config/config.yaml, or a run's plan.yaml")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    env = gpu_env.start(a.out / "env.json", argv=sys.argv)
    profile(a.config, a.out, log=lambda msg: print(msg, flush=True))
    gpu_env.finish(a.out / "env.json", env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
