"""Shared by the figure scripts: the command line, the aggregated data, the style, saving PDF and PNG."""
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

HEADLINE = dict(B=2, H=16, H_kv=8, N=1024, D=128, dtype="float16", causal=True)
ARTICLE_TILE = dict(block_m=32, block_n=32, num_warps=4, num_stages=3)
STAGES = [f"v{i}" for i in range(8)]
TORCH = ["torch-flash", "torch-default", "torch-cudnn"]
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
    sel = pd.Series(True, index=df.index)
    for k, v in kv.items():
        sel &= df[k] == v
    return df[sel]


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
