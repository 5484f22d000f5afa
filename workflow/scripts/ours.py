"""Our stages beyond the article, as tidy tables from the aggregated runs (results/aggregate):

- ours_stages.csv: each stage from the article's last to ours at the headline shape, each at its own tile, per run:
  time, and percent of cuDNN's (torch-cudnn) and FlashAttention-2's (torch-flash) time in the same run;
- per_n.csv: every stage and PyTorch backend at each N of the sweep, float16 and bfloat16, per run: time, useful
  TFLOP/s, percent of the matrix roof measured in the same run (ceilings: a float16/bfloat16 matmul), and the
  ratio to cuDNN's time in the same run;
- best_per_n.csv: at each N and dtype, the fastest of our stages (median over the runs that hold all of them), its
  ratio to cuDNN, and the noise floor of that ratio: how far PyTorch's default SDPA and SDPA forced to cuDNN (the same
  cuDNN kernel on the H200) differ from each other in the same run.

cuDNN is `torch-cudnn` (SDPA with the cuDNN backend forced) throughout.

Ratios are taken within a run (both measured side by side, interleaved) before any median over runs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

import selection
from kernels.shapes import attention_flops

SHOWN = [selection.FINAL] + selection.OUR_STAGES


def ours_stages(pr: pd.DataFrame) -> pd.DataFrame:
    h = pr[selection.where(pr, **selection.HEADLINE)]
    h = h[selection.at_own_tile(h)]
    t = h.pivot_table(index="run", columns="variant", values="time_us", aggfunc="median")
    rows = []
    for st in SHOWN:
        if st not in t:
            continue
        for run, us in t[st].dropna().items():
            rows.append(dict(run=run, stage=st, time_us=us, pct_cudnn=100 * us / t.loc[run, "torch-cudnn"],
                             pct_flash=100 * us / t.loc[run, "torch-flash"]))
    return pd.DataFrame(rows)


def per_n(pr: pd.DataFrame, ceilings: pd.DataFrame) -> pd.DataFrame:
    layout = {k: v for k, v in selection.HEADLINE.items() if k not in ("N", "dtype")}
    s = pr[selection.where(pr, **layout) & pr.set.fillna("").str.contains("n_sweep")]
    s = s[selection.at_own_tile(s)]
    roof = (ceilings[ceilings.quantity == "matmul_tflops"].groupby(["run", "dtype"]).value.median()
            .rename("roof_tflops"))
    keep = s.variant.isin(selection.ALL_STAGES) | s.impl.isin(selection.TORCH)
    s = s[keep][["run", "variant", "impl", "N", "dtype", "time_us", "B", "H", "D", "causal"]].copy()
    s["tflops"] = attention_flops(s.B, s.H, s.N, s.D, s.causal) / (s.time_us * 1e-6) / 1e12
    s = s.join(roof, on=["run", "dtype"])
    s["pct_roof"] = 100 * s.tflops / s.roof_tflops
    cudnn = s[s.variant == "torch-cudnn"].set_index(["run", "N", "dtype"]).time_us.rename("cudnn_us")
    s = s.join(cudnn, on=["run", "N", "dtype"])
    s["x_cudnn"] = s.time_us / s.cudnn_us
    return s.drop(columns=["B", "H", "D", "causal"]).sort_values(["dtype", "N", "variant", "run"])


def best_per_n(p: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (dtype, N), g in p.groupby(["dtype", "N"]):
        ours = g[g.variant.isin(selection.OUR_STAGES)]
        if ours.empty:
            continue
        runs = set.intersection(*(set(x.run) for _, x in ours.groupby("variant")))
        ours = ours[ours.run.isin(runs)]
        med = ours.groupby("variant").time_us.median()
        best = med.idxmin()
        b = ours[ours.variant == best]
        same = g[g.run.isin(runs)].pivot_table(index="run", columns="variant", values="time_us", aggfunc="median")
        twin = (same["torch-default"] / same["torch-cudnn"] - 1).abs() if "torch-default" in same else pd.Series()
        rows.append(dict(dtype=dtype, N=int(N), best=best, time_us=b.time_us.median(), x_cudnn=b.x_cudnn.median(),
                         x_lo=b.x_cudnn.min(), x_hi=b.x_cudnn.max(), runs=len(runs),
                         last=selection.LAST, last_x_cudnn=ours[ours.variant == selection.LAST].x_cudnn.median(),
                         twin_pct=100 * twin.max() if len(twin) else float("nan")))
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agg", type=Path, default=Path("results/aggregate"))
    a = ap.parse_args(argv)
    pr = pd.read_csv(a.agg / "per_run.csv")
    ours_stages(pr).to_csv(a.agg / "ours_stages.csv", index=False)
    p = per_n(pr, pd.read_csv(a.agg / "ceilings.csv"))
    p.to_csv(a.agg / "per_n.csv", index=False)
    best_per_n(p).to_csv(a.agg / "best_per_n.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
