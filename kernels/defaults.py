"""The stage a call runs when it names none: the fastest stage verified on the GPU's architecture.

kernels/default_stages.csv holds one row per architecture that committed GPU runs have measured and verified
(written by workflow/scripts/tools/choose_default.py from the aggregate: the leading stage, by the geometric mean
of its time over cuDNN's across the N sweep, with no wrong case in the runs' GPU correctness grids; a test
regenerates it from the committed data). A CUDA device of such an architecture gets that stage; any other device
(another GPU, or the CPU under Triton's interpreter) gets the article's last stage, kernels.FINAL, which every
architecture the build compiles for runs.
"""
from __future__ import annotations

import csv
import functools
from pathlib import Path

from .stages import FINAL, get_stage

DEFAULT_STAGES = Path(__file__).with_name("default_stages.csv")


@functools.lru_cache(maxsize=None)
def default_stages() -> dict:
    """Architecture (compute capability as major*10+minor, e.g. 90) -> its default stage."""
    with open(DEFAULT_STAGES, newline="") as f:
        table = {int(r["arch"]): get_stage(r["stage"]).name for r in csv.DictReader(f)}
    return table


@functools.lru_cache(maxsize=64)
def _for_cuda(index: int) -> str:
    import torch
    major, minor = torch.cuda.get_device_capability(index)
    return default_stages().get(10 * major + minor, FINAL)


def default_stage(device=None) -> str:
    """The stage a call on tensors of this device runs when it names none (see the module)."""
    if device is not None and getattr(device, "type", None) == "cuda":
        import torch
        return _for_cuda(device.index if device.index is not None else torch.cuda.current_device())
    return FINAL
