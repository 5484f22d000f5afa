"""Per-architecture limits that set how many programs (CTAs) fit on one SM, for the static occupancy estimate.

Values from the CUDA C++ Programming Guide, "Technical Specifications per Compute Capability", and the CUDA
occupancy calculator's allocation rules (registers are allocated per warp in units of 256; the runtime reserves
1 KB of shared memory per block on these architectures).
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class ArchLimits:
    name: str
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int = 65536
    shared_per_sm: int = 0           # bytes usable by blocks
    reserved_shared_per_block: int = 1024
    register_alloc_unit: int = 256   # registers, per warp


ARCHS = {
    90: ArchLimits("sm_90 (Hopper: H100, H200)", max_warps_per_sm=64, max_blocks_per_sm=32, shared_per_sm=233472),
    89: ArchLimits("sm_89 (Ada: RTX 40)", max_warps_per_sm=48, max_blocks_per_sm=24, shared_per_sm=102400),
    86: ArchLimits("sm_86 (Ampere consumer: RTX 30)", max_warps_per_sm=48, max_blocks_per_sm=16,
                   shared_per_sm=102400),
    120: ArchLimits("sm_120 (Blackwell consumer: RTX 50)", max_warps_per_sm=48, max_blocks_per_sm=32,
                    shared_per_sm=102400),
}


def blocks_per_sm(arch: int, registers: int, shared_bytes: int, num_warps: int) -> dict:
    """Blocks per SM allowed by each resource, and the result (their minimum)."""
    lim = ARCHS[arch]
    regs_per_warp = math.ceil(registers * 32 / lim.register_alloc_unit) * lim.register_alloc_unit
    by_regs = (lim.registers_per_sm // regs_per_warp) // num_warps if regs_per_warp else lim.max_blocks_per_sm
    by_shared = lim.shared_per_sm // (shared_bytes + lim.reserved_shared_per_block)
    by_warps = lim.max_warps_per_sm // num_warps
    blocks = min(by_regs, by_shared, by_warps, lim.max_blocks_per_sm)
    return {"blocks_limit_registers": by_regs, "blocks_limit_shared": by_shared, "blocks_limit_warps": by_warps,
            "blocks_per_sm": blocks, "theoretical_occupancy": blocks * num_warps / lim.max_warps_per_sm}
