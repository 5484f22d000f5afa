"""One run's N sweep (bench-n_sweep/timings.csv of a sealed run) as the paper's run paragraphs read it: each entry's
median over its repeats (RATIO_TIME: the kernels alone), its ratio to cuDNN's, the fastest Gluon stage per (dtype,
N), a committed prediction's range and its verdict."""
from pathlib import Path

import pandas as pd

from pipeline.selection import GLUON_STAGES, RATIO_TIME


def verdict(x: float, low: float, high: float) -> str:
    """Whether a measured change x (percent) fell in its predicted range [low, high]."""
    return "held" if low <= x <= high else ("missed, faster" if x < low else "missed, slower")


def predicted(pred: pd.DataFrame, stage: str, quantity: str, n: int, dtype: str):
    """(low, high) percent of the committed prediction (data/predictions/stages.csv's rows) of a stage's quantity at
    (n, dtype), or None where none was made."""
    p = pred[(pred.stage == stage) & (pred.quantity == quantity) & (pred.N == n) & (pred.dtype == dtype)]
    return (float(p.low_pct.iloc[0]), float(p.high_pct.iloc[0])) if len(p) else None


def medians(n_sweep: Path) -> tuple:
    """(rows, medians, ratios): the sweep's rows, the median of each (dtype, N) and variant over its repeats, and
    those over cuDNN's. Every row ok and on one GPU, or ValueError: a run's ratios compare within one GPU."""
    t = pd.read_csv(n_sweep)
    if (t.status != "ok").any() or t.gpu_uuid.nunique() != 1:
        raise ValueError(f"{n_sweep}: every entry ok and on one GPU expected")
    med = t.groupby(["dtype", "N", "variant"])[RATIO_TIME].median().unstack("variant")
    return t, med, med.div(med["torch-cudnn"], axis=0)


def best_gluon(ratio: pd.DataFrame) -> pd.DataFrame:
    """Per (dtype, N): the fastest Gluon stage's ratio to cuDNN (x) and the stage."""
    g = ratio[[s for s in GLUON_STAGES if s in ratio]].astype(float)
    return pd.DataFrame({"x": g.min(axis=1), "stage": g.idxmin(axis=1)})
