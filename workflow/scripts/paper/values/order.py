"""The paper's numbers from data/<gpu>/probes/order-16384 (sealed): v31 and v32, which run one kernel at N = 16384,
and cuDNN, timed in alternating orders on one GPU (even rounds cuDNN, v31, v32; odd rounds the reverse), to test
whether run-31's edge of v32 over v31 there came from the kernel or from the order. Its kernels/gluon_fwd.py is the
source probes/rare-rescale-fix verified (the conditional rescale fixed), or the step refuses: the paper quotes it as
the fixed build's only timing.

- \\OrderGpu, \\OrderRounds, \\OrderSamples, \\OrderCapped, \\OrderEntries: the probe's GPU, its rounds per dtype,
  samples per entry, and the entries whose every state reading was power-capped, of all;
- \\val{order}{<fp16|bf16>}{pair|pairlo|pairhi}: v32's time over v31's in a round (kernels alone), the median
  over the rounds, the lowest and the highest;
- \\val{order}{<fp16|bf16>}{x31|x32}: the median over the rounds of v31's and v32's time over cuDNN's.
"""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed

DTYPES = {"float16": "fp16", "bfloat16": "bf16"}
FORWARD = ("torch-cudnn", "v31", "v32")     # an even round's order; odd rounds run it reversed


def gluon_source(kernel_sha256: Path) -> str:
    """The SHA-256 of kernels/gluon_fwd.py in a probe's kernel_sha256.txt (sha256sum's lines)."""
    for line in Path(kernel_sha256).read_text().splitlines():
        digest, _, name = line.partition("  ")
        if name.endswith("gluon_fwd.py"):
            return digest
    raise ValueError(f"{kernel_sha256}: no line for kernels/gluon_fwd.py")


def values(seal_file: Path, order: Path, kernels: Path, fixed_kernels: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    # the paper calls the probe's v31 and v32 the fixed build (the conditional rescale's one vote over both rows)
    if gluon_source(kernels) != gluon_source(fixed_kernels):
        raise ValueError(f"{kernels}: kernels/gluon_fwd.py is not the source {fixed_kernels} verified (the fixed "
                         "rare_rescale); the paper's sentences on the fixed build's time rest on it")
    t = pd.read_csv(order)
    for (r, pos), g in t.groupby(["round", "position"]):
        want = FORWARD if r % 2 == 0 else FORWARD[::-1]
        if set(g.variant) != {want[pos]}:
            raise ValueError(f"{order}: round {r} position {pos} holds {sorted(set(g.variant))}, not {want[pos]}")
    v = Values("order")
    if t.uuid.nunique() != 1:
        raise ValueError(f"{order}: more than one GPU: {sorted(t.uuid.unique())}")
    v.macro("OrderGpu", t.uuid.iloc[0][:12])
    v.macro("OrderRounds", str(t.groupby("dtype")["round"].nunique().min()))
    v.macro("OrderSamples", str(int(t.n.min())))
    v.macro("OrderCapped", str(int((t.state_capped_frac == 1).sum())))
    v.macro("OrderEntries", str(len(t)))
    per_round = t.pivot_table(index=["dtype", "round"], columns="variant", values="kernels_us")
    for dtype, r in per_round.groupby(level="dtype"):
        col = DTYPES[dtype]
        pair = r["v32"] / r["v31"]
        v.put("order", col, "pair", fixed(pair.median(), 3))
        v.put("order", col, "pairlo", fixed(pair.min(), 3))
        v.put("order", col, "pairhi", fixed(pair.max(), 3))
        v.put("order", col, "x31", fixed((r["v31"] / r["torch-cudnn"]).median(), 3))
        v.put("order", col, "x32", fixed((r["v32"] / r["torch-cudnn"]).median(), 3))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
