"""The bench's pre-roll checked on one GPU at the power cap: at N = 16384 (the headline layout, float16 and bfloat16)
each entry of v35, v36 and cuDNN is timed as the bench times it, once without the pre-roll and once with it (in
alternating order, each after a pause as long as the bench's user view), and each row records the medians of its
first and last third of samples: whether with the pre-roll an entry's samples stay in one state (run-36: without it
they started fast and slowed by 5-19% part way through).

    python workflow/scripts/tools/preroll_check.py --out <folder> [--repeats 3] [--preroll-ms 250]

(probes/preroll-check ran it when the shipped plan had preroll_ms = 250, which the check then turned off.)

Writes <folder>/preroll_check.csv, a row per (repeat, entry, mode) appended as it is timed, so that a command cut by
its time limit keeps what it finished, and <folder>/env.json (pipeline.gpu_env: the GPU, its UUID, versions, the
commit and the kernels' hashes at the start, a snapshot at the end).
"""
from __future__ import annotations

import argparse
import csv
import secrets
import sys
import time
from pathlib import Path

from pipeline import gpu_env, plan
from pipeline.call import check, preroll_call, time_call
from pipeline.sweep import third

ROOT = Path(__file__).resolve().parents[3]
N = 16384
VARIANTS = ("v35", "v36", "torch-cudnn")
PAUSE_S = 0.3          # about the bench's user view between an entry's check and its kernel time (run-36's logs)
COLUMNS = ["repeat", "variant", "dtype", "mode", "gpu_uuid", "time_us", "min_us", "first_third_us", "last_third_us",
           "last_over_first", "sm_mhz", "power_w", "preroll_ms", "preroll_mhz", "n_samples", "sample_times",
           "sample_mhz"]


def entries(config: Path) -> tuple:
    """The plan's N-sweep entries of VARIANTS at N, and the plan's bench section."""
    m = plan.load_config(config)
    m = {**m, "n_sweep": [N]}
    return [e for e in plan.expand(m, ["n_sweep"]) if e.variant in VARIANTS], m["bench"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    ap.add_argument("--preroll-ms", type=float, default=None,
                    help="the pre-roll to check (default: the plan's preroll_ms; the shipped plan has it off)")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    todo, bench = entries(a.config)
    if a.preroll_ms is not None:
        bench = {**bench, "preroll_ms": a.preroll_ms}
    if bench.get("preroll_ms", 0) <= 0:
        raise SystemExit(f"{a.config}: plan.bench.preroll_ms is 0: give --preroll-ms, the pre-roll to check")
    path = a.out / "preroll_check.csv"
    env = gpu_env.start(a.out / "env.json", resume=False, argv=sys.argv, bench=bench)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in range(a.repeats):
            for i, e in enumerate(todo):
                status, _, note, calls = check(e, secrets.randbits(31))
                if status != "ok":
                    raise SystemExit(f"{e.key}: {status} {note}")
                for mode in (("off", "on") if (r + i) % 2 == 0 else ("on", "off")):
                    time.sleep(PAUSE_S)
                    row = preroll_call(calls, bench) if mode == "on" else {}
                    row.update(time_call(calls, bench))
                    s = [float(x) for x in row["sample_times"].split(";")]
                    first, last = third(s, False), third(s, True)
                    w.writerow({**{c: row.get(c, "") for c in COLUMNS}, "repeat": r, "variant": e.variant,
                                "dtype": e.shape.dtype, "mode": mode, "first_third_us": first,
                                "last_third_us": last, "last_over_first": last / first})
                    f.flush()
                    print(f"r{r} {e.variant} {e.shape.dtype} {mode}: {row['time_us']:.0f} us, thirds {first:.0f} -> "
                          f"{last:.0f} ({last / first:.3f}), {row['sm_mhz']:.0f} MHz", flush=True)
    gpu_env.finish(a.out / "env.json", env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
