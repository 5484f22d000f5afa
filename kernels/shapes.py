"""Problem shapes. The headline is the article's (S1): the Qwen3-0.6B/1.7B attention layout."""
from __future__ import annotations

from dataclasses import asdict, dataclass

DTYPES = ("float16", "bfloat16")  # names of torch dtypes (torch itself is imported only to make tensors)


def attention_flops(B, H, N, D, causal=True):
    """Useful matrix FLOPs of the forward pass, as FlashAttention counts them: two products of 2*N*N*D per head,
    halved when causal. Works on numbers and on pandas columns alike."""
    return 4.0 * B * H * N * N * D * (0.5 if causal is True else 1.0) if isinstance(causal, bool) else \
        4.0 * B * H * N * N * D * (1.0 - 0.5 * causal.astype(float))


@dataclass(frozen=True)
class Shape:
    B: int
    H: int
    H_kv: int
    N: int
    D: int
    dtype: str = "float16"
    causal: bool = True

    def tensors(self, device="cpu", generator=None, fill="randn"):
        """Fresh q (B, H, N, D), k and v (B, H_kv, N, D): standard normal, or uninitialized with fill='empty'."""
        import torch

        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r} is not one of {DTYPES}")
        dt = getattr(torch, self.dtype)
        make = (lambda s: torch.empty(s, dtype=dt, device=device)) if fill == "empty" else \
            (lambda s: torch.randn(s, dtype=torch.float32, device=device, generator=generator).to(dt))
        return (make((self.B, self.H, self.N, self.D)), make((self.B, self.H_kv, self.N, self.D)),
                make((self.B, self.H_kv, self.N, self.D)))

    def flops(self) -> float:
        return attention_flops(self.B, self.H, self.N, self.D, self.causal)

    def as_dict(self) -> dict:
        return asdict(self)


HEADLINE = Shape(B=2, H=16, H_kv=8, N=1024, D=128, dtype="float16", causal=True)
