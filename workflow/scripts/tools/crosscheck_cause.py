"""Why Nsight Compute and the kernel timer disagree at the shortest and the longest N (issue 19): one probe, on one
GPU, outside the pipeline, of a few of the large-N profile's entries (plan.profile.large_n), each measured four ways:

- `timer_flush`: the kernel timer as the bench step runs it (pipeline.call.timed_with_state: CUPTI's timestamps, the
  L2 flushed by a 256 MiB write before every sample, NVML's SM clock and power over the samples);
- `timer_warm`: the same, with a flush kernel that writes 64 bytes (the timer's samples still split on it), so that
  the L2 keeps the kernel's inputs from one sample to the next;
- `ncu_all`: Nsight Compute's gpu__time_duration as the profile step reads it (--cache-control all: every GPU cache
  flushed and invalidated before each replay, the instruction and constant caches included; --clock-control none),
  with its SM clock (sm__cycles_elapsed.avg.per_second);
- `ncu_none`: the same with --cache-control none (nothing flushed: the replays find the caches as the last left them);
- `timer_settled` (with --settle): the bench step's own condition at long N: the entry run back to back until the
  SM clock stops falling (pipeline.settle through pipeline.call.settle_call, the plan's bench.settle_* settings, as
  bench.py settles the first entry of each long-N block), then timed as `timer_flush`.

With --cool-s the GPU idles that many seconds before each entry's first timer way, so that `timer_flush` and
`timer_warm` start from a GPU that the entry before has not heated, as Nsight's serialized replays do; `timer_settled`
then measures the same entry heated to the power cap's steady state, as the bench does.

The two flushes differ in what they clear: the timer's only the L2 (by overwriting it), Nsight's every cache. So
(ncu_all - ncu_none) - (timer_flush - timer_warm) is the time of what Nsight's flush clears beyond the L2; ncu_none
against timer_warm compares the two readings with nothing flushed; and the clocks compare the two at long N, where
the timer's samples run back to back at the power cap and Nsight's replays one kernel at a time.

    python workflow/scripts/tools/crosscheck_cause.py --config config/config.yaml --variants v13 v24 v26 \
        --N 512 1024 16384 --out results/crosscheck_cause
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[3]
sys.path.insert(0, str(ROOT))

from pipeline import plan  # noqa: E402

COLUMNS = ["key", "variant", "N", "way", "us", "q25_us", "q75_us", "n", "sm_mhz", "power_w", "power_capped", "note"]


def entries(cfg: dict, variants: list, ns: list) -> list:
    """The large-N profile's entries of these variants (PyTorch's included: torch-cudnn) at these N, in its order."""
    chosen = [e for e in plan.large_n_entries(cfg) if e.variant in variants and e.shape.N in ns]
    missing = {(v, n) for v in variants for n in ns} - {(e.variant, e.shape.N) for e in chosen}
    if missing:
        raise SystemExit(f"not in the plan's large-N profile (plan.profile.large_n): {sorted(missing)}")
    return chosen


def warm_flush():
    """A flush-kernel launch that writes 64 bytes: the timer's samples still split on it, the L2 stays warm."""
    import torch

    from pipeline.l2_flush import _l2_flush

    buf = torch.empty(16, dtype=torch.int32, device="cuda")
    return lambda: _l2_flush[(1,)](buf, buf.numel(), BLOCK=4096)


def time_entries(cfg: dict, chosen: list, samples: int, long_samples: int, out: Path, settled: bool = False,
                 cool_s: float = 0.0) -> None:
    """timer_flush and timer_warm (and, settled, timer_settled) of every entry, interleaved per entry, into
    timer.csv; cool_s seconds of idle GPU before each entry's first way."""
    from pipeline.call import check, settle_call, state_gpu, timed_with_state

    gpu = state_gpu()
    interval = cfg["bench"]["state_interval_ms"]
    rows = []
    for e in chosen:
        status, err, note, calls = check(e, seed=1234)
        if status != "ok":
            rows.append(dict(key=e.key, variant=e.variant, N=e.shape.N, way="timer_flush", note=f"{status} {note}"))
            continue
        n = long_samples if e.shape.N >= 8192 else samples
        if cool_s:
            time.sleep(cool_s)
        ways = [("timer_flush", None), ("timer_warm", warm_flush())] + ([("timer_settled", None)] if settled else [])
        for way, flush in ways:
            note = ""
            if way == "timer_settled":
                st = settle_call(calls, cfg["bench"])
                note = (f"settled {st['settle_s']:.1f} s in {st['settle_windows']} windows to {st['settle_mhz']:.0f} "
                        f"MHz, stable {st['settle_stable']}")
            s = timed_with_state(calls[0], n, gpu, interval, flush=flush) if flush else \
                timed_with_state(calls[0], n, gpu, interval)
            rows.append(dict(key=e.key, variant=e.variant, N=e.shape.N, way=way, us=s["kernels_us"],
                             q25_us=s["q25_us"], q75_us=s["q75_us"], n=n, sm_mhz=s["sm_mhz"], power_w=s["power_w"],
                             power_capped=s["power_capped"], note=note))
            print(f"{way:13s} {e.key}: {s['kernels_us']:.2f} us at {s['sm_mhz']} MHz {note}", flush=True)
    _write(out / "timer.csv", rows)


def target(cfg: dict, chosen: list, launches: int, order: Path) -> None:
    """What ncu profiles: each entry `launches` times in its own NVTX range and profiler window, after warm-up."""
    import torch

    from pipeline.call import check

    done = []
    for e in chosen:
        status, err, note, calls = check(e, seed=1234)
        if status != "ok":
            continue
        for _ in range(3):
            calls[0]()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(e.key)
        torch.cuda.profiler.start()
        for _ in range(launches):
            calls[0]()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        torch.cuda.nvtx.range_pop()
        done.append(e.key)
    order.write_text(json.dumps(done, indent=1) + "\n")


def profile(args, chosen: list, out: Path) -> None:
    """ncu_all and ncu_none: Nsight's duration and SM clock of every entry's launches, into ncu.csv."""
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu (Nsight Compute) is not on the PATH")
    from pipeline import nsight

    rows = []
    for way, cache in (("ncu_all", "all"), ("ncu_none", "none")):
        rep, order = out / f"{way}.ncu-rep", out / f"{way}_order.json"
        cmd = [ncu, "--clock-control", "none", "--cache-control", cache, "--profile-from-start", "off",
               "--nvtx", "-f", "--metrics", ",".join(nsight.DURATION_METRICS), "-o", str(rep.with_suffix("")),
               sys.executable, str(HERE), "--config", str(args.config), "--variants", *args.variants,
               "--N", *map(str, args.N), "--target", str(order), "--launches", str(args.launches)]
        print(" ".join(cmd), flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"ncu failed ({proc.returncode}): {proc.stderr[-2000:]}")
        csv_path = out / f"{way}_duration.csv"
        tidy = subprocess.run([sys.executable, "-m", "pipeline.nsight", "duration", str(rep), str(order),
                               str(csv_path)], capture_output=True, text=True, cwd=ROOT)
        if tidy.returncode != 0:
            raise SystemExit(f"reading {rep} failed: {tidy.stderr[-2000:]}")
        by: dict = {}
        for r in csv.DictReader(open(csv_path)):
            by.setdefault(r["key"], []).append(r)
        for e in chosen:
            got = by.get(e.key, [])
            if not got:
                continue
            per_launch: dict = {}       # an entry's launch may run several kernels: their durations add up
            for i, r in enumerate(got):
                per_launch.setdefault(i // (len(got) // args.launches), []).append(r)
            us = [sum(float(r["duration_ns"]) for r in rs) / 1e3 for rs in per_launch.values()]
            hz = [float(r["sm_hz"]) for r in got if r["sm_hz"]]
            q = statistics.quantiles(us, n=4) if len(us) > 1 else [us[0]] * 3
            rows.append(dict(key=e.key, variant=e.variant, N=e.shape.N, way=way, us=statistics.median(us),
                             q25_us=q[0], q75_us=q[2], n=len(us),
                             sm_mhz=statistics.median(hz) / 1e6 if hz else "", power_w="", power_capped="",
                             note=f"{len(got)} kernels"))
        rep.with_suffix(".ncu-rep").unlink(missing_ok=True)
    _write(out / "ncu.csv", rows)


def _write(path: Path, rows: list) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def summary(out: Path) -> None:
    """crosscheck_cause.csv: every way's rows together, and a line per entry on the log."""
    rows = list(csv.DictReader(open(out / "timer.csv"))) + list(csv.DictReader(open(out / "ncu.csv")))
    _write(out / "crosscheck_cause.csv", rows)
    by: dict = {}
    for r in rows:
        if r["us"]:
            by.setdefault(r["key"], {})[r["way"]] = (float(r["us"]), r["sm_mhz"])
    for key, w in by.items():
        if len(w) < 4:
            print(f"{key}: incomplete {sorted(w)}")
            continue
        tf, tw, na, nn = (w[x][0] for x in ("timer_flush", "timer_warm", "ncu_all", "ncu_none"))
        settled = (f" | settled {w['timer_settled'][0]:.2f} at {w['timer_settled'][1]} MHz, timer_settled/ncu_all "
                   f"{100 * (w['timer_settled'][0] / na - 1):+.1f}%" if "timer_settled" in w else "")
        print(f"{key}: timer flush {tf:.2f} warm {tw:.2f} | ncu all {na:.2f} none {nn:.2f} | ncu_all/timer_flush "
              f"{100 * (na / tf - 1):+.1f}%, ncu_none/timer_warm {100 * (nn / tw - 1):+.1f}%, beyond-L2 flush "
              f"{(na - nn) - (tf - tw):+.2f} us | MHz timer {w['timer_flush'][1]} ncu {w['ncu_all'][1]}{settled}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--variants", nargs="+", required=True, help="variants of plan.profile.large_n (torch-cudnn too)")
    ap.add_argument("--N", nargs="+", type=int, required=True)
    ap.add_argument("--out", type=Path, help="the probe's folder")
    ap.add_argument("--samples", type=int, default=50, help="timer samples per way below N = 8192")
    ap.add_argument("--long-samples", type=int, default=15, help="timer samples per way from N = 8192 on")
    ap.add_argument("--launches", type=int, default=5, help="Nsight's launches per entry")
    ap.add_argument("--settle", action="store_true",
                    help="also the way timer_settled: the entry settled as the bench settles long N, then timed")
    ap.add_argument("--cool-s", type=float, default=0.0, help="seconds of idle GPU before each entry's timer ways")
    ap.add_argument("--target", type=Path, help=argparse.SUPPRESS)     # run by ncu: the profiled program
    a = ap.parse_args()
    cfg = plan.load_config(a.config)
    chosen = entries(cfg, a.variants, a.N)
    if a.target is not None:
        target(cfg, chosen, a.launches, a.target)
        return 0
    if a.out is None:
        ap.error("--out is required")
    a.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    time_entries(cfg, chosen, a.samples, a.long_samples, a.out, a.settle, a.cool_s)
    profile(a, chosen, a.out)
    summary(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
