"""Aggregate step: every sealed run of a GPU folder (checksums verified first) into tidy tables.

    python workflow/scripts/aggregate.py --gpu-dir data/nvidia-h200 --out results/aggregate

Writes:
- timings.csv: every timing row of every run, with the run's name;
- per_run.csv: one row per run x entry: the median over repeats of the per-repeat medians, the lowest and
  highest repeat median, and the number of repeats;
- headline.csv: the stages at the headline shape and the article's tile, per run and pooled, with their ratios
  to torch-flash and torch-default, beside the article's time and ratio;
- variation.csv: run-to-run variation of each stage's time and of each ratio (max/min - 1 over runs);
- ncu.csv: the Nsight Compute rows of every run.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import checksums  # noqa: E402

HEADLINE_KEY = {"B": 2, "H": 16, "H_kv": 8, "N": 1024, "D": 128, "dtype": "float16", "causal": True}
TORCH = ("torch-flash", "torch-default", "torch-cudnn")


def runs(gpu_dir: Path) -> list:
    found = sorted(p for p in gpu_dir.glob("run-*") if p.is_dir())
    for p in found:
        checksums.verify(p)
    if not found:
        raise FileNotFoundError(f"no run-* folders under {gpu_dir}")
    return found


def load(gpu_dir: Path, name: str) -> pd.DataFrame:
    frames = []
    for run in runs(gpu_dir):
        df = pd.read_csv(run / name)
        df.insert(0, "run", run.name)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def per_run(timings: pd.DataFrame) -> pd.DataFrame:
    ok = timings[timings.status == "ok"]
    g = ok.groupby(["run", "key"])
    stats = g.time_us.agg(time_us="median", lo_us="min", hi_us="max", repeats="count").reset_index()
    desc = ok.drop_duplicates("key").drop(columns=["run", "repeat", "seed", "status", "rel_error", "note"] + [
        c for c in ok.columns if c.endswith("_us") or c in ("n_samples", "rep_ms")])
    return stats.merge(desc, on="key")


def headline(pr: pd.DataFrame, article: pd.DataFrame) -> pd.DataFrame:
    h = pr[(pr[list(HEADLINE_KEY)] == pd.Series(HEADLINE_KEY)).all(axis=1)]
    stages = h[(h.impl == "triton") & (h.stage.fillna("") != "") & (h.block_m == 32) & (h.block_n == 32)
               & (h.num_warps == 4) & (h.num_stages == 3)]
    torch = h[h.impl.isin(TORCH)].pivot(index="run", columns="impl", values="time_us")
    out = stages[["run", "stage", "time_us", "lo_us", "hi_us", "repeats"]].merge(torch, left_on="run",
                                                                                 right_index=True)
    for impl in TORCH:
        out[f"pct_of_{impl}"] = 100 * out.time_us / out[impl]
    pooled = out.groupby("stage").median(numeric_only=True).reset_index().assign(run="median of runs")
    out = pd.concat([out, pooled], ignore_index=True)
    art = article[(article.impl == "triton") & (article.block_m == 32)][["stage", "time_us"]].rename(
        columns={"time_us": "article_us"})
    torch_art = article.loc[article.impl == "torch-default", "time_us"].iloc[0]
    out = out.merge(art, on="stage", how="left")
    out["article_pct_of_torch"] = 100 * out.article_us / torch_art
    return out.sort_values(["run", "stage"]).reset_index(drop=True)


def variation(head: pd.DataFrame) -> pd.DataFrame:
    per = head[head.run != "median of runs"]
    cols = ["time_us", *[f"pct_of_{i}" for i in TORCH]]
    g = per.groupby("stage")[cols]
    return (100 * (g.max() / g.min() - 1)).add_suffix("_run_to_run_pct").reset_index()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu-dir", type=Path, required=True)
    ap.add_argument("--article", type=Path, default=Path("data/article"))
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    timings = load(a.gpu_dir, "timings.csv")
    timings.to_csv(a.out / "timings.csv", index=False)
    pr = per_run(timings)
    pr.to_csv(a.out / "per_run.csv", index=False)
    head = headline(pr, pd.read_csv(a.article / "timings.csv"))
    head.to_csv(a.out / "headline.csv", index=False)
    variation(head).to_csv(a.out / "variation.csv", index=False)
    load(a.gpu_dir, "ncu.csv").to_csv(a.out / "ncu.csv", index=False)
    pd.set_option("display.width", 200)
    print(head.round(1).to_string(index=False))
    print(variation(head).round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
