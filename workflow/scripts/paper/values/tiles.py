"""The paper's numbers on the tile sweep of the article's final stage at the headline: the best tile with and without
warp specialization (\\val{best_tile}{ws|no_ws}{...}), the article's tile against it, the tiles tried and refused."""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import BASELINE

from pipeline.latex import Values, fixed
from pipeline.selection import FINAL, FINAL_NO_WS, RATIO_TIME

TILE = ["block_m", "block_n", "num_warps", "num_stages"]


def values(per_run: Path, headline_median: Path, timings: Path) -> Values:
    v = Values("tiles")
    med = pd.read_csv(headline_median).set_index("stage").loc[BASELINE]   # the backends beside the first stage
    pr = pd.read_csv(per_run)
    hl = pr[pr.headline]
    final_us = hl[hl.final & hl.article_tile].groupby("run").time_us.first().median()
    best_no_ws = None
    for variant, key in ((FINAL, "ws"), (FINAL_NO_WS, "no_ws")):
        t = hl[hl.variant == variant].groupby(TILE).time_us.median()
        t_ratio = hl[hl.variant == variant].groupby(TILE)[RATIO_TIME].median()
        (bm, bn, w, st), best = t.idxmin(), t.min()
        v.put("best_tile", key, "tile", f"{int(bm)}$\\times${int(bn)}, {int(w)} warps, {int(st)} stages")
        v.put("best_tile", key, "us", fixed(best, 1))
        ratio_best = t_ratio.loc[(bm, bn, w, st)]          # the ratios take RATIO_TIME at both ends
        v.put("best_tile", key, "pct_flash", fixed(100 * ratio_best / med[f"torch-flash_{RATIO_TIME}"]))
        v.put("best_tile", key, "pct_default", fixed(100 * ratio_best / med[f"torch-default_{RATIO_TIME}"]))
        at = hl[(hl.variant == variant) & (hl.block_m == bm) & (hl.block_n == bn) & (hl.num_warps == w)
                & (hl.num_stages == st)]
        v.put("best_tile", key, "call_us", fixed(at.call_us.median(), 1))
        v.put("best_tile", key, "spread_pct", fixed(100 * (at.hi_us.max() / at.lo_us.min() - 1), 1))
        if variant == FINAL_NO_WS:
            best_no_ws = float(fixed(best, 1))
    v.macro("ArticleTileSlowdown", fixed(final_us / best_no_ws, 1))
    # The same factor split in two: warp specialization off at the article's tile, then the tile alone.
    no_ws_article = hl[(hl.variant == FINAL_NO_WS) & hl.article_tile].time_us.median()
    v.macro("NoWsArticleTileUs", fixed(no_ws_article, 1))
    v.macro("WsOffAtArticleTilePct", fixed(100 * (no_ws_article / final_us - 1), 1))
    v.macro("TileOnlySlowdown", fixed(no_ws_article / best_no_ws, 1))
    tiles = hl[hl.set.fillna("").str.contains("tiles")]
    v.macro("TilesTried", tiles.groupby(["variant", *TILE]).ngroups)
    t = pd.read_csv(timings, usecols=["run", "variant", "status", *TILE, "set"])
    refused = t[(t.status == "refused") & t.set.fillna("").str.contains("tiles")]
    v.macro("TilesRefusedWs", refused[refused.variant == FINAL].groupby(TILE).ngroups)
    v.macro("TilesRefusedNoWs", refused[refused.variant == FINAL_NO_WS].groupby(TILE).ngroups)
    v.macro("TimingsOk", int((t.status == "ok").sum()))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
