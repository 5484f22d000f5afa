"""The references: the float64 reference (chunked over heads) against PyTorch's math backend in float64, and the
SDPA wrapper's refusals."""
import pytest
import torch
import torch.nn.functional as F

from kernels import reference_attention, sdpa


@pytest.mark.parametrize("causal", [True, False])
def test_float64_reference_matches_pytorch(causal):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 6, 40, 16, generator=g, dtype=torch.float64)
    k, v = (torch.randn(2, 3, 40, 16, generator=g, dtype=torch.float64) for _ in range(2))
    expected = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1),
                                              is_causal=causal)
    for max_score_bytes in (2**31, 1):  # one chunk; one head per chunk
        got = reference_attention(q, k, v, causal=causal, max_score_bytes=max_score_bytes)
        assert torch.allclose(got, expected, atol=1e-12, rtol=0)


def test_sdpa_math_backend_on_cpu():
    q = torch.randn(1, 4, 20, 16)
    k, v = torch.randn(1, 2, 20, 16), torch.randn(1, 2, 20, 16)
    ref = reference_attention(q, k, v)
    for gqa in ("native", "repeat"):
        out = sdpa(q, k, v, impl="torch-math", gqa=gqa)
        assert torch.allclose(out.double(), ref, atol=1e-5)


def test_sdpa_refuses_unknown_choices():
    q = torch.randn(1, 2, 8, 16)
    with pytest.raises(ValueError, match=r"unknown impl 'torch-xformers'; the PyTorch references are"):
        sdpa(q, q, q, impl="torch-xformers")
    with pytest.raises(ValueError, match=r"gqa must be 'native' or 'repeat', got 'expand'"):
        sdpa(q, q, q, gqa="expand")
