"""How a kernel's output is judged: against the float64 reference, on fresh random inputs, output poisoned first.

The error is ||out - ref|| / ||ref|| over the whole output, in float64. The tolerances are those of the device
tool's method for 16-bit operands (bf16 between 1e-3 and 1e-2; float16, with three more mantissa bits, at the low
end of that band). An output that still holds the poison (NaN) anywhere fails before any norm is taken.
"""
from __future__ import annotations

import math

import torch

TOLERANCE = {torch.float16: 1e-3, torch.bfloat16: 1e-2}


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


def judge(out: torch.Tensor, ref: torch.Tensor) -> dict:
    """{'rel_error', 'unwritten' (count of poison left), 'tolerance', 'ok'} for one output."""
    unwritten = int(torch.isnan(out).sum().item())
    err = relative_error(out, ref)
    tol = TOLERANCE[out.dtype]
    return {"rel_error": err, "unwritten": unwritten, "tolerance": tol, "ok": unwritten == 0 and err <= tol}
