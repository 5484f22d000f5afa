"""Nsight Compute's warp-state samples per SASS instruction (the SourceCounters section, as
workflow/scripts/tools/stall_pcs.py writes a report's per-instruction counters): a launch's KV loop picked by how often
its instructions ran, and its samples split by the kind of instruction a warp was sampled at.

A launch's KV loop is the instructions executed at least LOOP_FRACTION times as often as its most executed one (the
consumers' steps; a producer's loop, idle warps and each tile's first and last steps run far less often). Its samples
are split by opcode (CLASSES): where a consumer warp's time in the loop goes, whether it waits there or issues.
"""
from __future__ import annotations

import re

import pandas as pd

LOOP_FRACTION = 0.25
# (class, opcode pattern), first match wins; an opcode no pattern matches is `other` (integer, uniform, moves)
CLASSES = [
    ("mma_issue", r"(HGMMA|WARPGROUP\.ARRIVE)"),          # the warpgroup MMAs' issue and their register fence
    ("mma_wait", r"WARPGROUP\.DEPBAR"),                    # waiting for this warpgroup's own MMAs
    ("sync", r"(SYNCS|BAR|VOTE|BRA|NOP|WARPSYNC|SHFL)"),   # mbarrier waits (a try-wait and its branch), barriers
    ("exp", r"MUFU"),
    ("max", r"FMNMX"),
    ("convert", r"F2FP"),
    ("float_other", r"(FADD|FFMA|FMUL|FSEL|FSETP|FCHK)"),
]
SOFTMAX = ("exp", "max", "convert", "float_other")


def opcode(sass: str) -> str:
    """The opcode of one SASS instruction, its predicate (@P0, @!UP1) left off: 'HGMMA.64x128x16.F32'."""
    words = sass.split()
    return words[1] if words[0].startswith("@") else words[0]


def kind(op: str) -> str:
    """The CLASSES name of an opcode ('other' for none)."""
    return next((name for name, pattern in CLASSES if re.match(pattern, op)), "other")


def instructions(path) -> pd.DataFrame:
    """stall_pcs.py's CSV: the rows of SASS instructions, with their samples (0 where none) and kinds."""
    d = pd.read_csv(path)
    if "smsp__pcsamp_sample_count" not in d or "inst_executed" not in d:
        raise ValueError(f"{path}: no warp-state samples or executed-instruction counts per instruction "
                         "(profile with --section SourceCounters)")
    d = d[d.sass.notna() & (d.sass.astype(str).str.strip() != "")].copy()
    d["samples"] = d.smsp__pcsamp_sample_count.fillna(0)
    d["executed"] = d.inst_executed.fillna(0)
    d["kind"] = [kind(opcode(s)) for s in d.sass]
    return d


def kv_loop(d: pd.DataFrame) -> pd.DataFrame:
    """The instructions executed at least LOOP_FRACTION times as often as the most executed one."""
    return d[d.executed >= LOOP_FRACTION * d.executed.max()]


def shares(d: pd.DataFrame) -> dict:
    """{class: % of the KV loop's samples} (every class, 0 where none), 'softmax', and 'loop': the loop's % of all."""
    loop = kv_loop(d)
    total = loop.samples.sum()
    if total <= 0:
        raise ValueError("no warp-state samples in the KV loop")
    by = loop.groupby("kind").samples.sum() / total * 100
    out = {name: float(by.get(name, 0.0)) for name, _ in CLASSES + [("other", "")]}
    out["softmax"] = sum(out[k] for k in SOFTMAX)
    out["loop"] = float(total / d.samples.sum() * 100)
    return out


def per_step(d: pd.DataFrame, pattern: str) -> float:
    """Instructions matching an opcode pattern per execution of the loop's most common count (a step of one
    warpgroup: the KV loop's instructions run once per step; code that both consumers share counts both)."""
    loop = kv_loop(d)
    step = loop.executed.mode().iloc[0]
    hits = loop[[bool(re.match(pattern, opcode(s))) for s in loop.sass]]
    return float(hits.executed.sum() / step)
