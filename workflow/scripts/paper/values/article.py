"""The paper's numbers from the article itself (data/article: its claims' predicted figures as
\\val{article}{<claim>-<quantity>}{predicted}, its PyTorch time, its large-tile time), the C3 formula it
states, and the limits of the GPU classes it may have used."""

import sys
from pathlib import Path

import pandas as pd

from kernels.gpus import ARCHS

from pipeline.latex import Values, fixed
from pipeline.selection import ARTICLE_TILE, FINAL


def values(article_claims: Path, article_timings: Path, runs: Path) -> Values:
    v = Values("article")
    art = pd.read_csv(article_claims)
    for r in art[art.predicted.notna()].itertuples():
        v.put("article", f"{r.claim}-{r.quantity}", "predicted", f"{r.predicted:g}")
    pred = art.set_index(["claim", "quantity"]).predicted
    c3 = pred[("C3", "mask_share_of_instructions")] * (1 - pred[("C3", "formula_numerator")]
                                                         / pred[("C3", "formula_denominator")])
    v.macro("CThreeFormulaGivesPct", fixed(c3, 2))
    v.macro("CThreeStatedSavingPct", f"{abs(pred[('C3', 'time_change')]):g}")
    t = pd.read_csv(article_timings)
    v.macro("ArticleTorchUs", f"{t.loc[t.impl == 'torch-default', 'time_us'].iloc[0]:g}")
    big = (t.stage == FINAL) & (t.block_m > ARTICLE_TILE["block_m"])
    v.macro("ArticleBigTileUs", f"{t.loc[big, 'time_us'].iloc[0]:g}")
    l2 = pd.read_csv(runs).l2_bytes.dropna()
    v.macro("LTwoMiB", fixed(l2.iloc[0] / 2**20))
    v.macro("SharedPerSmHopperKB", fixed(ARCHS[90].shared_per_sm / 1024))
    v.macro("SharedPerSmAdaKB", fixed(ARCHS[89].shared_per_sm / 1024))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
