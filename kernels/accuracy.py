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
holds the poison (NaN) anywhere the reference is finite fails before any norm is taken.
Where the float64 reference is not finite (an inf or NaN in the inputs), the output must be non-finite exactly there
(and equal to it where it is +-inf; PyTorch's value where the reference is NaN and PyTorch's output a number: a row
with no finite score), and both errors are taken over the reference's finite elements, so an inf in the inputs no
longer makes the bound infinite. The judge is for 16-bit outputs: a float32 one is refused (TypeError).
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
    PyTorch's output), 'nonfinite_mismatch' (elements whose finiteness is not the reference's), 'ok'} for one 16-bit
    output; `pytorch` is PyTorch's output on the same inputs (see above).

    Where the float64 reference is not finite (an inf or NaN in the inputs), the output must be non-finite exactly
    there, and equal to it where it is +inf or -inf; where the reference is NaN and PyTorch's output is finite (a row
    with no finite score: SDPA gives 0) the output must be PyTorch's value. The errors (the output's and PyTorch's)
    are taken over the reference's finite elements only, so an inf in the inputs never makes the bound infinite."""
    if out.dtype not in TOLERANCE:
        raise TypeError(f"judge is for the kernel's 16-bit outputs ({', '.join(map(str, TOLERANCE))}): its bound is "
                        f"PyTorch's error at that precision, or the fixed bound of that dtype; got {out.dtype}. Judge "
                        f"a float32 output with relative_error against the reference and a bound of your own")
    ref64 = ref.to(torch.float64)
    finite = torch.isfinite(ref64)
    expected_nonfinite = ~finite
    excused = torch.zeros_like(finite)
    if pytorch is not None:
        excused = torch.isnan(ref64) & torch.isfinite(pytorch)
        expected_nonfinite &= ~excused
    out_nonfinite = ~torch.isfinite(out)
    mismatch = out_nonfinite != expected_nonfinite
    infinite = torch.isinf(ref64)
    mismatch |= infinite & (out.to(torch.float64) != ref64)
    if pytorch is not None:
        mismatch |= excused & (out != pytorch.to(out.dtype))
    n_mismatch = int(mismatch.sum().item())
    unwritten = int((torch.isnan(out) & ~expected_nonfinite).sum().item())
    all_finite = bool(finite.all())
    err = (relative_error(out, ref) if all_finite else
           relative_error(out[finite], ref[finite]) if finite.any() else 0.0)
    if n_mismatch:
        err = math.inf
    if pytorch is None:
        torch_err, tol = None, TOLERANCE[out.dtype]
    else:
        torch_err = (relative_error(pytorch, ref) if all_finite else
                     relative_error(pytorch[finite], ref[finite]) if finite.any() else 0.0)
        tol = PYTORCH_FACTOR * max(torch_err, UNIT_ROUNDOFF[out.dtype] / 4)
        if torch_err == math.inf:     # PyTorch overflowed where float64 did not: no error of its own to measure
            tol = TOLERANCE[out.dtype]
    return {"rel_error": err, "unwritten": unwritten, "tolerance": tol, "pytorch_rel_error": torch_err,
            "nonfinite_mismatch": n_mismatch, "ok": unwritten == 0 and n_mismatch == 0 and err <= tol}
