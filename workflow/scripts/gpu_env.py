"""The environment a GPU result comes from: GPU, driver, CUDA, library versions, clocks and throttle reasons.

`snapshot()` reads nvidia-smi's current state (call it before and after a measurement); `collect()` adds the static
facts. Written as env.json beside every result.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

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


def collect(index: int = 0) -> dict:
    """Static facts: versions, and torch's view of CUDA device `index` (after CUDA_VISIBLE_DEVICES)."""
    import torch
    import triton

    env = {"host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
           "triton": triton.__version__, "cuda_runtime": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None}
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


def start(path: Path, **extra) -> dict:
    """env.json at the start of a GPU step (kept if the step resumes): static facts, the extras, a snapshot."""
    if path.exists():
        return json.loads(path.read_text())
    env = {**collect(), **extra, "start": snapshot()}
    write(path, env)
    return env


def finish(path: Path, env: dict) -> None:
    write(path, {**env, "end": snapshot()})
