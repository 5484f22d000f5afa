"""The environment a GPU result comes from: GPU, driver, CUDA, library versions, clocks and throttle reasons.

`snapshot()` reads nvidia-smi's current state (call it before and after a measurement); `collect()` adds the static
facts. Written as env.json beside every result.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The code a result depends on: hashed into every env.json beside the commit (a copy of the tree may have no .git).
SOURCE_GLOBS = ("kernels/*.py", "pipeline/*.py", "workflow/scripts/**/*.py", "workflow/rules/*.smk", "Snakefile",
                "config/*.yaml")

SMI_FIELDS = ["name", "uuid", "serial", "pci.bus_id", "driver_version", "pstate", "temperature.gpu", "power.draw", "power.limit",
              "clocks.sm", "clocks.mem", "clocks.max.sm", "clocks.max.mem", "clocks.applications.graphics",
              "clocks_event_reasons.active", "clocks_event_reasons.sw_thermal_slowdown",
              "clocks_event_reasons.hw_slowdown", "clocks_event_reasons.sw_power_cap", "utilization.gpu",
              "memory.used", "memory.total", "persistence_mode", "compute_mode", "mig.mode.current"]


def _smi(field: str, index: int) -> str:
    try:
        out = subprocess.run(["nvidia-smi", f"--id={index}", f"--query-gpu={field}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"unavailable: {err}"
    return out.stdout.strip() if out.returncode == 0 else f"unavailable: {out.stdout.strip() or out.stderr.strip()}"


def _this_gpu() -> str:
    """The GPU this process uses, as nvidia-smi names it: the first of CUDA_VISIBLE_DEVICES, else 0."""
    return (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]


def snapshot(index=None) -> dict:
    """nvidia-smi's view of this process's GPU now (clocks, throttle reasons, temperature, power)."""
    index = _this_gpu() if index is None else index
    return {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            **{f: _smi(f, index) for f in SMI_FIELDS}}


def gpu_slug(name: str) -> str:
    """The folder name of a GPU's data (data/<slug>/): its device name in lower case, each run of other characters
    than letters and digits one '-' ('NVIDIA H200' -> 'nvidia-h200')."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def project_commit() -> str:
    """The project's commit: $PROJECT_COMMIT if set (a copy of the tree without .git), else git's HEAD, with
    '-dirty' when tracked files differ from it; 'unknown' when neither is there."""
    if os.environ.get("PROJECT_COMMIT"):
        return os.environ["PROJECT_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
        return head.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


KERNEL_SOURCES = ("kernels/flash_fwd.py", "kernels/gluon_fwd.py")   # each kernel's own source, hashed on its own


def kernel_sha256() -> dict:
    """SHA-256 of each kernel's source file: a Gluon stage's verification holds for the source it ran (a CPU test
    refuses a Gluon kernel changed since its last committed GPU verification)."""
    return {name: hashlib.sha256((ROOT / name).read_bytes()).hexdigest() for name in KERNEL_SOURCES
            if (ROOT / name).exists()}


def source_sha256() -> str:
    """SHA-256 over the code that makes a result (SOURCE_GLOBS), file names included."""
    h = hashlib.sha256()
    for path in sorted({p for g in SOURCE_GLOBS for p in ROOT.glob(g)}):
        h.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def ncu_version() -> str | None:
    """Nsight Compute's version, as `ncu --version` prints it (None when ncu is not on the PATH)."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return None
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"unavailable: {err}"
    m = re.search(r"Version ([\w.()\- ]+)", out)
    return m.group(1).strip() if m else out.strip()[-200:]


def collect(index: int = 0) -> dict:
    """Static facts: versions, the project's commit and source hash, and torch's view of CUDA device `index`
    (after CUDA_VISIBLE_DEVICES)."""
    import torch
    import triton

    env = {"host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
           "triton": triton.__version__, "cuda_runtime": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "ncu": ncu_version(), "project_commit": project_commit(), "source_sha256": source_sha256(),
           "kernel_sha256": kernel_sha256()}
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(index)
        env.update(gpu=p.name, capability=f"{p.major}.{p.minor}", sm_count=p.multi_processor_count,
                   memory_bytes=p.total_memory, l2_bytes=getattr(p, "L2_cache_size", None))
    return env


def json_line(obj: dict) -> str:
    return json.dumps(obj, sort_keys=True) + "\n"


def write(path: Path, env: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(env, indent=2, sort_keys=True) + "\n")


def start(path: Path, resume: bool = True, **extra) -> dict:
    """env.json at the start of a GPU step: static facts, the extras, a snapshot. An existing one is kept if the
    step resumes (resume: a step that knows whether it does, bench.py and verify.py by their partial files, says
    so; False writes it afresh, so that a step begun again never keeps an earlier start's commit and plan)."""
    if resume and path.exists():
        return json.loads(path.read_text())
    env = {**collect(), **extra, "start": snapshot()}
    write(path, env)
    return env


def finish(path: Path, env: dict) -> None:
    write(path, {**env, "end": snapshot()})
