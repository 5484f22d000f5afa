"""Run a command on one GPU of its own: take the first free GPU lock, set CUDA_VISIBLE_DEVICES, run, release.

Snakemake's `resources: gpu=1` with `--resources gpu=N` lets at most N GPU jobs run at once; this gives each of
them a different GPU, so that timing and profiling never share one.

    python -m pipeline.gpu_pin -- python workflow/scripts/measure/bench.py ...

The locks are node-local files (GPU_LOCK_DIR, else the temporary folder) named by each GPU's UUID, as
`nvidia-smi -L` lists it, not by its index: an index is only a position in what a process is shown (every SLURM job
whose cgroup shows it one GPU sees that GPU as 0), a UUID names the device itself. So two jobs lock the same file
exactly when they would use the same GPU, whatever each one is shown, and two GPUs never share a lock.

Inside a SLURM job that the scheduler gave one GPU (SLURM_JOB_ID with SLURM_STEP_GPUS, SLURM_JOB_GPUS or
SLURM_GPUS_ON_NODE naming one GPU), no lock is taken: SLURM gives a GPU to one job at a time, and a job of the SLURM
profile runs one rule. The command then runs with the CUDA_VISIBLE_DEVICES that SLURM set, and the log says so. A job
given several GPUs (a whole node, running the local profile inside it) locks among them by UUID as anywhere else.
"""
from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# `nvidia-smi -L`: "GPU 0: NVIDIA H200 (UUID: GPU-2f6a...)" (MIG devices are listed below their GPU, indented)
LISTED = re.compile(r"^GPU (\d+): .*\(UUID: ((?:GPU|MIG)-[0-9A-Za-z-]+)\)")
SLURM_GPU_VARS = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS")  # the GPUs SLURM gave the job step / the job, comma-separated


class PinError(SystemExit):
    """No GPU to pin to, or none that can be named by its UUID; the message says why."""


def listed_gpus(run=subprocess.run) -> list:
    """(index, UUID) of every GPU `nvidia-smi -L` lists, in its order (NVML's: by PCI bus)."""
    try:
        out = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise PinError("gpu_pin: nvidia-smi is not on the PATH: this step needs a CUDA GPU and its driver "
                       "(measure on a machine with NVIDIA GPUs); gpu_pin reads each GPU's UUID, the key of its "
                       "lock, from `nvidia-smi -L`") from None
    gpus = [(m.group(1), m.group(2)) for m in map(LISTED.match, out.stdout.splitlines()) if m]
    if not gpus:
        raise PinError("gpu_pin: no GPU found (nvidia-smi -L lists none with a UUID); this step needs a CUDA GPU"
                       + (f": {out.stdout.strip()[:300]}" if out.stdout.strip() else ""))
    return gpus


def slurm_isolated(env=None) -> str | None:
    """Why no lock is needed, when this process runs in a SLURM job that the scheduler gave exactly one GPU; else
    None."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID")
    if not job:
        return None
    for var in SLURM_GPU_VARS:
        given = [x for x in env.get(var, "").split(",") if x.strip()]
        if given:
            return f"SLURM job {job} was given this GPU alone ({var}={env[var]})" if len(given) == 1 else None
    if env.get("SLURM_GPUS_ON_NODE", "").strip() == "1":
        return f"SLURM job {job} was given this GPU alone (SLURM_GPUS_ON_NODE=1)"
    return None


def candidates(env=None, run=subprocess.run) -> list:
    """(what CUDA_VISIBLE_DEVICES is set to, the lock's key: the GPU's UUID) for each GPU this process may use: those
    of CUDA_VISIBLE_DEVICES when it is set (by index, read as nvidia-smi's, or by UUID), else every GPU listed."""
    env = os.environ if env is None else env
    visible = [x.strip() for x in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    try:
        gpus = listed_gpus(run)
    except PinError:
        if visible and all(x.startswith(("GPU-", "MIG-")) for x in visible):
            return [(x, x) for x in visible]                # named by UUID already: the keys without nvidia-smi
        raise
    if not visible:
        return gpus
    by_index, uuids = dict(gpus), [u for _, u in gpus]
    out = []
    for x in visible:
        if x.isdigit() and x in by_index:
            out.append((x, by_index[x]))
        elif x.startswith(("GPU-", "MIG-")):
            out.append((x, next((u for u in uuids if u.startswith(x)), x)))   # a UUID may be given by its prefix
        else:
            raise PinError(f"gpu_pin: CUDA_VISIBLE_DEVICES names {x!r}, which is neither the index of a GPU that "
                           f"nvidia-smi -L lists ({sorted(by_index)}) nor a GPU UUID")
    return out


def lock_path(lock_dir: Path, uuid: str) -> Path:
    return lock_dir / f"fa2-stages-gpu-{uuid}.lock"


def main(argv) -> int:
    if "--" not in argv:
        raise SystemExit("usage: gpu_pin.py -- COMMAND ...")
    cmd = argv[argv.index("--") + 1:]
    isolated = slurm_isolated()
    if isolated:
        shown = os.environ.get("CUDA_VISIBLE_DEVICES", "as SLURM set it")
        print(f"gpu_pin: running on GPU {shown} (no lock: {isolated})", file=sys.stderr, flush=True)
        return subprocess.run(cmd).returncode
    lock_dir = Path(os.environ.get("GPU_LOCK_DIR", tempfile.gettempdir()))
    gpus = candidates()
    while True:
        for visible, uuid in gpus:
            f = open(lock_path(lock_dir, uuid), "w")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            print(f"gpu_pin: running on GPU {visible} ({uuid}; lock {f.name})", file=sys.stderr, flush=True)
            try:
                return subprocess.run(cmd, env={**os.environ, "CUDA_VISIBLE_DEVICES": visible}).returncode
            finally:
                f.close()
        time.sleep(2)  # more GPU jobs than GPUs: Snakemake's --resources gpu=N should prevent it; wait


if __name__ == "__main__":
    sys.exit(main(sys.argv))
