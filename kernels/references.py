"""References: the float64 ground truth, PyTorch's scaled_dot_product_attention with each backend, and PyTorch's
attention at the inputs' precision as a plain implementation computes it (the judge's baseline on the CPU)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# impl name -> backend forced (None: PyTorch chooses). "flash" is FlashAttention-2.
SDPA_BACKENDS = {
    "torch-default": None,
    "torch-flash": SDPBackend.FLASH_ATTENTION,
    "torch-cudnn": SDPBackend.CUDNN_ATTENTION,
    "torch-efficient": SDPBackend.EFFICIENT_ATTENTION,
    "torch-math": SDPBackend.MATH,
}


def _repeat_kv(q: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return t.repeat_interleave(q.shape[1] // t.shape[1], dim=1)


def reference_attention(q, k, v, *, causal: bool = True, sm_scale: float | None = None,
                        max_score_bytes: int = 2**31) -> torch.Tensor:
    """Attention in float64 on q's device, K/V heads indexed for grouped-query attention. Returns float64.

    Heads are processed in chunks whose float64 score matrices stay under max_score_bytes, so long sequences fit.
    """
    B, H, N, D = q.shape
    group = H // k.shape[1]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    keep = torch.ones(N, N, dtype=torch.bool, device=q.device).tril() if causal else None
    out = torch.empty(B, H, N, D, dtype=torch.float64, device=q.device)
    step = max(1, max_score_bytes // (N * N * 8))
    for b in range(B):
        for h0 in range(0, H, step):
            heads = torch.arange(h0, min(H, h0 + step), device=q.device)
            qs = q[b, heads].to(torch.float64)
            ks = k[b, heads // group].to(torch.float64)
            vs = v[b, heads // group].to(torch.float64)
            scores = (qs @ ks.transpose(-1, -2)) * scale
            if causal:
                scores = scores.masked_fill(~keep, float("-inf"))
            out[b, heads] = torch.softmax(scores, dim=-1) @ vs
    return out


def plain_attention(q, k, v, *, causal: bool = True, sm_scale: float | None = None) -> torch.Tensor:
    """Attention with PyTorch's operations at the inputs' 16-bit precision, in the order a plain implementation
    writes them (FlashAttention's tests' attention_ref with upcast=False): Q scaled, the scores a 16-bit product,
    the softmax rounded to 16 bits, then the product with V. Its error is PyTorch's own at that precision where SDPA
    computes in float32 (its math backend on the CPU), as the fused GPU kernels do not."""
    D = q.shape[-1]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    scores = (q * scale) @ _repeat_kv(q, k).transpose(-1, -2)
    if causal:
        N = q.shape[2]
        scores = scores.masked_fill(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(scores, dim=-1).to(q.dtype) @ _repeat_kv(q, v)


def sdpa(q, k, v, *, causal: bool = True, sm_scale: float | None = None, impl: str = "torch-default",
         gqa: str = "native") -> torch.Tensor:
    """PyTorch's attention with the backend of `impl` forced (see SDPA_BACKENDS).

    gqa="native" passes the grouped K/V with enable_gqa=True; gqa="repeat" repeats the K/V heads first, for a
    backend that does not take grouped heads. A backend that cannot run the input raises (never falls back).
    """
    if impl not in SDPA_BACKENDS:
        raise ValueError(f"unknown impl {impl!r}; the PyTorch references are {list(SDPA_BACKENDS)}")
    if gqa not in ("native", "repeat"):
        raise ValueError(f"gqa must be 'native' or 'repeat', got {gqa!r}")
    if gqa == "repeat":
        k, v = _repeat_kv(q, k), _repeat_kv(q, v)
    kwargs = dict(is_causal=causal, scale=sm_scale, enable_gqa=(gqa == "native" and k.shape[1] != q.shape[1]))
    backend = SDPA_BACKENDS[impl]
    if backend is None:
        return F.scaled_dot_product_attention(q, k, v, **kwargs)
    with sdpa_kernel([backend]):
        return F.scaled_dot_product_attention(q, k, v, **kwargs)
