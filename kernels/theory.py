"""What a stage must move and compute, counted from its loop structure (the article's T1, T2 and FLOP count).

For one (batch, head), the program that owns query block m of BLOCK_M rows reads its Q tile once and, in the KV
loop, every K and V row up to the loop's end: all N rows without the causal skip, min(N, (m + 1) * BLOCK_M) with it.
It writes its output tile once. Summed over programs this is the traffic *requested* from memory (the article's T1
and T2): the L2 serves most of it, so DRAM sees far less. The minimum DRAM traffic reads Q, K, V once and writes O
once. FLOPs count the two matrix products of every KV block visited (2 * rows * cols * D each), and separately the
useful ones (the causal triangle only).
"""
from __future__ import annotations

import math

from .shapes import Shape


def kv_rows_visited(N: int, block_m: int, block_n: int, causal_skip: bool) -> int:
    """K/V rows read by all query blocks of one (batch, head), counting whole BLOCK_N blocks."""
    total = 0
    for m in range(math.ceil(N / block_m)):
        hi = min(N, (m + 1) * block_m) if causal_skip else N
        total += math.ceil(hi / block_n) * block_n
    return total


def traffic(shape: Shape, block_m: int, block_n: int, causal_skip: bool) -> dict:
    """Requested bytes and FLOPs for one launch, and the minimum DRAM traffic."""
    el = 2  # bytes per float16 / bfloat16 element
    skip = causal_skip and shape.causal
    n_blocks = math.ceil(shape.N / block_m)
    bh = shape.B * shape.H
    rows = kv_rows_visited(shape.N, block_m, block_n, skip)
    q_tiles = bh * n_blocks * block_m * shape.D * el
    kv = bh * rows * 2 * shape.D * el
    return {
        "requested_read_bytes": q_tiles + kv,                                  # T1
        "requested_write_bytes": bh * n_blocks * block_m * shape.D * el,       # T2
        "min_dram_bytes": (2 * shape.B * shape.H + 2 * shape.B * shape.H_kv) * shape.N * shape.D * el,
        "kv_blocks_visited": bh * (rows // block_n),
        "matmul_flops_executed": 4.0 * bh * block_m * rows * shape.D,  # QK^T and PV: 2*BM*BN*D each per block
        "matmul_flops_useful": shape.flops(),
    }
