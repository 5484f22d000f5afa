"""A quick look at some stages on a GPU, outside the pipeline: each stage and cuDNN at the headline layout and each
N given, every output checked against float64 first (pipeline.call.check), then timed by the kernel timer, with the
GPU's clocks, power and throttle reasons beside every row. For a first check of a new stage before a pipeline run;
its numbers are not the paper's (a run is: `make measure`).

    python workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v13 v19 --N 1024 16384 \\
        --out results/check.csv
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from kernels.shapes import HEADLINE, Shape
from kernels.stages import STAGES, default_tile

from pipeline import gpu_env, plan
from pipeline.call import check, time_call

COLUMNS = ["key", "variant", "N", "dtype", "status", "rel_error", "note", "neighbour_nan_ok", "time_us", "n_samples",
           "clocks.sm", "power.draw", "clocks_event_reasons.active"]


def neighbour_nan_ok(entry) -> bool | None:
    """With NaN in every K/V head but the first, the query heads that read the first are exactly as without it: no
    tile reads another head's rows (None for a PyTorch backend)."""
    import torch

    from kernels import attention
    from pipeline.call import inputs

    if entry.impl != "triton":
        return None
    q, k, v = inputs(entry, seed=7)
    how = {"stage": entry.variant}
    clean = attention(q, k, v, causal=entry.shape.causal, **how)
    k2, v2 = k.clone(), v.clone()
    k2[:, 1:], v2[:, 1:] = float("nan"), float("nan")
    dirty = attention(q, k2, v2, causal=entry.shape.causal, **how)
    group = q.shape[1] // k.shape[1]
    torch.cuda.synchronize()
    return bool(torch.equal(clean[:, :group], dirty[:, :group]) and torch.isnan(dirty[:, group:]).all())


def parse_stage_tile(text: str) -> tuple:
    """'v23:128x128w8s3' -> ('v23', Tile(128, 128, 8, 3)); raises with the expected form otherwise."""
    import re

    from kernels.stages import Tile
    m = re.fullmatch(r"(v\d+):(\d+)x(\d+)w(\d+)s(\d+)", text)
    if m is None or m.group(1) not in STAGES:
        raise SystemExit(f"--tiles {text!r}: expected STAGE:BMxBNwWARPSsSTAGES with a known stage, e.g. v23:128x128w8s3")
    return m.group(1), Tile(*(int(g) for g in m.groups()[1:]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the plan whose bench settings time the calls")
    ap.add_argument("--stages", nargs="+", required=True, choices=list(STAGES))
    ap.add_argument("--N", type=int, nargs="+", default=[HEADLINE.N])
    ap.add_argument("--dtypes", nargs="+", default=[HEADLINE.dtype], choices=["float16", "bfloat16"])
    ap.add_argument("--tiles", nargs="*", default=[], metavar="STAGE:TILE",
                    help="another tile of a stage too, e.g. v23:128x128w8s3 (block_m x block_n, warps, stages)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    extra = [parse_stage_tile(t) for t in a.tiles]
    bench = plan.load_config(a.config)["bench"]
    rows = []
    for dtype in a.dtypes:
        for n in a.N:
            shape = Shape(**{**HEADLINE.as_dict(), "N": n, "dtype": dtype})
            entries = [plan.Entry("check", "triton", s, shape, default_tile(STAGES[s].switches, shape.D, n))
                       for s in a.stages] + [plan.Entry("check", "triton", s, shape, t) for s, t in extra] + [
                plan.Entry("check", "torch-cudnn", "torch-cudnn", shape)]
            for e in entries:
                status, err, note, calls = check(e, seed=1234)
                t = time_call(calls, bench) if status == "ok" else {}
                nan_ok = neighbour_nan_ok(e) if status == "ok" else None
                smi = gpu_env.snapshot()
                rows.append(dict(key=e.key, variant=e.variant, N=n, dtype=dtype, status=status, rel_error=err,
                                 note=note[:300], neighbour_nan_ok=nan_ok, time_us=t.get("time_us"),
                                 n_samples=t.get("n_samples"),
                                 **{f: smi.get(f) for f in COLUMNS[-3:]}))
                print(rows[-1], flush=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
