"""Each prediction of data/predictions/stages.csv beside its measurement: results/aggregate/predictions.csv.

A prediction names a stage, what it is compared to (the stage before it, another stage, or torch-cudnn), a quantity
(`time`, `time_ratio`: the kernel timer's median of the kernels alone, selection.RATIO_TIME; or a Nsight Compute
metric such as smsp__inst_executed.sum), where (N, dtype, at the headline layout) and a range in percent. The
measured change is computed per run, from runs that hold both ends (each Triton stage at its own tile), as
100 * (stage / compared_to - 1); its median over those runs is set against the range:

- holds: the median is inside [low, high];
- better: outside, on the side of less time or fewer instructions than predicted;
- worse: outside, on the other side.

A prediction with no run holding both ends is `not measured`.
"""

import sys
from pathlib import Path

import pandas as pd

from pipeline import keys, selection

COLUMNS = ["stage", "switch", "compared_to", "quantity", "N", "dtype", "low_pct", "high_pct", "measured_pct",
           "lo_pct", "hi_pct", "runs", "verdict", "basis", "reason", "verdict_time_us"]


def _times(pr: pd.DataFrame, N: int, dtype: str, column: str = selection.RATIO_TIME) -> pd.DataFrame:
    """run x variant -> kernel time (selection.RATIO_TIME: the kernels alone, as every ratio to cuDNN takes it) at
    the headline layout with this N and dtype, each stage at its own tile."""
    at = {**selection.HEADLINE, "N": int(N), "dtype": dtype}
    rows = pr[selection.where(pr, **at)]
    rows = rows[rows.own_tile | rows.torch]
    return rows.pivot_table(index="run", columns="variant", values=column, aggfunc="median")


def _ncu(ncu: pd.DataFrame, metric: str) -> pd.DataFrame:
    """run x variant -> a Nsight metric (summed over a call's kernels) at the headline, each stage at its own tile."""
    m = ncu[(ncu.metric == metric) & ncu.instance.isna()]
    layout = ("B", "H", "H_kv", "N", "D")
    at = pd.Series(True, index=m.index)
    for k in layout:
        at &= keys.field(m.key, k) == selection.HEADLINE[k]
    m = m[at]
    return m.pivot_table(index="run", columns="variant", values="value", aggfunc="sum")


def _change(table: pd.DataFrame, stage: str, ref: str) -> pd.Series:
    both = table[[stage, ref]].dropna() if {stage, ref} <= set(table) else pd.DataFrame()
    return 100 * (both[stage] / both[ref] - 1) if len(both) else pd.Series(dtype=float)


def judge(med: float, low: float, high: float, measured: bool = True) -> str:
    if not measured:
        return "not measured"
    if low <= med <= high:
        return "holds"
    return "better" if med < low else "worse"


def evaluate(predictions: pd.DataFrame, pr: pd.DataFrame, ncu: pd.DataFrame) -> pd.DataFrame:
    """Each prediction's measurement and verdict; beside a ratio to a backend (time_ratio), verdict_time_us: the
    verdict it would have with time_us at both ends (all of a call's GPU work, cuDNN's memset included), so that the
    paper can say which verdicts the choice of selection.RATIO_TIME turns ("" elsewhere)."""
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
        change = _change(table, p.stage, ref)
        med = float(change.median()) if len(change) else float("nan")
        verdict = judge(med, p.low_pct, p.high_pct, bool(len(change)))
        with_all = ""
        if p.quantity == "time_ratio":
            all_work = _change(_times(pr, p.N, p.dtype, "time_us"), p.stage, ref)
            with_all = judge(float(all_work.median()) if len(all_work) else float("nan"), p.low_pct, p.high_pct,
                             bool(len(all_work)))
        rows.append(dict(stage=p.stage, switch=p.switch if isinstance(p.switch, str) else "", compared_to=ref,
                         quantity=p.quantity, N=int(p.N), dtype=p.dtype, low_pct=p.low_pct, high_pct=p.high_pct,
                         measured_pct=med, lo_pct=float(change.min()) if len(change) else float("nan"),
                         hi_pct=float(change.max()) if len(change) else float("nan"), runs=len(change),
                         verdict=verdict, basis=p.basis, reason=p.reason, verdict_time_us=with_all))
    return pd.DataFrame(rows, columns=COLUMNS)


def main(predictions: Path, per_run: Path, ncu: Path, out: Path) -> pd.DataFrame:
    pred = pd.read_csv(predictions)
    unknown = sorted(set(pred.stage) - set(selection.ALL_STAGES))
    if unknown:
        raise ValueError(f"{predictions}: predictions for unknown stage(s) {unknown}")
    result = evaluate(pred, pd.read_csv(per_run), pd.read_csv(ncu, low_memory=False))
    result.to_csv(out, index=False)
    return result


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stdout = sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    out = main(snakemake.input.predictions, snakemake.input.per_run, snakemake.input.ncu,  # noqa: F821
               snakemake.output[0])  # noqa: F821
    print(out[["stage", "compared_to", "quantity", "N", "low_pct", "high_pct", "measured_pct", "runs", "verdict"]]
          .to_string(index=False))
