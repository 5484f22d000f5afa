"""A probe, not a stage: Triton 3.6 builds warp specialization for our loop on sm_90 once Q is held in registers
(v15 on; tests/test_build.py shows the partitions). Time v15 + warp_specialize at 64x64 tiles (2 stages: 180 KB of
shared memory, one program per SM plus its producer warps) beside v13, v15 and cuDNN at a few N of the headline
layout, each output checked first, by the kernel timer (kernel_timer.py). What it decides: whether the next stage
should turn warp specialization back on.

    python workflow/scripts/probe_ws.py --out probe_ws.csv [--N 1024 4096 16384]
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import bench
import bench_plan
import gpu_env
from kernels.shapes import HEADLINE, Shape
from kernels.stages import STAGES, Tile, default_tile, switches_label


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--N", type=int, nargs="+", default=[1024, 4096, 16384])
    ap.add_argument("--config", type=Path, default=Path("config/config.yaml"))
    a = ap.parse_args()
    env = gpu_env.start(a.out.with_suffix(".env.json"), argv=sys.argv)
    cfg = bench_plan.load_config(a.config)["bench"]
    ws = switches_label(STAGES["v15"].switches | {"warp_specialize"})
    rows = []
    for n in a.N:
        shape = Shape(**{**HEADLINE.as_dict(), "N": n})
        entries = [bench_plan.Entry("probe", "triton", v, shape, default_tile(STAGES[v].switches, shape.D, n))
                   for v in ("v13", "v15")]
        entries += [bench_plan.Entry("probe", "triton", ws, shape, t) for t in (Tile(64, 64, 4, 2), Tile(64, 32, 4, 3))]
        entries += [bench_plan.Entry("probe", "torch-cudnn", "torch-cudnn", shape)]
        for e in entries:
            status, err, note, calls = bench.check(e, seed=1234)
            t = bench.time_call(calls, cfg) if status == "ok" else {}
            row = dict(key=e.key, variant=e.variant, N=n, status=status, rel_error=err, note=note,
                       time_us=t.get("time_us"), n_samples=t.get("n_samples"), timer=t.get("timer"))
            rows.append(row)
            print(row, flush=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    gpu_env.finish(a.out.with_suffix(".env.json"), env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
