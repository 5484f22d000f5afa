"""What the figure scripts share: their start (inputs and output from Snakemake's script directive, the style), the
colours, and saving PDF and PNG."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

matplotlib.use("Agg")

# One colour per PyTorch backend in every figure; our leading stage (or last) is orange.
TORCH_COLORS = {"torch-flash": "0.55", "torch-default": "0.3", "torch-cudnn": "black"}
LAST_COLOR = "#ff7f0e"
PALETTE = {"ours / torch-flash": "#1f77b4", "ours / torch-default": "#9ecae1", "article / its torch": "#d62728"}


def start(smk) -> SimpleNamespace:
    """A figure's start, given the `snakemake` object of its script: errors to the rule's log, the style set; returns
    its inputs by name (`input`) and its output path without extension (`out`)."""
    sys.stderr = open(smk.log[0], "w")
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    return SimpleNamespace(input=smk.input, out=Path(smk.output.pdf).with_suffix(""))


def leader(path) -> str:
    """Our leading stage (the `leader` row of results/aggregate/leader.csv)."""
    t = pd.read_csv(path)
    return str(t[t.leader].stage.iloc[0])


def headline_stages(pr: pd.DataFrame) -> pd.DataFrame:
    """Per-run rows of the article's stages at the headline shape and its tile, and of the PyTorch backends."""
    return pr[pr.headline & pr.paper_row & (pr.article_stage | pr.torch)]


def save(fig, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".pdf"))
    fig.savefig(out.with_suffix(".png"), dpi=150)
    plt.close(fig)
