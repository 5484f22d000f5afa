"""The paper's numbers on the Gluon stages as the pipeline measured them (results/aggregate/per_n.csv, the runs that
timed them: run-18 on): each stage's time over cuDNN's at each N of the sweep and dtype
(\\val{gx}{<stage>@<N>}{<dtype>}, median over its runs of the within-run ratio), the fastest Gluon stage at each N
in the newest run (\\val{gbest}{<N>}{<dtype>}), the Gluon leader across lengths (gluon_leader.csv), each stage's change against the one before it at every N of the
sweep (\\val{gstep}{<stage>@<N>}{<dtype>}, percent, within each run, median over the runs), the
time of each Gluon stage's leave-one-out ablations that are no stage against the stage's own
(\\val{gloo}{<variant>}{pct|run}), the runs that timed
each stage (\\val{gsruns}{<stage>}{list|first|phrase}), the SM clocks of the newest run's samples
(\\val{gclock}{<stage>@<N>}{range}), and the runs; at the Qwen3 layouts of the newest run (per_run.csv's qwen3 set,
float16), the layout furthest from the issue's second goal (GluonQwWorst) and where
the issue's second goal (at most QW_GOAL_X times cuDNN's time) is met (\\val{gqwgoal}{all}{met|missed})."""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import GLUON_BASE, STAGES, leave_one_out, previous_stage, stage_of

from pipeline.latex import Values, escape, fixed, listing
from pipeline.selection import GLUON_STAGES, GOAL_X, OUR_STAGES, QW_GOAL_X, RATIO_TIME, run_number

TIE_PCT = 1.0       # the fastest Gluon stage at an N: another within this many percent of it in the same run is named too
DTYPES = {"float16": "fp16", "bfloat16": "bf16"}
BASE = stage_of(GLUON_BASE)      # the Triton stage whose schedule the Gluon kernel takes (v13)


def last_measured(per_n: pd.DataFrame) -> str:
    """The last of our stages that the N sweep measured (per_n.csv): the one the N-sweep figure draws as our last."""
    return [s for s in OUR_STAGES if s in set(per_n.variant)][-1]


def qwen3_points(per_run: Path, run: str) -> list:
    """Per Qwen3 layout and N of `run` (the qwen3 set, float16, each stage at its own tile): (x, stage, H, H_kv, N),
    the fastest Gluon stage's time over cuDNN's (kernels alone, RATIO_TIME); [] where the run timed none."""
    pr = pd.read_csv(per_run, low_memory=False)
    q = pr[(pr.run == run) & pr.set.str.contains("qwen3", na=False) & (pr.dtype == "float16")]
    cudnn = q[q.variant == "torch-cudnn"].set_index(["H", "H_kv", "N"])[RATIO_TIME]
    ours = q[q.variant.isin(GLUON_STAGES) & q.own_tile.astype(bool)]
    points = []
    for (h, hkv, n), r in ours.groupby(["H", "H_kv", "N"]):
        if (h, hkv, n) in cudnn.index:
            x = (r.set_index("variant")[RATIO_TIME] / cudnn[h, hkv, n]).sort_values()
            points.append((float(x.iloc[0]), x.index[0], h, hkv, n))
    return points


def qwen3_goal(v: Values, per_run: Path, run: str, before: str | None) -> None:
    """The fastest Gluon stage at each Qwen3 layout and N of `run`, its time over cuDNN's, where QW_GOAL_X is met,
    the layout furthest from it (GluonQwWorst), and where the Gluon run before it (`before`) missed it."""
    points = qwen3_points(per_run, run)
    if not points:
        raise ValueError(f"{per_run}: {run} timed no Gluon stage or no cuDNN at the Qwen3 layouts")
    met, missed = [], []
    for x, stage, h, hkv, n in points:
        (met if x <= QW_GOAL_X else missed).append(f"{h}/{hkv} heads at {n}")
    v.put("gqwgoal", "all", "met", listing(met) if met else "no layout")
    v.put("gqwgoal", "all", "missed", listing(missed) if missed else "no layout")
    x, stage, h, hkv, n = max(points)
    v.macro("GluonQwWorst", f"{h}/{hkv} heads at $N={n}$ ({stage}, {fixed(x, 3)}$\\times$)")
    prev = qwen3_points(per_run, before) if before else []
    v.macro("GluonQwPrevRun", before or "--")
    v.macro("GluonQwPrevMissed", listing([f"{h}/{hkv} heads at {n} ({fixed(x, 3)}$\\times$)"
                                          for x, stage, h, hkv, n in prev if x > QW_GOAL_X]) or "no layout")
    v.macro("GluonQwGoalX", fixed(QW_GOAL_X, 2))


def values(per_n: Path, gluon_leader: Path, best_per_n: Path, timings: Path, per_run: Path) -> Values:
    v = Values("gluon_run")
    p = pd.read_csv(per_n)
    g = p[p.variant.isin(GLUON_STAGES)]
    runs = sorted(set(g.run), key=run_number)
    v.macro("GluonRuns", listing(runs))
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    # each run's Gluon entries on one GPU, or its sets on several (a run in parts whose lease changed machines)
    timed = pd.read_csv(timings, usecols=["run", "set", "variant", "dtype", "N", "time_us", "headline", "sm_mhz",
                                          "gpu_uuid"], low_memory=False)
    t = timed[timed.variant.isin(GLUON_STAGES) & timed.run.isin(runs)]
    split = sorted({r for r, n in t.groupby("run").gpu_uuid.nunique().items() if n > 1}, key=run_number)
    where = ("on one H200 each" if not split else
             f"each set on one H200; {listing(split)}'s sets on {'two' if len(split) == 1 else 'several'} H200s")
    v.macro("GluonRunsPhrase", "one run" if len(runs) == 1 else f"{words.get(len(runs), len(runs))} runs, {where}")
    # the last of our stages the sweep measured (the one the N-sweep figure draws as our last)
    v.macro("GluonLastMeasured", last_measured(p))
    v.macro("GluonLastMeasuredRuns", listing(sorted(set(p[p.variant == last_measured(p)].run), key=run_number)))
    v.macro("GluonLast", GLUON_STAGES[-1])
    # The leave-one-out ablations of the last Gluon stage that the registry allows (each Gluon switch is built on the
    # one before it, so a switch can leave only with those built on it), and the stage each one equals.
    loo = leave_one_out(GLUON_STAGES[-1])
    v.macro("GluonLeaveOneOut", listing([f"\\texttt{{{escape(name)}}}" for name in loo]))
    v.macro("GluonLeaveOneOutIs", listing([next((s for s, st in STAGES.items() if st.switches == sw), "no stage")
                                           for sw in loo.values()]))
    for st, rs in g.groupby("variant").run:
        mine = sorted(set(rs), key=run_number)
        v.put("gsruns", st, "list", listing(mine))
        v.put("gsruns", st, "first", mine[0])
        v.put("gsruns", st, "phrase", "one run" if len(mine) == 1 else
              f"{words.get(len(mine), len(mine))} runs, medians of the changes within each")
    last_run = max(set(g.run), key=run_number)
    v.macro("GluonLastRun", last_run)     # the newest run that timed a Gluon stage
    untimed = [s for s in GLUON_STAGES if s not in set(g[g.run == last_run].variant)]
    v.macro("GluonLastRunTimed", "every Gluon stage" if not untimed else
            f"every Gluon stage but {listing(untimed)}")  # registered since that run
    ratio = g.groupby(["variant", "dtype", "N"]).x_cudnn.median()
    for (st, dt, n), x in ratio.items():
        if dt == "float16":         # the text quotes float16's; bfloat16's are in the fastest per N (gbest)
            v.put("gx", f"{st}@{n}", DTYPES[dt], fixed(x, 2))
    # the Triton stage whose schedule the first Gluon stage takes, in the same runs (the language change alone)
    base = p[(p.variant == BASE) & p.run.isin(runs)].groupby(["dtype", "N"]).x_cudnn.median()
    for (dt, n), x in base.items():
        if dt == "float16":
            v.put("gx", f"{BASE}@{n}", DTYPES[dt], fixed(x, 2))
    # The fastest Gluon stage at each N and dtype within the newest run (issue 18's goal is one run's: every Gluon
    # stage that any run timed is timed in it, so no stage is compared with another's runs); a stage within TIE_PCT of
    # it in that run is named beside it.
    newest = max(runs, key=run_number)
    untimed = sorted(set(g.variant) - set(g[g.run == newest].variant))     # a stage registered since is in no run
    if untimed:
        raise ValueError(f"the newest run {newest} did not time {untimed}, which earlier runs did: the fastest per N "
                         f"would leave them out")
    in_newest = g[g.run == newest].groupby(["dtype", "N", "variant"]).x_cudnn.median()
    for (dt, n), r in in_newest.groupby(level=["dtype", "N"]):
        best = r.droplevel(["dtype", "N"]).sort_values()
        ties = best[best <= best.iloc[0] * (1 + TIE_PCT / 100)]
        lo, hi = fixed(ties.iloc[0], 3), fixed(ties.iloc[-1], 3)
        text = (f"{best.index[0]} ({lo}$\\times$)" if len(ties) == 1 else
                f"{' or '.join(ties.index)} ({lo if lo == hi else f'{lo}--{hi}'}$\\times$)")
        v.put("gbest", n, DTYPES[dt], text)
    v.macro("GluonGoalX", fixed(GOAL_X, 2))
    qwen3_goal(v, per_run, newest, runs[-2] if len(runs) > 1 else None)
    v.macro("GluonTiePct", fixed(TIE_PCT, 0))
    best = pd.read_csv(best_per_n)             # the fastest of all our stages at each N and dtype
    glu = best[best.best.isin(GLUON_STAGES)]
    v.macro("GluonBestWhere", "every length of the sweep, in both dtypes" if len(glu) == len(best) else
            "$N=$ " + listing([f"{n} ({DTYPES[d]})" for d, n in zip(glu.dtype, glu.N)]))
    lead = pd.read_csv(gluon_leader)
    v.macro("GluonLead", str(lead.stage.iloc[0]))
    v.macro("GluonLeadGeomeanX", fixed(lead.geomean_x_cudnn.iloc[0], 2))
    lead_runs = sorted(set(g[g.variant == lead.stage.iloc[0]].run), key=run_number)
    v.macro("GluonLeadRuns", listing(lead_runs) + (", the one run that timed it" if len(lead_runs) == 1
                                                   else ", the runs that timed it"))
    v.macro("GluonLeadSecond", str(lead.stage.iloc[1]))     # the runner-up, and the leader's margin over it
    v.macro("GluonLeadMarginPct", fixed(100 * (1 - lead.geomean_x_cudnn.iloc[0] / lead.geomean_x_cudnn.iloc[1]), 1))
    t = g.groupby(["variant", "dtype", "N"]).time_us.median()
    by_run = g.set_index(["run", "variant", "dtype", "N"]).time_us
    for st in GLUON_STAGES[1:]:
        prev = previous_stage(st)
        for dt in DTYPES:
            for n in sorted(set(p.N)):      # every N of the sweep
                # the change within each run that timed both, then the median over those runs
                both = [r for r in runs if (r, st, dt, n) in by_run and (r, prev, dt, n) in by_run]
                if both:
                    change = pd.Series([by_run[r, st, dt, n] / by_run[r, prev, dt, n] - 1 for r in both]).median()
                    v.put("gstep", f"{st}@{n}", DTYPES[dt], f"{100 * change:+.1f}")
    # The newest run alone: its fastest Gluon stage per N (float16), that stage's time over PyTorch's default backend's
    # in the same run (kernels alone at both ends, as x_cudnn), and cuDNN's kernels there against the earlier runs'.
    k = p[p.dtype == "float16"].set_index(["run", "variant", "N"]).kernels_us
    for n in sorted(set(g.N)):
        mine = g[(g.run == newest) & (g.dtype == "float16") & (g.N == n)]
        if mine.empty or (newest, "torch-default", n) not in k:
            continue
        best = mine.loc[mine.x_cudnn.idxmin()]
        v.put("gnew", n, "stage", best.variant)
        v.put("gnew", n, "x_default", fixed(best.kernels_us / k[newest, "torch-default", n], 3))
        v.put("gnew", n, "default_us", fixed(k[newest, "torch-default", n], 1))
        cud = p[(p.variant == "torch-cudnn") & (p.dtype == "float16") & (p.N == n)]
        v.put("gnew", n, "cudnn_us", fixed(cud[cud.run == newest].kernels_us.iloc[0], 1))
        earlier = cud[cud.run != newest].kernels_us
        v.put("gnew", n, "cudnn_earlier", f"{fixed(earlier.min(), 1)}--{fixed(earlier.max(), 1)}")
    # The SM clock NVML read during each Gluon stage's samples in the newest run, float16 at each N of the sweep (the
    # lowest and highest over its repeats): \val{gclock}{<stage>@<N>}{range}, in MHz.
    tm = timed[(timed.run == newest) & (timed.set == "n_sweep") & (timed.dtype == "float16")
               & timed.variant.isin(GLUON_STAGES)]
    for (st, n), mhz in tm.groupby(["variant", "N"]).sm_mhz:
        v.put("gclock", f"{st}@{n}", "range", f"{fixed(mhz.min(), 0)}--{fixed(mhz.max(), 0)}")
    # The leave-one-out ablations of each Gluon stage that are no stage (those of the last stage a run timed as its
    # ablation set): each one's time against its stage's in the newest run that timed both, float16 at the
    # headline's shape (medians over that run's samples there): \val{gloo}{<variant>}{pct} (percent), {run}.
    ab = timed[(timed.dtype == "float16") & timed.headline.astype(bool)]
    for st in GLUON_STAGES:
        for name, sw in leave_one_out(st).items():
            if stage_of(sw) is not None:
                continue
            both = [r for r in sorted(set(ab.run), key=run_number) if {name, st} <= set(ab[ab.run == r].variant)]
            if both:
                r = both[-1]
                here = ab[ab.run == r].groupby("variant").time_us.median()
                v.put("gloo", name, "pct", f"{100 * (here[name] / here[st] - 1):+.1f}")
                v.put("gloo", name, "run", r)
    top = int(p.N.max())
    v.macro("GluonMaxN", top)
    for st in GLUON_STAGES:
        if (st, "float16", top) in t:
            v.put("gus", f"{st}@{top}", "fp16", fixed(t[st, "float16", top], 0))
    cud = p[(p.variant == "torch-cudnn") & p.run.isin(runs) & (p.dtype == "float16") & (p.N == top)]
    v.macro("GluonCudnnMaxNUs", fixed(cud.time_us.median(), 0))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
