"""One run's N sweep (bench-n_sweep/timings.csv of a sealed run) as the paper's run paragraphs read it: each entry's
median over its repeats (RATIO_TIME: the kernels alone), its ratio to cuDNN's, the fastest Gluon kernel per (dtype,
N) (the stages that launch one kernel pooled), a committed prediction's range and its verdict."""
import json
import statistics
from pathlib import Path

import pandas as pd

from kernels.shapes import attention_flops
from kernels.stages import STAGES, default_tile, small_n_route
from pipeline.latex import fixed
from pipeline.selection import ALL_STAGES, GLUON_STAGES, RATIO_TIME

DTYPES = {"float16": "fp16", "bfloat16": "bf16"}    # a dtype's short name: the values steps' columns and rows


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


def third(samples, last: bool) -> float:
    """The median of the first or the last third of an entry's samples, in order (a list, or sample_times:
    ';'-separated)."""
    x = [float(v) for v in (str(samples).split(";") if isinstance(samples, str) else samples)]
    k = max(1, len(x) // 3)
    return float(statistics.median(x[-k:] if last else x[:k]))


def kernels_alone(t: pd.DataFrame, times: pd.Series) -> pd.DataFrame:
    """The rows t with RATIO_TIME replaced by another of each entry's times (its fastest sample, min_us; a median of
    some of its samples), less the row's GPU work beyond its kernels (time_us - kernels_us: cuDNN's memset, none for
    ours), so that it compares with the medians of the kernels alone."""
    return t.assign(**{RATIO_TIME: times - (t.time_us - t.kernels_us)})


def one_gpu(folder: Path) -> str:
    """The GPU (UUID) every timed set of a run's folder ran on (its bench-*/timings.csv); ValueError where two sets
    ran on two GPUs: a run paragraph's ratios compare within one GPU."""
    uuids = {u for f in sorted(Path(folder).glob("bench-*/timings.csv")) for u in pd.read_csv(f).gpu_uuid.unique()}
    if len(uuids) != 1:
        raise ValueError(f"{folder}: its sets ran on {sorted(uuids)}; this paragraph reads a run of one GPU")
    return uuids.pop()


def launch_of(stage: str, D: int, N: int) -> tuple:
    """What a stage launches at (D, N) at its own tile: the switches its kernel runs, whether its grid is a snake, and
    the tile (kernels.stages.small_n_route): two stages with the same launch run one kernel there (v32 runs v31's
    above N = 512)."""
    sw = STAGES[stage].switches
    tile = default_tile(sw, D, N)
    return (*small_n_route(sw, tile), tile)


def best_gluon(t: pd.DataFrame) -> pd.DataFrame:
    """Per (dtype, N) of a sweep's rows t: the fastest Gluon kernel's ratio to cuDNN (x: the median of its repeats
    over cuDNN's median) and the stages that launch it (stage: joined by '/'). Stages that launch one kernel at that
    N (launch_of) are one entry, their repeats pooled: the faster of two timings of one kernel is not a faster
    kernel (run-31's v31 and v32 at 16384)."""
    out = {}
    for (dtype, n), g in t.groupby(["dtype", "N"]):
        cudnn = g[g.variant == "torch-cudnn"][RATIO_TIME].median()
        d = int(g.D.iloc[0])
        kernels = {}
        for stage in (s for s in GLUON_STAGES if (g.variant == s).any()):
            kernels.setdefault(launch_of(stage, d, int(n)), []).append(stage)
        if not kernels or pd.isna(cudnn):
            raise ValueError(f"{dtype} N={n}: the sweep timed {'no Gluon stage' if not kernels else 'no cuDNN'} there; "
                             "the goal compares the fastest Gluon kernel with cuDNN in one sweep")
        x = {"/".join(st): g[g.variant.isin(st)][RATIO_TIME].median() / cudnn for st in kernels.values()}
        stage = min(x, key=x.get)
        out[(dtype, n)] = {"x": x[stage], "stage": stage}
    return pd.DataFrame.from_dict(out, orient="index").rename_axis(["dtype", "N"])


def repeat_times(t: pd.DataFrame) -> pd.DataFrame:
    """Each entry's time (RATIO_TIME) per (dtype, N, repeat), one column per variant: the pairs a repeat timed one
    after the other."""
    return t.pivot_table(index=["dtype", "N", "repeat"], columns="variant", values=RATIO_TIME)


def steady_ratios(t: pd.DataFrame, n: int) -> pd.DataFrame:
    """At N = n, per dtype (rows) and variant (columns): the median steady stream's time per call over cuDNN's (the
    steady step's columns, on the rows of the first repeat where it ran)."""
    s = t[(t.N == n) & t.steady_call_us.notna()]
    steady = s.groupby(["dtype", "variant"]).steady_call_us.median().unstack("variant")
    return steady.div(steady["torch-cudnn"], axis=0)


NCU_DURATION = "gpu__time_duration.sum"


def ncu_durations(ncu_large_n: Path, dtype: str, D: int) -> pd.DataFrame:
    """A run's Nsight profile at every N (profile/ncu_large_n.csv: one replay per entry, every cache flushed) as a
    sweep's rows of one repeat, its duration as RATIO_TIME (ns), for best_gluon; the profiled dtype alone."""
    nc = pd.read_csv(ncu_large_n)
    nc = nc[nc.instance.isna() & (nc.metric == NCU_DURATION) & nc.key.str.contains(f"|{dtype}|", regex=False)].copy()
    nc["N"] = nc.key.str.split("|").str[2].str.split(",").str[3].astype(int)
    return nc.assign(dtype=dtype, D=D, repeat=0).rename(columns={"value": RATIO_TIME})


def fastest(t: pd.DataFrame) -> pd.DataFrame:
    """The rows with RATIO_TIME replaced by each entry's fastest sample of its kernels alone."""
    return kernels_alone(t, t.min_us)


def worst(best: pd.DataFrame) -> tuple:
    """The highest ratio of a tally (best_gluon's rows), to four decimals (a tally's verdict is on the unrounded ratio,
    and 0.9003 is above the goal's 0.90), and where: ('0.8914', 'bfloat16, $N=$ 8192')."""
    (dtype, n), b = max(best.iterrows(), key=lambda r: r[1].x)
    return fixed(b.x, 4), f"{dtype}, $N=$ {n}"


def qwen3_points(q: pd.DataFrame) -> list:
    """Per Qwen3 layout and N of the qwen3 set's rows q (float16): (x, stage, layout, N), the fastest Gluon stage's
    time over cuDNN's."""
    q = q[(q.dtype == "float16") & (q.status == "ok")]
    med = q.groupby(["layout", "N", "variant"])[RATIO_TIME].median().unstack("variant")
    ours = med[[s for s in GLUON_STAGES if s in med.columns]]
    x = ours.div(med["torch-cudnn"], axis=0)
    return [(float(r.min()), r.idxmin(), lay, int(n)) for (lay, n), r in x.iterrows()]


# the steps a finished run leaves, by a file of each: a folder without one of them is not a run paragraph's run
RUN_STEPS = ("verify/correctness.csv", "timer_check/timer_check.csv", "ceilings/ceilings.csv",
             "profile/ncu_duration.csv", "profile/ncu_premise.csv", "profile/ncu_large_n.csv",
             "qwen3_e2e/qwen3_e2e.csv")


def by_third(t: pd.DataFrame, last: bool) -> pd.DataFrame:
    """The rows with RATIO_TIME replaced by the median of each entry's first or last third of samples, its kernels
    alone."""
    return kernels_alone(t, t.sample_times.map(lambda s: third(s, last)))


def rate(t: pd.DataFrame, stages: list, dtype: str, n: int, times: pd.Series) -> float:
    """The causal TFLOP/s at N = n of a sweep's rows t of the given stages (pooled) at the median of times."""
    one = t[(t.N == n) & (t.dtype == dtype)].iloc[0]
    flops = attention_flops(int(one.B), int(one.H), n, int(one.D), bool(one.causal))
    return flops / times[(t.N == n) & (t.dtype == dtype) & t.variant.isin(stages)].median() / 1e6


def check_run(run: Path, env: dict) -> None:
    """A finished run of one commit: every step's file there (RUN_STEPS), and every step's env.json of the verify step's
    commit and kind of GPU; ValueError otherwise."""
    missing = [f for f in RUN_STEPS if not (run / f).exists()]
    if missing:
        raise ValueError(f"{run}: no {', '.join(missing)}: not a finished run (a probe's folder?)")
    for f in sorted(run.glob("*/env.json")):
        e = json.loads(f.read_text())
        if (e["project_commit"], e["gpu"]) != (env["project_commit"], env["gpu"]):
            raise ValueError(f"{f}: commit {e['project_commit'][:7]} on {e['gpu']}, the verify step's "
                             f"{env['project_commit'][:7]} on {env['gpu']}: one run is one commit on one kind of GPU")


def verify_counts(correctness: Path) -> dict:
    """A run's verify grid (verify/correctness.csv) as the text counts it: its stages as a range from the registry's
    first ('v0-v38'), and its cases ok, refused and WRONG; ValueError where the stages are not such a range or a
    status is none of the three."""
    c = pd.read_csv(correctness)
    stages = [s for s in ALL_STAGES if (c.variant == s).any()]
    if not stages or stages != ALL_STAGES[:len(stages)] or set(c.status) - {"ok", "refused", "WRONG"}:
        raise ValueError(f"{correctness}: stages {stages} and statuses {sorted(set(c.status))}, where the text says "
                         f"a range from {ALL_STAGES[0]} and counts ok, refused and WRONG")
    return dict(stages=f"{stages[0]}-{stages[-1]}", ok=str(int((c.status == "ok").sum())),
                refused=str(int((c.status == "refused").sum())), wrong=str(int((c.status == "WRONG").sum())))


def goal_tally(best: pd.DataFrame, goal_x: float) -> dict:
    """best_gluon's rows against the goal: the points at most goal_x (met) of all (of), and the highest (worst_x,
    four decimals) and where (worst_at), as the text quotes them."""
    x, at = worst(best)
    return dict(met=str(int((best.x <= goal_x).sum())), of=str(len(best)), worst_x=x, worst_at=at)


def qwen3_tally(points: list, goal_x: float) -> dict:
    """qwen3_points' points against the Qwen3 goal: met of of, and the highest (worst_x, three decimals) with its
    layout, length and stage (worst_at)."""
    x, stage, lay, n = max(points)
    return dict(met=str(sum(p <= goal_x for p, *_ in points)), of=str(len(points)), worst_x=fixed(x, 3),
                worst_at=f"{lay}, $N=$ {n}, {stage}")


def long_rate(t: pd.DataFrame, best: pd.DataFrame, dtype: str, n: int) -> dict:
    """At N = n in dtype, the stages best_gluon names there (pooled): their causal TFLOP/s at the median of the
    sweep's times (tflops, a float) and the lowest and highest SM clock NVML read over their samples (MHz)."""
    stages = best.loc[(dtype, n), "stage"].split("/")
    r = t[(t.N == n) & (t.dtype == dtype) & t.variant.isin(stages)]
    return dict(stage="/".join(stages), tflops=rate(t, stages, dtype, n, t[RATIO_TIME]),
                mhzlo=f"{r.sm_min_mhz.min():.0f}", mhzhi=f"{r.sm_max_mhz.max():.0f}")
