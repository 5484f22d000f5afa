"""Aggregate step: the given sealed runs (checksums verified first) into tidy tables.

    python workflow/scripts/aggregate.py --runs data/nvidia-h200/run-1 data/nvidia-h200/run-2 \
        --build results/build/sm_90/build.csv --out results/aggregate

A run folder holds its timings either flat (timings.csv) or per set (bench-<set>/timings.csv), its Nsight rows in
ncu.csv or profile/ncu.csv, and, from run-3 on, ceilings/ceilings.csv: every such file below the run is read.

Writes:
- timings.csv: every timing row of every run, with the run's name;
- per_run.csv: one row per run x entry: the median over repeats of the per-repeat kernel-time medians, the lowest
  and highest repeat median, the number of repeats, and the medians over repeats of the call time and host time;
- headline.csv: the stages at the headline shape and the article's tile, per run and pooled, with their ratios
  to torch-flash and torch-default, beside the article's time and ratio;
- variation.csv: run-to-run variation of each stage's time and of each ratio (max/min - 1 over runs);
- ncu.csv: the Nsight Compute rows of every run;
- ceilings.csv: the measured matrix rate and copy bandwidth of every run that has them;
- build.csv: the static build report of every architecture built;
- crosscheck.csv: for every profiled entry of every run, the kernel timer's median beside the median of Nsight
  Compute's gpu__time_duration; a difference over --crosscheck-max-pct fails this step, naming the entry, unless
  --crosscheck-waivers names it (then the row carries the waiver's reason);
- timer_check.csv: the kernel time and the event time of each profiled entry after each host sleep, per run, with
  the kernel time's change from no sleep (the same bound applies);
- runs.csv: per run, its start, commit(s) and the GPU's L2 size;
- premise.csv: the Nsight metrics of the premise entries (where a claim's premise holds and the headline's does
  not), with their sequence length N;
- large_n.csv: the Nsight metrics of the long-sequence entries (plan.profile.large_n), with their N;
- launch_cost.csv: per run (with its commit and start), the host time of a plain call (best and median of the
  run's repeats), the event-timed call and the kernel time of each stage and PyTorch backend at the headline shape.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

import checksums  # noqa: E402
import selection  # noqa: E402
from kernel_timer import TIMER  # noqa: E402

TORCH = tuple(selection.TORCH)


_SEALED: dict = {}  # run folder -> its listed files, once verified


def verified(run_dirs) -> list:
    run_dirs = [Path(r) for r in run_dirs]
    if not run_dirs:
        raise ValueError("no runs given")
    for p in run_dirs:
        _SEALED[p] = checksums.verify(p)
    return run_dirs


def load(run_dirs, name: str, required: bool = True) -> pd.DataFrame:
    """Every file called `name` that a run's SHA256SUMS lists (and only those), with the run's name in a first
    column."""
    frames = []
    for run in run_dirs:
        run = Path(run)
        sealed = _SEALED.get(run) or checksums.verify(run)
        files = sorted(f for f in sealed if f.name == name)
        if not files and required:
            raise FileNotFoundError(f"{run}: no {name}")
        frames += [pd.read_csv(f).assign(run=Path(run).name) for f in files]
    if not frames:
        return pd.DataFrame(columns=["run"])
    df = pd.concat(frames, ignore_index=True)
    return df[["run"] + [c for c in df.columns if c != "run"]]


MEASURED = ("n_samples", "kernels", "n_kernels", "host_calls", "timer")  # measured, not descriptive


def canonical_names(timings: pd.DataFrame) -> pd.DataFrame:
    """Name every Triton row by its switches as the registry names them today. An ablation is named after the last
    stage of the run that timed it (v10-tma in run-10-x2); once a later stage exists, the same kernel has another
    name (or none but its switch label), so that rows of one kernel from different runs meet under one name and
    key. Stage names never change (the registry only appends)."""
    t = timings.copy()
    tri = t.impl == "triton"
    names = {lab: selection.variant_name(selection.parse_switches_label(lab)) for lab in set(t.loc[tri, "switches"])}
    new = t.loc[tri, "switches"].map(names)
    t.loc[tri, "key"] = [f"{k.split('|', 2)[0]}|{n}|{k.split('|', 2)[2]}" for k, n in zip(t.loc[tri, "key"], new)]
    t.loc[tri, "variant"] = new
    return t


def check_timer(timings: pd.DataFrame) -> None:
    """Every timed row must come from the kernel timer: runs timed otherwise (data/<gpu>/history/) are never mixed in."""
    ok = timings[timings.status == "ok"]
    if "timer" not in ok:
        bad = sorted(set(ok.run))
    else:
        bad = sorted(set(ok[ok.timer != TIMER].run))
    if bad:
        raise ValueError(f"run(s) {bad} hold timings not made by the kernel timer ({TIMER}): they were timed with "
                         f"CUDA events around each call and are kept as history only (data/<gpu>/history/)")


def per_run(timings: pd.DataFrame) -> pd.DataFrame:
    ok = timings[timings.status == "ok"]
    g = ok.groupby(["run", "key"])
    stats = g.time_us.agg(time_us="median", lo_us="min", hi_us="max", repeats="count")
    extra = [c for c in ("kernels_us", "call_us", "host_us") if c in ok]
    stats = stats.join(g[extra].median())
    if "host_us" in ok:
        stats = stats.join(g.host_us.min().rename("host_min_us"))
    stats = stats.reset_index()
    desc = ok.drop_duplicates("key").drop(columns=["run", "repeat", "seed", "status", "rel_error", "note"] + [
        c for c in ok.columns if c.endswith("_us") or c in MEASURED])
    # an entry timed by several sets' jobs belongs to all of them (each job writes only its own set's name)
    sets = ok.groupby("key").set.agg(lambda x: ",".join(sorted({n for v in x.dropna() for n in v.split(",")})))
    desc = desc.drop(columns="set").merge(sets.rename("set"), left_on="key", right_index=True)
    return stats.merge(desc, on="key")


class CrossCheckError(ValueError):
    """The kernel timer and Nsight Compute disagree beyond the stated bound."""


def crosscheck(pr: pd.DataFrame, durations: pd.DataFrame, max_pct: float, waivers=()) -> pd.DataFrame:
    """Per run and profiled entry: Nsight's duration of one launch (its kernels summed), median over launches,
    beside the kernel timer's median of the kernels alone (kernels_us: Nsight profiles no memset). Raises
    CrossCheckError naming every entry off by more than max_pct, unless a waiver (config `crosscheck_waivers`:
    run, variant, reason) names it: a waived entry stays outside the bound in the table, with its reason, for the
    paper to print. A waiver that names no entry beyond the bound raises too (it would hide nothing, or a typo)."""
    if durations.empty:
        raise CrossCheckError("no Nsight durations (profile/ncu_duration.csv) in the runs: nothing to cross-check")
    rows = []
    for (run, key), d in durations.groupby(["run", "key"], sort=False):
        d = d.sort_values("index")
        names = list(d.kernel)
        timer = pr[(pr.run == run) & (pr.key == key)]
        if timer.empty:
            # Profiled but not timed in this run (run-12-x2's lighter plan left two profiled tiles out of its bench
            # sets): nothing to compare; kept as a row, outside the bound, and counted in the paper.
            rows.append(dict(run=run, key=key, impl=key.split("|")[0], variant=key.split("|")[1], timed=False))
            continue
        per_launch = int(timer.n_kernels.iloc[0]) if "n_kernels" in timer and not pd.isna(
            timer.n_kernels.iloc[0]) else 1
        if len(names) % per_launch:
            raise CrossCheckError(f"{run} {key}: Nsight profiled {len(names)} kernels, not a multiple of the "
                                  f"{per_launch} the timer saw per call")
        launches = d.duration_ns.to_numpy().reshape(-1, per_launch).sum(axis=1) / 1e3
        ncu_us = float(pd.Series(launches).median())
        t = timer.iloc[0]
        rows.append(dict(run=run, key=key, impl=t.impl, variant=t.variant, block_m=t.block_m, block_n=t.block_n,
                         num_warps=t.num_warps, num_stages=t.num_stages, time_us=t.time_us,
                         timer_us=t.kernels_us, ncu_us=ncu_us, ncu_lo_us=float(launches.min()),
                         ncu_hi_us=float(launches.max()), ncu_launches=len(launches),
                         diff_pct=100 * (t.kernels_us / ncu_us - 1), timed=True))
    if not any(r["timed"] for r in rows):
        raise CrossCheckError("no profiled entry was also timed in its run: nothing to cross-check")
    out = pd.DataFrame(rows)
    out["within"] = (out.diff_pct.abs() <= max_pct) | ~out.timed
    out["max_pct"] = max_pct
    reasons = {(w["run"], w["variant"]): w["reason"] for w in waivers}
    out["waiver"] = [reasons.get((r.run, r.variant), "") if not r.within else "" for r in out.itertuples()]
    stale = sorted(set(reasons) - {(r.run, r.variant) for r in out.itertuples() if r.waiver})
    if stale:
        raise CrossCheckError(f"crosscheck_waivers name entries that are within {max_pct:g}% of Nsight or were not "
                              f"profiled: {stale}; remove them from the config")
    bad = out[~out.within & (out.waiver == "")]
    if not bad.empty:
        raise CrossCheckError(
            f"the kernel timer and Nsight Compute's gpu__time_duration differ by more than {max_pct:g}% for: " +
            "; ".join(f"{r.run} {r.key}: timer {r.timer_us:.1f} us, Nsight {r.ncu_us:.1f} us ({r.diff_pct:+.1f}%)"
                      for r in bad.itertuples()))
    return out


def timer_check(checks: pd.DataFrame, max_pct: float) -> pd.DataFrame:
    """Each entry's kernel time after each host sleep, relative to no sleep; raises if one moves by > max_pct."""
    ok = checks[checks.status == "ok"].copy()
    if ok.empty:
        raise CrossCheckError("no timer check (timer_check/timer_check.csv) in the runs")
    base = ok[ok.sleep_us == 0].set_index(["run", "key"])
    ok["kernel_change_pct"] = [100 * (r.time_us / base.loc[(r.run, r.key), "time_us"] - 1) for r in ok.itertuples()]
    ok["event_change_pct"] = [100 * (r.event_us / base.loc[(r.run, r.key), "event_us"] - 1) for r in ok.itertuples()]
    bad = ok[ok.kernel_change_pct.abs() > max_pct]
    if not bad.empty:
        raise CrossCheckError(f"the kernel time moved with a host sleep by more than {max_pct:g}%: " + "; ".join(
            f"{r.run} {r.key} sleep {r.sleep_us:g} us: {r.kernel_change_pct:+.1f}%" for r in bad.itertuples()))
    return ok


def run_info(run_dirs) -> pd.DataFrame:
    """Per run: when it started (the earliest env.json start), the project's commit(s) it ran, the GPU's L2 size."""
    import json
    rows = []
    for run in run_dirs:
        envs = [json.loads(p.read_text()) for p in sorted(Path(run).rglob("env.json"))]
        starts = sorted((e.get("start") or {}).get("time", "") for e in envs)
        commits = sorted({e.get("project_commit") or "not recorded" for e in envs})
        l2 = sorted({e["l2_bytes"] for e in envs if e.get("l2_bytes")})
        rows.append(dict(run=Path(run).name, started=starts[0] if starts else "", commit=" ".join(commits),
                         l2_bytes=l2[0] if len(l2) == 1 else None))
    return pd.DataFrame(rows).sort_values("started").reset_index(drop=True)


def launch_cost(pr: pd.DataFrame, info: pd.DataFrame) -> pd.DataFrame:
    """Per run: host time of a plain call (the best and the median of the run's repeats), event-timed call and
    kernel time (medians) of each stage (article tile), our extensions and each PyTorch backend at the headline
    shape, with the run's commit and start (the host path can change between runs: each run's figure belongs to its
    commit). The best of repeats is the host cost itself; slower repeats are the host's other work interfering
    (another job on the same machine, a shared core), as Python's timeit documentation says of its own minimum."""
    h = pr[selection.at_headline(pr)]
    h = h[h.impl.isin(TORCH) | ((h.stage.fillna("") != "") & selection.at_article_tile(h))
          | (h.variant.isin(selection.EXTENSION_VARIANTS) & selection.at_article_tile(h))]
    out = h[["run", "variant", "host_min_us", "host_us", "call_us", "time_us"]].rename(columns={"variant": "entry"})
    out = out.merge(info, on="run")
    order = {e: i for i, e in enumerate(selection.STAGES + selection.EXTENSION_VARIANTS + list(TORCH))}
    return out.sort_values(["started", "entry"], key=lambda s: s.map(order) if s.name == "entry" else s
                           ).reset_index(drop=True)


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
    art = article[(article.impl == "triton") & (article.block_m == selection.ARTICLE_TILE["block_m"])]
    art = art[["stage", "time_us"]].rename(
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
    ap.add_argument("--crosscheck-max-pct", type=float, default=5.0,
                    help="largest allowed difference between the kernel timer and Nsight's duration (percent)")
    ap.add_argument("--crosscheck-waivers", type=json.loads, default=[],
                    help="JSON list of {run, variant, reason}: entries beyond the bound that are reported, not fatal")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    run_dirs = verified(a.runs)
    timings = canonical_names(load(run_dirs, "timings.csv"))
    check_timer(timings)
    timings.to_csv(a.out / "timings.csv", index=False)
    pr = per_run(timings)
    pr.to_csv(a.out / "per_run.csv", index=False)
    head = headline(pr, pd.read_csv(a.article / "timings.csv"))
    head.to_csv(a.out / "headline.csv", index=False)
    variation(head).to_csv(a.out / "variation.csv", index=False)
    crosscheck(pr, load(run_dirs, "ncu_duration.csv", required=False), a.crosscheck_max_pct,
               a.crosscheck_waivers).to_csv(
        a.out / "crosscheck.csv", index=False)
    timer_check(load(run_dirs, "timer_check.csv", required=False), a.crosscheck_max_pct).to_csv(
        a.out / "timer_check.csv", index=False)
    info = run_info(run_dirs)
    info.to_csv(a.out / "runs.csv", index=False)
    launch_cost(pr, info).to_csv(a.out / "launch_cost.csv", index=False)
    for name in ("premise", "large_n"):      # Nsight away from the headline N: the N is the key's
        extra = load(run_dirs, f"ncu_{name}.csv", required=False)
        if not extra.empty:
            extra["N"] = extra.key.str.split("|").str[2].str.split(",").str[3].astype(int)
        extra.to_csv(a.out / f"{name}.csv", index=False)
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
