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


def source_sha256(root: Path = ROOT, globs=SOURCE_GLOBS) -> str:
    """SHA-256 over the code that makes a result (SOURCE_GLOBS under root), file names included; `globs`: another
    commit's SOURCE_GLOBS (pipeline.git.source_sha256_at)."""
    root = Path(root)
    h = hashlib.sha256()
    for path in sorted({p for g in globs for p in root.glob(g)}):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
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


class GpuMismatch(ValueError):
    """The GPU detected is not the one the run's folder names (config gpu, `make measure GPU=...`)."""


def per_gpu(from_torch, smi_field: str) -> list:
    """One answer per GPU this process sees (after CUDA_VISIBLE_DEVICES): from_torch(torch, index) where torch sees a
    GPU, else nvidia-smi's --query-gpu=smi_field (empty where neither answers)."""
    try:
        import torch

        if torch.cuda.is_available():
            return [from_torch(torch, i) for i in range(torch.cuda.device_count())]
    except ImportError:
        pass
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={smi_field}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def detected_names() -> list:
    """The device name of every GPU this process sees (after CUDA_VISIBLE_DEVICES): torch's, else nvidia-smi's."""
    return per_gpu(lambda torch, i: torch.cuda.get_device_name(i), "name")


def check_gpu(expected: str, names=None) -> dict:
    """Refuse (GpuMismatch) unless every GPU seen is one model whose slug is `expected` (the run's data/<gpu>/): a
    run measured on another GPU is labelled by what it is, never filed under the H200's folder. Returns what was
    detected, to be written into the run."""
    names = detected_names() if names is None else list(names)
    slugs = sorted({gpu_slug(n) for n in names})
    if not names:
        raise GpuMismatch(f"no GPU detected (torch.cuda, nvidia-smi): cannot measure a run into data/{expected}/")
    if slugs != [expected]:
        raise GpuMismatch(f"config gpu (make measure GPU=...) is {expected!r} but the GPU(s) detected here are "
                          f"{sorted(set(names))} (data/{'/, data/'.join(slugs)}/): measure with GPU={slugs[0]} "
                          f"(--config gpu={slugs[0]}) on a machine of one GPU model; nothing was measured")
    return {"gpu": names[0], "gpu_slug": expected, "gpus": names}


def main(argv=None) -> int:
    """python -m pipeline.gpu_env check <expected slug> <out.json> | slug: the check of check_gpu, or the slug of
    the GPU detected here (make measure's default GPU=)."""
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["check"] and len(argv) == 3:
        try:
            found = check_gpu(argv[1])
        except GpuMismatch as err:
            print(f"gpu_env check: {err}", file=sys.stderr)
            return 1
        from .gpu_arch import detected_capabilities  # what the plan may run on it (pipeline.plan.adapt)
        found["capabilities"] = detected_capabilities()
        write(Path(argv[2]), found)
        print(f"gpu_env check: {found['gpus']} (compute capability {found['capabilities']}) -> data/{argv[1]}/")
        return 0
    if argv == ["slug"]:
        slugs = sorted({gpu_slug(n) for n in detected_names()})
        if len(slugs) != 1:
            print(f"gpu_env slug: detected {slugs or 'no GPU'}: need exactly one GPU model", file=sys.stderr)
            return 1
        print(slugs[0])
        return 0
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
