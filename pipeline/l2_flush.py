"""The kernel timer's flush: a Triton kernel that writes FLUSH_BYTES, more than the L2 holds, before every sample."""
from __future__ import annotations

from typing import Callable

import triton
import triton.language as tl

from .kernel_timer import FLUSH_KERNEL

FLUSH_BYTES = 256 * 2**20   # as triton.testing.do_bench: over four times the H200's 60 MB L2


@triton.jit
def _l2_flush(buf, n, BLOCK: tl.constexpr):
    """Write zeros over the buffer: the L2 then holds none of the timed kernel's data."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(buf + offs, tl.zeros([BLOCK], dtype=tl.int32), mask=offs < n)


assert _l2_flush.__name__ == FLUSH_KERNEL
_flush_buffer = None


def l2_flush() -> Callable[[], None]:
    """A callable that launches `_l2_flush` over a FLUSH_BYTES buffer of the current device (allocated once)."""
    import torch

    global _flush_buffer
    if _flush_buffer is None or _flush_buffer.device.index != torch.cuda.current_device():
        _flush_buffer = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    buf, block = _flush_buffer, 4096
    grid = (triton.cdiv(buf.numel(), block),)
    return lambda: _l2_flush[grid](buf, buf.numel(), BLOCK=block)
