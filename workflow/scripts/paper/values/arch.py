"""The paper's numbers on the candidate classes of the article's GPU, from the build (\\val{arch}{<arch>}{...},
\\val{arch}{<arch>@<stage>}{...}): whether warp specialization (v5) compiles, and the shared memory, registers and
blocks per SM of the stages before and after it at the article's tile."""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import previous_stage, stage_adding

from pipeline.latex import Values, fixed
from pipeline.selection import at_article_tile


def values(build: Path) -> Values:
    v = Values("arch")
    b = pd.read_csv(build)
    ws = stage_adding("warp_specialize")
    before = previous_stage(ws)
    b = b[at_article_tile(b) & b.variant.isin([before, ws])]
    val = b.set_index(["arch", "variant", "metric"]).value
    for arch in sorted(b.arch.unique()):
        v.put("arch", int(arch), "ws_compiles", "yes" if val.get((arch, ws, "compiles"), 0) == 1 else "no")
        for stage in (before, ws):
            if val.get((arch, stage, "compiles"), 0) == 1:
                v.put("arch", f"{int(arch)}@{stage}", "smem_kb", fixed(val[(arch, stage, "shared_bytes")] / 1000, 1))
                v.put("arch", f"{int(arch)}@{stage}", "regs", fixed(val[(arch, stage, "registers")]))
                v.put("arch", f"{int(arch)}@{stage}", "blocks", fixed(val[(arch, stage, "blocks_per_sm")]))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
