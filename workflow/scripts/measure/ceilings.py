"""The GPU's two ceilings, measured (the device method: datasheet rates are leads): the rate of a large dense
matrix product through PyTorch (float16 and bfloat16, random data) and the bandwidth of a large device-to-device
copy (bytes read plus bytes written). The N-sweep figure draws the matrix rate as the roof.

Nothing is resumed: each run measures afresh, so env.json is written afresh (an earlier start's is never kept), and
one run at a time per folder holds ceilings.lock (pipeline.folder_lock).

    python workflow/scripts/ceilings.py --out data/<gpu>/<run>/ceilings
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

from pipeline import folder_lock, gpu_env

LOCK = "ceilings.lock"


def measure(repeats: int = 5) -> list:
    import torch
    from triton.testing import do_bench

    rows = []
    n = 8192
    for dtype in (torch.float16, torch.bfloat16):
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        for r in range(repeats):
            ms = do_bench(lambda: a @ b, warmup=100, rep=500, return_mode="median")
            rows.append(dict(quantity="matmul_tflops", dtype=str(dtype).split(".")[-1], size=n, repeat=r,
                             value=2 * n**3 / (ms * 1e-3) / 1e12, unit="TFLOP/s"))
    nbytes = 4 * 2**30
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    for r in range(repeats):
        ms = do_bench(lambda: dst.copy_(src), warmup=100, rep=500, return_mode="median")
        rows.append(dict(quantity="copy_gbps", dtype="float32", size=nbytes, repeat=r,
                         value=2 * nbytes / (ms * 1e-3) / 1e9, unit="GB/s"))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    with folder_lock.held(a.out / LOCK, "ceilings.py"):
        env = gpu_env.start(a.out / "env.json", resume=False, argv=sys.argv)
        rows = measure()
        tmp = a.out / "ceilings.partial"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        tmp.rename(a.out / "ceilings.csv")
        gpu_env.finish(a.out / "env.json", env)
    for q in ("matmul_tflops", "copy_gbps"):
        print(q, statistics.median(r["value"] for r in rows if r["quantity"] == q))
    return 0


if __name__ == "__main__":
    sys.exit(main())
