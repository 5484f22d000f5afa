"""Tables of the paper, from the aggregated data, through pandas' Styler.to_latex (booktabs rules):

- stages.tex: each stage, the article's figures beside ours (median over runs, lowest-highest run in brackets);
- claims.tex: each claim's components, the article's figure, ours, the verdict by the rules of claims.py;
- environment.tex: the GPU, driver, versions and clocks of every run;
- crosscheck.tex: the kernel timer beside Nsight Compute's duration for every profiled entry, with the host-sleep
  check;
- launch_cost.tex: host time per call, event-timed call and kernel time of each stage and PyTorch backend;
- step_times.tex: how long each step took (results/aggregate/step_times.csv, from Snakemake's benchmark files);
- ours.tex: the article's last stage and ours beyond it at the headline: the switch, time, percent of cuDNN and of
  FlashAttention-2, registers and shared memory, and the prediction against the measurement;
- per_n.tex: our last stage against cuDNN and FlashAttention-2 at each N, float16 and bfloat16;
- predictions.tex: every prediction written before a stage was measured, beside the measurement.

    python workflow/scripts/tables.py --agg results/aggregate --runs data/nvidia-h200/run-* --out results/tables
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from selection import ARTICLE_TILE, HEADLINE, STAGES, leader  # noqa: E402
from kernels.stages import STAGES as REGISTRY, previous_stage  # noqa: E402
from step_times import BUILD_RULES, GPU_RULES, RUN_RULES  # noqa: E402


def tex_escape(s: str) -> str:
    return (str(s).replace("\\", r"\textbackslash{}").replace("_", r"\_").replace("%", r"\%")
            .replace("&", r"\&").replace("#", r"\#"))


def latex(df: pd.DataFrame, path: Path, colfmt: str) -> None:
    sty = df.style.hide(axis="index").format(escape=None)
    path.write_text(sty.to_latex(hrules=True, column_format=colfmt))


def stage_rows(agg: Path, article: Path) -> pd.DataFrame:
    """One row per stage: the numbers of the stage table, unformatted (the tests compare the PDF against them)."""
    head = pd.read_csv(agg / "headline.csv")
    runs = head[head.run != "median of runs"]
    ncu = pd.read_csv(agg / "ncu.csv", usecols=["variant", "metric", "instance", "value"])
    ncu = ncu[ncu.instance.isna()].groupby(["variant", "metric"]).value.median()
    art_t = pd.read_csv(article / "timings.csv")
    art_torch = art_t.loc[art_t.impl == "torch-default", "time_us"].iloc[0]
    art_n = pd.read_csv(article / "ncu.csv")
    art_n = art_n[art_n.kind == "absolute"]

    def art_metric(stage, metric):
        v = art_n[(art_n.stage == stage) & (art_n.metric == metric)].value
        return float(v.iloc[0]) if len(v) else float("nan")

    rows = []
    for st in STAGES:
        r = runs[runs.stage == st]
        art_us = art_t[(art_t.stage == st) & (art_t.block_m == ARTICLE_TILE["block_m"])].time_us.iloc[0]
        rows.append(dict(
            stage=st, article_us=art_us, ours_us=r.time_us.median(), ours_lo=r.time_us.min(),
            ours_hi=r.time_us.max(), article_pct=100 * art_us / art_torch,
            pct_flash=r["pct_of_torch-flash"].median(), pct_default=r["pct_of_torch-default"].median(),
            article_regs=art_metric(st, "launch__registers_per_thread"),
            ours_regs=ncu.get((st, "launch__registers_per_thread"), float("nan")),
            article_smem_kb=art_metric(st, "launch__shared_mem_per_block_dynamic"),
            ours_smem_kb=ncu.get((st, "launch__shared_mem_per_block_dynamic"), float("nan")) / 1000,
            ours_l2_hit=ncu.get((st, "lts__t_sector_hit_rate.pct"), float("nan")),
            ours_inst_m=ncu.get((st, "smsp__inst_executed.sum"), float("nan")) / 1e6))
    return pd.DataFrame(rows)


def fmt(x, nd=0, none="--"):
    """x with nd decimals ('--' for a missing value); a negative value that rounds to zero loses its sign."""
    if pd.isna(x):
        return none
    text = f"{x:.{nd}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def signed(x, nd=1) -> str:
    """A change with its sign; a change that rounds to zero is written without one."""
    text = f"{x:+.{nd}f}"
    return text[1:] if float(text) == 0 else text


def stages_table(agg: Path, article: Path, out: Path) -> None:
    s = stage_rows(agg, article)
    df = pd.DataFrame({
        "stage": s.stage,
        r"article $\mu$s": s.article_us.map(fmt),
        r"ours $\mu$s [runs]": [f"{fmt(m, 1)} [{fmt(lo, 1)}--{fmt(hi, 1)}]"
                                for m, lo, hi in zip(s.ours_us, s.ours_lo, s.ours_hi)],
        r"article \% torch": s.article_pct.map(fmt),
        r"\% flash": s.pct_flash.map(fmt),
        r"\% default": s.pct_default.map(fmt),
        "regs art./ours": [f"{fmt(a)}/{fmt(o)}" for a, o in zip(s.article_regs, s.ours_regs)],
        "smem KB art./ours": [f"{fmt(a, 1)}/{fmt(o, 1)}" for a, o in zip(s.article_smem_kb, s.ours_smem_kb)],
        r"L2 hit \%": s.ours_l2_hit.map(lambda x: fmt(x, 1)),
        "inst. M": s.ours_inst_m.map(lambda x: fmt(x, 1)),
    })
    latex(df, out / "stages.tex", "l" + "r" * (len(df.columns) - 1))


def _range(med, lo, hi, nd=1) -> str:
    """median [lowest, highest]: a comma, not a dash, so that a negative bound keeps its sign."""
    return f"{fmt(med, nd)} [{fmt(lo, nd)}, {fmt(hi, nd)}]" if lo != hi else fmt(med, nd)


def ours_table(agg: Path, out: Path) -> None:
    o = pd.read_csv(agg / "ours_stages.csv")
    pred = pd.read_csv(agg / "predictions.csv")
    build = pd.read_csv(agg / "build.csv")
    build = build[(build.arch == 90) & (build.metric == "registers")]

    def regs(st):
        t = REGISTRY[st].tile
        r = build[(build.variant == st) & (build.block_m == t.block_m) & (build.block_n == t.block_n)
                  & (build.num_warps == t.num_warps) & (build.num_stages == t.num_stages)].value
        return float(r.iloc[0]) if len(r) else float("nan")
    rows = []
    for st, g in o.groupby("stage", sort=False):
        prev = previous_stage(st)                   # the rows start at the article's last stage: each has one
        added = sorted(REGISTRY[st].switches - REGISTRY[prev].switches)
        p = pred[(pred.stage == st) & (pred.quantity == "time") & (pred.N == HEADLINE["N"])
                 & (pred.compared_to == prev)]
        rows.append({
            "stage": st, "switch": tex_escape(", ".join(added)),
            r"$\mu$s [runs]": _range(g.time_us.median(), g.time_us.min(), g.time_us.max()),
            r"\% cuDNN": fmt(g.pct_cudnn.median()), r"\% FA2": fmt(g.pct_flash.median()),
            "regs": fmt(regs(st)),
            r"predicted \%": (f"{p.low_pct.iloc[0]:+g}..{p.high_pct.iloc[0]:+g}" if len(p) else "--"),
            r"measured \%": (signed(p.measured_pct.iloc[0]) if len(p) else "--"),
            "verdict": p.verdict.iloc[0] if len(p) else "--",
            "runs": str(g.run.nunique()),
        })
    latex(pd.DataFrame(rows), out / "ours.tex", "llrrrrrrlr")


def per_n_table(agg: Path, out: Path) -> None:
    p = pd.read_csv(agg / "per_n.csv")
    best = pd.read_csv(agg / "best_per_n.csv").set_index(["dtype", "N"])
    lead = leader(agg)                                             # our fastest stage across the lengths
    rows = []
    for (dtype, N), g in p.groupby(["dtype", "N"]):
        last = g[g.variant == lead]
        if last.empty:
            continue
        same = g[g.run.isin(last.run)]
        med = lambda v, col: same[same.variant == v][col].median()  # noqa: E731
        x = last.x_cudnn
        flash = last.set_index("run").time_us / same[same.variant == "torch-flash"].set_index("run").time_us
        rows.append({
            "dtype": dtype.replace("float", "fp").replace("bfp", "bf"), "N": str(N),
            rf"{lead} $\mu$s": fmt(last.time_us.median(), 1),
            r"cuDNN $\mu$s": fmt(med("torch-cudnn", "time_us"), 1),
            r"FA2 $\mu$s": fmt(med("torch-flash", "time_us"), 1),
            r"$\times$ cuDNN [runs]": _range(x.median(), x.min(), x.max(), 2),
            r"$\times$ FA2": fmt(flash.median(), 2),
            "TFLOP/s": fmt(last.tflops.median()), r"\% roof": fmt(last.pct_roof.median()),
            r"cuDNN \% roof": fmt(med("torch-cudnn", "pct_roof")),
            "runs": str(last.run.nunique()),
            "best of ours": (f"{best.loc[(dtype, N), 'best']} ({fmt(best.loc[(dtype, N), 'x_cudnn'], 2)})"
                             if (dtype, N) in best.index else "--"),
            r"twin \%": fmt(best.loc[(dtype, N), "twin_pct"], 1) if (dtype, N) in best.index else "--",
        })
    latex(pd.DataFrame(rows), out / "per_n.tex", "lrrrrrrrrrrlr")


def predictions_table(agg: Path, out: Path) -> None:
    p = pd.read_csv(agg / "predictions.csv")
    q = {"time": "time", "time_ratio": "time / cuDNN's", "smsp__inst_executed.sum": "instructions"}
    df = pd.DataFrame({
        "stage": p.stage, "against": p.compared_to.map(lambda v: "cuDNN" if v == "torch-cudnn" else v),
        "quantity": p.quantity.map(lambda v: q.get(v, tex_escape(v))), "N": p.N.astype(str),
        r"predicted \%": [f"{lo:+g}..{hi:+g}" for lo, hi in zip(p.low_pct, p.high_pct)],
        r"measured \% [runs]": [_range(m, lo, hi) if r else "--" for m, lo, hi, r in
                                 zip(p.measured_pct, p.lo_pct, p.hi_pct, p.runs)],
        "runs": p.runs.astype(str), "verdict": p.verdict,
    })
    latex(df, out / "predictions.tex", "lllrrrrl")


def claims_table(agg: Path, out: Path) -> None:
    """Each component: the article's figure (the basis marked: * printed, as it gives no absolute figures at both
    ends; + its estimate), ours (median over runs, with the range over runs), the verdicts."""
    c = pd.read_csv(agg / "claims.csv")
    first = ~c.claim.duplicated()
    headline_n = c.N.mode().iloc[0]
    mark = {"recomputed": "", "printed": "*", "estimate": "+", "none": ""}
    df = pd.DataFrame({
        "claim": c.claim.where(first, ""),
        "component": [tex_escape(comp) + ("" if n == headline_n else f", $N={n}$")
                      for comp, n in zip(c.component, c.N)],
        "article": [fmt(a, 1) + mark[b] for a, b in zip(c.article, c.article_basis)],
        "ours [range]": [fmt(o, 1) + (f" [{fmt(r, 1)}]" if r and r > 0.05 else "") for o, r in zip(c.ours, c.noise)],
        "unit": c.unit.map(tex_escape),
        "runs": c.runs.astype(int).astype(str).where(c.rule != "static", "--"),
        "component verdict": c.verdict,
        "claim verdict": c.claim_verdict.where(first, ""),
    })
    latex(df, out / "claims.tex", "llrrlrll")


def slips_table(agg: Path, out: Path) -> None:
    """The article's printed percentages that its own absolute figures do not give."""
    sl = pd.read_csv(agg / "slips.csv").drop_duplicates(["claim", "component", "article_printed"])
    df = pd.DataFrame({
        "claim": sl.claim,
        "figure": sl.component.map(tex_escape),
        "printed": sl.article_printed.map(lambda x: f"{x:g}"),
        "from its own figures": sl.article.map(lambda x: fmt(x, 2)),
        "unit": sl.unit.map(tex_escape),
    })
    latex(df, out / "slips.tex", "llrrl")


def entry_label(variant: str, block_m, block_n, num_warps, num_stages) -> str:
    """A profiled entry as the tables name it: the variant, and its tile where it is not the article's."""
    if pd.isna(block_m):
        return tex_escape(variant)
    tile = f"{int(block_m)}$\\times${int(block_n)}, {int(num_warps)}w, {int(num_stages)}s"
    ours = dict(block_m=int(block_m), block_n=int(block_n), num_warps=int(num_warps), num_stages=int(num_stages))
    return tex_escape(variant) + ("" if ours == ARTICLE_TILE else f" ({tile})")


def crosscheck_table(agg: Path, out: Path) -> None:
    cc = pd.read_csv(agg / "crosscheck.csv")
    cc = cc[cc.timed]
    tc = pd.read_csv(agg / "timer_check.csv")
    longest = tc.sleep_us.max()
    slept = tc[tc.sleep_us == longest].groupby("key")[["kernel_change_pct", "event_change_pct"]]
    slept = slept.agg(lambda x: x.loc[x.abs().idxmax()])
    rows = []
    for key, g in cc.groupby("key", sort=False):
        r = g.iloc[0]
        rows.append({
            "entry": entry_label(r.variant, r.block_m, r.block_n, r.num_warps, r.num_stages),
            r"timer $\mu$s": fmt(g.timer_us.median(), 1),
            r"Nsight $\mu$s": fmt(g.ncu_us.median(), 1),
            r"differences \%": ", ".join(signed(d) for d in g.diff_pct),
            rf"kernel, {longest:g}\,$\mu$s sleep": signed(slept.loc[key, "kernel_change_pct"]) + r"\%",
            rf"events, {longest:g}\,$\mu$s sleep": signed(slept.loc[key, "event_change_pct"], 0) + r"\%",
        })
    latex(pd.DataFrame(rows), out / "crosscheck.tex", "lrrlrr")


def launch_cost_table(agg: Path, out: Path) -> None:
    """Host time per call, the best of each run's repeats (headed by the run and its commit) and the median of all
    repeats; then the event-timed call and the kernel time (median over runs)."""
    lc = pd.read_csv(agg / "launch_cost.csv")
    runs = lc.drop_duplicates("run")[["run", "commit"]]
    order = list(dict.fromkeys(lc.entry))
    best = lc.pivot(index="entry", columns="run", values="host_min_us").loc[order]
    med = lc.groupby("entry")[["host_us", "call_us", "time_us"]].median().loc[order]
    df = pd.DataFrame({"entry": [tex_escape(e) for e in order]})
    for r in runs.itertuples():
        df[rf"host best, {tex_escape(r.run)} ({r.commit[:7]})"] = [fmt(x, 1) for x in best[r.run]]
    df[r"host median"] = [fmt(x, 1) for x in med.host_us]
    df[r"call (events)"] = [fmt(x, 1) for x in med.call_us]
    df[r"kernel"] = [fmt(x, 1) for x in med.time_us]
    df[r"call $-$ kernel"] = [fmt(x, 1) for x in med.call_us - med.time_us]
    latex(df, out / "launch_cost.tex", "l" + "r" * (len(df.columns) - 1))


def step_times_table(agg: Path, out: Path) -> None:
    """Each step: its jobs, its time (a run's steps: the run's total for the step, median over runs with the lowest
    and highest run; this build's CPU steps: their total), the peak memory of one job, and where the times come
    from (benchmark files, or the Snakemake log of a run sealed before them)."""
    st = pd.read_csv(agg / "step_times.csv", keep_default_na=False, na_values=[""])
    rows = []
    for tier, rules in (("run", RUN_RULES), ("build", BUILD_RULES)):
        t = st[st.tier == tier]
        for rule in [r for r in rules if r in set(t.rule)]:
            g = t[t.rule == rule]
            if tier == "run":
                per_run = g.groupby("run").seconds.sum()
                jobs = fmt(g.groupby("run").size().median())
                where = "GPU" if rule in GPU_RULES else "CPU"
                seconds = f"{fmt(per_run.median())} [{fmt(per_run.min())}--{fmt(per_run.max())}]"
                sources = g.drop_duplicates("run").source.value_counts()
                source = ", ".join(f"{s} ({n} run{'s' if n > 1 else ''})" for s, n in sources.items())
            else:
                jobs, where, seconds = str(len(g)), "CPU, this build", fmt(g.seconds.sum())
                source = ", ".join(sorted(set(g.source)))
            rows.append({"step": tex_escape(rule), "where": where, "jobs": jobs, "seconds [runs]": seconds,
                         "peak MiB": fmt(g.max_rss_mb.max()), "from": source})
    latex(pd.DataFrame(rows), out / "step_times.tex", "llrrrl")


def _smi(value: str) -> str:
    """nvidia-smi's reading, short: 'n/a' where it could not be read, throttle masks without leading zeros."""
    if not value or value.startswith("unavailable"):
        return "n/a"
    return hex(int(value, 16)) if value.startswith("0x") else value


def environment_table(runs, out: Path) -> None:
    rows = []
    for run in runs:
        for env_path in sorted(Path(run).rglob("env.json")):
            e = json.loads(env_path.read_text())
            start, end = e.get("start") or e.get("before") or {}, e.get("end") or e.get("after") or {}
            rows.append(dict(run=Path(run).name, step=env_path.parent.name if env_path.parent != Path(run) else "all",
                             gpu=e.get("gpu", ""), uuid=(start.get("uuid") or "not recorded")[:12],
                             driver=start.get("driver_version", ""), cuda=e.get("cuda_runtime", ""),
                             torch=e.get("torch", ""), triton=e.get("triton", ""),
                             cudnn=str(e.get("cudnn", "")), ncu=str(e.get("ncu") or "").split(" ")[0],
                             commit=(e.get("project_commit") or "not recorded")[:8],
                             sm_clock=f"{_smi(start.get('clocks.sm'))} / {_smi(end.get('clocks.sm'))}",
                             throttle=f"{_smi(start.get('clocks_event_reasons.active'))} / "
                                      f"{_smi(end.get('clocks_event_reasons.active'))}"))
    df = pd.DataFrame(rows)
    df = df.groupby(["run", "gpu", "uuid", "driver", "cuda", "torch", "triton", "cudnn", "ncu", "commit"],
                    as_index=False).agg(steps=("step", "count"), sm_clock=("sm_clock", "first"),
                                        throttle=("throttle", "first"))
    df = df.map(lambda x: tex_escape(x) if isinstance(x, str) else x)
    df.columns = ["run", "GPU", "UUID", "driver", "CUDA", "torch", "triton", "cuDNN", "Nsight", "commit", "steps",
                  "SM clock start/end", "throttle reasons start/end"]
    latex(df, out / "environment.tex", "llllllllllrll")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agg", type=Path, default=Path("results/aggregate"))
    ap.add_argument("--article", type=Path, default=Path("data/article"))
    ap.add_argument("--runs", type=Path, nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    stages_table(a.agg, a.article, a.out)
    claims_table(a.agg, a.out)
    slips_table(a.agg, a.out)
    environment_table(a.runs, a.out)
    crosscheck_table(a.agg, a.out)
    launch_cost_table(a.agg, a.out)
    step_times_table(a.agg, a.out)
    ours_table(a.agg, a.out)
    per_n_table(a.agg, a.out)
    predictions_table(a.agg, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
