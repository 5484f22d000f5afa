"""Timer check: on the GPU, the kernel timer cannot see host time.

Each profiled entry (config plan.profile) is timed with a host sleep of each length in plan.timer_check_sleep_us
before its launch (a busy wait, so that the length is exact): by the kernel timer (pipeline.kernel_timer) and, for
contrast, by CUDA events around the call (`triton.testing.do_bench`, the L2 flushed). The kernel time must stay put
while the event time grows with the sleep; the paper prints both, and the aggregate step checks the first.

Nothing is resumed: each run measures afresh, so env.json is written afresh (an earlier start's is never kept), and
one run at a time per folder holds timer_check.lock (pipeline.folder_lock).

    python workflow/scripts/timer_check.py --config config/config.yaml --out data/<gpu>/<run>/timer_check
"""
from __future__ import annotations

import argparse
import csv
import secrets
import statistics
import sys
import time
from pathlib import Path


from kernels.stages import BASELINE

from pipeline import folder_lock, gpu_env
from pipeline import plan
from pipeline.call import check, kernel_time

SAMPLES = 200
LOCK = "timer_check.lock"
COLUMNS = ["key", *plan.Entry("", "triton", BASELINE, plan.HEADLINE, plan.Tile()).row(), "seed",
           "status", "sleep_us", "time_us", "q25_us", "q75_us", "min_us", "max_us", "n_samples", "kernels",
           "event_us", "event_q25_us", "event_q75_us"]


def busy_sleep(us: float) -> None:
    end = time.perf_counter_ns() + int(us * 1e3)
    while time.perf_counter_ns() < end:
        pass


def main(argv=None) -> int:
    from triton.testing import do_bench

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the plan: config/config.yaml, or a run's plan.yaml")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    cfg = plan.load_config(a.config)
    with folder_lock.held(a.out / LOCK, "timer_check.py"):
        return measure(cfg, a.out, do_bench)


def measure(cfg: dict, out: Path, do_bench) -> int:
    """Every profiled entry at every sleep, into out/timer_check.csv; env.json written afresh."""
    env = gpu_env.start(out / "env.json", resume=False, argv=sys.argv)
    rows = []
    for e in plan.profile_entries(cfg):
        seed = secrets.randbits(31)
        status, _, note, calls = check(e, seed)
        if status != "ok":
            rows.append({"key": e.key, **e.row(), "seed": seed, "status": status})
            print(f"{e.key}: {status} {note[:200]}", flush=True)
            continue
        checked = calls[0]
        for sleep in cfg["timer_check_sleep_us"]:
            fn = (lambda s=sleep: (busy_sleep(s), checked())) if sleep else checked
            k = kernel_time(fn, SAMPLES)
            ev = sorted(t * 1e3 for t in do_bench(fn, warmup=10, rep=50, return_mode="all"))
            q = statistics.quantiles(ev, n=4)
            rows.append({"key": e.key, **e.row(), "seed": seed, "status": status, "sleep_us": sleep,
                         **{c: k[c] for c in ("time_us", "q25_us", "q75_us", "min_us", "max_us", "n_samples",
                                              "kernels")},
                         "event_us": statistics.median(ev), "event_q25_us": q[0], "event_q75_us": q[2]})
            print(f"{e.key} sleep {sleep:6.0f} us: kernel {k['time_us']:8.1f} us, events {rows[-1]['event_us']:8.1f} us",
                  flush=True)
    tmp = out / "timer_check.partial"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    tmp.rename(out / "timer_check.csv")
    gpu_env.finish(out / "env.json", env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
