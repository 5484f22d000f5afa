"""The stage a call runs when it names none: the fastest stage verified on the GPU's architecture.

kernels/default_stages.csv holds one row per architecture that committed GPU runs have measured and verified
(written by workflow/scripts/tools/choose_default.py from the aggregates of that architecture's GPUs: the leading
stage, by the geometric mean of its time over cuDNN's across the N sweep, and between GPUs whose leaders differ the
one faster on every GPU that timed both; with no wrong case in the runs' GPU correctness grids; a test regenerates
it from the committed data). A CUDA device of such an architecture gets that stage; any other device
(another GPU, or the CPU under Triton's interpreter) gets the article's last stage, kernels.FINAL, which every
architecture the build compiles for runs. Where the default is a Gluon stage (sm_90), a call it does not take (a head
dim other than 64 or 128, a dtype other than float16 and bfloat16) gets the row's fallback instead, the leading Triton
stage, so that a call naming no stage is served wherever the Triton kernel serves it.
"""
from __future__ import annotations

import csv
import functools
from pathlib import Path

from .stages import FINAL, get_stage, is_gluon

DEFAULT_STAGES = Path(__file__).with_name("default_stages.csv")


def _rows() -> list:
    with open(DEFAULT_STAGES, newline="") as f:
        return list(csv.DictReader(f))


@functools.lru_cache(maxsize=None)
def default_stages() -> dict:
    """Architecture (compute capability as major*10+minor, e.g. 90) -> its default stage."""
    return {int(r["arch"]): get_stage(r["stage"]).name for r in _rows()}


@functools.lru_cache(maxsize=None)
def fallback_stages() -> dict:
    """Architecture -> the stage for a call its default (a Gluon stage) does not take: the leading Triton stage."""
    return {int(r["arch"]): get_stage(r.get("fallback") or r["stage"]).name for r in _rows()}


@functools.lru_cache(maxsize=64)
def _for_cuda(index: int) -> tuple:
    import torch
    major, minor = torch.cuda.get_device_capability(index)
    arch = 10 * major + minor
    return default_stages().get(arch, FINAL), fallback_stages().get(arch, FINAL)


def gluon_takes(head_dim: int, dtype) -> bool:
    """Whether the Gluon kernel takes a call of this head dim and dtype (kernels.gluon_fwd.check_config's domain)."""
    import torch

    from .gluon_fwd import SUPPORTED_HEAD_DIMS     # imported only where a Gluon default is about to run anyway
    return head_dim in SUPPORTED_HEAD_DIMS and dtype in (torch.float16, torch.bfloat16)


def default_stage(device=None, q=None) -> str:
    """The stage a call on tensors of this device runs when it names none (see the module); given q, a Gluon default
    that does not take q's head dim or dtype gives way to its fallback."""
    if device is not None and getattr(device, "type", None) == "cuda":
        import torch
        stage, fallback = _for_cuda(device.index if device.index is not None else torch.cuda.current_device())
        if q is not None and is_gluon(get_stage(stage).switches) and not gluon_takes(q.shape[-1], q.dtype):
            return fallback
        return stage
    return FINAL
