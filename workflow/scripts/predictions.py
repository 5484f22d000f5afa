"""Each prediction of data/predictions/stages.csv beside its measurement: results/aggregate/predictions.csv.

A prediction names a stage, what it is compared to (the stage before it, another stage, or torch-cudnn), a quantity
(`time`, `time_ratio`: the kernel timer's median; or a Nsight Compute metric such as smsp__inst_executed.sum), where
(N, dtype, at the headline layout) and a range in percent. The measured change is computed per run, from runs that
hold both ends (each Triton stage at its own tile), as 100 * (stage / compared_to - 1); its median over those runs is
set against the range:

- holds: the median is inside [low, high];
- better: outside, on the side of less time or fewer instructions than predicted;
- worse: outside, on the other side.

A prediction with no run holding both ends is `not measured`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

import selection

COLUMNS = ["stage", "switch", "compared_to", "quantity", "N", "dtype", "low_pct", "high_pct", "measured_pct",
           "lo_pct", "hi_pct", "runs", "verdict", "basis", "reason"]


def _times(pr: pd.DataFrame, N: int, dtype: str) -> pd.DataFrame:
    """run x variant -> kernel time at the headline layout with this N and dtype, each stage at its own tile."""
    at = {**selection.HEADLINE, "N": int(N), "dtype": dtype}
    rows = pr[selection.where(pr, **at)]
    rows = rows[selection.at_own_tile(rows)]
    return rows.pivot_table(index="run", columns="variant", values="time_us", aggfunc="median")


def _ncu(ncu: pd.DataFrame, metric: str) -> pd.DataFrame:
    """run x variant -> a Nsight metric (summed over a call's kernels) at the headline, each stage at its own tile."""
    m = ncu[(ncu.metric == metric) & ncu.instance.isna()]
    parts = m.key.str.split("|", expand=True)
    m = m[parts[2] == ",".join(str(selection.HEADLINE[k]) for k in ("B", "H", "H_kv", "N", "D"))]
    return m.pivot_table(index="run", columns="variant", values="value", aggfunc="sum")


def evaluate(predictions: pd.DataFrame, pr: pd.DataFrame, ncu: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for p in predictions.itertuples(index=False):
        ref = p.compared_to
        if p.quantity in ("time", "time_ratio"):
            table = _times(pr, p.N, p.dtype)
        else:
            if int(p.N) != selection.HEADLINE["N"]:
                raise ValueError(f"prediction {p.stage} {p.quantity}: Nsight metrics are profiled at the headline "
                                 f"N={selection.HEADLINE['N']} only, not N={p.N}")
            table = _ncu(ncu, p.quantity)
        both = table[[p.stage, ref]].dropna() if {p.stage, ref} <= set(table) else pd.DataFrame()
        change = 100 * (both[p.stage] / both[ref] - 1) if len(both) else pd.Series(dtype=float)
        med = float(change.median()) if len(change) else float("nan")
        if not len(change):
            verdict = "not measured"
        elif p.low_pct <= med <= p.high_pct:
            verdict = "holds"
        else:
            verdict = "better" if med < p.low_pct else "worse"
        rows.append(dict(stage=p.stage, switch=p.switch if isinstance(p.switch, str) else "", compared_to=ref,
                         quantity=p.quantity, N=int(p.N), dtype=p.dtype, low_pct=p.low_pct, high_pct=p.high_pct,
                         measured_pct=med, lo_pct=float(change.min()) if len(change) else float("nan"),
                         hi_pct=float(change.max()) if len(change) else float("nan"), runs=len(change),
                         verdict=verdict, basis=p.basis, reason=p.reason))
    return pd.DataFrame(rows, columns=COLUMNS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--predictions", type=Path, default=Path("data/predictions/stages.csv"))
    ap.add_argument("--agg", type=Path, default=Path("results/aggregate"))
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    pred = pd.read_csv(a.predictions)
    unknown = sorted(set(pred.stage) - set(selection.ALL_STAGES))
    if unknown:
        raise ValueError(f"{a.predictions}: predictions for unknown stage(s) {unknown}")
    out = evaluate(pred, pd.read_csv(a.agg / "per_run.csv"), pd.read_csv(a.agg / "ncu.csv", low_memory=False))
    out.to_csv(a.out, index=False)
    print(out[["stage", "compared_to", "quantity", "N", "low_pct", "high_pct", "measured_pct", "runs", "verdict"]]
          .to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
