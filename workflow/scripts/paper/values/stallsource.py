"""The paper's numbers from probes/stall-source (data/nvidia-h100-80gb-hbm3, sealed): Nsight Compute's warp-state
samples per SASS instruction (the SourceCounters section) of one launch of v36, v37 and cuDNN at N = 16384 and of
v36 and cuDNN at 4096 (float16, the headline layout), deep in a stream of calls, clocks as found.

Each launch's KV loop is the instructions executed at least LOOP_FRACTION times as often as its most executed one
(the consumers' steps; the producer's loop, the idle warps and the prologue and epilogue run far less often). Its
samples are split by the kind of instruction a warp was sampled at (CLASSES, by opcode): where a consumer warp's
time in the loop goes, whether it waits there or issues.

- \\val{stall}{<entry>@<N>}{mmaissue|mmawait|sync|exp|max|softmax}: a class's share of the KV loop's samples (%)
  (CLASSES; `softmax`: the exponentials, maxima, conversions and other float arithmetic together);
- \\val{stall}{<entry>@<N>}{loop}: the KV loop's share of all the launch's samples (%);
- \\val{stall}{<entry>@<N>}{mufu|fmnmx}: MUFU.EX2 and FMNMX instructions per consumer warpgroup and step;
- \\StallSourceGpu, \\StallSourceCommit: the probe's GPU and commit.
"""
import json
import re
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed

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
ENTRIES = {"v36": "v36", "v37": "v37", "cudnn": "torch-cudnn"}


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


def values(seal_file: Path, sources: list, env: Path) -> Values:
    folder = Path(seal_file).parent
    seal.verify(folder)
    v = Values("stall")
    v.macro("StallSourceCommit", (folder / "commit.txt").read_text().strip()[:7])
    smi = (folder / "nvidia-smi.csv").read_text().splitlines()
    v.macro("StallSourceGpu", smi[1].split(",")[1].strip()[:12])
    if json.loads(Path(env).read_text())["capability"] != "9.0":
        raise ValueError(f"{env}: not an sm_90 GPU, where the text reads Hopper's SASS")
    for path in map(Path, sources):
        entry, _dtype, n = path.name.removesuffix(".csv.gz").rsplit("-", 2)
        row = next(k for k, e in ENTRIES.items() if e == entry)
        d = instructions(path)
        share, key = shares(d), f"{row}@{n}"
        v.put("stall", key, "loop", fixed(share["loop"], 1))
        v.put("stall", key, "mmaissue", fixed(share["mma_issue"], 1))
        v.put("stall", key, "mmawait", fixed(share["mma_wait"], 1))
        v.put("stall", key, "sync", fixed(share["sync"], 1))
        v.put("stall", key, "softmax", fixed(share["softmax"], 1))
        v.put("stall", key, "exp", fixed(share["exp"], 1))
        v.put("stall", key, "max", fixed(share["max"], 1))
        # both consumers' code (v36, v37: each its own copy) or one code both run (cuDNN): per warpgroup and step
        copies = 1 if row == "cudnn" else 2
        v.put("stall", key, "mufu", fixed(per_step(d, r"MUFU\.EX2") / copies, 0))
        v.put("stall", key, "fmnmx", fixed(per_step(d, r"FMNMX") / copies, 0))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
