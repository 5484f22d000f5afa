"""The Gluon kernel (kernels.gluon_fwd) on the CPU: it compiles for sm_90 at the tiles it supports, and its SASS shows
what the kernel says it does: Hopper's warpgroup MMA (HGMMA, never mma.sync's HMMA) with P fed from registers, TMA
loads and a TMA store, base-2 exponentials, no spills, and a KV loop that issues the next block's loads before its
own products. With PRODUCER_WARP (stage v20) the kernel is warp-specialized: a one-warp partition issues every K and
V load, the consumer warpgroup keeps the products, and setmaxnreg moves registers from the first to the second;
without it the kernel has no partition. With TWO_CONSUMERS too (stage v21) two 4-warp consumer partitions share the
producer's K/V ring, without register reallocation and without serialized warpgroup MMAs; with REGISTER_REALLOC
(stage v23) they are one 8-warp partition whose setmaxnreg gives them 240 registers, still without serialized MMAs.
With either switch off the
kernel is the one the GPU verified (the same SASS as the source that a sealed grid of data/ records). Gluon kernels
do not run in Triton's interpreter, which these tests set up elsewhere: the kernels are compiled in a subprocess
without TRITON_INTERPRET, and their correctness is a GPU test's."""
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
HEADLINE = (2, 16, 8, 1024, 128)          # B, H, H_kv, N, D: the headline shape (fp16, causal)
SNAKE_SMS = 132                           # SNAKE_SMS of the snake configurations: the H200's SMs

# name -> (shape, dtype, causal, block_m, block_n, num_stages). N is a run-time argument (only its divisibility by
# 16 specializes the kernel), so the headline's 128x64 kernel is also the one of N = 16384, v13's tile there.
CONFIGS = {
    "64x64s3": (HEADLINE, "float16", True, 64, 64, 3),
    "128x64s2": (HEADLINE, "float16", True, 128, 64, 2),
    "64x128s2": (HEADLINE, "float16", True, 64, 128, 2),
    "64x64s3-D64": ((2, 16, 8, 1024, 64), "float16", True, 64, 64, 3),
    "128x64s2-D64": ((2, 16, 8, 1024, 64), "float16", True, 128, 64, 2),
    "64x64s3-bf16": (HEADLINE, "bfloat16", True, 64, 64, 3),
    "128x64s2-bf16": (HEADLINE, "bfloat16", True, 128, 64, 2),
    "64x64s3-noncausal": (HEADLINE, "float16", False, 64, 64, 3),
    "128x64s2-noncausal": (HEADLINE, "float16", False, 128, 64, 2),
    # a ragged N (no divisibility by 16) without grouping (GROUP = 1 is a constant), and N = 1 (a constant: the
    # compiler drops the unmasked loop) with single-batch, single-head tensors (descriptor strides of size-1 dims)
    "64x64s3-ragged": ((1, 4, 4, 1000, 128), "float16", True, 64, 64, 3),
    "128x64s2-N1": ((1, 1, 1, 1, 64), "bfloat16", False, 128, 64, 2),
}
LOOPED = [name for name in CONFIGS if CONFIGS[name][0][3] > 1]     # the configurations whose KV loops stay loops

# The kernel with PRODUCER_WARP (stage v20): name -> (shape, dtype, causal, block_m, block_n, num_stages, the
# configuration above that compiles the same without it).
PRODUCER_CONFIGS = {
    "pw-64x64s3": (HEADLINE, "float16", True, 64, 64, 3, "64x64s3"),
    "pw-128x64s2": (HEADLINE, "float16", True, 128, 64, 2, "128x64s2"),
    "pw-64x64s3-bf16-noncausal-D64": ((2, 16, 8, 1024, 64), "bfloat16", False, 64, 64, 3,
                                      "64x64s3-bf16-noncausal-D64"),
    "pw-64x64s3-ragged": ((1, 4, 4, 1000, 128), "float16", True, 64, 64, 3, "64x64s3-ragged"),
    "pw-128x64s2-N1": ((1, 1, 1, 1, 64), "bfloat16", False, 128, 64, 2, "128x64s2-N1"),
}
CONFIGS["64x64s3-bf16-noncausal-D64"] = ((2, 16, 8, 1024, 64), "bfloat16", False, 64, 64, 3)   # a twin of the above
PRODUCER_LOOPED = [name for name in PRODUCER_CONFIGS if PRODUCER_CONFIGS[name][0][3] > 1]

# The kernel with TWO_CONSUMERS (stage v21, on PRODUCER_WARP): name -> (shape, dtype, causal, block_m, block_n,
# num_stages, the PRODUCER_WARP configuration whose consumer runs the same 64x64 steps, or None). Its one tile,
# 128x64 with three stages (two also taken), at both head dims, both dtypes, causal and not, ragged and N = 1.
TWO_CONSUMER_CONFIGS = {
    "tc-128x64s3": (HEADLINE, "float16", True, 128, 64, 3, "pw-64x64s3"),
    "tc-128x64s2": (HEADLINE, "float16", True, 128, 64, 2, None),
    "tc-128x64s3-bf16": (HEADLINE, "bfloat16", True, 128, 64, 3, None),
    "tc-128x64s3-noncausal": (HEADLINE, "float16", False, 128, 64, 3, None),
    "tc-128x64s3-D64": ((2, 16, 8, 1024, 64), "float16", True, 128, 64, 3, None),
    "tc-128x64s3-bf16-noncausal-D64": ((2, 16, 8, 1024, 64), "bfloat16", False, 128, 64, 3, None),
    "tc-128x64s3-ragged": ((1, 4, 4, 1000, 128), "float16", True, 128, 64, 3, None),
    "tc-128x64s3-N1": ((1, 1, 1, 1, 64), "bfloat16", False, 128, 64, 3, None),
}
TWO_CONSUMER_LOOPED = [name for name in TWO_CONSUMER_CONFIGS if TWO_CONSUMER_CONFIGS[name][0][3] > 1]
# The kernel with SOFTMAX_OVERLAP (stage v22, on TWO_CONSUMERS): name -> the TWO_CONSUMERS configuration it adds the
# overlap to (at the same shape, dtype, causality and tile).
OVERLAP_CONFIGS = {"ov-" + name: TWO_CONSUMER_CONFIGS[name] for name in
                   ("tc-128x64s3", "tc-128x64s2", "tc-128x64s3-bf16", "tc-128x64s3-noncausal", "tc-128x64s3-D64",
                    "tc-128x64s3-ragged", "tc-128x64s3-N1")}
OVERLAP_LOOPED = [name for name in OVERLAP_CONFIGS if OVERLAP_CONFIGS[name][0][3] > 1]
# The kernel with REGISTER_REALLOC (stage v23, on SOFTMAX_OVERLAP): name -> (shape, dtype, causal, block_m, block_n,
# num_stages) at its tiles (kernels.gluon_fwd.REGISTER_REALLOC_TILES), both head dims and dtypes, ragged N and N = 1.
REALLOC_CONFIGS = {
    "rr-128x128s2": (HEADLINE, "float16", True, 128, 128, 2),
    "rr-128x128s3": (HEADLINE, "float16", True, 128, 128, 3),
    "rr-128x64s3": (HEADLINE, "float16", True, 128, 64, 3),
    "rr-128x128s2-bf16-noncausal-D64": ((2, 16, 8, 1024, 64), "bfloat16", False, 128, 128, 2),
    "rr-128x128s2-ragged": ((1, 4, 4, 1000, 128), "float16", True, 128, 128, 2),
    "rr-128x128s2-N1": ((1, 1, 1, 1, 64), "bfloat16", False, 128, 128, 2),
}
REALLOC_LOOPED = [name for name in REALLOC_CONFIGS if REALLOC_CONFIGS[name][0][3] > 1]
# The kernel with SPLIT_CONSUMERS (stage v24, on REGISTER_REALLOC): name -> (shape, dtype, causal, block_m, block_n,
# num_stages) at its tiles (kernels.gluon_fwd.SPLIT_CONSUMERS_TILES), both head dims and dtypes, ragged N and N = 1.
SPLIT_CONFIGS = {
    "sc-128x128s2": (HEADLINE, "float16", True, 128, 128, 2),
    "sc-128x128s3": (HEADLINE, "float16", True, 128, 128, 3),
    "sc-128x128s2-bf16-noncausal-D64": ((2, 16, 8, 1024, 64), "bfloat16", False, 128, 128, 2),
    "sc-128x128s2-ragged": ((1, 4, 4, 1000, 128), "float16", True, 128, 128, 2),
    "sc-128x128s2-N1": ((1, 1, 1, 1, 64), "bfloat16", False, 128, 128, 2),
}
SPLIT_LOOPED = [name for name in SPLIT_CONFIGS if SPLIT_CONFIGS[name][0][3] > 1]
# The kernel with PINGPONG (stage v25, on SPLIT_CONSUMERS): v24's configurations with the turns.
PINGPONG_CONFIGS = {"pp-" + name.removeprefix("sc-"): c for name, c in SPLIT_CONFIGS.items()}
PINGPONG_LOOPED = [name for name in PINGPONG_CONFIGS if PINGPONG_CONFIGS[name][0][3] > 1]
# The kernel with PERSISTENT (stage v26, on SPLIT_CONSUMERS, with v25's PINGPONG): v25's configurations at two stages
# (kernels.gluon_fwd.PERSISTENT_TILES).
PERSISTENT_CONFIGS = {"ps-" + name.removeprefix("pp-"): c for name, c in PINGPONG_CONFIGS.items() if c[5] == 2}
PERSISTENT_LOOPED = [name for name in PERSISTENT_CONFIGS if PERSISTENT_CONFIGS[name][0][3] > 1]
# The kernel with SECTIONS (stage v27, on PERSISTENT): v26's configurations with the tiles in sections of K/V heads.
SECTIONS_CONFIGS = {"sec-" + name.removeprefix("ps-"): c for name, c in PERSISTENT_CONFIGS.items()}
SECTIONS_LOOPED = ["sec-" + name.removeprefix("ps-") for name in PERSISTENT_LOOPED]
# The kernel with FOLD (stage v28, on SECTIONS): v27's configurations with the folded query blocks of a one-round grid.
FOLD_CONFIGS = {"fold-" + name.removeprefix("sec-"): c for name, c in SECTIONS_CONFIGS.items()}
FOLD_LOOPED = ["fold-" + name.removeprefix("sec-") for name in SECTIONS_LOOPED]
# The kernel with LEAN_BARRIERS (stage v29, on FOLD): v28's configurations without the consumers' membar barriers.
LEAN_CONFIGS = {"lean-" + name.removeprefix("fold-"): c for name, c in FOLD_CONFIGS.items()}
LEAN_LOOPED = ["lean-" + name.removeprefix("fold-") for name in FOLD_LOOPED]
# The kernel with PAIRED_CVT (stage v30, on LEAN_BARRIERS): v29's configurations with P converted two at a time.
PAIRED_CONFIGS = {"pair-" + name.removeprefix("lean-"): c for name, c in LEAN_CONFIGS.items()}
# The kernel with RARE_RESCALE (stage v31, on PAIRED_CVT): v30's configurations with the conditional rescale.
RARE_CONFIGS = {"rare-" + name.removeprefix("pair-"): c for name, c in PAIRED_CONFIGS.items()}
# The kernel with FUSED_EXPONENT (stage v33, on RARE_RESCALE): v31's configurations with the fused exponent.
FUSED_CONFIGS = {"fused-" + name.removeprefix("rare-"): c for name, c in RARE_CONFIGS.items()}
# The kernel with SHORT_REDUCTIONS (stage v34, on FUSED_EXPONENT): v33's configurations with short row reductions.
SHORT_CONFIGS = {"short-" + name.removeprefix("fused-"): c for name, c in FUSED_CONFIGS.items()}
# The kernel with LANE_SUMS (stage v35, on FUSED_EXPONENT, without SHORT_REDUCTIONS): v33's configurations with each
# thread's partial row sums kept across the steps.
LANE_CONFIGS = {"lane-" + name.removeprefix("fused-"): c for name, c in FUSED_CONFIGS.items()}
# The kernel with LANE_MAX (stage v36, on LANE_SUMS): v35's configurations with the row maxima kept per lane.
MAX_CONFIGS = {"max-" + name.removeprefix("lane-"): c for name, c in LANE_CONFIGS.items()}
# The kernel with Q_REGS (stage v37, on LANE_MAX): v36's configurations with the q k^T products' Q from registers.
QREG_CONFIGS = {"qreg-" + name.removeprefix("max-"): c for name, c in MAX_CONFIGS.items()}
# The kernel with EARLY_EXP (stage v38, on LANE_MAX, without Q_REGS): v36's configurations with the probabilities taken
# from the maxima before the step, beside the step's maxima.
EARLY_CONFIGS = {"early-" + name.removeprefix("max-"): c for name, c in MAX_CONFIGS.items()}
# The kernel with SNAKE_SMS (stage v32's small_n_tile, on v19's kernel): v19's configurations of 64-row tiles with
# its programs dealt in a snake over 132 SMs (name -> the configuration above that compiles the same without it).
SNAKE_CONFIGS = {"snake-" + name: name for name in ("64x64s3", "64x64s3-bf16-noncausal-D64", "64x64s3-ragged",
                                                      "64x128s2")}
# the persistent kernels (v26 to v31, v33 to v37)
PERSISTENT_LIKE = {**PERSISTENT_CONFIGS, **SECTIONS_CONFIGS, **FOLD_CONFIGS, **LEAN_CONFIGS, **PAIRED_CONFIGS,
                   **RARE_CONFIGS, **FUSED_CONFIGS, **SHORT_CONFIGS, **LANE_CONFIGS, **MAX_CONFIGS,
                   **QREG_CONFIGS}
# the three partitions with setmaxnreg (v24 to v29)
SPLIT_LIKE = {**SPLIT_CONFIGS, **PINGPONG_CONFIGS, **PERSISTENT_LIKE}
# Compiled a second time from the source that the GPU verified (VERIFIED_PREFIX + name): with TWO_CONSUMERS off the
# kernel must be that one, instruction for instruction.
VERIFIED_PREFIX = "verified:"

_COMPILE = textwrap.dedent("""
    import importlib.util, json, subprocess, sys
    from pathlib import Path
    from kernels.build import NVIDIA_BIN
    from kernels.gluon_fwd import compile_for
    configs, out = json.loads(sys.argv[1]), Path(sys.argv[2])
    for name, (shape, dtype, causal, bm, bn, stages, producer, two, overlap, source, *later) in configs.items():
        if source:          # another version of kernels/gluon_fwd.py, as a module of its own
            spec = importlib.util.spec_from_file_location("gluon_fwd_" + Path(source).parent.name, source)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            k = module.compile_for(90, tuple(shape), dtype, causal, bm, bn, stages, producer_warp=producer)
        else:
            k = compile_for(90, tuple(shape), dtype, causal, bm, bn, stages, producer_warp=producer,
                            two_consumers=two, softmax_overlap=overlap, register_realloc=bool(later and later[0]),
                            split_consumers=bool(later[1:] and later[1]), pingpong=bool(later[2:] and later[2]),
                            persistent=bool(later[3:] and later[3]), sections=bool(later[4:] and later[4]),
                            fold=bool(later[5:] and later[5]), lean_barriers=bool(later[6:] and later[6]),
                            paired_cvt=bool(later[7:] and later[7]), rare_rescale=bool(later[8:] and later[8]),
                            snake_sms=int(later[9]) if later[9:] else 0,
                            fused_exponent=bool(later[10:] and later[10]),
                            short_reductions=bool(later[11:] and later[11]),
                            lane_sums=bool(later[12:] and later[12]),
                            lane_max=bool(later[13:] and later[13]),
                            q_regs=bool(later[14:] and later[14]),
                            early_exp=bool(later[15:] and later[15]))
        d = out / name.replace(":", "_")
        d.mkdir(parents=True)
        (d / "kernel.cubin").write_bytes(k.asm["cubin"])
        (d / "kernel.ptx").write_text(k.asm["ptx"])
        (d / "kernel.ttgir").write_text(k.asm["ttgir"])
        (d / "meta.json").write_text(json.dumps({"shared": k.metadata.shared, "num_warps": k.metadata.num_warps}))
        # ptxas's own report of the PTX (registers, spills, and its warnings: a serialized warpgroup MMA)
        ptxas = subprocess.run([str(NVIDIA_BIN / "ptxas"), "-arch=sm_90a", "-v", str(d / "kernel.ptx"), "-o",
                                str(d / "ptxas.cubin")], capture_output=True, text=True, check=True)
        (d / "ptxas.txt").write_text(ptxas.stdout + ptxas.stderr)
""")


def verified_source(tmp: Path) -> tuple | None:
    """(commit, path of a copy) of the newest committed version of kernels/gluon_fwd.py that a sealed GPU grid of
    data/ verified (its SHA-256 recorded with the grid, as tests/test_stages.py reads them) with v19 and v20 right
    and none wrong, or None when there is no git history to read it from."""
    import hashlib

    from gpu_grids import sealed_grids
    verified = {hashes["kernels/gluon_fwd.py"] for c, hashes in sealed_grids()
                if "kernels/gluon_fwd.py" in hashes
                and all((c[c.variant == st].status == "ok").any() and not (c[c.variant == st].status == "WRONG").any()
                        for st in ("v19", "v20"))}
    log = subprocess.run(["git", "log", "--format=%H", "--", "kernels/gluon_fwd.py"], cwd=ROOT, capture_output=True,
                         text=True, check=False)
    if log.returncode != 0:
        return None
    for commit in log.stdout.split():
        text = subprocess.run(["git", "show", f"{commit}:kernels/gluon_fwd.py"], cwd=ROOT, capture_output=True,
                              check=True).stdout
        if hashlib.sha256(text).hexdigest() in verified:
            path = tmp / commit[:12] / "gluon_fwd.py"
            path.parent.mkdir(parents=True)
            path.write_bytes(text)
            return commit, path
    return None


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every configuration compiled for sm_90 in one subprocess (without the interpreter), then read back: name ->
    dict of the metrics, the SASS text and the TTGIR; with those of TWO_CONSUMERS off compiled again from the
    GPU-verified source, under VERIFIED_PREFIX + name ("verified" -> its commit)."""
    from kernels.build import RESOURCE_LINE, _tool, sass_mix
    from kernels.gpus import blocks_per_sm

    out = tmp_path_factory.mktemp("gluon_build")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    configs = {**{name: [*c, False, False, False, ""] for name, c in CONFIGS.items()},
               **{name: [*c[:6], True, False, False, ""] for name, c in PRODUCER_CONFIGS.items()},
               **{name: [*c[:6], True, True, False, ""] for name, c in TWO_CONSUMER_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, ""] for name, c in OVERLAP_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True] for name, c in REALLOC_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True] for name, c in SPLIT_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True] for name, c in PINGPONG_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True]
                  for name, c in PERSISTENT_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True]
                  for name, c in SECTIONS_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True]
                  for name, c in FOLD_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True, True]
                  for name, c in LEAN_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True, True, True]
                  for name, c in PAIRED_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True, True, True, True]
                  for name, c in RARE_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True, True, True, True, 0, True]
                  for name, c in FUSED_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True, True, True, True, 0, True,
                         True] for name, c in SHORT_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True, True, True, True, 0, True,
                         False, True] for name, c in LANE_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True, True, True, True, 0, True,
                         False, True, True] for name, c in MAX_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True, True, True, True, 0, True,
                         False, True, True, True] for name, c in QREG_CONFIGS.items()},
               **{name: [*c[:6], True, True, True, "", True, True, True, True, True, True, True, True, True, 0, True,
                         False, True, True, False, True] for name, c in EARLY_CONFIGS.items()},
               **{name: [*CONFIGS[plain], False, False, False, "", False, False, False, False, False, False, False,
                         False, False, SNAKE_SMS] for name, plain in SNAKE_CONFIGS.items()}}
    source = verified_source(out / "sources")
    if source is not None:
        configs.update({VERIFIED_PREFIX + name: [*c[:9], str(source[1])] for name, c in list(configs.items())
                        if name in CONFIGS or name in PRODUCER_CONFIGS})
    proc = subprocess.run([sys.executable, "-c", _COMPILE, json.dumps(configs), str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = {"verified": None if source is None else source[0]}
    for name in configs:
        d = out / name.replace(":", "_")
        sass = _tool("cuobjdump", "-sass", str(d / "kernel.cubin"))
        usage = RESOURCE_LINE.search(_tool("cuobjdump", "-res-usage", str(d / "kernel.cubin")))
        registers, stack, _, local = (int(x) for x in usage.groups())
        meta = json.loads((d / "meta.json").read_text())
        shared, num_warps = meta["shared"], meta["num_warps"]
        mix = sass_mix(sass)
        result[name] = dict(registers=registers, stack=stack, local=local, shared=shared, mix=mix, sass=sass,
                            ttgir=(d / "kernel.ttgir").read_text(), ptx=(d / "kernel.ptx").read_text(),
                            ptxas=(d / "ptxas.txt").read_text(), num_warps=num_warps,
                            blocks_per_sm=blocks_per_sm(90, registers, shared, num_warps)["blocks_per_sm"])
    return result


def _instructions(sass: str) -> list:
    """(address, instruction text without its predicate) of every SASS instruction."""
    ins = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?(.*?)\s*;", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2)))
    return ins


# a branch and its target's address (the instruction text, without its predicate)
BRANCH = re.compile(r"BRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)")


def innermost_loops_at(ins: list) -> list:
    """The bodies (lists of (address, instruction text)) of the innermost loops (backward branches) among
    instructions ins."""
    spans = []
    for addr, text in ins:
        m = BRANCH.match(text)
        if m and int(m.group(1), 16) < addr:
            spans.append((int(m.group(1), 16), addr))
    inner = [(s, e) for s, e in spans if not any(s <= s2 and e2 < e for s2, e2 in spans if (s2, e2) != (s, e))]
    return [[(a, t) for a, t in ins if s <= a <= e] for s, e in inner]


def innermost_loops(ins: list) -> list:
    """The bodies (lists of instruction texts) of the innermost loops (backward branches) among instructions ins."""
    return [[t for _, t in body] for body in innermost_loops_at(ins)]


def kv_loops_at(sass: str) -> list:
    """The KV loops (``kv_loops``) with each instruction's address: lists of (address, text)."""
    return [b for b in innermost_loops_at(_instructions(sass)) if any(t.startswith("HGMMA") for _, t in b)]


def kv_loops(sass: str) -> list:
    """The bodies (lists of instruction texts) of the KV loops: the innermost backward branches whose body holds a
    warpgroup MMA (the out-of-line barrier retries, also backward branches, hold none)."""
    return [[t for _, t in body] for body in kv_loops_at(sass)]


@pytest.mark.parametrize("name", CONFIGS)
def test_compiles_without_spilling(built, name):
    m = built[name]
    assert 0 < m["registers"] <= 255
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0, f"{name} spills"
    assert m["local"] == 0 and m["stack"] == 0
    assert 0 < m["shared"] <= 232448            # Hopper's most shared memory per block (227 KB)


@pytest.mark.parametrize("name", CONFIGS)
def test_targets_sm_90a(built, name):
    """wgmma needs the architecture-specific target sm_90a, which Triton picks for sm_90; one warpgroup."""
    assert ".target sm_90a" in built[name]["ptx"] and ".reqntid 128" in built[name]["ptx"]


@pytest.mark.parametrize("name", CONFIGS)
def test_hopper_instructions(built, name):
    """Warpgroup MMA (HGMMA) and no mma.sync (HMMA); TMA loads (UTMALDG) and store (UTMASTG); exp2 (MUFU.EX2)."""
    mix = built[name]["mix"]
    assert mix.get("HGMMA", 0) > 0 and mix.get("HMMA", 0) == 0
    assert mix.get("UTMALDG", 0) > 0 and mix.get("UTMASTG", 0) > 0
    assert mix.get("MUFU.EX2", 0) > 0
    assert mix.get("LDG", 0) == 0 and mix.get("STG", 0) == 0     # all memory traffic goes through the TMA


@pytest.mark.parametrize("name", CONFIGS)
def test_descriptors_are_4d(built, name):
    """Every TMA copy names (batch, head, row, 0) of a 4-D tensor: a tile never reaches another head's rows."""
    ptx = built[name]["ptx"]
    copies = re.findall(r"cp\.async\.bulk\.tensor\.(\d)d", ptx)
    assert copies and set(copies) == {"4"}, copies


@pytest.mark.parametrize("name", CONFIGS)
def test_p_feeds_the_pv_product_from_registers(built, name):
    """q k^T reads both operands from shared memory ('HGMMA.64xBNx16.F32 Rd, gdesc[..]': one descriptor for A
    and B); P V takes P from registers ('HGMMA.64xDx16.F32 Rd, Ra, gdesc[..]'), with V as a transposed B (tnspB:
    V's rows are keys). Nothing else in the KV loops goes through shared memory (no LDS/STS/LDSM/STSM): the
    conversion of P to the A-operand layout is a renaming of registers."""
    shape, _, _, _, bn, _ = CONFIGS[name]
    D = shape[4]
    lines = [t for t in (t for _, t in _instructions(built[name]["sass"])) if t.startswith("HGMMA")]
    qk = [t for t in lines if re.match(rf"HGMMA\.64x{bn}x16\.F32(\.BF16)? ", t)]
    pv = [t for t in lines if re.match(rf"HGMMA\.64x{D}x16\.F32(\.BF16)? ", t) and ".tnspB" in t]
    if D == bn:   # the two products have the same instruction shape; V is the transposed operand
        qk = [t for t in qk if ".tnspB" not in t]
    assert qk and pv and len(qk) + len(pv) == len(lines)
    assert all(re.match(r"HGMMA\S+ R\d+, gdesc\[", t) for t in qk)
    assert all(re.match(r"HGMMA\S+ R\d+, R\d+, gdesc\[", t) for t in pv)
    for body in kv_loops(built[name]["sass"]):
        assert not [t for t in body if re.match(r"(LDS|STS|LDSM|STSM)\b", t)]


@pytest.mark.parametrize("name", LOOPED)
def test_kv_loop_pipeline(built, name):
    """Each KV loop (unmasked, masked) issues the look-ahead TMA loads of a later block before its own q k^T
    product: the loads run ahead of the tensor cores. Per step, one WARPGROUP.DEPBAR (the P V product waited for
    with the next scores) where the registers allow it, else two; every TMA load is preceded by a CTA barrier
    (the ring buffer it refills was read by the products of all four warps)."""
    shape, _, _, bm, bn, _ = CONFIGS[name]
    D = shape[4]
    in_flight = bm * (D + bn + bn // 2) <= 192 * 128       # the kernel's PV_IN_FLIGHT
    loops = kv_loops(built[name]["sass"])
    assert len(loops) == 2
    for body in loops:
        first_mma = next(i for i, t in enumerate(body) if t.startswith("HGMMA"))
        loads = [i for i, t in enumerate(body) if t.startswith("UTMALDG")]
        assert len(loads) == 2 and loads[0] < first_mma             # K's load, before the step's q k^T product
        if not in_flight:
            assert loads[1] < first_mma                             # V's too
        waits = [t for t in body if t.startswith("WARPGROUP.DEPBAR")]
        assert waits == ["WARPGROUP.DEPBAR.LE gsb0, 0x0"] * (1 if in_flight else 2)
        for i in loads:   # a CTA barrier since the last wait for the products in this step (or the step's start)
            since = max([w for w, t in enumerate(body[:i]) if t.startswith("WARPGROUP.DEPBAR")], default=0)
            assert any(t.startswith("BAR.SYNC") for t in body[since:i])
        assert sum(t.startswith("MUFU.EX2") for t in body) == bm * bn // 128 + bm // 32   # P, and alpha per row


def test_q_buffer_carries_o_and_the_shared_memory_fits_two_programs(built):
    """O leaves through Q's buffer: shared memory is Q's tile plus the K and V rings (and the barriers), so that two
    64x64 programs with 3 stages share an SM at D = 128, as v13's do."""
    for name, (shape, _, _, bm, bn, stages) in CONFIGS.items():
        D = shape[4]
        tiles = 2 * (bm * D + 2 * stages * bn * D)
        assert tiles <= built[name]["shared"] <= tiles + 1024, name
    assert built["64x64s3"]["blocks_per_sm"] == 2
    assert built["128x64s2"]["blocks_per_sm"] == 2


@pytest.mark.parametrize("name", CONFIGS)
def test_without_the_producer_warp_there_is_no_warp_specialization(built, name):
    """PRODUCER_WARP off (the default): one warpgroup, no partitions, no register reallocation (v19's kernel)."""
    m = built[name]
    assert "ttg.warp_specialize" not in m["ttgir"] and "setmaxnreg" not in m["ptx"] and ".maxnreg" not in m["ptx"]
    assert m["num_warps"] == 4 and "USETMAXREG" not in m["sass"]


def test_grid_axis_0_is_batch_head_and_query_blocks_are_reversed(built):
    """v13's schedule: grid (B*H, query blocks); the kernel reads program_id(1) backwards (heaviest first)."""
    from kernels.gluon_fwd import grid
    assert grid(2, 16, 1024, 64) == (32, 16) and grid(2, 16, 1000, 128) == (32, 8)
    ttgir = built["64x64s3"]["ttgir"]
    assert re.search(r"tt\.get_program_id x", ttgir) and re.search(r"tt\.get_program_id y", ttgir)
    assert re.search(r"tt\.get_num_programs y", ttgir)


# ---------------------------------------------------------------------------------------------------------------
# PRODUCER_WARP (stage v20): a TMA producer warp and register reallocation
# ---------------------------------------------------------------------------------------------------------------

def _tile(name):
    shape, _, _, bm, bn, _, _ = PRODUCER_CONFIGS[name]
    return bm, bn, shape[4]


def partitions(sass: str, consumer_regs: int) -> tuple:
    """(the workers' instructions, the consumer's) of a warp-specialized kernel: the consumer's code starts where
    its warps take their registers (USETMAXREG.TRY_ALLOC of the consumer's count), after the workers' dispatch
    loop and partitions (the producer warp's, and the idle warps' that Triton pads its warpgroup with). The
    workers' out-of-line retries of their barrier waits, at the end, are counted with the consumer's."""
    ins = _instructions(sass)
    start = next(i for i, (_, t) in enumerate(ins) if t == f"USETMAXREG.TRY_ALLOC.CTAPOOL UP0, {consumer_regs:#x}")
    return ins[:start], ins[start:]


@pytest.mark.parametrize("name", PRODUCER_CONFIGS)
def test_producer_compiles_without_spilling(built, name):
    """The kernel's registers are the maxnreg it is launched with; ptxas spills nothing in any partition."""
    from kernels.gluon_fwd import producer_registers
    m = built[name]
    assert m["registers"] == producer_registers(*_tile(name))["maxnreg"]
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0, f"{name} spills"
    assert m["local"] == 0 and m["stack"] == 0
    assert 0 < m["shared"] <= 232448


@pytest.mark.parametrize("name", PRODUCER_CONFIGS)
def test_producer_is_a_one_warp_partition(built, name):
    """ttg.warp_specialize with one worker partition of one warp asking for 24 registers; the module's maxnreg is
    the launch's. Triton pads the worker into a warpgroup: 8 warps, 256 threads (.reqntid 256)."""
    from kernels.gluon_fwd import producer_registers
    m = built[name]
    ttgir = m["ttgir"]
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert "requestedRegisters = array<i32: 24>" in ttgir
    assert re.search(r"partition0\(.*\) num_warps\(1\)", ttgir) and "partition1(" not in ttgir
    assert f"ttg.maxnreg = {producer_registers(*_tile(name))['maxnreg']} : i32" in ttgir
    assert ".reqntid 256" in m["ptx"] and m["num_warps"] == 8


@pytest.mark.parametrize("name", PRODUCER_CONFIGS)
def test_registers_are_reallocated(built, name):
    """PTX: .maxnreg M; the workers' warpgroup gives all but 24 registers back (setmaxnreg.dec 24; its 'inc 24'
    are Triton's no-op re-entries of the dispatch loop) and the consumer takes them (setmaxnreg.inc 2 M - 24): the
    two warpgroups' registers are exactly the 8 warps' at launch. SASS: USETMAXREG.DEALLOC 0x18 and TRY_ALLOC of
    the consumer's count."""
    from kernels.gluon_fwd import producer_registers
    r = producer_registers(*_tile(name))
    m = built[name]
    assert re.search(rf"^\.maxnreg {r['maxnreg']}$", m["ptx"], re.MULTILINE)
    counts = set(re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+);", m["ptx"]))
    assert counts == {("dec", "24"), ("inc", "24"), ("inc", str(r["consumer"]))}
    assert r["producer"] == 24 and 128 * (r["producer"] + r["consumer"]) == 256 * r["maxnreg"]
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x18" in m["sass"]
    assert f"USETMAXREG.TRY_ALLOC.CTAPOOL UP0, {r['consumer']:#x}" in m["sass"]


@pytest.mark.parametrize("name", PRODUCER_CONFIGS)
def test_the_producer_issues_the_kv_loads_and_the_consumer_the_products(built, name):
    """The producer warp's code holds every K and V load (two tiles, one TMA message per 64 columns) and no
    product; the consumer's holds Q's load, O's store, and exactly the warpgroup MMAs of the kernel without the
    producer, P fed from registers as there. Every copy is 4-D."""
    from kernels.gluon_fwd import producer_registers
    bm, bn, D = _tile(name)
    m, twin = built[name], built[PRODUCER_CONFIGS[name][6]]
    worker, consumer = partitions(m["sass"], producer_registers(bm, bn, D)["consumer"])

    def count(ins, op):
        return sum(t.startswith(op) for _, t in ins)

    assert count(worker, "UTMALDG") == 2 * (D // 64) and count(worker, "HGMMA") == 0
    assert count(consumer, "UTMALDG") == 1 and count(consumer, "UTMASTG") == 1
    assert count(consumer, "HGMMA") == twin["mix"]["HGMMA"] == m["mix"]["HGMMA"]
    pv = [t for _, t in consumer if re.match(rf"HGMMA\.64x{D}x16\.F32(\.BF16)? ", t) and ".tnspB" in t]
    assert pv and all(re.match(r"HGMMA\S+ R\d+, R\d+, gdesc\[", t) for t in pv)
    copies = re.findall(r"cp\.async\.bulk\.tensor\.(\d)d", m["ptx"])
    assert copies and set(copies) == {"4"}


@pytest.mark.parametrize("name", PRODUCER_LOOPED)
def test_producer_loop(built, name):
    """The producer warp's loop, one per key block: wait for K's buffer to be empty, expect its bytes on its ready
    barrier, copy; the same for V. One warp: no CTA barrier, no product."""
    from kernels.gluon_fwd import producer_registers
    bm, bn, D = _tile(name)
    worker, _ = partitions(built[name]["sass"], producer_registers(bm, bn, D)["consumer"])
    loops = [b for b in innermost_loops(worker) if any(t.startswith("UTMALDG") for t in b)]
    assert len(loops) == 1
    body = loops[0]
    ops = [t.split()[0] for t in body if re.match(r"(UTMALDG|SYNCS|BAR|HGMMA)", t)]
    per_tile = ["SYNCS.PHASECHK.TRANS64.TRYWAIT"] + ["UTMALDG.4D"] * (D // 64)
    assert ops.count("SYNCS.PHASECHK.TRANS64.TRYWAIT") == 2 and ops.count("SYNCS.ARRIVE.TRANS64") == 2
    assert [o for o in ops if o != "SYNCS.ARRIVE.TRANS64"] == per_tile * 2      # K's wait and copies, then V's
    assert not [o for o in ops if o.startswith(("BAR", "HGMMA"))]


@pytest.mark.parametrize("name", PRODUCER_LOOPED)
def test_consumer_kv_loops(built, name):
    """The consumer's KV loops (unmasked, masked) are the kernel's without the producer, less the loads: no TMA, the
    same products, waits (WARPGROUP.DEPBAR) and exponentials, instruction for instruction (registers aside); and
    two releases per step (arrives of count 1 on the "empty" barriers: K's buffer of this block, V's of this block
    or, P V in flight, of the previous one), each after a CTA barrier (the four warps are done with the buffer)."""
    loops, twin = kv_loops(built[name]["sass"]), kv_loops(built[PRODUCER_CONFIGS[name][6]]["sass"])
    assert len(loops) == len(twin) == 2
    for body, other in zip(loops, twin):
        assert not [t for t in body if t.startswith("UTMALDG")]
        for op in ("HGMMA", "WARPGROUP.DEPBAR", "MUFU.EX2"):
            assert [t.split()[0] for t in body if t.startswith(op)] == [t.split()[0] for t in other
                                                                         if t.startswith(op)], op
        releases = [i for i, t in enumerate(body) if t.startswith("SYNCS.ARRIVE.TRANS64.A1T0 RZ")]
        assert len(releases) == 2
        for i in releases:
            since = max([w for w, t in enumerate(body[:i]) if t.startswith("WARPGROUP.DEPBAR")], default=0)
            assert any(t.startswith("BAR.SYNC") for t in body[since:i])


def test_producer_shared_memory_and_programs_per_sm(built):
    """Shared memory: the kernel's without the producer, plus the "empty" barriers and Triton's partition state (at
    most 256 bytes). Two programs per SM at 64x64 with 3 stages (maxnreg 128: 2 x 256 x 128 = 65536); one at 128x64
    and D = 128, whose consumer needs 256 registers (maxnreg 140)."""
    for name, c in PRODUCER_CONFIGS.items():
        assert built[c[6]]["shared"] < built[name]["shared"] <= built[c[6]]["shared"] + 256, name
    assert built["pw-64x64s3"]["blocks_per_sm"] == 2
    assert built["pw-128x64s2"]["blocks_per_sm"] == 1


# ---------------------------------------------------------------------------------------------------------------
# With the switches off: the kernel the GPU verified
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [*CONFIGS, *PRODUCER_CONFIGS])
def test_with_two_consumers_off_the_kernel_is_the_verified_one(built, name):
    """v19's and v20's kernels (TWO_CONSUMERS off) have the SASS, instruction for instruction, of the newest
    committed source of kernels/gluon_fwd.py that a sealed GPU grid verified with v19 and v20 right: a switch added
    since changes nothing in them, so their GPU verification still holds for them (tests/test_stages.py's check of
    the current source is the one that waits for the GPU)."""
    if built["verified"] is None:
        pytest.skip("no git history to read the verified source from")
    assert built[name]["sass"] == built[VERIFIED_PREFIX + name]["sass"], (name, built["verified"])


# ---------------------------------------------------------------------------------------------------------------
# TWO_CONSUMERS (stage v21): two consumer warpgroups behind the producer warp
# ---------------------------------------------------------------------------------------------------------------

def _tc(name):
    shape, dtype, causal, bm, bn, stages, twin = TWO_CONSUMER_CONFIGS[name]
    return shape[4], bn, stages, twin


@pytest.mark.parametrize("name", TWO_CONSUMER_CONFIGS)
def test_two_consumers_compile_without_spilling_or_serialized_mmas(built, name):
    """At most the 168 registers per thread that 384 threads can have, no spills, and ptxas keeps the warpgroup MMAs
    asynchronous: no 'wgmma.mma_async instructions are serialized' warning (it comes with setmaxnreg: see the
    kernel's docstring). One program per SM (384 threads; the 128-row program does the work of two of v20's), except
    at N = 1, where the compiler drops the KV loops and their registers."""
    m = built[name]
    assert 0 < m["registers"] <= 168
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0, f"{name} spills"
    assert m["local"] == 0 and m["stack"] == 0
    assert "0 bytes spill stores, 0 bytes spill loads" in m["ptxas"]
    assert "serialized" not in m["ptxas"] and "C7512" not in m["ptxas"], m["ptxas"]
    assert m["blocks_per_sm"] == 1 or name not in TWO_CONSUMER_LOOPED


@pytest.mark.parametrize("name", TWO_CONSUMER_CONFIGS)
def test_two_consumers_are_three_partitions_without_register_reallocation(built, name):
    """ttg.warp_specialize with two workers, a 4-warp consumer and the 1-warp producer (the default partition is the
    other consumer): 12 warps, 384 threads. No maxnreg and no setmaxnreg anywhere: every warp keeps its registers."""
    m = built[name]
    ttgir, ptx = m["ttgir"], m["ptx"]
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert re.search(r"partition0\(.*\) num_warps\(4\)", ttgir) and re.search(r"partition1\(.*\) num_warps\(1\)", ttgir)
    assert "partition2(" not in ttgir and "ttg.maxnreg" not in ttgir
    assert ".reqntid 384" in ptx and m["num_warps"] == 12
    assert "setmaxnreg" not in ptx and ".maxnreg" not in ptx and "USETMAXREG" not in m["sass"]


@pytest.mark.parametrize("name", TWO_CONSUMER_CONFIGS)
def test_two_consumers_share_one_ring_whose_buffers_both_release(built, name):
    """Shared memory: two 64-row halves of Q (O on the way out) and one K/V ring of 64-row blocks, for both
    consumers. Its "empty" barriers count 2 arrivals (one release per consumer), the ready barriers and Q's 1. The
    consumers' CTA barriers are 128-thread ones, each consumer its own barrier id; none spans both."""
    D, bn, stages, _ = _tc(name)
    m = built[name]
    tiles = 2 * (128 * D + 2 * stages * bn * D)
    assert tiles <= m["shared"] <= tiles + 1024
    counts = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", m["ptx"])
    assert sorted(counts) == sorted(["1"] * (1 + 2 * stages) + ["2"] * (2 * stages))
    ids = set(re.findall(r"\bbar\.sync\s+(\d+), (\d+);", m["ptx"]))
    assert {n for _, n in ids} == {"128"} and len({i for i, _ in ids}) == 2


@pytest.mark.parametrize("name", TWO_CONSUMER_CONFIGS)
def test_two_consumers_loads_products_and_stores(built, name):
    """Q's two 64-row halves are loaded before the fork (one TMA instruction each, which at D = 128 the first two
    warps issue for 64 columns apiece), K and V by the producer warp (one instruction per 64 columns), O leaves by
    two TMA stores, one per consumer; every copy is 4-D. Both products are warpgroup MMAs of 64 rows, P V with P
    from registers."""
    D, bn, _, _ = _tc(name)
    m = built[name]
    assert m["mix"]["UTMALDG"] == 2 + 2 * (D // 64) and m["mix"]["UTMASTG"] == 2
    assert m["mix"].get("HMMA", 0) == 0 and m["mix"].get("LDG", 0) == 0 and m["mix"].get("STG", 0) == 0
    copies = re.findall(r"cp\.async\.bulk\.tensor\.(\d)d", m["ptx"])
    assert copies and set(copies) == {"4"}
    lines = [t for _, t in _instructions(m["sass"]) if t.startswith("HGMMA")]
    qk = [t for t in lines if re.match(rf"HGMMA\.64x{bn}x16\.F32(\.BF16)? R\d+, gdesc\[", t)]
    pv = [t for t in lines if re.match(rf"HGMMA\.64x{D}x16\.F32(\.BF16)? R\d+, R\d+, gdesc\[", t) and ".tnspB" in t]
    assert qk and pv and len(qk) + len(pv) == len(lines)


@pytest.mark.parametrize("name", TWO_CONSUMER_LOOPED)
def test_two_consumers_kv_loops(built, name):
    """Four KV loops, each consumer's unmasked and masked ones, all alike: no loads, q k^T's D/16 and P V's 64/16
    HGMMAs each issued back to back and one WARPGROUP.DEPBAR per step (P V in flight: ptxas serialized nothing),
    the 64x64 tile's exponentials (P, and alpha per row), and two releases, each after a CTA barrier. Where v20 runs
    the same 64x64 steps (its consumer at 64x64 with three stages), the sequences of products, waits and
    exponentials are its consumer's."""
    D, bn, _, twin = _tc(name)
    loops = kv_loops(built[name]["sass"])
    assert len(loops) == 4
    for body in loops:
        assert not [t for t in body if t.startswith("UTMALDG")]
        ops = [t.split()[0] for t in body if t.startswith(("HGMMA", "WARPGROUP.DEPBAR"))]
        qk, pv = f"HGMMA.64x{bn}x16.F32", f"HGMMA.64x{D}x16.F32"
        bf = ".BF16" if "bf16" in name else ""
        assert ops == [qk + bf] * (D // 16) + ["WARPGROUP.DEPBAR.LE"] + [pv + bf] * (bn // 16), ops
        assert sum(t.startswith("MUFU.EX2") for t in body) == 64 * bn // 128 + 64 // 32
        releases = [i for i, t in enumerate(body) if t.startswith("SYNCS.ARRIVE.TRANS64.A1T0 RZ")]
        assert len(releases) == 2
        for i in releases:
            since = max([w for w, t in enumerate(body[:i]) if t.startswith("WARPGROUP.DEPBAR")], default=0)
            assert any(t.startswith("BAR.SYNC") for t in body[since:i])
    if twin is not None:
        other = kv_loops(built[twin]["sass"])
        for body, ref in zip(loops, other + other):
            for op in ("HGMMA", "WARPGROUP.DEPBAR", "MUFU.EX2"):
                assert [t.split()[0] for t in body if t.startswith(op)] == [t.split()[0] for t in ref
                                                                             if t.startswith(op)], op


@pytest.mark.parametrize("name", TWO_CONSUMER_LOOPED)
def test_two_consumers_producer_loop(built, name):
    """One producer loop, as v20's: per key block, wait for K's buffer to be empty, expect its bytes, copy; the same
    for V. One warp: no CTA barrier, no product."""
    D, _, _, _ = _tc(name)
    loops = [b for b in innermost_loops(_instructions(built[name]["sass"]))
             if any(t.startswith("UTMALDG") for t in b) and not any(t.startswith("HGMMA") for t in b)]
    assert len(loops) == 1
    ops = [t.split()[0] for t in loops[0] if re.match(r"(UTMALDG|SYNCS|BAR|HGMMA)", t)]
    per_tile = ["SYNCS.PHASECHK.TRANS64.TRYWAIT"] + ["UTMALDG.4D"] * (D // 64)
    assert ops.count("SYNCS.ARRIVE.TRANS64") == 2
    assert [o for o in ops if o != "SYNCS.ARRIVE.TRANS64"] == per_tile * 2


def test_two_consumers_tile_is_the_registrys():
    """The tile the kernel runs TWO_CONSUMERS at is stage v21's in the registry, at every N and both head dims, and
    one the kernel takes; its grid has half the query blocks of a 64-row tile: (B*H, cdiv(N, 128))."""
    from kernels.gluon_fwd import TWO_CONSUMERS_TILES, grid, two_consumers_tile
    from kernels.stages import STAGES, TWO_CONSUMERS_TILE, default_tile, stage_adding
    st = STAGES[stage_adding("two_consumers")]
    for D in (64, 128):
        for N in (1, 1000, 1024, 4096, 16384):
            t = default_tile(st.switches, D, N)
            assert t == st.tile == TWO_CONSUMERS_TILE
            assert two_consumers_tile(D, N) == (t.block_m, t.block_n, t.num_warps, t.num_stages)
    assert (TWO_CONSUMERS_TILE.block_m, TWO_CONSUMERS_TILE.block_n, TWO_CONSUMERS_TILE.num_stages) in TWO_CONSUMERS_TILES
    assert grid(2, 16, 16384, TWO_CONSUMERS_TILE.block_m) == (32, 128) and grid(1, 4, 1000, 128) == (4, 8)


# ---------------------------------------------------------------------------------------------------------------
# The host side, in this process (no compile)
# ---------------------------------------------------------------------------------------------------------------

def test_descriptor_signature_is_what_the_jit_specializes():
    from kernels.gluon_fwd import kernel_args, specialize
    q = torch.empty(2, 16, 1024, 128, dtype=torch.float16)
    k = torch.empty(2, 8, 1024, 128, dtype=torch.float16)
    args = kernel_args(q, k, k.clone(), torch.empty_like(q), True, 64, 64, 3)
    signature, constexprs, attrs = specialize(args)
    assert len(constexprs) == 24 and attrs      # the twenty-four constexprs; N, H divisible by 16
    layout = ("NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=4, transposed=False, "
              "fp4_padded=False, cga_layout=[])")
    assert signature["q_desc"] == f"tensordesc<fp16[1, 1, 64, 128],{layout}>"
    assert signature["k_desc"] == signature["v_desc"] == f"tensordesc<fp16[1, 1, 64, 128],{layout}>"
    assert signature["qk_scale"] == "fp32" and signature["H"] == signature["N"] == "i32"
    assert list(signature)[8:] == ["HEAD_DIM", "BLOCK_M", "BLOCK_N", "NUM_STAGES", "IS_CAUSAL", "PRODUCER_WARP",
                                   "TWO_CONSUMERS", "SOFTMAX_OVERLAP", "REGISTER_REALLOC", "SPLIT_CONSUMERS",
                                   "PINGPONG", "PERSISTENT", "SECTIONS", "FOLD", "LEAN_BARRIERS", "PAIRED_CVT",
                                   "RARE_RESCALE", "SNAKE_SMS", "FUSED_EXPONENT", "SHORT_REDUCTIONS",
                                   "LANE_SUMS", "LANE_MAX", "Q_REGS", "EARLY_EXP"]
    assert args["GROUP"] == 2 and abs(args["qk_scale"] - 1.4426950408889634 / 128 ** 0.5) < 1e-12
    assert args["PRODUCER_WARP"] is False and args["TWO_CONSUMERS"] is False     # off by default: v19's kernel
    assert args["SOFTMAX_OVERLAP"] is False and args["SPLIT_CONSUMERS"] is False and args["PINGPONG"] is False
    assert args["LEAN_BARRIERS"] == ""          # off: no mark, and the PTX stage leaves the kernel as it was
    assert args["PAIRED_CVT"] is False and args["RARE_RESCALE"] is False and args["SNAKE_SMS"] == 0
    assert args["FUSED_EXPONENT"] is False and args["SHORT_REDUCTIONS"] is False and args["LANE_SUMS"] is False
    assert args["LANE_MAX"] is False and args["Q_REGS"] is False
    with pytest.raises(ValueError, match="lane_max .* needs lane_sums"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 64, 64, 3, lane_max=True)
    with pytest.raises(ValueError, match="q_regs .* needs lane_max"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 64, 64, 3, q_regs=True)
    with pytest.raises(ValueError, match="fused_exponent .* needs rare_rescale"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 64, 64, 3, fused_exponent=True)
    with pytest.raises(ValueError, match="short_reductions .* needs fused_exponent"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 64, 64, 3, short_reductions=True)
    with pytest.raises(ValueError, match="lane_sums .* needs fused_exponent"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 64, 64, 3, lane_sums=True)
    assert kernel_args(q, k, k.clone(), torch.empty_like(q), True, 64, 64, 3, producer_warp=True)["PRODUCER_WARP"]
    two = kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 64, 3, producer_warp=True, two_consumers=True)
    assert two["TWO_CONSUMERS"] and two["PRODUCER_WARP"] and two["BLOCK_M"] == 128
    signature, constexprs, _ = specialize(two)
    assert signature["q_desc"] == signature["o_desc"] == f"tensordesc<fp16[1, 1, 64, 128],{layout}>"
    with pytest.raises(ValueError, match="needs producer_warp"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 64, 3, two_consumers=True)


def test_launch_options():
    """num_warps=4 always (with PRODUCER_WARP the default partition's); with PRODUCER_WARP also the tile's maxnreg:
    128 (consumer 232 registers, producer 24) where the tiles fit, 140 (consumer 256) for 128x64 at D = 128."""
    from kernels.gluon_fwd import launch_options, producer_registers
    assert launch_options(64, 64, 128) == launch_options(128, 64, 128) == {"num_warps": 4}
    assert launch_options(64, 64, 128, True) == {"num_warps": 4, "maxnreg": 128}
    assert launch_options(128, 64, 128, True) == {"num_warps": 4, "maxnreg": 140}
    for tile in [(64, 64, 64), (64, 64, 128), (64, 128, 128), (64, 128, 64), (128, 64, 64)]:
        assert producer_registers(*tile) == {"maxnreg": 128, "producer": 24, "consumer": 232}, tile
    assert producer_registers(128, 64, 128) == {"maxnreg": 140, "producer": 24, "consumer": 256}
    # TWO_CONSUMERS: no maxnreg at launch, nothing reallocated (every warp keeps what 384 threads can have)
    for D in (64, 128):
        assert launch_options(128, 64, D, True, True) == {"num_warps": 4}
        assert producer_registers(128, 64, D, True) == {"maxnreg": None, "producer": 168, "consumer": 168}
    assert 384 * 168 <= 65536 < 384 * 176


def test_descriptors_of_strided_and_single_head_tensors():
    """Whole 4-D tensors with their own strides (a view whose last dimension is contiguous works); a dimension of
    size 1 gets the stride D, which TMA accepts."""
    from kernels.gluon_fwd import descriptors
    base = torch.empty(1, 1024, 3, 8, 64, dtype=torch.bfloat16)          # (B, N, qkv, H, D), as a fused projection
    q, k, v = (base[:, :, i].transpose(1, 2) for i in range(3))          # (B, H, N, D) views, strided
    out = torch.empty(1, 8, 1024, 64, dtype=torch.bfloat16)
    dq, dk, dv, do = descriptors(q, k, v, out, 128, 64)
    assert dv.strides == dk.strides == dq.strides
    assert dq.shape == [1, 8, 1024, 64] and dq.strides == [64, 64, 3 * 8 * 64, 1]
    assert dq.block_shape == [1, 1, 128, 64] and dk.block_shape == [1, 1, 64, 64]
    assert do.strides == [64, 1024 * 64, 64, 1]
    assert dq.layout.swizzle_byte_width == 128 and dq.layout.rank == 4
    # TWO_CONSUMERS: Q and O in blocks of one consumer's 64 rows, K and V in the tile's block_n rows
    dq, dk, dv, do = descriptors(q, k, v, out, 128, 64, two_consumers=True)
    assert dq.block_shape == do.block_shape == [1, 1, 64, 64] and dk.block_shape == dv.block_shape == [1, 1, 64, 64]
    assert dq.strides == [64, 64, 3 * 8 * 64, 1]


def test_unsupported_configurations_are_refused():
    from kernels.gluon_fwd import check_config
    check_config(128, torch.float16, 64, 64, 3)
    for bad in [(256, torch.float16, 64, 64, 3), (128, torch.float32, 64, 64, 3), (128, torch.float16, 32, 64, 3),
                (128, torch.float16, 64, 64, 4), (128, torch.float16, 128, 128, 2)]:
        with pytest.raises(ValueError):
            check_config(*bad)
    with pytest.raises(ValueError):
        check_config(128, torch.float16, 64, 64, 3, num_warps=8)
    # TWO_CONSUMERS takes 128x64 with two or three stages only
    for tile in [(128, 64, 2), (128, 64, 3)]:
        check_config(128, torch.float16, *tile, two_consumers=True)
        check_config(64, torch.bfloat16, *tile, two_consumers=True)
    for tile in [(64, 64, 3), (128, 128, 2), (128, 64, 4), (256, 64, 2)]:
        with pytest.raises(ValueError, match="two consumer warpgroups"):
            check_config(128, torch.float16, *tile, two_consumers=True)
    with pytest.raises(ValueError):
        check_config(256, torch.float16, 128, 64, 3, two_consumers=True)
    from kernels.gluon_fwd import compile_for
    with pytest.raises(ValueError, match="sm_90a only"):
        compile_for(120, HEADLINE)


# ---------------------------------------------------------------------------------------------------------------
# SOFTMAX_OVERLAP (stage v22): each consumer's softmax under its own P V product
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", OVERLAP_CONFIGS)
def test_softmax_overlap_compiles_without_spilling_or_serialized_mmas(built, name):
    """As v21: at most 168 registers per thread, no spills, no serialized warpgroup MMA, no setmaxnreg, 12 warps;
    shared memory grows only by the scratch row sums (2 x 64 floats)."""
    m = built[name]
    twin = built[name.removeprefix("ov-")]
    assert 0 < m["registers"] <= 168
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0 and m["local"] == 0 and m["stack"] == 0
    assert "0 bytes spill stores, 0 bytes spill loads" in m["ptxas"]
    assert "serialized" not in m["ptxas"] and "C7512" not in m["ptxas"], m["ptxas"]
    assert "setmaxnreg" not in m["ptx"] and m["num_warps"] == 12
    assert 0 < m["shared"] - twin["shared"] <= 2 * 64 * 4 + 128


def assert_overlapped_step(body: list, name: str, D: int, bn: int) -> None:
    """One KV step with the softmax under the P V product (per warpgroup): no TMA load; q k^T of block j (D/16
    HGMMA 64 x bn), then P V of block j - 1 (bn/16 HGMMA 64 x D), a wait for the scores alone (DEPBAR.LE 1) and every
    exponential of the step (P and alpha) before the wait for P V (DEPBAR.LE 0)."""
    bf = ".BF16" if "bf16" in name else ""
    qk, pv = f"HGMMA.64x{bn}x16.F32{bf}", f"HGMMA.64x{D}x16.F32{bf}"
    assert not [t for t in body if t.startswith("UTMALDG")]
    ops = [t.split()[0] if t.startswith("HGMMA") else t for t in body if t.startswith(("HGMMA", "WARPGROUP.DEPBAR"))]
    assert ops == ([qk] * (D // 16) + [pv] * (bn // 16) + ["WARPGROUP.DEPBAR.LE gsb0, 0x1"]
                   + ["WARPGROUP.DEPBAR.LE gsb0, 0x0"]), ops
    one = next(i for i, t in enumerate(body) if t.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x1"))
    zero = next(i for i, t in enumerate(body) if t.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x0"))
    ex2 = [i for i, t in enumerate(body) if t.startswith("MUFU.EX2")]
    assert len(ex2) == 64 * bn // 128 + 64 // 32
    assert all(one < i < zero for i in ex2), (one, zero, ex2)


@pytest.mark.parametrize("name", OVERLAP_LOOPED)
def test_softmax_overlap_kv_loops(built, name):
    """Four KV loops (each consumer's unmasked and masked), each step: q k^T of block j (D/16 HGMMAs), then P V of
    block j - 1 (64/16 HGMMAs), a wait for the scores alone (WARPGROUP.DEPBAR.LE 1), every exponential of the step
    (P and alpha: 34 MUFU.EX2 at 64x64) before the wait for P V (WARPGROUP.DEPBAR.LE 0): the softmax runs while the
    P V product does (ptxas moved that wait above the exponentials until the scratch store was added). The same
    products and exponentials as v21's steps, and its two releases, each after a CTA barrier."""
    D, bn, _, _ = _tc(name.removeprefix("ov-"))
    loops = kv_loops(built[name]["sass"])
    assert len(loops) == 4
    for body in loops:
        assert_overlapped_step(body, name, D, bn)
        releases = [i for i, t in enumerate(body) if t.startswith("SYNCS.ARRIVE.TRANS64.A1T0 RZ")]
        assert len(releases) == 2
        for i in releases:
            since = max([w for w, t in enumerate(body[:i]) if t.startswith("WARPGROUP.DEPBAR")], default=0)
            assert any(t.startswith("BAR.SYNC") for t in body[since:i])


@pytest.mark.parametrize("name", OVERLAP_CONFIGS)
def test_softmax_overlap_keeps_v21s_loads_stores_and_ring(built, name):
    """The same TMA loads and stores, barriers (their counts) and partitions as v21's kernel (its products are the
    same per step; block 0's q k^T and the last block's P V product, peeled out of the loop, add HGMMA instructions
    to the code, not to the work)."""
    m, twin = built[name], built[name.removeprefix("ov-")]
    for op in ("UTMALDG", "UTMASTG"):
        assert m["mix"].get(op, 0) == twin["mix"].get(op, 0), op
    init = r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);"
    assert sorted(re.findall(init, m["ptx"])) == sorted(re.findall(init, twin["ptx"]))
    assert m["ttgir"].count("ttg.warp_specialize(") == 1


def test_softmax_overlap_needs_two_consumers():
    from kernels.gluon_fwd import kernel_args
    q = torch.empty((1, 2, 128, 64), dtype=torch.float16, device="meta")
    k = torch.empty((1, 1, 128, 64), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="softmax_overlap .* needs two_consumers"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 64, 3, producer_warp=True, softmax_overlap=True)
    args = kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 64, 3, producer_warp=True,
                       two_consumers=True, softmax_overlap=True)
    assert args["SOFTMAX_OVERLAP"] and args["TWO_CONSUMERS"]


# ---------------------------------------------------------------------------------------------------------------
# REGISTER_REALLOC (stage v23): the two consumers as one 8-warp partition, setmaxnreg, 128-row K/V blocks
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", REALLOC_CONFIGS)
def test_register_realloc_reallocates_without_spilling_or_serialized_mmas(built, name):
    """168 registers per thread at launch (12 warps, one program per SM), setmaxnreg raising the consumers'
    partition to 240 and lowering the producer's warpgroup to 24, no spills and no serialized warpgroup MMA: every
    MMA is in the default partition, outside the workers' dispatch loop."""
    from kernels.gluon_fwd import REGISTER_REALLOC_MAXNREG
    m = built[name]
    assert m["registers"] == REGISTER_REALLOC_MAXNREG and m["num_warps"] == 12
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0 and m["local"] == 0 and m["stack"] == 0
    assert "0 bytes spill stores, 0 bytes spill loads" in m["ptxas"]
    assert "serialized" not in m["ptxas"] and "C7512" not in m["ptxas"], m["ptxas"]
    regs = set(re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+);", m["ptx"]))
    assert ("inc", "240") in regs and ("dec", "24") in regs, regs
    assert "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xf0" in m["sass"]
    assert m["shared"] <= 232448        # the H200's shared memory per block (opt-in)


@pytest.mark.parametrize("name", REALLOC_LOOPED)
def test_register_realloc_kv_loops(built, name):
    """Two KV loops (the unmasked and the masked, one partition), each step per warpgroup: q k^T of block j (D/16
    HGMMA 64 x block_n), then P V of block j - 1 (block_n/16 HGMMA 64 x D), a wait for the scores alone
    (WARPGROUP.DEPBAR.LE 1) and every exponential of the step (P and alpha) before the wait for P V (LE 0); the
    partition's barriers are 256-thread ones (both warpgroups)."""
    shape, _, _, _, bn, _ = REALLOC_CONFIGS[name]
    D = shape[4]
    loops = kv_loops(built[name]["sass"])
    assert len(loops) == 2
    for body in loops:
        assert_overlapped_step(body, name, D, bn)
        bars = [t for t in body if t.startswith("BAR.SYNC")]
        assert bars and all(t.endswith("0x100") for t in bars), bars


@pytest.mark.parametrize("name", REALLOC_CONFIGS)
def test_register_realloc_loads_the_whole_q_tile_and_releases_each_buffer_once(built, name):
    """One partition: Q arrives as one 128-row TMA copy and O leaves as one 128-row store, and each ring buffer's
    "empty" barrier counts one release (not two, as with v21's two partitions)."""
    m = built[name]
    init = r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);"
    assert set(re.findall(init, m["ptx"])) == {"1"}
    assert m["ttgir"].count("ttg.warp_specialize(") == 1
    assert m["mix"].get("UTMASTG", 0) >= 1


def test_register_realloc_needs_softmax_overlap_and_takes_its_tiles_only():
    from kernels.gluon_fwd import REGISTER_REALLOC_TILES, check_config, kernel_args, launch_options
    q = torch.empty((1, 2, 128, 64), dtype=torch.float16, device="meta")
    k = torch.empty((1, 1, 128, 64), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="register_realloc .* needs softmax_overlap"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, producer_warp=True, two_consumers=True,
                    register_realloc=True)
    args = kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, producer_warp=True,
                       two_consumers=True, softmax_overlap=True, register_realloc=True)
    assert args["REGISTER_REALLOC"] and args["q_desc"].block_shape == [1, 1, 128, 64]
    assert launch_options(128, 128, 64, True, True, True) == {"num_warps": 8, "maxnreg": 168}
    for bm, bn, st in REGISTER_REALLOC_TILES:
        check_config(64, torch.float16, bm, bn, st, 8, two_consumers=True, register_realloc=True)
    with pytest.raises(ValueError, match="register reallocation takes the tiles"):
        check_config(128, torch.float16, 64, 64, 3, 8, two_consumers=True, register_realloc=True)
    with pytest.raises(ValueError, match="num_warps=8"):
        check_config(128, torch.float16, 128, 128, 2, 4, two_consumers=True, register_realloc=True)


# ---------------------------------------------------------------------------------------------------------------
# SPLIT_CONSUMERS (stage v24): the two consumers in their own partitions again, with v23's registers and K/V blocks
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SPLIT_LIKE)
def test_split_consumers_reallocate_in_three_partitions_without_spilling_or_serialized_mmas(built, name):
    """168 registers per thread at launch (12 warps, one program per SM), three partitions (consumer 0 the default,
    a 4-warp consumer 1 and the 1-warp producer), setmaxnreg raising consumer 1 to 240 and lowering the producer's
    warpgroup to 24, no spills (v33: at most kernels.gluon_fwd.FUSED_STACK_BYTES outside its KV loops), and no serialized warpgroup MMA although consumer 1's MMAs are in a worker partition
    (v23's premise was that they would be)."""
    from kernels.gluon_fwd import FUSED_STACK_BYTES, SPLIT_CONSUMERS_MAXNREG, SPLIT_CONSUMERS_REGISTERS
    from kernels.stages import PRODUCER_IDLE_WARPS
    m = built[name]
    assert m["registers"] == SPLIT_CONSUMERS_MAXNREG and m["num_warps"] == 12 == 4 + 4 + 1 + PRODUCER_IDLE_WARPS
    if name in {**FUSED_CONFIGS, **SHORT_CONFIGS, **LANE_CONFIGS, **MAX_CONFIGS, **QREG_CONFIGS}:   # v33-v37:
        # scalars outside the KV loops (their own tests hold the loops free)
        assert m["local"] == 0 and m["stack"] <= FUSED_STACK_BYTES
    else:
        assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0 and m["local"] == 0 and m["stack"] == 0
        assert "0 bytes spill stores, 0 bytes spill loads" in m["ptxas"]
    assert "serialized" not in m["ptxas"] and "C7512" not in m["ptxas"], m["ptxas"]
    ttgir = m["ttgir"]
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert re.search(r"partition0\(.*\) num_warps\(4\)", ttgir) and re.search(r"partition1\(.*\) num_warps\(1\)", ttgir)
    regs = set(re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+);", m["ptx"]))
    assert SPLIT_CONSUMERS_REGISTERS == 240
    assert ("inc", "240") in regs and ("dec", "24") in regs, regs
    assert re.search(r"USETMAXREG\.TRY_ALLOC\.CTAPOOL UP\d, 0xf0", m["sass"])      # (any predicate register)
    assert m["shared"] <= 232448        # the H200's shared memory per block (opt-in)


@pytest.mark.parametrize("name", [*SPLIT_LOOPED, *PINGPONG_LOOPED, *PERSISTENT_LOOPED, *SECTIONS_LOOPED,
                                  *FOLD_LOOPED])
def test_split_consumers_kv_loops(built, name):
    """Four KV loops (each consumer's unmasked and masked), each step per consumer as v23's: q k^T of block j (D/16
    HGMMA 64x128), P V of block j - 1 (8 HGMMA 64 x D), the wait for the scores alone and all 66 exponentials of the
    step before the wait for P V; the CTA barriers in the loops are 128-thread ones (one warpgroup), not v23's 256."""
    shape, _, _, _, bn, _ = SPLIT_LIKE[name]
    D = shape[4]
    loops = kv_loops(built[name]["sass"])
    assert len(loops) == 4
    for body in loops:
        assert_overlapped_step(body, name, D, bn)
        bars = [t for t in body if t.startswith("BAR.SYNC")]
        assert bars and all(t.endswith("0x80") for t in bars), bars


@pytest.mark.parametrize("name", SPLIT_CONFIGS)
def test_split_consumers_load_q_in_halves_and_release_each_buffer_twice(built, name):
    """As v21 and v22: Q arrives as two 64-row TMA copies and O leaves by two stores, one per consumer; each ring
    buffer's "empty" barrier counts two releases (one per consumer); each consumer's barriers have their own id."""
    shape, _, _, _, bn, stages = SPLIT_CONFIGS[name]
    D = shape[4]
    m = built[name]
    counts = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", m["ptx"])
    assert sorted(counts) == sorted(["1"] * (1 + 2 * stages) + ["2"] * (2 * stages))
    assert m["mix"]["UTMALDG"] == 2 + 2 * (D // 64) and m["mix"]["UTMASTG"] == 2
    ids = set(re.findall(r"\bbar\.sync\s+(\d+), (\d+);", m["ptx"]))
    assert {n for _, n in ids} == {"128"} and len({i for i, _ in ids}) == 2
    tiles = 2 * (128 * D + 2 * stages * bn * D)
    assert tiles <= m["shared"] <= tiles + 1024


def test_split_consumers_need_register_realloc_and_take_their_tiles_only():
    from kernels.gluon_fwd import SPLIT_CONSUMERS_TILES, check_config, kernel_args, launch_options
    q = torch.empty((1, 2, 128, 64), dtype=torch.float16, device="meta")
    k = torch.empty((1, 1, 128, 64), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="split_consumers .* needs register_realloc"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, producer_warp=True, two_consumers=True,
                    softmax_overlap=True, split_consumers=True)
    args = kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, producer_warp=True,
                       two_consumers=True, softmax_overlap=True, register_realloc=True, split_consumers=True)
    assert args["SPLIT_CONSUMERS"] and args["q_desc"].block_shape == [1, 1, 64, 64]
    assert args["o_desc"].block_shape == [1, 1, 64, 64] and args["k_desc"].block_shape == [1, 1, 128, 64]
    assert launch_options(128, 128, 64, True, True, True, True) == {"num_warps": 4, "maxnreg": 168}
    for bm, bn, st in SPLIT_CONSUMERS_TILES:
        check_config(64, torch.float16, bm, bn, st, 4, two_consumers=True, register_realloc=True,
                     split_consumers=True)
    with pytest.raises(ValueError, match="split into partitions takes the tiles"):
        check_config(128, torch.float16, 128, 64, 3, 4, two_consumers=True, register_realloc=True,
                     split_consumers=True)
    with pytest.raises(ValueError, match="num_warps=4"):
        check_config(128, torch.float16, 128, 128, 2, 8, two_consumers=True, register_realloc=True,
                     split_consumers=True)


# ---------------------------------------------------------------------------------------------------------------
# PINGPONG (stage v25): the two consumers take turns at issuing their products
# ---------------------------------------------------------------------------------------------------------------

def _barrier(text: str) -> str:
    """The shared-memory offset of the mbarrier an instruction names ('[UR5+0x28348]' -> '0x28348')."""
    return re.search(r"\[[^]]*?(0x[0-9a-f]+)\]", text).group(1)


def _turns(body: list) -> tuple:
    """(the barrier a KV step waits on just before its products, the one it arrives on just after them)."""
    first = next(i for i, t in enumerate(body) if t.startswith("HGMMA"))
    last = max(i for i, t in enumerate(body) if t.startswith("HGMMA"))
    wait = [t for t in body[:first] if t.startswith("SYNCS.PHASECHK")][-1]
    arrive = next(t for t in body[last:] if t.startswith("SYNCS.ARRIVE"))
    return _barrier(wait), _barrier(arrive)


@pytest.mark.parametrize("name", [*PINGPONG_LOOPED, *PERSISTENT_LOOPED, *SECTIONS_LOOPED, *FOLD_LOOPED,
                                  *LEAN_LOOPED])
def test_pingpong_steps_issue_their_products_in_turn(built, name):
    """Each of the four KV loops: K's and V's ready barriers are waited for, then the consumer's turn barrier, then
    the step's D/16 + 8 HGMMA issued back to back, then an arrive on the other consumer's turn barrier, before the
    wait for the scores (DEPBAR.LE 1); the two consumers' loops wait and arrive on the same two barriers, swapped."""
    loops = kv_loops(built[name]["sass"])
    assert len(loops) == 4
    pairs = [_turns(body) for body in loops]
    assert all(w != a for w, a in pairs)
    assert len(set(pairs)) == 2 and {(a, w) for w, a in pairs} == set(pairs), pairs
    for body in loops:
        first = next(i for i, t in enumerate(body) if t.startswith("HGMMA"))
        assert len([t for t in body[:first] if t.startswith("SYNCS.PHASECHK")]) == 3    # K, V, then the turn
        one = next(i for i, t in enumerate(body) if t.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x1"))
        last = max(i for i, t in enumerate(body) if t.startswith("HGMMA"))
        assert [t for t in body[last:one] if t.startswith("SYNCS.ARRIVE")], "the turn passes before the wait"


@pytest.mark.parametrize("name", PINGPONG_CONFIGS)
def test_pingpong_turn_barriers_count_one_arrive_and_each_round_passes(built, name):
    """Two more mbarriers than v24's, each of count 1 (one arrive per round, from the other consumer); and every
    round's products are issued in a turn: each consumer passes its turn after block 0's q k^T, in every step of its
    two loops, and after the last P V product, 4 arrive sites per consumer on the turn barriers."""
    shape, _, _, _, bn, stages = PINGPONG_CONFIGS[name]
    m, v24 = built[name], built["sc-" + name.removeprefix("pp-")]
    counts = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", m["ptx"])
    assert sorted(counts) == sorted(["1"] * (3 + 2 * stages) + ["2"] * (2 * stages))
    assert m["mix"]["HGMMA"] == v24["mix"]["HGMMA"] and m["mix"]["MUFU.EX2"] == v24["mix"]["MUFU.EX2"]
    turns = set(_turns(kv_loops(m["sass"])[0])) if shape[3] > 1 else None
    arrives = [_barrier(t) for _, t in _instructions(m["sass"]) if t.startswith("SYNCS.ARRIVE.TRANS64.A1T0")]
    if turns is not None:
        assert sum(a in turns for a in arrives) == 8, arrives
    else:       # N = 1: no KV loop; block 0's q k^T and its P V product, two rounds per consumer
        assert len(arrives) - len([t for _, t in _instructions(v24["sass"])
                                   if t.startswith("SYNCS.ARRIVE.TRANS64.A1T0")]) == 4


def test_pingpong_needs_split_consumers_and_a_kv_block_of_the_program_rows():
    from kernels.gluon_fwd import kernel_args
    q = torch.empty((1, 2, 128, 64), dtype=torch.float16, device="meta")
    k = torch.empty((1, 1, 128, 64), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="pingpong .* needs split_consumers"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, producer_warp=True, two_consumers=True,
                    softmax_overlap=True, register_realloc=True, pingpong=True)
    args = kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, producer_warp=True,
                       two_consumers=True, softmax_overlap=True, register_realloc=True, split_consumers=True,
                       pingpong=True)
    assert args["PINGPONG"] and args["q_desc"].block_shape == [1, 1, 64, 64]


# ---------------------------------------------------------------------------------------------------------------
# PERSISTENT (stage v26): one program per SM loops over the tiles
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PERSISTENT_LIKE)
def test_persistent_keeps_v25s_products_and_adds_one_q_release_barrier(built, name):
    """v25's registers, products and exponentials (the same HGMMA and MUFU.EX2 counts: the tile loop wraps the same
    code), and one more mbarrier than v25, Q's "empty", counting the two consumers' releases."""
    shape, _, _, _, bn, stages = PERSISTENT_LIKE[name]
    m, v25 = built[name], built["pp-" + name.removeprefix("ps-").removeprefix("sec-").removeprefix("fold-")
                                .removeprefix("lean-").removeprefix("pair-").removeprefix("rare-")
                                .removeprefix("fused-").removeprefix("short-").removeprefix("lane-")
                                .removeprefix("max-").removeprefix("qreg-")]
    assert m["registers"] == v25["registers"]
    assert m["mix"]["HGMMA"] == v25["mix"]["HGMMA"] and m["mix"]["MUFU.EX2"] == v25["mix"]["MUFU.EX2"]
    counts = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], (\d+);", m["ptx"])
    assert sorted(counts) == sorted(["1"] * (3 + 2 * stages) + ["2"] * (2 * stages + 1))


@pytest.mark.parametrize("name", PERSISTENT_LIKE)
def test_persistent_producer_loads_q_and_o_has_its_own_buffer(built, name):
    """Every TMA load is the producer warp's, Q's two halves too (one warp: a D = 128 row of Q is two 64-column
    messages from it, where v25's 4-warp consumer issued one instruction per copy): 2 (D/64) for Q and D/64 each for
    K and V; O's two stores stay; O's own buffer adds a Q tile's bytes of shared memory to v25's; each consumer waits
    for its previous store before it fills O's buffer, in its tile loop, and for its last before it ends (four waits
    for the copy engine to have read shared memory, against v25's two). Beside the tiles, the barriers and the
    consumers' scratch row sums: at most 1024 bytes, 2048 more with LANE_SUMS (v35: each consumer's 64 rows of 4
    partial sums, where one float per row takes 256 bytes)."""
    shape, _, _, _, bn, stages = PERSISTENT_LIKE[name]
    D = shape[4]
    m = built[name]
    assert m["mix"]["UTMALDG"] == 4 * (D // 64) and m["mix"]["UTMASTG"] == 2
    assert len(re.findall(r"cp\.async\.bulk\.wait_group\.read\s+0;", m["ptx"])) == 4
    tiles = 2 * (2 * 128 * D + 2 * stages * bn * D)
    scratch = 2 * 64 * 4 * 4 if name in LANE_CONFIGS or name in MAX_CONFIGS or name in QREG_CONFIGS else 0
    assert tiles <= m["shared"] <= tiles + 1024 + scratch
    assert m["shared"] <= 232448


def test_persistent_grid_and_its_refusals():
    """The grid: one program per SM, at most one per tile; the kernel needs SPLIT_CONSUMERS and takes two stages."""
    from kernels.gluon_fwd import PERSISTENT_TILES, check_config, grid, kernel_args
    assert grid(2, 16, 16384, 128, True, 132) == (132,)
    assert grid(1, 4, 130, 128, True, 132) == (8,)
    assert grid(2, 16, 16384, 128) == (32, 128)
    with pytest.raises(ValueError, match="number of SMs"):
        grid(2, 16, 1024, 128, True)
    q = torch.empty((1, 2, 128, 64), dtype=torch.float16, device="meta")
    k = torch.empty((1, 1, 128, 64), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="persistent .* needs split_consumers"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, producer_warp=True, two_consumers=True,
                    softmax_overlap=True, register_realloc=True, persistent=True)
    assert PERSISTENT_TILES == ((128, 128, 2),)
    check_config(128, torch.float16, 128, 128, 2, 4, two_consumers=True, register_realloc=True,
                 split_consumers=True, persistent=True)
    with pytest.raises(ValueError, match="persistent Gluon kernel takes the tiles"):
        check_config(128, torch.float16, 128, 128, 3, 4, two_consumers=True, register_realloc=True,
                     split_consumers=True, persistent=True)


def _snake(T: int, P: int) -> list:
    """The tiles of each of P programs, as kernels.gluon_fwd's _tile_count and _tile_of deal them (a copy in
    Python of the kernel's arithmetic, which only the GPU runs)."""
    out = []
    for pid in range(P):
        rounds = -(-T // P)
        last = rounds - 1
        pos = pid if last % 2 == 0 else P - 1 - pid
        count = last + int(last * P + pos < T)
        out.append([i * P + (pid if i % 2 == 0 else P - 1 - pid) for i in range(count)])
    return out


@pytest.mark.parametrize("T,P", [(256, 132), (1024, 132), (4096, 132), (8, 8), (133, 132), (395, 132), (1, 1)])
def test_persistent_tiles_are_dealt_once_each_and_balanced(T, P):
    """Every tile goes to exactly one program; with a causal mask's work (tile t of BH = 32 heads: query block
    n_m - 1 - t // 32, work n_m - t // 32 blocks) the programs' sums stay within the heaviest tile of each other."""
    dealt = _snake(T, P)
    assert sorted(t for ts in dealt for t in ts) == list(range(T))
    n_m = -(-T // 32)
    work = [sum(n_m - t // 32 for t in ts) for ts in dealt]
    assert max(work) - min(work) <= n_m


# ---------------------------------------------------------------------------------------------------------------
# SECTIONS (stage v27): the persistent grid's tiles in sections of a few K/V heads
# ---------------------------------------------------------------------------------------------------------------

def _section_heads(BH: int, GROUP: int, n_m: int, P: int) -> int:
    from kernels.gluon_fwd import section_heads     # the kernel's _section_heads, in Python
    return section_heads(BH, GROUP, n_m, P)


def _section_tile(t: int, BH: int, n_m: int, SH: int) -> tuple:
    """(batch*head, query block) of tile t in SECTIONS' order: kernels.gluon_fwd's _tile_of, a copy in Python."""
    v = t // SH
    sec = v // n_m
    r = v - sec * n_m
    m = n_m - 1 - r if (BH // SH - 1 - sec) % 2 == 0 else r
    return sec * SH + (t - v * SH), m


SECTION_SHAPES = [(2, 16, 2, N) for N in (1, 130, 512, 1024, 2048, 4096, 8192, 16384)] + [
    (1, 32, 4, 16384), (4, 32, 8, 4096), (1, 16, 16, 8192), (2, 40, 5, 8192), (2, 64, 8, 1024), (1, 8, 1, 16384),
    (3, 12, 4, 8192), (3, 12, 4, 1000), (2, 24, 3, 777), (1, 2, 1, 333)]


@pytest.mark.parametrize("B,H,GROUP,N", SECTION_SHAPES)
def test_sections_deal_every_tile_once_and_stay_balanced(B, H, GROUP, N):
    """Every (head, query block) once, dealt by v26's snake (_snake); each section has SH heads, SH a multiple of
    the group (whole K/V heads) dividing B H; with a causal mask's work (query block m: m + 1 key blocks) the
    programs' sums stay within the heaviest tile of each other, as v26's do."""
    BH, n_m = B * H, -(-N // 128)
    T = BH * n_m
    P = min(132, T)
    SH = _section_heads(BH, GROUP, n_m, P)
    assert SH % GROUP == 0 and BH % SH == 0
    dealt = _snake(T, P)
    tiles = [[_section_tile(t, BH, n_m, SH) for t in ts] for ts in dealt]
    assert sorted(x for ts in tiles for x in ts) == sorted((bh, m) for bh in range(BH) for m in range(n_m))
    work = [sum(m + 1 for _, m in ts) for ts in tiles]
    v26 = [sum(n_m - t // BH for t in ts) for ts in dealt]
    assert max(work) - min(work) <= max(n_m, max(v26) - min(v26))


def test_sections_are_a_few_kv_heads_at_long_n_and_v26s_order_at_short_n():
    """At the headline layout (B=2, H=16, H_kv=8) on 132 SMs: one K/V head per section at N = 16384 (8 MB of K/V at
    D = 128), two at 8192, four at 4096, eight at 2048; at 1024 and below one section, whose order is v26's."""
    BH, GROUP = 32, 2
    got = {N: _section_heads(BH, GROUP, -(-N // 128), min(132, BH * -(-N // 128))) // GROUP
           for N in (512, 1024, 2048, 4096, 8192, 16384)}
    assert got == {512: 16, 1024: 16, 2048: 8, 4096: 4, 8192: 2, 16384: 1}
    for N in (512, 1024):
        n_m = -(-N // 128)
        assert all(_section_tile(t, BH, n_m, BH) == (t % BH, n_m - 1 - t // BH) for t in range(BH * n_m))


def test_sections_need_the_persistent_grid():
    from kernels.gluon_fwd import kernel_args
    q = torch.empty((1, 2, 128, 64), dtype=torch.float16, device="meta")
    k = torch.empty((1, 1, 128, 64), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="sections .* needs persistent"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, producer_warp=True, two_consumers=True,
                    softmax_overlap=True, register_realloc=True, split_consumers=True, sections=True)


# ---------------------------------------------------------------------------------------------------------------
# FOLD (stage v28): on a causal grid of one round, a light and a heavy 64-row query block per tile
# ---------------------------------------------------------------------------------------------------------------

FOLD_SHAPES = [(B, H, N) for B, H in ((2, 16), (1, 16), (1, 4), (1, 1), (3, 12)) for N in
               (1, 64, 65, 128, 130, 192, 333, 512, 640, 777, 1000, 1024, 2048)]


@pytest.mark.parametrize("B,H,N", FOLD_SHAPES)
def test_fold_covers_every_query_block_once_and_balances_a_one_round_grid(B, H, N):
    """The kernel's _fold and _folded_blocks, in Python (kernels.gluon_fwd.fold, folded_blocks), on 132 programs:
    every 64-row query block of every head below N is one consumer's of one tile (a block wholly past N may be the
    other's); each consumer's bounds are its rows' (a causal block m sees keys [0, 64 (m + 1))); consumer 1's rows
    never see more key blocks than consumer 0's, whose blocks the tile runs; folded, the tiles' work (both
    consumers' steps) is within one step of each other, and from 8 query blocks on at most half v27's heaviest
    tile's (cdiv(N, 128) steps for each consumer) plus two steps. Unfolded
    (more tiles than programs, or no causal mask), the blocks are v27's, 2 start_m and 2 start_m + 1."""
    from kernels.gluon_fwd import fold, folded_blocks
    n_m, n_q = -(-N // 128), -(-N // 64)
    T = B * H * n_m
    P = min(132, T)
    for causal in (True, False):
        folded = fold(T, P, causal)
        assert folded == (causal and T <= 132)
        seen = []
        for start_m in range(n_m):
            m0, f0, t0, m1, f1, t1 = folded_blocks(start_m, N, folded, causal)
            assert t1 <= t0
            if not folded:
                assert (m0, m1) == (2 * start_m, 2 * start_m + 1)
                assert t0 == t1 == (-(-min(N, 128 * (start_m + 1)) // 128) if causal else -(-N // 128))
            for m, f, t in ((m0, f0, t0), (m1, f1, t1)):
                assert 0 <= f <= t <= n_m and t >= 1
                if causal:      # the keys the rows see, and the unmasked blocks wholly below the first row
                    assert t == -(-min(N, 64 * (m + 1)) // 128) and f == 64 * m // 128
                else:
                    assert (f, t) == (N // 128, n_m)
                if 64 * m < N:
                    seen.append(m)
        assert sorted(seen) == list(range(n_q))
        if folded:      # work: the two consumers' key blocks (64 x 128 steps), v27's twice its tile's
            work = [folded_blocks(s, N, True, True)[2] + folded_blocks(s, N, True, True)[5] for s in range(n_m)]
            v27 = [2 * -(-min(N, 128 * (s + 1)) // 128) for s in range(n_m)]
            assert max(work) <= max(v27) and max(work) - min(work) <= 1
            if n_q >= 8:
                assert max(work) <= 0.5 * max(v27) + 2


def test_fold_at_the_headline_layout_is_n_512_alone():
    """B = 2, H = 16 on 132 SMs: 128 tiles at N = 512, folded: consumer 0 takes 64-row block 7 - s (4 or 3 key
    blocks), consumer 1 block s (1 or 2), where v27's heaviest tile has 4 for both; from N = 1024 on (256 tiles)
    v27's tiles."""
    from kernels.gluon_fwd import fold, folded_blocks
    assert [fold(32 * -(-N // 128), 132, True) for N in (512, 1024, 2048)] == [True, False, False]
    assert [folded_blocks(s, 512, True, True) for s in range(4)] == [
        (7, 3, 4, 0, 0, 1), (6, 3, 4, 1, 0, 1), (5, 2, 3, 2, 1, 2), (4, 2, 3, 3, 1, 2)]


def test_fold_needs_the_persistent_grid():
    from kernels.gluon_fwd import kernel_args
    q = torch.empty((1, 2, 128, 64), dtype=torch.float16, device="meta")
    k = torch.empty((1, 1, 128, 64), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="fold .* needs persistent"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, producer_warp=True, two_consumers=True,
                    softmax_overlap=True, register_realloc=True, split_consumers=True, pingpong=True, fold=True)


@pytest.mark.parametrize("name", FOLD_LOOPED)
def test_fold_adds_a_drain_of_turns_and_releases_to_each_consumer(built, name):
    """v27's products, exponentials and registers; causal, consumer 1 gains a loop without HGMMA (the drain) that
    arrives on consumer 0's turn barrier and on the two "empty" barriers of the slot: three more arrive sites than
    v27 has. Without a causal mask the two blocks' bounds are the same (every key), the drain's range is empty and
    the compiler drops it."""
    shape, _, causal, *_ = FOLD_CONFIGS[name]
    m, v27 = built[name], built["sec-" + name.removeprefix("fold-")]
    assert m["registers"] == v27["registers"]
    assert m["mix"]["HGMMA"] == v27["mix"]["HGMMA"] and m["mix"]["MUFU.EX2"] == v27["mix"]["MUFU.EX2"]
    arrives = len(re.findall(r"mbarrier\.arrive", m["ptx"]))
    assert arrives == len(re.findall(r"mbarrier\.arrive", v27["ptx"])) + (3 if causal else 0), arrives


# ---------------------------------------------------------------------------------------------------------------
# LEAN_BARRIERS (stage v29): the consumers' membar barriers before mbarrier operations dropped from the PTX
# ---------------------------------------------------------------------------------------------------------------

def _bar_syncs(ptx: str) -> int:
    return len(re.findall(r"\bbar\.sync\s+\d+,\s*128;", ptx))


@pytest.mark.parametrize("name", LEAN_CONFIGS)
def test_lean_barriers_keep_v28s_kernel_but_its_step_barriers(built, name):
    """v28's registers (no spills), products, exponentials and arrive and wait sites; the PTX pass's count of the
    128-thread barriers it dropped is what v28 has more; the barriers before O's store and its TMA copy stay (two
    per consumer), as do those around the barriers' init; in the KV loops no CTA barrier is left, and each step
    still has its exponentials between the wait for the scores and the wait for P V (the overlap; without the
    barrier before the scratch store ptxas could move that wait)."""
    shape, dtype, _, _, bn, _ = LEAN_CONFIGS[name]
    m, v28 = built[name], built["fold-" + name.removeprefix("lean-")]
    assert m["registers"] == v28["registers"]
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0 and m["stack"] == 0
    for op in ("HGMMA", "MUFU.EX2", "SYNCS", "UTMALDG", "UTMASTG"):
        assert m["mix"].get(op, 0) == v28["mix"].get(op, 0), op
    assert len(re.findall(r"mbarrier\.(arrive|try_wait)", m["ptx"])) == len(re.findall(r"mbarrier\.(arrive|try_wait)",
                                                                                          v28["ptx"]))
    dropped = int(re.search(r"drop_membar_barriers: (\d+) bar\.sync dropped", m["ptx"]).group(1))
    assert dropped > 0 and _bar_syncs(m["ptx"]) == _bar_syncs(v28["ptx"]) - dropped
    kept = re.findall(r"bar\.sync\s+\d+,\s*128;\s*\n(?:\s*(?://.*|\.loc.*|\$L__tmp\d+:)?\n)*\s*([a-z][a-z0-9.]*)", m["ptx"])
    assert kept.count("cvt.rn.bf16x2.f32" if dtype == "bfloat16" else "cvt.rn.f16x2.f32") == 2, kept
    assert kept.count("elect.sync") == 2, kept
    if shape[3] > 1:
        loops = kv_loops(m["sass"])
        assert len(loops) == 4
        for body in loops:
            assert not [t for t in body if t.startswith("BAR.SYNC")]
            assert_overlapped_step(body, name, shape[4], bn)
        assert all(any(t.startswith("BAR.SYNC") for t in body) for body in kv_loops(v28["sass"]))
        # the fold's drain (causal only: without a mask its range is empty and the compiler drops it) keeps its
        # barriers: no warpgroup MMA there keeps the consumer's warps within a phase of each other
        drains = [b for b in innermost_loops(_instructions(m["sass"]))
                  if not any(t.startswith(("HGMMA", "UTMALDG")) for t in b)
                  and any(t.startswith("SYNCS.ARRIVE") for t in b)]       # not a KV loop, not the producer's
        assert bool(drains) == LEAN_CONFIGS[name][2], drains
        assert all(any(t.startswith("BAR.SYNC") for t in b) for b in drains)


def test_drop_membar_barriers_drops_those_before_mbarrier_operations_and_the_scratch_store_only():
    """The pass on a PTX of its cases: a 128-thread barrier before a wait (through the inline asm's braces and
    address arithmetic), before a one-thread arrive and before a scratch store followed by the wait for a warpgroup
    MMA goes; one before a store that a TMA copy reads (elect.sync), before a conversion, before an mbarrier's init,
    a store not followed by an MMA wait and a 256-thread or warp-specialization barrier stay."""
    from kernels.gluon_fwd import drop_membar_barriers
    drop = ["\tbar.sync \t0, 128;", "\t// begin inline asm", "\t", "{", "\t.reg .pred complete;", "\twaitLoop:",
            "\tmbarrier.try_wait.parity.shared.b64 complete, [%r1], %r2;", "\t@!complete bra.uni waitLoop;", "}",
            "\tbar.sync \t2, 128;", "\tadd.s32 \t%r3, %r4, 197440;", "\t.loc\t1 571 42",
            "\t@%p27 mbarrier.arrive.shared::cta.b64 _, [%r3];",
            "\tbar.sync \t0, 128;", "\tst.shared.b32 \t[%r5+196608], %r6;", "\tst.shared.b32 \t[%r5+196640], %r7;",
            "\t// begin inline asm", "\twgmma.wait_group.sync.aligned 0;"]
    keep = ["\tbar.sync \t0, 128;", "\telect.sync \t%r8|%p9, -1;",
            "\tbar.sync \t0, 128;", "\tcvt.rn.f16x2.f32 \t%r10, %r11, %r12;",
            "\tbar.sync \t0, 128;", "\tadd.s32 \t%r13, %r14, 8;", "\t@%p1 mbarrier.init.shared::cta.b64 [%r13], 1;",
            "\tbar.sync \t0, 128;", "\tst.shared.b32 \t[%r5], %r6;", "\tld.shared.b32 \t%r15, [%r5];",
            "\tbar.sync \t0, 256;", "\tmbarrier.try_wait.parity.shared.b64 complete, [%r1], %r2;",
            "\tbarrier.sync \t1;", "\t@%p27 mbarrier.arrive.shared::cta.b64 _, [%r3];"]
    out, n = drop_membar_barriers("\n".join(drop + keep))
    assert n == 3
    assert out.splitlines()[:-1] == [line for line in drop if "bar.sync" not in line] + keep
    assert out.splitlines()[-1] == "// gluon_fwd.drop_membar_barriers: 3 bar.sync dropped"


def test_drop_membar_barriers_keeps_those_of_the_lines_it_is_told_to_keep():
    """A barrier whose source position (the .loc before it, any frame of its inlining stack) is in keep_lines
    stays; the hook keeps ``_drain``'s."""
    from kernels.gluon_fwd import _drain_lines, drop_membar_barriers
    ptx = ["\t.loc\t1 960 20 // gluon_fwd.py:960:20 @[ gluon_fwd.py:1100:9 ]", "\tbar.sync \t2, 128;",
           "\t@%p27 mbarrier.arrive.shared::cta.b64 _, [%r3];",
           "\t.loc\t1 588 20 // gluon_fwd.py:588:20 @[ gluon_fwd.py:654:72 ]", "\tbar.sync \t2, 128;",
           "\t@%p27 mbarrier.arrive.shared::cta.b64 _, [%r4];"]
    out, n = drop_membar_barriers("\n".join(ptx), keep_lines=range(1100, 1101))
    assert n == 1 and out.splitlines()[:-1] == ptx[:4] + ptx[5:]
    assert drop_membar_barriers("\n".join(ptx))[1] == 2
    drain = _drain_lines()
    assert len(drain) > 10 and "def _drain(" in (ROOT / "kernels" / "gluon_fwd.py").read_text().splitlines()[drain[0]]


def test_the_stages_hook_rewrites_marked_ptx_only_and_keeps_an_earlier_hook():
    """The compile's PTX stage, as the hook leaves it: a PTX with LEAN_MARK loses its droppable barriers, any other
    (every other kernel's) comes back as it was; a hook installed before the module's still runs first, and a second
    install does not chain the module's hook to itself."""
    from triton import knobs

    from kernels import gluon_fwd
    calls = []
    saved = knobs.runtime.add_stages_inspection_hook
    try:
        knobs.runtime.add_stages_inspection_hook = lambda *args: calls.append(args[-1])
        gluon_fwd._install_stages_hook()
        gluon_fwd._install_stages_hook()
        ptx = "\tbar.sync \t0, 128;\n\t@%p1 mbarrier.arrive.shared::cta.b64 _, [%r1];"
        for text, expect in ((ptx, ptx), (gluon_fwd.LEAN_MARK + "\n" + ptx, None)):
            stages = {"ptx": lambda src, metadata, text=text: text}
            knobs.runtime.add_stages_inspection_hook(None, stages, None, None, 90)
            got = stages["ptx"](None, {})
            if expect is not None:
                assert got == expect
            else:
                assert "\tbar.sync" not in got and got.endswith("1 bar.sync dropped") and "mbarrier.arrive" in got
        assert calls == [90, 90]
    finally:
        knobs.runtime.add_stages_inspection_hook = saved
        gluon_fwd._install_stages_hook()


def test_lean_barriers_need_the_persistent_grid():
    from kernels.gluon_fwd import LEAN_MARK, kernel_args
    q = torch.empty((1, 2, 128, 64), dtype=torch.float16, device="meta")
    k = torch.empty((1, 1, 128, 64), dtype=torch.float16, device="meta")
    common = dict(producer_warp=True, two_consumers=True, softmax_overlap=True, register_realloc=True,
                  split_consumers=True, pingpong=True)
    with pytest.raises(ValueError, match="lean_barriers .* needs persistent"):
        kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, **common, lean_barriers=True)
    args = kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, **common, persistent=True,
                       lean_barriers=True)
    assert args["LEAN_BARRIERS"] == LEAN_MARK and LEAN_MARK.startswith("// ")
    assert kernel_args(q, k, k.clone(), torch.empty_like(q), True, 128, 128, 2, **common,
                       persistent=True)["LEAN_BARRIERS"] == ""


# ---------------------------------------------------------------------------------------------------------------
# PAIRED_CVT (stage v30): P converted two at a time, where the conversions write the P V product's operand
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PAIRED_CONFIGS)
def test_paired_cvt_drops_the_pair_swaps(built, name):
    """v29's registers (no spills), products, exponentials, conversions (one F2FP per pair) and arrive and wait
    sites; no PRMT left in the KV loops, where v29 swaps each pair's halves back with one (32 per step at 64x128);
    and each step still has its exponentials between the wait for the scores and the wait for P V."""
    shape, _, _, _, bn, _ = PAIRED_CONFIGS[name]
    m, v29 = built[name], built["lean-" + name.removeprefix("pair-")]
    assert m["registers"] == v29["registers"]
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0 and m["stack"] == 0
    for op in ("HGMMA", "MUFU.EX2", "SYNCS", "UTMALDG", "UTMASTG", "BAR"):
        assert m["mix"].get(op, 0) == v29["mix"].get(op, 0), op
    if shape[3] > 1:
        loops, loops29 = kv_loops(m["sass"]), kv_loops(v29["sass"])
        assert len(loops) == len(loops29) == 4
        for body, body29 in zip(loops, loops29):
            assert not [t for t in body if t.startswith("PRMT")]
            assert len([t for t in body29 if t.startswith("PRMT")]) >= bn // 4     # a pair's swap, 64 x bn / 2 / 128
            f2fp = len([t for t in body if t.startswith("F2FP")])
            assert f2fp == len([t for t in body29 if t.startswith("F2FP")]) and f2fp % (bn // 4) == 0
            assert_overlapped_step(body, name, shape[4], bn)
            assert len(body) < len(body29)



# ---------------------------------------------------------------------------------------------------------------
# RARE_RESCALE (stage v31): the rescale of acc skipped, behind a branch uniform in the warp, where no row grew
# ---------------------------------------------------------------------------------------------------------------

def _skips(sass: str) -> list:
    """(first, last) addresses of the instructions that each predicated forward branch of the SASS jumps over."""
    ins = [(int(m.group(1), 16), m.group(2)) for m in
           re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(@!?P\d\s+BRA\s+0x[0-9a-f]+)\s*;", sass)]
    out = []
    for addr, text in ins:
        target = int(text.rsplit("0x", 1)[1], 16)
        if target > addr:
            out.append((addr + 16, target - 16))
    return out


@pytest.mark.parametrize("name", RARE_CONFIGS)
def test_rare_rescale_skips_accs_rescale_behind_a_vote(built, name):
    """v30's registers (no spills), products, exponentials, conversions and barriers (the decision is a warp's vote,
    not a reduction across the warpgroup through shared memory); in each KV loop one vote (over both of a thread's
    rows: two votes, one per row, let a thread's two rows disagree, and the rescale of one was skipped) and a predicated forward branch that jumps over exactly acc's rescale (D/2 FMUL per thread, nothing else), and
    the overlap kept."""
    shape, _, _, _, bn, _ = RARE_CONFIGS[name]
    m, v30 = built[name], built["pair-" + name.removeprefix("rare-")]
    assert m["registers"] == v30["registers"]
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0 and m["stack"] == 0
    for op in ("HGMMA", "MUFU.EX2", "SYNCS", "UTMALDG", "UTMASTG", "BAR", "F2FP"):
        assert m["mix"].get(op, 0) == v30["mix"].get(op, 0), op
    assert v30["mix"].get("VOTE", 0) == 0 < m["mix"]["VOTE"]
    if shape[3] > 1:
        D = shape[4]
        ins = _instructions(m["sass"])
        skipped = [[t for a, t in ins if lo <= a <= hi] for lo, hi in _skips(m["sass"])]
        rescales = [body for body in skipped if body and all(t.startswith("FMUL") for t in body)]
        assert rescales and all(len(body) == D // 2 for body in rescales), [len(b) for b in rescales]
        loops = kv_loops(m["sass"])
        assert len(loops) == 4
        for body in loops:
            assert len([t for t in body if t.startswith("VOTE.ANY")]) == 1
            assert_overlapped_step(body, name, D, bn)


# ---------------------------------------------------------------------------------------------------------------
# FUSED_EXPONENT (stage v33): one FFMA per score behind a warp's vote, the exact exponent kept for large maxima
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", FUSED_CONFIGS)
def test_fused_exponent_takes_one_ffma_per_score_behind_a_vote(built, name):
    """v31's registers, products, exponentials, loads, stores and barriers (and in the KV loops its conversions);
    nothing spilled inside the KV loops (ptxas keeps at most kernels.gluon_fwd.FUSED_STACK_BYTES of a consumer's
    scalars on the stack, stored before the loops and loaded after them, where v31 kept them in registers); in each KV loop one more vote (VOTE.ALL, the warp's
    rows all below FUSED_LIMIT) beside v31's VOTE.ANY, and a predicated forward branch that jumps over exactly the
    fused path, one FFMA per score of a thread (BLOCK_N / 2) and the jump past the exact path, which follows it:
    an FADD and an FMUL per score; the overlap kept."""
    from kernels.gluon_fwd import FUSED_STACK_BYTES
    shape, _, _, _, bn, _ = FUSED_CONFIGS[name]
    m, v31 = built[name], built["rare-" + name.removeprefix("fused-")]
    assert m["registers"] == v31["registers"]
    assert m["stack"] <= FUSED_STACK_BYTES and m["local"] == 0
    for op in ("HGMMA", "MUFU.EX2", "SYNCS", "UTMALDG", "UTMASTG", "BAR", "VOTE.ANY"):
        assert m["mix"].get(op, 0) == v31["mix"].get(op, 0), op
    # (outside the loops ptxas may copy the conversions of P after the branch into both of its arms: F2FP is
    # compared within the KV loops)
    if shape[3] > 1:
        D, n = shape[4], bn // 2
        ins = _instructions(m["sass"])
        fused = []
        for lo, hi in _skips(m["sass"]):
            body = [(a, t) for a, t in ins if lo <= a <= hi]
            if len(body) == n + 1 and all(t.startswith("FFMA") for _, t in body[:-1]) and body[-1][1].startswith("BRA"):
                done = int(body[-1][1].rsplit("0x", 1)[1], 16)
                exact = [t.split()[0] for a, t in ins if hi < a < done]
                fused.append(sorted(exact))
        assert fused and all(e == sorted(["FADD"] * n + ["FMUL"] * n) for e in fused), fused
        loops, v31_loops = kv_loops(m["sass"]), kv_loops(v31["sass"])
        assert len(loops) == len(v31_loops) == 4
        for body, v31_body in zip(loops, v31_loops):
            assert len([t for t in body if t.startswith("VOTE.ALL")]) == 1
            assert len([t for t in body if t.startswith("VOTE.ANY")]) == 1
            assert not [t for t in body if t.startswith(("STL", "LDL"))]
            for op in ("F2FP", "MUFU.EX2", "HGMMA"):
                assert (len([t for t in body if t.startswith(op)])
                        == len([t for t in v31_body if t.startswith(op)])), op
            ffma = [t for t in body if t.startswith("FFMA")]
            assert len(ffma) == n + len([t for t in v31_body if t.startswith("FFMA")])
            assert_overlapped_step(body, name, D, bn)


# ---------------------------------------------------------------------------------------------------------------
# SHORT_REDUCTIONS (stage v34): the row maxima and sums in short dependent chains, the same instructions
# ---------------------------------------------------------------------------------------------------------------

def chain_depth(body: list, ops: tuple) -> int:
    """The longest chain of instructions of the kinds ops (e.g. FMNMX) in a loop body, each reading a register the
    one before wrote (an instruction of another kind that writes a register ends the chains through it)."""
    depth, best = {}, 0
    for text in body:
        regs = re.findall(r"\bR\d+\b", text)
        if not regs:
            continue
        if text.split()[0].split(".")[0] in ops:
            depth[regs[0]] = max([depth.get(r, 0) for r in regs[1:]], default=0) + 1
            best = max(best, depth[regs[0]])
        else:
            depth.pop(regs[0], None)
    return best


def row_sum_tail(body: list) -> int:
    """The dependent FADDs between a loop body's last exponential (MUFU.EX2) and the first shuffle after it (the row
    sums' reduction across the lanes), ending in the register that shuffle reads: the sum's additions that wait for
    the last exponential before the lanes can exchange their sums."""
    last = max(i for i, t in enumerate(body) if t.startswith("MUFU.EX2"))
    shfl = next(i for i in range(last, len(body)) if body[i].startswith("SHFL"))
    depth = {}
    for text in body[last + 1:shfl]:
        regs = re.findall(r"\bR\d+\b", text)
        if regs and text.startswith("FADD"):
            depth[regs[0]] = max([depth.get(r, 0) for r in regs[1:]], default=0) + 1
        elif regs:
            depth.pop(regs[0], None)
    return depth.get(re.findall(r"\bR\d+\b", body[shfl])[1], 0)


def kv_loops_beside_v33s(built, name: str, prefix: str, N: int) -> list:
    """A stage built on v33 (its configuration name, prefix and v33's after 'fused-'): v33's registers, products,
    exponentials, loads, stores, barriers and votes, within v33's stack and no local memory; then each of its four KV
    loops beside v33's, none spilling (none looked at for N = 1)."""
    from kernels.gluon_fwd import FUSED_STACK_BYTES
    m, v33 = built[name], built["fused-" + name.removeprefix(prefix)]
    assert m["registers"] == v33["registers"]
    assert m["stack"] <= FUSED_STACK_BYTES and m["local"] == 0
    for op in ("HGMMA", "MUFU.EX2", "SYNCS", "UTMALDG", "UTMASTG", "BAR", "VOTE.ANY", "VOTE.ALL"):
        assert m["mix"].get(op, 0) == v33["mix"].get(op, 0), op
    if N == 1:
        return []
    loops, v33_loops = kv_loops(m["sass"]), kv_loops(v33["sass"])
    assert len(loops) == len(v33_loops) == 4
    for body in loops:
        assert not [t for t in body if t.startswith(("STL", "LDL"))]
    return list(zip(loops, v33_loops))


@pytest.mark.parametrize("name", SHORT_CONFIGS)
def test_short_reductions_shorten_the_chains_and_keep_the_instructions(built, name):
    """v33's registers, products, exponentials, loads, stores, barriers and votes, nothing spilled inside the KV loops;
    in each KV loop v33's instructions, kind for kind (the reductions reordered, none added), and the longest chain
    of dependent FMNMX (the row maxima, before the exponentials) and of dependent FADD (the row sums) at most 12,
    where v33's are over 30 at BLOCK_N = 128 (a thread's 32 values of a row, one after the other); the overlap
    kept; the first exponential within 4 instructions of where v33 has it, and (BLOCK_N = 128) three or more
    dependent FADDs after the last one before the row sums' first shuffle, against v33's one."""
    shape, _, _, _, bn, _ = SHORT_CONFIGS[name]
    for body, v33_body in kv_loops_beside_v33s(built, name, "short-", shape[3]):
        for op in ("FMNMX", "FADD", "FMUL", "FFMA", "SHFL", "F2FP", "MUFU.EX2", "HGMMA", "VOTE"):
            assert (len([t for t in body if t.startswith(op)])
                    == len([t for t in v33_body if t.startswith(op)])), op
        for ops in (("FMNMX",), ("FADD",)):
            assert chain_depth(body, ops) <= 12, (ops, chain_depth(body, ops))
            if bn == 128:
                assert chain_depth(v33_body, ops) > 30, (ops, chain_depth(v33_body, ops))
        # why v34 was not faster on an H200 (probes/v34-check): the maximum's short chains do not bring the first
        # exponential forward (ptxas issued v33's 64 FMNMX, two rows interleaved, as fast), and the sum's tree
        # leaves three or more dependent FADDs between the last exponential and the row sums' first shuffle where
        # v33's chain leaves one
        first = [next(i for i, t in enumerate(b) if t.startswith("MUFU.EX2")) for b in (body, v33_body)]
        assert abs(first[0] - first[1]) <= 4, first
        if bn == 128:
            assert row_sum_tail(body) >= 3 and row_sum_tail(v33_body) == 1, (row_sum_tail(body),
                                                                               row_sum_tail(v33_body))
        assert_overlapped_step(body, name, shape[4], bn)


# ---------------------------------------------------------------------------------------------------------------
# LANE_SUMS (stage v35): each thread's partial row sums across the steps, the lanes' sums added once per tile
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", LANE_CONFIGS)
def test_lane_sums_take_the_row_sums_shuffles_out_of_the_kv_loops(built, name):
    """v33's registers, products, exponentials, loads, stores, barriers and votes, nothing spilled inside the KV
    loops; in each KV loop v33's instructions but the row sums' exchange across the lanes: half its shuffles (those
    left are the row maxima's, before the exponentials), 4 FADD fewer (two levels of two rows), its two stores of the
    scratch row sums one store (and, as v33's, no CTA barrier: LEAN_BARRIERS drops the one before it); between the
    last exponential and the wait for the P V product no shuffle, where v33 has 4 (the row sums' two levels, two
    rows); the exponentials still before that wait (the overlap kept)."""
    shape, _, _, _, bn, _ = LANE_CONFIGS[name]

    def count(body, op):
        return len([t for t in body if t.startswith(op)])
    for body, v33_body in kv_loops_beside_v33s(built, name, "lane-", shape[3]):
        for op in ("FMNMX", "FMUL", "FFMA", "F2FP", "MUFU.EX2", "HGMMA", "VOTE"):
            assert count(body, op) == count(v33_body, op), op
        assert count(body, "SHFL") * 2 == count(v33_body, "SHFL") == 8
        assert count(body, "FADD") == count(v33_body, "FADD") - 4
        assert count(v33_body, "STS") == 2 and count(body, "STS") == 1        # STSM: the partial sums at once
        assert count(body, "BAR.") == count(v33_body, "BAR.") == 0      # the scratch store's barrier dropped
        last = [max(i for i, t in enumerate(b) if t.startswith("MUFU.EX2")) for b in (body, v33_body)]
        wait = [max(i for i, t in enumerate(b) if t.startswith("WARPGROUP.DEPBAR")) for b in (body, v33_body)]
        assert last[0] < wait[0] and last[1] < wait[1]
        assert count(body[last[0]:wait[0]], "SHFL") == 0 and count(v33_body[last[1]:wait[1]], "SHFL") == 4
        assert_overlapped_step(body, name, shape[4], bn)


# ---------------------------------------------------------------------------------------------------------------
# LANE_MAX (stage v36): each lane's copy of its rows' maxima, the lanes' exchange only in a step that rescales
# ---------------------------------------------------------------------------------------------------------------

def common_path(body: list) -> list:
    """The instructions a step issues from its wait for the scores (WARPGROUP.DEPBAR.LE 1) to its first exponent
    (FFMA), skipping each forward branch's span that holds a shuffle (LANE_MAX's exchange, taken only where the
    warp rescales): texts."""
    one = next(i for i, (_, t) in enumerate(body) if t.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x1"))
    first = next(i for i in range(one, len(body)) if body[i][1].startswith("FFMA"))
    path, i = [], one
    while i < first:
        addr, text = body[i]
        m = BRANCH.match(text)
        if m and int(m.group(1), 16) > addr:
            target = int(m.group(1), 16)
            span = [t for a, t in body if addr < a < target]
            if any(t.startswith("SHFL") for t in span):
                path.append(text)
                i = next(k for k, (a, _) in enumerate(body) if a >= target)
                continue
        path.append(text)
        i += 1
    return path


@pytest.mark.parametrize("name", MAX_CONFIGS)
def test_lane_max_takes_the_row_maxima_shuffles_off_the_common_step(built, name):
    """v35's registers, products, exponentials, loads, stores, barriers and votes, nothing spilled inside the KV
    loops; in each KV loop v35's products, exponentials, conversions and shuffles, the 4 shuffles (the row maxima's
    exchange across a row's lanes, two levels of two rows) inside a forward branch's span, so that a step that does
    not rescale skips them; on that step's path from the wait for the scores to the first exponent no shuffle, and
    in the unmasked loops at least 10 instructions fewer than v35's (in the masked ones, one step per tile, where
    ptxas interleaves the mask's selects there, up to 5 more in the sm_90 build at D = 128; at most 8 allowed); the
    overlap kept."""
    shape, _, _, _, bn, _ = MAX_CONFIGS[name]
    m, v35 = built[name], built["lane-" + name.removeprefix("max-")]
    assert m["registers"] == v35["registers"] and m["local"] == 0
    assert "C7512" not in m["ptxas"] and "serialized" not in m["ptxas"]
    for op in ("HGMMA", "MUFU.EX2", "SYNCS", "UTMALDG", "UTMASTG", "BAR", "VOTE.ANY", "VOTE.ALL", "SHFL"):
        assert m["mix"].get(op, 0) == v35["mix"].get(op, 0), op
    if shape[3] == 1:
        return
    loops, v35_loops = kv_loops_at(m["sass"]), kv_loops_at(v35["sass"])
    assert len(loops) == len(v35_loops) == 4

    def count(body, op):
        return len([t for t in body if t.startswith(op)])
    for body, v35_body in zip(loops, v35_loops):
        texts, v35_texts = [t for _, t in body], [t for _, t in v35_body]
        assert not [t for t in texts if t.startswith(("STL", "LDL"))]
        for op in ("HGMMA", "MUFU.EX2", "F2FP", "SHFL", "VOTE"):
            assert count(texts, op) == count(v35_texts, op), op
        assert count(texts, "SHFL") == 4
        path, v35_path = common_path(body), common_path(v35_body)
        assert count(path, "SHFL") == 0 and count(v35_path, "SHFL") == 4
        masked = any("-INF" in t for t in texts)        # the diagonal's loop: its mask's selects on that path too
        assert len(path) <= len(v35_path) + (8 if masked else -10), (masked, len(path), len(v35_path))
        assert_overlapped_step(texts, name, shape[4], bn)


# ---------------------------------------------------------------------------------------------------------------
# Q_REGS (stage v37): the q k^T products' A operand, Q, from registers, read from shared memory once per tile
# ---------------------------------------------------------------------------------------------------------------

def hgmma_operands(texts: list) -> list:
    """Each warpgroup MMA's form: "RS" (A from registers: `HGMMA... Rd, Ra, gdesc[...]`) or "SS" (both operands
    from shared memory: `HGMMA... Rd, gdesc[...]`)."""
    return ["RS" if re.match(r"HGMMA\S*\s+R\d+,\s+R\d+,\s+gdesc", t) else "SS" for t in texts
            if t.startswith("HGMMA")]


@pytest.mark.parametrize("name", QREG_CONFIGS)
def test_q_registers_take_every_products_a_operand_from_registers(built, name):
    """v36's products, exponentials, conversions, loads, stores, barriers, votes and shuffles, no serialized
    warpgroup MMA, no spill inside the unmasked KV loops (the 32 registers of Q's fragment fit under the consumers'
    240 there); in a masked loop (the diagonal's: one step per tile at a causal 128x128 tile) at most three registers
    spilled and filled once per step (ptxas spills one in consumer 0's and three in consumer 1's at D = 128, where
    v36 spills none); every warpgroup MMA of the persistent consumers' KV loops reads its A operand from registers
    (v36: the P V products only, the q k^T products reading Q from shared memory in every step), so that a KV loop's
    products read K and V alone from shared memory; the overlap kept."""
    shape, _, _, _, bn, _ = QREG_CONFIGS[name]
    m, v36 = built[name], built["max-" + name.removeprefix("qreg-")]
    assert m["local"] == 0 and m["shared"] == v36["shared"]
    assert "C7512" not in m["ptxas"] and "serialized" not in m["ptxas"]
    for op in ("HGMMA", "MUFU.EX2", "F2FP", "SYNCS", "UTMALDG", "UTMASTG", "BAR", "VOTE.ANY", "VOTE.ALL", "SHFL"):
        assert m["mix"].get(op, 0) == v36["mix"].get(op, 0), op
    if shape[3] == 1:
        return
    loops, v36_loops = kv_loops_at(m["sass"]), kv_loops_at(v36["sass"])
    assert len(loops) == len(v36_loops) == 4
    for body, v36_body in zip(loops, v36_loops):
        texts, v36_texts = [t for _, t in body], [t for _, t in v36_body]
        spills = [t for t in texts if t.startswith(("STL", "LDL"))]
        masked = any("-INF" in t for t in texts)        # the diagonal's loop
        assert not spills or (masked and len(spills) <= 6), spills
        forms, v36_forms = hgmma_operands(texts), hgmma_operands(v36_texts)
        assert len(forms) == len(v36_forms) > 0
        assert set(forms) == {"RS"} and "SS" in v36_forms, (forms, v36_forms)
        assert_overlapped_step(texts, name, shape[4], bn)


# ---------------------------------------------------------------------------------------------------------------
# EARLY_EXP (stage v38): the probabilities from the maxima before the step, beside the step's maxima
# ---------------------------------------------------------------------------------------------------------------

def forward_spans(body: list) -> list:
    """Each forward branch's span in a loop body of (address, text): the indices of the instructions it skips."""
    spans = []
    for i, (addr, text) in enumerate(body):
        m = BRANCH.match(text)
        if m and int(m.group(1), 16) > addr:
            spans.append([k for k, (a, _) in enumerate(body) if addr < a < int(m.group(1), 16)])
    return spans


@pytest.mark.parametrize("name", EARLY_CONFIGS)
def test_early_exponent_issues_the_exponentials_beside_the_row_maxima(built, name):
    """v36's registers, shared memory, products, conversions, loads, stores, barriers, votes and shuffles, no
    serialized warpgroup MMA, nothing spilled inside the KV loops (a few scalars outside them: at most
    EARLY_STACK_BYTES of stack); in each KV loop, on the step that does not rescale, as many instructions as v36's
    (the unmasked loops; up to 12 more in the masked ones), and one more exponential per score (64 at
    BLOCK_N = 128) inside a forward branch's span with no FMNMX (the probabilities taken again where the warp
    rescales, skipped where it does not); on the step that does not rescale, the first exponential before the last
    FMNMX of the step's maxima (they interleave), where v36's first exponential comes after every FMNMX; every
    exponential still between the wait for the scores and the wait for the P V product (the overlap kept)."""
    from kernels.gluon_fwd import EARLY_STACK_BYTES
    shape, _, _, _, bn, _ = EARLY_CONFIGS[name]
    D = shape[4]
    m, v36 = built[name], built["max-" + name.removeprefix("early-")]
    assert m["registers"] == v36["registers"] and m["shared"] == v36["shared"]
    assert m["local"] == 0 and m["stack"] <= EARLY_STACK_BYTES
    assert "C7512" not in m["ptxas"] and "serialized" not in m["ptxas"]
    for op in ("HGMMA", "F2FP", "SYNCS", "UTMALDG", "UTMASTG", "BAR", "VOTE.ANY", "VOTE.ALL", "SHFL"):
        assert m["mix"].get(op, 0) == v36["mix"].get(op, 0), op
    if shape[3] == 1:
        return
    loops, v36_loops = kv_loops_at(m["sass"]), kv_loops_at(v36["sass"])
    assert len(loops) == len(v36_loops) == 4
    assert m["mix"]["MUFU.EX2"] == v36["mix"]["MUFU.EX2"] + 4 * 64 * bn // 128

    def count(texts, op):
        return len([t for t in texts if t.startswith(op)])
    for body, v36_body in zip(loops, v36_loops):
        texts, v36_texts = [t for _, t in body], [t for _, t in v36_body]
        assert not [t for t in texts if t.startswith(("STL", "LDL"))]
        for op in ("HGMMA", "F2FP", "SHFL", "VOTE", "FMNMX"):
            assert count(texts, op) == count(v36_texts, op), op
        assert count(texts, "MUFU.EX2") == count(v36_texts, "MUFU.EX2") + 64 * bn // 128
        redo = [span for span in forward_spans(body) if count([texts[k] for k in span], "MUFU.EX2") == 64 * bn // 128]
        assert len(redo) == 1 and count([texts[k] for k in redo[0]], "FMNMX") == 0
        common = [t for k, t in enumerate(texts) if k not in set(redo[0])]    # a step that does not rescale
        masked = any("-INF" in t for t in texts)        # the diagonal's loop: one step per tile
        # as many instructions as v36's step (the unmasked loops; ptxas adds a few LOP3 in the masked ones)
        assert len(v36_texts) <= len(common) <= len(v36_texts) + (12 if masked else 0), (len(common), len(v36_texts))
        first_ex2 = next(i for i, t in enumerate(common) if t.startswith("MUFU.EX2"))
        last_max = max(i for i, t in enumerate(common) if t.startswith("FMNMX"))
        v36_first = next(i for i, t in enumerate(v36_texts) if t.startswith("MUFU.EX2"))
        v36_last = max(i for i, t in enumerate(v36_texts) if t.startswith("FMNMX"))
        assert first_ex2 < last_max and v36_last < v36_first, (first_ex2, last_max, v36_first, v36_last)
        one = next(i for i, t in enumerate(texts) if t.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x1"))
        zero = next(i for i, t in enumerate(texts) if t.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x0"))
        assert all(one < i < zero for i, t in enumerate(texts) if t.startswith("MUFU.EX2"))
        qk, pv = f"HGMMA.64x{bn}x16.F32", f"HGMMA.64x{D}x16.F32"
        ops = [t.split()[0].removesuffix(".BF16") for t in texts if t.startswith("HGMMA")]
        assert ops == [qk] * (D // 16) + [pv] * (bn // 16), ops


# ---------------------------------------------------------------------------------------------------------------
# SNAKE_SMS (stage v32's small_n_tile): v19's kernel with its programs dealt in a snake over the SMs
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", SNAKE_CONFIGS)
def test_snake_keeps_v19s_kernel_but_its_grid_order(built, name):
    """The snake changes which block a program takes, nothing of what it does with it: v19's registers (no
    spills), shared memory, products, exponentials, loads, stores and barriers, and its KV loops' products,
    exponentials, barriers and mbarrier operations in order, within 4 instructions of v19's length; the block is
    read from the program's place in launch order (both grid axes and their sizes)."""
    m, v19 = built[name], built[SNAKE_CONFIGS[name]]
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0 and m["stack"] == 0
    assert m["registers"] <= v19["registers"] + 8 and m["shared"] == v19["shared"]
    for op in ("HGMMA", "MUFU.EX2", "SYNCS", "UTMALDG", "UTMASTG", "BAR"):
        assert m["mix"].get(op, 0) == v19["mix"].get(op, 0), op
    # the KV loops: v19's products (in order), exponentials, barriers and mbarrier operations, within a few
    # instructions of its length (ptxas allocates the registers anew and picks among equivalent moves and adds)
    loops, v19_loops = kv_loops(m["sass"]), kv_loops(v19["sass"])
    assert len(loops) == len(v19_loops)

    def kinds(body, prefix):
        return [t.split()[0] for t in body if t.startswith(prefix)]
    for body, v19_body in zip(loops, v19_loops):
        for prefix in ("HGMMA", "MUFU.EX2", "BAR", "SYNCS", "WARPGROUP"):
            assert kinds(body, prefix) == kinds(v19_body, prefix), prefix
        assert abs(len(body) - len(v19_body)) <= 4, (len(body), len(v19_body))
    assert str(SNAKE_SMS) in m["ttgir"] and str(SNAKE_SMS) not in v19["ttgir"].split("tt.func")[1].split("{")[0]


@pytest.mark.parametrize("BH,n_m,P", [(32, 4, 132), (32, 8, 132), (32, 16, 132), (4, 16, 132), (1, 1, 132),
                                      (264, 1, 132), (7, 3, 5), (2, 100, 8)])
def test_snake_deals_every_block_once_and_pairs_heavy_with_light(BH, n_m, P):
    """Every (batch*head, query block) goes to exactly one program; where the grid fills two waves (as at N = 512
    at the headline: 32 heads of 8 blocks of 64 rows on 132 SMs), the i-th program of the first wave and of the
    second (an SM's two, the hardware starting programs in launch order, one per SM per wave) take causal work of
    n_m + 1 blocks together wherever both exist, where launch order gives the first SMs up to 12 of 8 + 1."""
    from kernels.gluon_fwd import snake_block
    T = BH * n_m
    dealt = [snake_block(t, P, BH, n_m) for t in range(T)]
    assert sorted(dealt) == sorted((bh, m) for bh in range(BH) for m in range(n_m))
    work = [m + 1 for _, m in dealt]
    if T == 2 * P or (BH, n_m, P) == (32, 8, 132):
        assert {work[i] + work[P + i] for i in range(T - P)} == {n_m + 1}
    if (BH, n_m, P) == (32, 8, 132):        # launch order's worst pair, for contrast
        assert max((n_m - i // BH) + (n_m - (P + i) // BH) for i in range(T - P)) == 12


def test_snake_is_refused_on_the_persistent_grid():
    from kernels.gluon_fwd import kernel_args
    q = torch.empty((1, 2, 256, 64), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="without persistent"):
        kernel_args(q, q, q, q, True, 128, 128, 2, producer_warp=True, two_consumers=True, softmax_overlap=True,
                    register_realloc=True, split_consumers=True, persistent=True, snake_sms=132)
