"""Aggregate step: the given sealed runs (checksums verified first) into tidy tables.

    python workflow/scripts/aggregate.py --runs data/nvidia-h200/run-1 data/nvidia-h200/run-2 \
        --build results/build/sm_90/build.csv --out results/aggregate

A run folder holds its timings either flat (timings.csv) or per set (bench-<set>/timings.csv), its Nsight rows in
ncu.csv or profile/ncu.csv, and, from run-3 on, ceilings/ceilings.csv: every such file below the run is read.

Writes:
- timings.csv: every timing row of every run, with the run's name;
- per_run.csv: one row per run x entry: the median over repeats of the per-repeat medians, the lowest and
  highest repeat median, and the number of repeats;
- headline.csv: the stages at the headline shape and the article's tile, per run and pooled, with their ratios
  to torch-flash and torch-default, beside the article's time and ratio;
- variation.csv: run-to-run variation of each stage's time and of each ratio (max/min - 1 over runs);
- ncu.csv: the Nsight Compute rows of every run;
- ceilings.csv: the measured matrix rate and copy bandwidth of every run that has them;
- build.csv: the static build report of every architecture built.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import checksums  # noqa: E402
import selection  # noqa: E402

TORCH = tuple(selection.TORCH)


def verified(run_dirs) -> list:
    run_dirs = [Path(r) for r in run_dirs]
    if not run_dirs:
        raise ValueError("no runs given")
    for p in run_dirs:
        checksums.verify(p)
    return run_dirs


def load(run_dirs, name: str, required: bool = True) -> pd.DataFrame:
    """Every file called `name` below each run, with the run's name in a first column."""
    frames = []
    for run in run_dirs:
        files = sorted(Path(run).rglob(name))
        if not files and required:
            raise FileNotFoundError(f"{run}: no {name}")
        frames += [pd.read_csv(f).assign(run=Path(run).name) for f in files]
    if not frames:
        return pd.DataFrame(columns=["run"])
    df = pd.concat(frames, ignore_index=True)
    return df[["run"] + [c for c in df.columns if c != "run"]]


def per_run(timings: pd.DataFrame) -> pd.DataFrame:
    ok = timings[timings.status == "ok"]
    g = ok.groupby(["run", "key"])
    stats = g.time_us.agg(time_us="median", lo_us="min", hi_us="max", repeats="count").reset_index()
    desc = ok.drop_duplicates("key").drop(columns=["run", "repeat", "seed", "status", "rel_error", "note"] + [
        c for c in ok.columns if c.endswith("_us") or c in ("n_samples", "rep_ms")])
    return stats.merge(desc, on="key")


def headline(pr: pd.DataFrame, article: pd.DataFrame) -> pd.DataFrame:
    h = pr[selection.at_headline(pr)]
    stages = h[(h.impl == "triton") & (h.stage.fillna("") != "") & selection.at_article_tile(h)]
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
    ap.add_argument("--runs", type=Path, nargs="+", required=True, help="sealed run folders")
    ap.add_argument("--build", type=Path, nargs="*", default=[], help="build.csv files of the build step")
    ap.add_argument("--article", type=Path, default=Path("data/article"))
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    run_dirs = verified(a.runs)
    timings = load(run_dirs, "timings.csv")
    timings.to_csv(a.out / "timings.csv", index=False)
    pr = per_run(timings)
    pr.to_csv(a.out / "per_run.csv", index=False)
    head = headline(pr, pd.read_csv(a.article / "timings.csv"))
    head.to_csv(a.out / "headline.csv", index=False)
    variation(head).to_csv(a.out / "variation.csv", index=False)
    load(run_dirs, "ncu.csv").to_csv(a.out / "ncu.csv", index=False)
    load(run_dirs, "ceilings.csv", required=False).to_csv(a.out / "ceilings.csv", index=False)
    build = pd.concat([pd.read_csv(b) for b in a.build], ignore_index=True) if a.build else pd.DataFrame()
    build.to_csv(a.out / "build.csv", index=False)
    pd.set_option("display.width", 200)
    print(head[head.run == "median of runs"].round(1).to_string(index=False))
    print(variation(head).round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
