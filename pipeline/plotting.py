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

from pipeline.selection import run_number

matplotlib.use("Agg")

# One colour per PyTorch backend in every figure; our leading stage (or last) is orange.
TORCH_COLORS = {"torch-flash": "0.55", "torch-default": "0.3", "torch-cudnn": "black"}
LAST_COLOR = "#ff7f0e"
PALETTE = {"ours / torch-flash": "#1f77b4", "ours / torch-default": "#9ecae1", "article / its torch": "#d62728"}
# Lines that must be told apart (the article's eight stages): a qualitative palette, tab10 without the orange of our
# leading stage and the grey of the PyTorch backends; and a marker each, for print in grey.
QUALITATIVE = ["#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
# A bar of a single run, hatched so that it stands apart from the medians over several runs.
ONE_RUN_HATCH = "////"


def start(smk) -> SimpleNamespace:
    """A figure's start, given the `snakemake` object of its script: errors to the rule's log, the style set; returns
    its inputs by name (`input`) and its output path without extension (`out`)."""
    sys.stderr = open(smk.log[0], "w")
    sns.set_theme(context="paper", style="whitegrid", font_scale=1.0)
    return SimpleNamespace(input=smk.input, out=Path(smk.output.pdf).with_suffix(""))


def run_order(runs) -> list:
    """Run names in the order they were made: by their number (run-6-x2 ... run-17-x2, run-18 ...), not as text."""
    return sorted(set(runs), key=lambda r: (run_number(str(r)), str(r)))


def run_colors(runs, cmap: str = "viridis") -> dict:
    """One colour per run from a sequential colormap, in run order (oldest dark, newest light): a figure that colours
    its points by run says so with run_colorbar, whose ticks name every run."""
    order = run_order(runs)
    cm = plt.get_cmap(cmap)
    # the colormap's palest end left out, so that the newest run still shows on a white page
    return {r: cm(0.9 * i / max(len(order) - 1, 1)) for i, r in enumerate(order)}


def run_colorbar(fig, ax, colors: dict, **kw):
    """A colourbar beside `ax` of the runs coloured by run_colors, one step per run, each step named."""
    from matplotlib.colors import BoundaryNorm, ListedColormap
    order = list(colors)
    cm = ListedColormap([colors[r] for r in order])
    sm = plt.cm.ScalarMappable(cmap=cm, norm=BoundaryNorm(range(len(order) + 1), len(order)))
    bar = fig.colorbar(sm, ax=ax, ticks=[i + 0.5 for i in range(len(order))], **kw)
    if bar.orientation == "vertical":
        bar.ax.set_yticklabels(order)
        bar.ax.invert_yaxis()               # the oldest run at the top, as a legend reads
    else:
        bar.ax.set_xticklabels(order, rotation=90)
    bar.ax.tick_params(labelsize=6, length=0)
    bar.outline.set_visible(False)
    return bar


def leader(path) -> str:
    """Our leading stage (the `leader` row of results/aggregate/leader.csv)."""
    t = pd.read_csv(path)
    return str(t[t.leader].stage.iloc[0])


def headline_stages(pr: pd.DataFrame) -> pd.DataFrame:
    """Per-run rows of the article's stages at the headline shape and its tile, and of the PyTorch backends."""
    return pr[pr.headline & pr.paper_row & (pr.article_stage | pr.torch)]


def over_cudnn(rows: pd.DataFrame, by=("N",)) -> pd.DataFrame:
    """Each row's time over cuDNN's (torch-cudnn) in the same run and at the same `by` (column x_cudnn); rows of a
    run without cuDNN at that point are dropped. Raises where a run holds two cuDNN rows at one point."""
    keys = ["run", *by]
    ref = rows[rows.variant == "torch-cudnn"]
    if ref.duplicated(keys).any():
        raise ValueError(f"two torch-cudnn rows for one {keys}: {ref[ref.duplicated(keys)][keys].values.tolist()}")
    ref = ref.set_index(keys).time_us.rename("cudnn_us")
    out = rows.join(ref, on=keys, how="inner")
    return out.assign(x_cudnn=out.time_us / out.cudnn_us)


def run_band(rows: pd.DataFrame, value: str, by) -> pd.DataFrame:
    """The median of `value` over runs for each `by`, with the lowest and highest run (lo, hi) and the number of
    runs (runs)."""
    g = rows.groupby(list(by))[value]
    return pd.DataFrame({"median": g.median(), "lo": g.min(), "hi": g.max(), "runs": g.size()}).reset_index()


def legend_outside(fig) -> None:
    """Raises where a legend overlaps the plotting area of any axes of `fig`: a legend goes beside the panels, never
    over data (called by save)."""
    fig.canvas.draw()
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    legends = [lg for lg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if lg is not None]
    for lg in legends:
        box = lg.get_window_extent()
        for ax in axes:
            if box.overlaps(ax.get_window_extent()):
                raise ValueError(f"a legend ({[t.get_text() for t in lg.get_texts()][:3]}...) lies over the axes "
                                 f"{ax.get_title()!r}: put it beside the panels")


def save(fig, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    legend_outside(fig)
    fig.savefig(out.with_suffix(".pdf"), bbox_inches="tight")
    fig.savefig(out.with_suffix(".png"), dpi=150, bbox_inches="tight")
    plt.close(fig)
