"""How a kernel's output is judged: against the float64 reference, on fresh random inputs, output poisoned first.

The error is ||out - ref|| / ||ref|| over the whole output, in float64. It is judged, in FlashAttention's manner,
against PyTorch's own error on the same inputs at the same 16-bit precision, set against the same float64 reference:
the kernel may be at most PYTORCH_FACTOR times as far off (FlashAttention's tests allow twice). PyTorch's output is
its SDPA on the GPU, whose fused kernels round the probabilities to 16 bits as ours do (over the 15,000 checks of the
committed H200 runs our error was at most 1.29 times cuDNN's), and on the CPU the plain implementation at the inputs'
precision (kernels.references.plain_attention), since SDPA's math backend there computes in float32 and rounds only
its output. Where PyTorch's error vanishes (one key: both return V's row), the bound is taken from a quarter of the
dtype's unit roundoff instead.
Without PyTorch's output the bound is the fixed TOLERANCE of the device tool's method for 16-bit operands (bf16
between 1e-3 and 1e-2; float16, with three more mantissa bits, at the low end of that band). So it is where PyTorch's
output is not finite (its 16-bit scores overflowed: plain_attention on scores beyond float16's range) while the
reference is: PyTorch has no error to measure there, and an infinite bound would pass any output. An output that still
holds the poison (NaN) anywhere fails before any norm is taken.
"""
from __future__ import annotations

import math

import torch

TOLERANCE = {torch.float16: 1e-3, torch.bfloat16: 1e-2}
PYTORCH_FACTOR = 2.0
UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


def poisoned_like(q: torch.Tensor) -> torch.Tensor:
    """An output buffer full of NaN: any element the kernel fails to write stays NaN."""
    return torch.full_like(q, float("nan"), memory_format=torch.contiguous_format)


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; inf if out has any NaN or inf."""
    out = out.to(torch.float64)
    ref = ref.to(torch.float64)
    if not torch.isfinite(out).all():
        return math.inf
    return (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()


def judge(out: torch.Tensor, ref: torch.Tensor, pytorch: torch.Tensor | None = None) -> dict:
    """{'rel_error', 'unwritten' (count of poison left), 'tolerance' (the bound), 'pytorch_rel_error' (None without
    PyTorch's output), 'ok'} for one output; `pytorch` is PyTorch's output on the same inputs (see above)."""
    unwritten = int(torch.isnan(out).sum().item())
    err = relative_error(out, ref)
    if pytorch is None:
        torch_err, tol = None, TOLERANCE[out.dtype]
    else:
        torch_err = relative_error(pytorch, ref)
        tol = PYTORCH_FACTOR * max(torch_err, UNIT_ROUNDOFF[out.dtype] / 4)
        if torch_err == math.inf and bool(torch.isfinite(ref).all()):   # PyTorch overflowed where float64 did not
            tol = TOLERANCE[out.dtype]
    return {"rel_error": err, "unwritten": unwritten, "tolerance": tol, "pytorch_rel_error": torch_err,
            "ok": unwritten == 0 and err <= tol}
