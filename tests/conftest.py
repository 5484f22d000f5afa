"""Tests run on the CPU: Triton's interpreter executes the kernels (set before triton is first imported)."""
import os
import secrets

os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

# pytest-xdist runs two workers on two cores: one thread each, or PyTorch's own threads fight over the cores.
torch.set_num_threads(1)


@pytest.fixture
def make_qkv():
    """Fresh random q, k, v for each call; the seed goes into the failure message."""

    def make(B, H, H_kv, N, D, dtype=torch.float16):
        seed = secrets.randbits(31)
        g = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(B, h, N, D, generator=g).to(dtype) for h in (H, H_kv, H_kv))
        return q, k, v, seed

    return make
