"""Tables of the paper, from the aggregated data, through pandas' Styler.to_latex (booktabs rules):

- stages.tex: each stage, the article's figures beside ours (median over runs, lowest-highest run in brackets);
- claims.tex: each claim's components, the article's figure, ours, the verdict by the rules of claims.py;
- slips.tex: the article's printed percentages that its own absolute figures do not give;
- environment.tex: the GPU, driver, versions and clocks of every run;
- crosscheck.tex: the kernel timer beside Nsight Compute's duration for every profiled entry at the headline (N = 1024),
  with the host-sleep check;
- crosscheck_n.tex: the same for every profiled entry at each other N;
- launch_cost.tex: host time per call, event-timed call and kernel time of each stage and PyTorch backend;
- host_stages.tex: the host time of a call of every registered stage, the best of each run's repeats in the runs on
  one GPU (run-18 on), beside PyTorch's;
- step_times.tex: how long each step took (results/aggregate/step_times.csv, from Snakemake's benchmark files);
- ours.tex: the article's last stage and ours beyond it at the headline: the switch, time, percent of cuDNN and of
  FlashAttention-2, registers and shared memory, and the prediction against the measurement;
- per_n.tex: our leading Triton stage (the fastest Triton stage across lengths) against cuDNN and FlashAttention-2 at each N,
  float16 and bfloat16, the ratios of the kernels alone (selection.RATIO_TIME), with its standing against cuDNN by
  the paired rule (pipeline.noise), the runs in which it was faster and the runs behind its medians;
- predictions.tex: every prediction written before a stage was measured, beside the measurement;
- variation.tex: at each N of the sweep, the samples per repeat and repeats per run behind each median, and the
  run-to-run variation of the stages' and backends' times and of the ratios to cuDNN;
- sampling.tex: each set of the plan: its lengths, the runs that timed it, the repeats per run and the samples per
  repeat.

One job per table (the rule `tables`, its wildcard the table's name). Each table reads only the aggregated CSV files
its rule names (workflow/rules/paper.smk) and formats them (pipeline.latex); nothing is computed here that a figure
or the text would need again. Beside each <name>.tex, <name>.html holds the same cells as text for Snakemake's
report; the line of each table above is its caption there.
"""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import STAGES as REGISTRY, previous_stage

from pipeline.latex import escape as tex_escape, fixed as fmt, signed, span as _range, write_table


TORCH_ROWS = ("torch-default", "torch-cudnn", "torch-flash")   # PyTorch's backends, beside our stages


def latex(df: pd.DataFrame, out: Path, colfmt: str, **kw) -> None:
    """The table as TeX at `out` (the paper's) and as HTML beside it (the report's: <name>.html)."""
    write_table(df, out, colfmt, html=Path(out).with_suffix(".html"), **kw)
from pipeline.selection import ARTICLE_TILE, HEADLINE, RATIO_TIME


def stages_table(stage_table: Path, out: Path) -> None:
    s = pd.read_csv(stage_table)
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
    latex(df, out, "l" + "r" * (len(df.columns) - 1))


def ours_table(ours_stages: Path, predictions: Path, build: Path, out: Path) -> None:
    o = pd.read_csv(ours_stages)
    pred = pd.read_csv(predictions)
    build = pd.read_csv(build)
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
            r"$\mu$s [runs]": _range(g.time_us.median(), g.time_us.min(), g.time_us.max(), runs=g.run.nunique()),
            r"\% cuDNN": fmt(g.pct_cudnn.median()), r"\% FA2": fmt(g.pct_flash.median()),
            "regs": fmt(regs(st)),
            r"predicted \%": (f"{p.low_pct.iloc[0]:+g}..{p.high_pct.iloc[0]:+g}" if len(p) else "--"),
            r"measured \%": (signed(p.measured_pct.iloc[0]) if len(p) else "--"),
            "verdict": p.verdict.iloc[0] if len(p) else "--",
            "runs": str(g.run.nunique()),
        })
    latex(pd.DataFrame(rows), out, "llrrrrrrlr")


def standing_cell(b: pd.Series, runs: int) -> str:
    """The leading stage's standing against cuDNN at one N and dtype by the paired rule (best_per_n.csv), with the runs
    in which it was faster of those that timed both: 'behind 0/15'; where fewer than the `runs` that hold the stage
    timed cuDNN beside it, those too ('behind 0/14 of 15')."""
    if not isinstance(b.leader_standing, str) or not b.leader_standing:
        return "--"
    paired = int(b.leader_paired_runs)
    return f"{b.leader_standing} {int(b.leader_faster_runs)}/{paired}" + (f" of {runs}" if paired != runs else "")


def per_n_table(per_n: Path, best_per_n: Path, out: Path) -> None:
    p = pd.read_csv(per_n)
    best = pd.read_csv(best_per_n).set_index(["dtype", "N"])
    lead = str(p[p.leader].variant.iloc[0])                        # our fastest stage across the lengths
    rows = []
    for (dtype, N), g in p.groupby(["dtype", "N"]):
        last = g[g.variant == lead]
        if last.empty:
            continue
        same = g[g.run.isin(last.run)]
        med = lambda v, col: same[same.variant == v][col].median()  # noqa: E731
        x = last.x_cudnn
        flash = (last.set_index("run")[RATIO_TIME]                 # a ratio's ends: the kernels alone (RATIO_TIME)
                 / same[same.variant == "torch-flash"].set_index("run")[RATIO_TIME])
        rows.append({
            "dtype": dtype.replace("float", "fp").replace("bfp", "bf"), "N": str(N),
            rf"{lead} $\mu$s": fmt(last.time_us.median(), 1),
            r"cuDNN $\mu$s": fmt(med("torch-cudnn", "time_us"), 1),
            r"FA2 $\mu$s": fmt(med("torch-flash", "time_us"), 1),
            r"$\times$ cuDNN [runs]": _range(x.median(), x.min(), x.max(), 2, runs=x.notna().sum()),
            r"$\times$ FA2": fmt(flash.median(), 2),
            "TFLOP/s": fmt(last.tflops.median()),
            r"\% roof (cuDNN)": f"{fmt(last.pct_roof.median())} ({fmt(med('torch-cudnn', 'pct_roof'))})",
            "best of ours": (f"{best.loc[(dtype, N), 'best']} ({fmt(best.loc[(dtype, N), 'x_cudnn'], 2)})"
                             if (dtype, N) in best.index else "--"),
            r"vs cuDNN": (standing_cell(best.loc[(dtype, N)], last.run.nunique())
                                 if (dtype, N) in best.index else "--"),
        })
    latex(pd.DataFrame(rows), out, "lrrrrrrrrll")


def _lohi(lo, hi, nd: int = 0) -> str:
    """'lo--hi', or one number where both are the same."""
    return fmt(lo, nd) if fmt(lo, nd) == fmt(hi, nd) else f"{fmt(lo, nd)}--{fmt(hi, nd)}"


def variation_table(variation_n: Path, sampling: Path, out: Path) -> None:
    v = pd.read_csv(variation_n)
    smp = pd.read_csv(sampling)
    smp = smp[smp.set == "n_sweep"].set_index(["dtype", "N"])
    rows = []
    for (dtype, N), g in v.groupby(["dtype", "N"]):
        by = g.set_index("variant")
        most = lambda grp, col: g[g.group == grp][col].max()  # noqa: E731
        arg = lambda grp, col: g.loc[g[g.group == grp][col].idxmax(), "variant"]  # noqa: E731
        rows.append({
            "dtype": dtype.replace("float", "fp").replace("bfp", "bf"), "N": str(N),
            "runs": _lohi(g.runs.min(), g.runs.max()),
            "repeats / run": _lohi(g.repeats_lo.min(), g.repeats_hi.max()),
            "samples / repeat": (_lohi(smp.loc[(dtype, N), "samples_lo"], smp.loc[(dtype, N), "samples_hi"])
                                 if (dtype, N) in smp.index else "--"),
            r"time v0--v7 \%": f"{fmt(most('article', 'time_var_pct'), 1)} ({arg('article', 'time_var_pct')})",
            r"time ours \%": f"{fmt(most('ours', 'time_var_pct'), 1)} ({arg('ours', 'time_var_pct')})",
            r"time cuDNN \%": fmt(by.time_var_pct.get("torch-cudnn"), 1),
            r"time FA2 \%": fmt(by.time_var_pct.get("torch-flash"), 1),
            r"$\times$ cuDNN v0--v7 \%": fmt(most("article", "x_cudnn_var_pct"), 1),
            r"$\times$ cuDNN ours \%": f"{fmt(most('ours', 'x_cudnn_var_pct'), 1)} ({arg('ours', 'x_cudnn_var_pct')})",
        })
    latex(pd.DataFrame(rows), out, "lrrrrrrrrrr")


def sampling_table(sampling: Path, out: Path) -> None:
    smp = pd.read_csv(sampling)
    rows = []
    for name, g in smp.groupby("set", sort=False):
        ns = sorted(g.N.unique())
        rows.append({
            "set": tex_escape(name), "N": ", ".join(str(n) for n in ns),
            "dtype": ", ".join(sorted(d.replace("float", "fp").replace("bfp", "bf") for d in g.dtype.unique())),
            "runs": _lohi(g.runs.min(), g.runs.max()),
            "repeats / run": _lohi(g.repeats_lo.min(), g.repeats_hi.max()),
            "samples / repeat": _lohi(g.samples_lo.min(), g.samples_hi.max()),
        })
    latex(pd.DataFrame(rows), out, "lllrrr")


# A longtable: it grows with every stage registered, past a page.
PREDICTIONS_CAPTION = ("Each prediction, committed before the stage was measured, beside the measurement (median over "
                       "runs holding both ends [lowest, highest]): holds inside the predicted range, better or worse "
                       "outside it. float16 unless N says bf16.")


def predictions_table(predictions: Path, out: Path) -> None:
    p = pd.read_csv(predictions)
    q = {"time": "time", "time_ratio": "time / cuDNN's", "smsp__inst_executed.sum": "instructions"}
    df = pd.DataFrame({
        "stage": p.stage, "against": p.compared_to.map(lambda v: "cuDNN" if v == "torch-cudnn" else v),
        "quantity": p.quantity.map(lambda v: q.get(v, tex_escape(v))),
        "N": [f"{n} bf16" if dt == "bfloat16" else str(n) for n, dt in zip(p.N, p.dtype)],   # float16 unmarked
        r"predicted \%": [f"{lo:+g}..{hi:+g}" for lo, hi in zip(p.low_pct, p.high_pct)],
        r"measured \% [runs]": [_range(m, lo, hi, runs=r) if r else "--" for m, lo, hi, r in
                                 zip(p.measured_pct, p.lo_pct, p.hi_pct, p.runs)],
        "runs": p.runs.astype(str), "verdict": p.verdict,
    })
    latex(df, out, "lllrrrrl", long_caption=PREDICTIONS_CAPTION, label="tab:predictions")


def claims_table(claims: Path, out: Path) -> None:
    """Each component: the article's figure (the basis marked: * printed, as it gives no absolute figures at both
    ends; + its estimate), ours (median over runs, with the range over runs), the verdicts."""
    c = pd.read_csv(claims)
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
    latex(df, out, "llrrlrll")


def slips_table(slips: Path, out: Path) -> None:
    """The article's printed percentages that its own absolute figures do not give."""
    sl = pd.read_csv(slips).drop_duplicates(["claim", "component", "article_printed"])
    df = pd.DataFrame({
        "claim": sl.claim,
        "figure": sl.component.map(tex_escape),
        "printed": sl.article_printed.map(lambda x: f"{x:g}"),
        "from its own figures": sl.article.map(lambda x: fmt(x, 2)),
        "unit": sl.unit.map(tex_escape),
    })
    latex(df, out, "llrrl")


def entry_label(variant: str, block_m, block_n, num_warps, num_stages) -> str:
    """A profiled entry as the tables name it: the variant, and its tile where it is not the article's."""
    if pd.isna(block_m):
        return tex_escape(variant)
    tile = f"{int(block_m)}$\\times${int(block_n)}, {int(num_warps)}w, {int(num_stages)}s"
    ours = dict(block_m=int(block_m), block_n=int(block_n), num_warps=int(num_warps), num_stages=int(num_stages))
    return tex_escape(variant) + ("" if ours == ARTICLE_TILE else f" ({tile})")


CROSSCHECK_N_CAPTION = ("The kernel timer against Nsight Compute on the same GPU, as at the headline, at every other $N$ "
                        "an entry was profiled at (the runs from "
                        "run-18 on profile the Gluon stages, v13 and cuDNN at every $N$ of the sweep); the host-sleep "
                        "check covers the headline only, so its columns are not here.")


def crosscheck_table(crosscheck: Path, timer_check: Path, out: Path, headline: bool = True) -> None:
    """The headline's entries (N = 1024, headline=True) or those of every other N: one table of all of them no
    longer fits a page."""
    cc = pd.read_csv(crosscheck)
    cc = cc[cc.timed & ((cc.N == HEADLINE["N"]) == headline)]
    tc = pd.read_csv(timer_check)
    longest = tc.sleep_us.max()
    slept = tc[tc.sleep_us == longest].groupby("key")[["kernel_change_pct", "event_change_pct"]]
    slept = slept.agg(lambda x: x.loc[x.abs().idxmax()])
    rows = []
    for key, g in cc.groupby("key", sort=False):
        r = g.iloc[0]
        rows.append({
            "entry": entry_label(r.variant, r.block_m, r.block_n, r.num_warps, r.num_stages),
            "N": str(int(r.N)),
            r"timer $\mu$s": fmt(g.timer_us.median(), 1),
            r"Nsight $\mu$s": fmt(g.ncu_us.median(), 1),
            "runs": str(len(g)),
            # each run's difference, the lowest and the highest (the list of every run's no longer fits a line)
            r"difference \%": (signed(g.diff_pct.iloc[0]) if len(g) == 1
                               else f"{signed(g.diff_pct.min())} .. {signed(g.diff_pct.max())}"),
            r"in cycles \%": signed(g.cycles_diff_pct.dropna().iloc[-1]) if g.cycles_diff_pct.notna().any() else "--",
        })
        if headline:   # the timer check covers the headline's profiled entries; the other lengths' have none
            rows[-1].update({
                rf"kernel, {longest:g}\,$\mu$s sleep": (signed(slept.loc[key, "kernel_change_pct"]) + r"\%"
                                                       if key in slept.index else "--"),
                rf"events, {longest:g}\,$\mu$s sleep": (signed(slept.loc[key, "event_change_pct"], 0) + r"\%"
                                                       if key in slept.index else "--")})
    if headline:
        latex(pd.DataFrame(rows), out, "lrrrrlrrr")
    else:        # too many rows for a page: a longtable that breaks across pages, its header repeated
        latex(pd.DataFrame(rows), out, "lrrrrlr", long_caption=CROSSCHECK_N_CAPTION, label="tab:crosscheckn")


def launch_cost_table(launch_cost: Path, out: Path) -> None:
    """Host time per call, one row per run (the best of its repeats, the run's commit beside it) and the median of
    all repeats; then the event-timed call and the kernel time (median over runs): one column per entry, so that
    the table grows down with the runs, not across."""
    lc = pd.read_csv(launch_cost)
    runs = lc.drop_duplicates("run")[["run", "commit"]]
    order = list(dict.fromkeys(lc.entry))
    best = lc.pivot(index="run", columns="entry", values="host_min_us")[order]
    med = lc.groupby("entry")[["host_us", "call_us", "time_us"]].median().loc[order]
    rows = [{"": f"host best, {tex_escape(r.run)}", "commit": r.commit[:7],
             **{tex_escape(e): fmt(best.loc[r.run, e], 1) for e in order}} for r in runs.itertuples()]
    for label, values in (("host median", med.host_us), ("call (events)", med.call_us), ("kernel", med.time_us),
                          (r"call $-$ kernel", med.call_us - med.time_us)):
        rows.append({"": label, "commit": "", **{tex_escape(e): fmt(x, 1) for e, x in values.items()}})
    latex(pd.DataFrame(rows), out, "ll" + "r" * len(order))


def host_stages_table(per_run: Path, out: Path) -> None:
    """Every registered stage (a row each, then PyTorch's backends) at the headline shape and its own tile: the best
    repeat of its host time per call in each run on one GPU that timed it (the runs without an -x2 suffix: no second
    job on the host), and the highest of those bests."""
    pr = pd.read_csv(per_run)
    h = pr[pr.headline & (pr.own_tile | pr.impl.ne("triton")) & ~pr.run.str.endswith("-x2")]
    entries = [s for s in REGISTRY if s in set(h.variant)] + [t for t in TORCH_ROWS if t in set(h.variant)]
    best = h.pivot_table(index="variant", columns="run", values="host_min_us", aggfunc="min")
    runs = sorted(best.columns, key=lambda r: int(r.split("-")[1]))
    rows = [{"entry": tex_escape(e), **{tex_escape(r): fmt(best.loc[e, r], 1) for r in runs},
             "highest": fmt(best.loc[e, runs].max(), 1)} for e in entries]
    latex(pd.DataFrame(rows), out, "l" + "r" * (len(runs) + 1))


def step_times_table(step_times: Path, out: Path) -> None:
    """Each step: its jobs, its time (a run's steps: the run's total for the step, median over runs with the lowest
    and highest run; this build's CPU steps: their total), the peak memory of one job, and where the times come
    from (benchmark files, or the Snakemake log of a run sealed before them)."""
    st = pd.read_csv(step_times, keep_default_na=False, na_values=[""])
    rows = []
    for tier in ("run", "build"):
        t = st[st.tier == tier]
        for rule in t.sort_values("order", kind="stable").rule.unique():
            g = t[t.rule == rule]
            if tier == "run":
                per_run = g.groupby("run").seconds.sum()
                jobs = fmt(g.groupby("run").size().median())
                where = "GPU" if g.gpu.iloc[0] else "CPU"
                seconds = f"{fmt(per_run.median())} [{fmt(per_run.min())}--{fmt(per_run.max())}]"
                sources = g.drop_duplicates("run").source.value_counts()
                source = ", ".join(f"{s} ({n} run{'s' if n > 1 else ''})" for s, n in sources.items())
            else:
                jobs, where, seconds = str(len(g)), "CPU, this build", fmt(g.seconds.sum())
                source = ", ".join(sorted(set(g.source)))
            rows.append({"step": tex_escape(rule), "where": where, "jobs": jobs, "seconds [runs]": seconds,
                         "peak MiB": fmt(g.max_rss_mb.max()), "from": source})
    latex(pd.DataFrame(rows), out, "llrrrl")


def _smi(value: str) -> str:
    """nvidia-smi's reading, short: 'n/a' where it could not be read, throttle masks without leading zeros."""
    if not value or value.startswith("unavailable"):
        return "n/a"
    return hex(int(value, 16)) if value.startswith("0x") else value


def environment_table(environment: Path, out: Path) -> None:
    e = pd.read_csv(environment, dtype=str, keep_default_na=False)
    rows = [dict(run=r.run, step=r.step, gpu=r.gpu, uuid=(r.uuid or "not recorded")[:12], driver=r.driver,
                 cuda=r.cuda, torch=r.torch, triton=r.triton, cudnn=r.cudnn, ncu=r.ncu,
                 commit=(r.commit or "not recorded")[:8],
                 sm_clock=f"{_smi(r.sm_clock_start)} / {_smi(r.sm_clock_end)}",
                 throttle=f"{_smi(r.throttle_start)} / {_smi(r.throttle_end)}") for r in e.itertuples()]
    df = pd.DataFrame(rows)
    df = df.groupby(["run", "gpu", "uuid", "driver", "cuda", "torch", "triton", "cudnn", "ncu", "commit"],
                    as_index=False).agg(steps=("step", "count"), sm_clock=("sm_clock", "first"),
                                        throttle=("throttle", "first"))
    df = df.map(lambda x: tex_escape(x) if isinstance(x, str) else x)
    df.columns = ["run", "GPU", "UUID", "driver", "CUDA", "torch", "triton", "cuDNN", "Nsight", "commit", "steps",
                  "SM clock start/end", "throttle reasons start/end"]
    latex(df, out, "llllllllllrll")


TABLES = {
    "stages": lambda i, out: stages_table(i.stage_table, out),
    "claims": lambda i, out: claims_table(i.claims, out),
    "slips": lambda i, out: slips_table(i.slips, out),
    "environment": lambda i, out: environment_table(i.environment, out),
    "crosscheck": lambda i, out: crosscheck_table(i.crosscheck, i.timer_check, out),
    "crosscheck_n": lambda i, out: crosscheck_table(i.crosscheck, i.timer_check, out, headline=False),
    "launch_cost": lambda i, out: launch_cost_table(i.launch_cost, out),
    "host_stages": lambda i, out: host_stages_table(i.per_run, out),
    "step_times": lambda i, out: step_times_table(i.step_times, out),
    "ours": lambda i, out: ours_table(i.ours_stages, i.predictions, i.build, out),
    "per_n": lambda i, out: per_n_table(i.per_n, i.best_per_n, out),
    "predictions": lambda i, out: predictions_table(i.predictions, out),
    "variation": lambda i, out: variation_table(i.variation_n, i.sampling, out),
    "sampling": lambda i, out: sampling_table(i.sampling, out),
}


def main(name: str, input, output) -> None:
    """The table `name` from the rule's input: output.tex, and output.html beside it."""
    if Path(output.html) != Path(output.tex).with_suffix(".html"):
        raise ValueError(f"{output.html}: a table's HTML lies beside its TeX, {Path(output.tex).with_suffix('.html')}")
    TABLES[name](input, output.tex)


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    main(snakemake.wildcards.name, snakemake.input, snakemake.output)  # noqa: F821
