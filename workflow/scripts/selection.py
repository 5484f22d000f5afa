"""Which rows of the tidy tables the paper's headline means, read from the one definition of each: the article's
shape (kernels.shapes.HEADLINE), its tile (kernels.stages.ARTICLE_TILE), the stages (kernels.stages.STAGES)."""
from __future__ import annotations

from dataclasses import asdict

import pandas as pd


from kernels.shapes import HEADLINE as _HEADLINE  # noqa: E402
from kernels.stages import ARTICLE_TILE as _TILE  # noqa: E402
from kernels.stages import BASELINE as _BASELINE  # noqa: E402
from kernels.stages import FINAL as _FINAL  # noqa: E402
from kernels.stages import STAGES as _STAGES  # noqa: E402
from kernels.stages import previous_stage, stage_adding  # noqa: E402,F401
from kernels.stages import stage_adding as _stage_adding  # noqa: E402
from kernels.stages import without as _without  # noqa: E402
from kernels.stages import SWITCHES as _SWITCHES  # noqa: E402
from kernels.stages import extended as _extended  # noqa: E402
from kernels.stages import resolve_variant, variant_name  # noqa: E402,F401

HEADLINE = _HEADLINE.as_dict()
ARTICLE_TILE = asdict(_TILE)
STAGES = list(_STAGES)
BASELINE, FINAL = _BASELINE, _FINAL                  # the article's first and last stages
FINAL_NO_WS = _without(_FINAL, "warp_specialize")    # the final stage without warp specialization
CAUSAL_SKIP_STAGE = _stage_adding("causal_skip")     # the stage that skips the blocks above the diagonal
EXTENSION_VARIANTS = list(_extended(STAGES[-1]))  # our own variants beyond the article (v7+prescale_q)
SWITCHES = list(_SWITCHES)                          # the article's switches, in its order
TORCH = ["torch-flash", "torch-default", "torch-cudnn"]


def where(df: pd.DataFrame, **kv) -> pd.Series:
    """Boolean mask of the rows whose columns equal the given values."""
    sel = pd.Series(True, index=df.index)
    for k, v in kv.items():
        sel &= df[k] == v
    return sel


def at_headline(df: pd.DataFrame) -> pd.Series:
    return where(df, **HEADLINE)


def at_article_tile(df: pd.DataFrame) -> pd.Series:
    return where(df, **ARTICLE_TILE)
