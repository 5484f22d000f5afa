"""The compute capability of the GPUs this process sees ("9.0" for the H200), recorded by the first GPU step (rule
gpu_check, in gpu.json) for the plan to leave out what the GPU cannot run (pipeline.plan.adapt)."""
from __future__ import annotations

import re

from . import gpu_env

CAPABILITY = re.compile(r"^\d+\.\d+$")


def detected_capabilities() -> list:
    """"major.minor" of every GPU seen (after CUDA_VISIBLE_DEVICES): torch's, else nvidia-smi's compute_cap; an
    answer that is not a capability is left out."""
    found = gpu_env.per_gpu(lambda torch, i: "%d.%d" % torch.cuda.get_device_capability(i), "compute_cap")
    return [c for c in found if CAPABILITY.match(c)]


def sm(capability: str) -> int:
    """"9.0" -> 90, the architecture's number as in sm_90 (kernels.gpus.ARCHS, config build.archs)."""
    if not isinstance(capability, str) or not CAPABILITY.match(capability):
        raise ValueError(f"{capability!r} is not a compute capability (major.minor, e.g. 9.0)")
    major, minor = capability.split(".")
    return 10 * int(major) + int(minor)
