"""The paper's numbers on bfloat16 at the headline (\\val{bf16}{<variant>}{us}), throughput at the longest sequence of
the sweep (\\val{sweep}{<variant>}{tflops}) and the GPU's measured ceilings."""

import sys
from pathlib import Path

import pandas as pd

from kernels.shapes import attention_flops

from pipeline.latex import Values, fixed
from pipeline.selection import BASELINE, CAUSAL_SKIP_STAGE, FINAL, HEADLINE, where


def values(per_run: Path, ceilings: Path) -> Values:
    v = Values("sweep")
    pr = pd.read_csv(per_run)
    pr = pr[pr.impl.ne("triton") | pr.article_tile]        # the article's stages at its tile, and the backends
    bf = pr[where(pr, **{**HEADLINE, "dtype": "bfloat16"})].groupby("variant").time_us.median()
    for variant in (BASELINE, FINAL, "torch-flash", "torch-default"):
        v.put("bf16", variant, "us", fixed(bf[variant], 1))
    layout = {k: x for k, x in HEADLINE.items() if k != "N"}
    sw = pr[pr.set.fillna("").str.contains("n_sweep") & where(pr, **layout)]
    sw = sw[sw.N == sw.N.max()]
    per = (attention_flops(sw.B, sw.H, sw.N, sw.D, sw.causal) / (sw.time_us * 1e-6) / 1e12).groupby(sw.variant)
    tf, lo, hi = per.median(), per.min(), per.max()           # each run's TFLOP/s: median and range over runs
    v.macro("SweepMaxN", int(sw.N.max()))
    v.macro("SweepRuns", sw.run.nunique())
    for variant in (BASELINE, CAUSAL_SKIP_STAGE, FINAL, "torch-flash", "torch-default"):
        v.put("sweep", variant, "tflops", fixed(tf[variant]))
        v.put("sweep", variant, "tflops_range", f"{fixed(lo[variant])}--{fixed(hi[variant])}")
    ceil = pd.read_csv(ceilings)
    mm = ceil[(ceil.quantity == "matmul_tflops") & (ceil.dtype == "float16")].value
    cp = ceil[ceil.quantity == "copy_gbps"].value / 1000
    v.macro("PeakFpSixteen", fixed(mm.median()))
    v.macro("PeakFpSixteenRange", f"{fixed(mm.min())}--{fixed(mm.max())}")     # over every measurement of the runs
    v.macro("CopyBandwidth", fixed(cp.median(), 2))
    v.macro("CopyBandwidthRange", f"{fixed(cp.min(), 2)}--{fixed(cp.max(), 2)}")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
