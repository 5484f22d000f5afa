"""The paper's numbers on the ablation of the article's switches at the headline and its tile: per switch, the change
of time when it is removed from the final stage and when it is added to the baseline (\\val{abl}{<switch>}{...}: the
median over runs of the per-run change), the switches whose change is beyond the range over runs, and warp
specialization at 8 warps."""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import resolve_variant, variant_name

from pipeline.latex import Values, fixed, listing
from pipeline.selection import STAGES, SWITCHES


def values(per_run: Path) -> Values:
    v = Values("ablation")
    pr = pd.read_csv(per_run)
    h = pr[pr.headline & pr.article_tile].pivot_table(index="run", columns="variant", values="time_us")
    first, last = STAGES[0], STAGES[-1]
    costly_final, costly_base = [], []
    for sw in SWITCHES:
        for base, variant, column, sink in ((last, f"{last}-{sw}", "removed_pct", costly_final),
                                            (first, f"{first}+{sw}", "added_pct", costly_base)):
            if variant not in h:                      # v7-const_strides is v6, v0+grid_order is v1
                variant = variant_name(resolve_variant(variant))
            change = (100 * (h[variant] / h[base] - 1)).dropna()
            v.put("abl", sw, column, fixed(change.median(), 1))
            beyond = abs(change.median()) > change.max() - change.min()
            slower = change.median() > 0
            if beyond and ((column == "removed_pct" and not slower) or (column == "added_pct" and slower)):
                sink.append(sw.replace("_", r"\_"))
    v.macro("AblCostlyInFinal", listing(costly_final))
    v.macro("AblCostlyOnBase", listing(costly_base))
    t = pr[pr.headline & (pr.num_warps == 8) & pr.variant.isin([last, f"{last}-warp_specialize"])]
    med = t.groupby(["variant", "block_m", "block_n", "num_stages"]).time_us.median().unstack("variant").dropna()
    v.macro("WsEightWarpMaxDiffPct", fixed((100 * (med[last] / med[f"{last}-warp_specialize"] - 1)).abs().max(), 1))
    v.macro("WsEightWarpTiles", len(med))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
