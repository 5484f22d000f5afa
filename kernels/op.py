"""`attention` as a PyTorch operator: `torch.ops.fa2_stages.attention`, registered with torch.library.

A plain Python function is opaque to PyTorch's compiler: `torch.compile` breaks its graph there, CUDA-graph capture
sees only what it launches, and `torch.export` cannot trace it. Registered as a custom operator with a fake
implementation (the output's shape, dtype, device and strides, computed without running the kernel), it is one node
of a graph: compiled around with `fullgraph=True`, captured and replayed in a CUDA graph, exported.

    import torch, kernels
    o = torch.ops.fa2_stages.attention(q, k, v, True, "v13", None)   # causal, stage, sm_scale (None: 1/sqrt(D))
    o = kernels.attention_op(q, k, v, causal=True, stage="v13")       # the same, with keywords

The operator takes a stage by name (`kernels.STAGES`), not a switch set or a tile: a graph's node holds what its
schema can say. It returns a new, contiguous output in q's dtype, and mutates nothing.
"""
from __future__ import annotations

import torch

from .defaults import default_stage
from .stages import get_stage

NAME = "fa2_stages::attention"


@torch.library.custom_op(NAME, mutates_args=())
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, stage: str,
               sm_scale: float | None) -> torch.Tensor:
    from .launcher import attention
    return attention(q, k, v, causal=causal, stage=stage, sm_scale=sm_scale)


@_attention.register_fake
def _(q, k, v, causal, stage, sm_scale):
    """The output as the kernel makes it: q's shape and dtype, contiguous, on q's device. The checks that need no
    data run here too, so that a bad call fails while tracing, with the same message as an eager call."""
    get_stage(stage)
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"q, k, v must have 4 dimensions (B, H, N, D), got {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)}")
    if tuple(k.shape) != tuple(v.shape) or q.shape[0] != k.shape[0] or q.shape[2:] != k.shape[2:]:
        raise ValueError(f"q {tuple(q.shape)} and k, v {tuple(k.shape)}, {tuple(v.shape)} do not fit: (B, H, N, D) "
                         f"and (B, H_kv, N, D)")
    return torch.empty_like(q, memory_format=torch.contiguous_format)


def attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = True,
                 stage: str | None = None, sm_scale: float | None = None) -> torch.Tensor:
    """softmax(q k^T * sm_scale [+ causal mask]) v by one stage, through the registered operator (see the module);
    stage None: the device's default stage (kernels.defaults), resolved here, so that a graph holds a named stage."""
    if stage is None:
        stage = default_stage(q.device, q)
    return torch.ops.fa2_stages.attention(q, k, v, causal, stage, sm_scale)
