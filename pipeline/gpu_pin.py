"""Run a command on one GPU of its own: take the first free GPU lock, set CUDA_VISIBLE_DEVICES, run, release.

Snakemake's `resources: gpu=1` with `--resources gpu=N` lets at most N GPU jobs run at once; this gives each of
them a different GPU, so that timing and profiling never share one.

    python -m pipeline.gpu_pin -- python workflow/scripts/measure/bench.py ...
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def gpu_ids() -> list:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        return [x for x in visible.split(",") if x]
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    except FileNotFoundError:
        raise SystemExit("gpu_pin: nvidia-smi is not on the PATH: this step needs a CUDA GPU and its driver "
                         "(measure on a machine with NVIDIA GPUs, or set CUDA_VISIBLE_DEVICES)") from None
    n = sum(line.startswith("GPU ") for line in out.stdout.splitlines())
    if n == 0:
        raise SystemExit("gpu_pin: no GPU found (nvidia-smi -L lists none); this step needs a CUDA GPU")
    return [str(i) for i in range(n)]


def main(argv) -> int:
    if "--" not in argv:
        raise SystemExit("usage: gpu_pin.py -- COMMAND ...")
    cmd = argv[argv.index("--") + 1:]
    lock_dir = Path(os.environ.get("GPU_LOCK_DIR", tempfile.gettempdir()))
    ids = gpu_ids()
    while True:
        for gid in ids:
            f = open(lock_dir / f"fa2-stages-gpu-{gid}.lock", "w")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            print(f"gpu_pin: running on GPU {gid}", file=sys.stderr, flush=True)
            try:
                return subprocess.run(cmd, env={**os.environ, "CUDA_VISIBLE_DEVICES": gid}).returncode
            finally:
                f.close()
        time.sleep(2)  # more GPU jobs than GPUs: Snakemake's --resources gpu=N should prevent it; wait


if __name__ == "__main__":
    sys.exit(main(sys.argv))
