"""Shared by the figure scripts: the command line, the aggregated data, the style, saving PDF and PNG."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from selection import (ARTICLE_TILE, BASELINE, CAUSAL_SKIP_STAGE, FINAL, FINAL_NO_WS, HEADLINE, STAGES,  # noqa: E402,F401
                       TORCH, where)
from selection import EXTENSION_VARIANTS, SWITCHES, resolve_variant, variant_name  # noqa: E402,F401
from selection import ALL_STAGES, LAST, OUR_STAGES, at_own_tile, leader  # noqa: E402,F401
from kernels.shapes import attention_flops  # noqa: E402,F401
# One colour per PyTorch backend in every figure; our leading stage (or last) is orange.
TORCH_COLORS = {"torch-flash": "0.55", "torch-default": "0.3", "torch-cudnn": "black"}
LAST_COLOR = "#ff7f0e"
PALETTE = {"ours / torch-flash": "#1f77b4", "ours / torch-default": "#9ecae1", "article / its torch": "#d62728"}


def args(doc: str):
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--agg", type=Path, default=Path("results/aggregate"))
    ap.add_argument("--article", type=Path, default=Path("data/article"))
    ap.add_argument("--out", type=Path, required=True, help="path without extension; .pdf and .png are written")
    a = ap.parse_args()
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    return a


def per_run(agg: Path) -> pd.DataFrame:
    return pd.read_csv(agg / "per_run.csv")


def select(df: pd.DataFrame, **kv) -> pd.DataFrame:
    return df[where(df, **kv)]


def headline_stages(pr: pd.DataFrame) -> pd.DataFrame:
    """Per-run times of the stages at the headline shape and the article's tile, and of the torch backends."""
    h = select(pr, **HEADLINE)
    st = select(h[h.variant.isin(STAGES)], **ARTICLE_TILE)
    return pd.concat([st, h[h.impl.isin(TORCH)]], ignore_index=True)


def save(fig, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".pdf"))
    fig.savefig(out.with_suffix(".png"), dpi=150)
    plt.close(fig)
