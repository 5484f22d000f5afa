"""A faked GPU for the tests of the pipeline's first GPU steps (gpu_check, plan) on a machine without one: an
nvidia-smi that answers `-L` (gpu_pin), the name query (gpu_env.check) and the compute capability query
(gpu_arch), and the environment that puts it first on the PATH, with torch shown no GPU."""
import os
from pathlib import Path

UUID = "GPU-00000000-1111-2222-3333-444444444444"


def fake_nvidia_smi(folder: Path, name: str, capability: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.write_text("#!/bin/sh\ncase \"$*\" in\n"
                   f"  -L) echo 'GPU 0: {name} (UUID: {UUID})' ;;\n"
                   f"  *compute_cap*) echo '{capability}' ;;\n"
                   f"  *name*) echo '{name}' ;;\n"
                   "  *) exit 2 ;;\nesac\n")
    smi.chmod(0o755)
    return folder


def env_with(base: dict, folder: Path, root: Path, locks: Path) -> dict:
    return {**base, "PATH": f"{folder}{os.pathsep}{base.get('PATH', '')}", "CUDA_VISIBLE_DEVICES": "",
            "PYTHONPATH": str(root), "GPU_LOCK_DIR": str(locks)}
