"""Which rows of the tidy tables the paper's headline means, read from the one definition of each: the article's
shape (kernels.shapes.HEADLINE), its tile (kernels.stages.ARTICLE_TILE), the stages (kernels.stages.STAGES)."""
from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from kernels.shapes import HEADLINE as _HEADLINE
from kernels.stages import ARTICLE_STAGES as _ARTICLE_STAGES
from kernels.stages import ARTICLE_TILE as _TILE
from kernels.stages import BASELINE as _BASELINE
from kernels.stages import FINAL as _FINAL
from kernels.stages import GLUON as _GLUON
from kernels.stages import OUR_STAGES as _OUR_STAGES
from kernels.stages import SWITCHES as _SWITCHES
from kernels.stages import default_tile as _default_tile
from kernels.stages import extended as _extended
from kernels.stages import stage_adding as _stage_adding
from kernels.stages import without as _without
from kernels.stages import parse_switches_label, resolve_variant, switches_label, variant_name  # noqa: F401

HEADLINE = _HEADLINE.as_dict()
ARTICLE_TILE = asdict(_TILE)
STAGES = list(_ARTICLE_STAGES)                       # the article's stages (v0 ... v7)
OUR_STAGES = list(_OUR_STAGES)                       # ours beyond it, on Hopper
ALL_STAGES = STAGES + OUR_STAGES
GLUON_STAGES = OUR_STAGES[OUR_STAGES.index(_GLUON["gluon"].stage):]   # ours in Gluon (v19 on)
TRITON_OURS = OUR_STAGES[:OUR_STAGES.index(_GLUON["gluon"].stage)]            # ours in Triton (v8 ... v18)
BASELINE, FINAL = _BASELINE, _FINAL                  # the article's first and last stages
FINAL_NO_WS = _without(_FINAL, "warp_specialize")    # the final stage without warp specialization
CAUSAL_SKIP_STAGE = _stage_adding("causal_skip")     # the stage that skips the blocks above the diagonal
EXTENSION_VARIANTS = list(_extended(STAGES[-1]))  # our own variants beyond the article (v7+prescale_q)
SWITCHES = list(_SWITCHES)                          # the article's switches, in its order
TORCH = ["torch-flash", "torch-default", "torch-cudnn"]
# The time every ratio to a PyTorch backend (and every claim's time) takes, per run and entry: the kernels alone
# (per_run.csv's kernels_us, the kernel timer's sum of the call's kernels), not time_us, all of the call's GPU work,
# which for cuDNN (torch-cudnn, torch-default) holds a memset before its kernel. Our kernels and FlashAttention-2's
# launch kernels alone: for them the two are the same.
RATIO_TIME = "kernels_us"
RATIO_TIME_WORDS = {"kernels_us": "the kernels alone", "time_us": "all of a call's GPU work"}[RATIO_TIME]
# The host time per call (us) that every stage's cached call should stay within (issue 20).
HOST_TARGET_US = 15
# Issue 18's goals: the best Gluon stage at most GOAL_X times cuDNN's time at every N of one run, in both dtypes,
# and at most QW_GOAL_X at every Qwen3 layout at N = 1024 and 8192.
GOAL_X = 0.90
QW_GOAL_X = 0.95
STRETCH_TFLOPS = 650       # issue 18's stretch: the Gluon leader's causal TFLOP/s at N = 16384, its clock stated


def where(df: pd.DataFrame, **kv) -> pd.Series:
    """Boolean mask of the rows whose columns equal the given values."""
    sel = pd.Series(True, index=df.index)
    for k, v in kv.items():
        sel &= df[k] == v
    return sel


def at_headline(df: pd.DataFrame) -> pd.Series:
    return where(df, **HEADLINE)


def at_article_tile(df: pd.DataFrame) -> pd.Series:
    return where(df, **ARTICLE_TILE)


def at_own_tile(df: pd.DataFrame) -> pd.Series:
    """Rows of Triton variants timed at their own default tile (the article's for v0 ... v7, ours from v8 on, the
    tuned tile of its N for a tuned stage); rows of other implementations are kept."""
    tiles: dict = {}

    def own(r) -> bool:
        if r.impl != "triton":
            return True
        key = (r.switches, int(r.D), int(r.N))
        if key not in tiles:
            t = _default_tile(parse_switches_label(r.switches), int(r.D), int(r.N))
            tiles[key] = (t.block_m, t.block_n, t.num_warps, t.num_stages)
        return (r.block_m, r.block_n, r.num_warps, r.num_stages) == tiles[key]
    return df.apply(own, axis=1) if len(df) else pd.Series(dtype=bool)


def run_number(run: str) -> int:
    """The ordinal of a run folder (run-16-x2 -> 16), to list runs in the order they were made."""
    try:
        return int(run.split("-")[1])
    except (IndexError, ValueError):
        raise ValueError(f"run folder {run!r} is not named run-<number>[-suffix]") from None


def change_on_one_gpu(times: pd.DataFrame, gpus: pd.DataFrame, new: str, old: str) -> pd.Series:
    """Per run, 100 (new / old - 1) of per_run's times pivoted by run (rows) and variant (columns), in the runs where
    both entries were timed on one GPU (gpus: the same pivot of per_run's gpu column; a run without a GPU recorded
    for an entry keeps its change). The sets of an x2 run ran on two GPUs, so that a change between an entry of one
    set and an entry of another would set one GPU against the other."""
    change = (100 * (times[new] / times[old] - 1)).dropna()
    if new in gpus and old in gpus:
        g = gpus.reindex(change.index)
        change = change[same_gpu(g[new], g[old])]
    return change


def same_gpu(a: pd.Series, b: pd.Series) -> pd.Series:
    """Per run, whether two entries' GPUs (aligned Series) are one: equal, or either not recorded."""
    return (a == b) | a.isna() | b.isna()


def pivot_with_gpus(pr: pd.DataFrame, values: str = "time_us") -> tuple:
    """(times, gpus): per_run's rows pivoted by run and variant, the `values` column and the gpu column."""
    times = pr.pivot_table(index="run", columns="variant", values=values)
    gpus = pr.pivot_table(index="run", columns="variant", values="gpu", aggfunc="first")
    return times, gpus


def stage_ranges(stages: list) -> str:
    """Stage names as runs of consecutive registry entries: v13, v19-v37."""
    idx = sorted(ALL_STAGES.index(s) for s in stages)
    runs, start = [], idx[0]
    for a, b in zip(idx, idx[1:] + [None]):
        if b != a + 1:
            runs.append(ALL_STAGES[start] if start == a else f"{ALL_STAGES[start]}-{ALL_STAGES[a]}")
            start = b
    return ", ".join(runs)
