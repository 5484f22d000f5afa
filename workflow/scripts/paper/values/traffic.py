"""The paper's numbers on what the headline must move and compute at the article's tile (kernels.theory: the article's
T1 and T2, the minimum DRAM traffic, the FLOPs)."""

import sys

from kernels.shapes import HEADLINE
from kernels.theory import traffic

from pipeline.latex import Values, fixed
from pipeline.selection import ARTICLE_TILE


def values() -> Values:
    v = Values("traffic")
    bm, bn = ARTICLE_TILE["block_m"], ARTICLE_TILE["block_n"]
    full = traffic(HEADLINE, bm, bn, causal_skip=False)
    skip = traffic(HEADLINE, bm, bn, causal_skip=True)
    v.macro("TOneMiB", fixed(full["requested_read_bytes"] / 2**20))
    v.macro("TOneMB", fixed(full["requested_read_bytes"] / 1e6, 2))
    v.macro("TTwoMiB", fixed(full["requested_write_bytes"] / 2**20))
    v.macro("TTwoMB", fixed(full["requested_write_bytes"] / 1e6, 2))
    v.macro("TOneSkipMiB", fixed(skip["requested_read_bytes"] / 2**20))
    v.macro("MinDramMiB", fixed(full["min_dram_bytes"] / 2**20))
    v.macro("UsefulGflop", fixed(full["matmul_flops_useful"] / 1e9, 2))
    v.macro("ExecGflopFull", fixed(full["matmul_flops_executed"] / 1e9, 2))
    v.macro("ExecGflopSkip", fixed(skip["matmul_flops_executed"] / 1e9, 2))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values().write(snakemake.output[0])  # noqa: F821
