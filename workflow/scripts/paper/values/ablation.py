"""The paper's numbers on the ablation of the article's switches at the headline and its tile: per switch, the change
of time when it is removed from the final stage and when it is added to the baseline (\\val{abl}{<switch>}{...}: the
median over runs of the per-run change), the switches whose change has moved by the paper's rule for a change over
runs (pipeline.noise: beyond 1%, and a sign test over the runs), and warp specialization at 8 warps."""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import resolve_variant, variant_name

from pipeline import noise
from pipeline.latex import Values, fixed, listing
from pipeline.selection import STAGES, SWITCHES, change_on_one_gpu, pivot_with_gpus, run_number


def costly(h: pd.DataFrame, v: Values | None = None, gpus: pd.DataFrame | None = None) -> dict:
    """The article's switches that cost time where they are (h: one row per run, one column per variant, the time;
    gpus: the same pivot of the GPU each entry was timed on, whose runs with the two entries on two GPUs are left out):
    removed from the final stage, those whose removal makes it faster; added to the baseline, those that make it
    slower, each change moved by the paper's rule (pipeline.noise). Each change's median goes to `v` where given."""
    first, last = STAGES[0], STAGES[-1]
    out = {"removed_pct": [], "added_pct": []}
    for sw in SWITCHES:
        for base, variant, column in ((last, f"{last}-{sw}", "removed_pct"), (first, f"{first}+{sw}", "added_pct")):
            if variant not in h:                      # v7-const_strides is v6, v0+grid_order is v1
                variant = variant_name(resolve_variant(variant))
            if variant not in h or base not in h:
                continue
            change = change_on_one_gpu(h, gpus if gpus is not None else pd.DataFrame(), variant, base)
            if v is not None:
                v.put("abl", sw, column, fixed(change.median(), 1))
            slower = change.median() > 0
            if noise.moved(change) and slower == (column == "added_pct"):
                out[column].append(sw.replace("_", r"\_"))
    return out


def _two_gpu_runs(h: pd.DataFrame, gpus: pd.DataFrame, variant: str, base: str) -> set:
    """The runs that timed both entries, less those change_on_one_gpu keeps."""
    if variant not in h or base not in h:
        return set()
    both = (h[variant] / h[base]).dropna().index
    return set(both) - set(change_on_one_gpu(h, gpus, variant, base).index)


def values(per_run: Path) -> Values:
    v = Values("ablation")
    pr = pd.read_csv(per_run)
    h, gpus = pivot_with_gpus(pr[pr.headline & pr.article_tile])
    last = STAGES[-1]
    picked = costly(h, v, gpus)
    # the runs whose pairs (a switch removed from the final stage or added to the baseline, and that stage) were
    # timed on two GPUs, left out of every change above
    two = sorted(set().union(*(_two_gpu_runs(h, gpus, variant_name(resolve_variant(var)), base) for sw in SWITCHES
                               for base, var in ((last, f"{last}-{sw}"), (STAGES[0], f"{STAGES[0]}+{sw}")))),
                 key=run_number)
    v.macro("AblTwoGpuRuns", listing(two) if two else "none")
    costly_final, costly_base = picked["removed_pct"], picked["added_pct"]
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
