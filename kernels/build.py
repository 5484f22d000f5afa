"""Build step: compile any stage or switch subset for an explicit GPU architecture, on a machine with no GPU.

For each variant x architecture x tile it writes the Triton IR, PTX, cubin and SASS, and a tidy CSV (one row per
metric) with registers per thread, shared memory, local memory and spills, the static SASS instruction mix (count
of each opcode in the binary: a loop body counts once) and the occupancy those resources allow.

The kernel is specialized exactly as Triton's JIT would specialize it for the given shape (same arguments, built by
the same `plan_launch` as a real launch, same specialization rules), so what is inspected is what runs.

    python -m kernels.build --variants v0 v7 v7-exp2 --archs 90 120 --out results/build
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from .launcher import TileNotSupportedError, _compile_failure, plan_launch
from .flash_fwd import _attn_fwd
from .gpus import ARCHS, blocks_per_sm
from .shapes import HEADLINE, Shape
from .specialize import jit_specialize
from .stages import (STAGES, Tile, default_tile, is_gluon, named_variants, resolve_variant, small_n_route, stage_of,
                     switches_label)

# small_n_tile's snake deals programs in waves of the GPU's SMs, a constant of the compiled kernel; a build (no GPU)
# takes the H200's 132, which changes only that constant's value in the machine code.
SNAKE_BUILD_SMS = 132
NVIDIA_BIN = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
RESOURCE_LINE = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")
CSV_COLUMNS = ["variant", "stage", "switches", "arch", "block_m", "block_n", "num_warps", "num_stages",
               "B", "H", "H_kv", "N", "D", "dtype", "causal", "metric", "value", "note"]


def specialize(launch) -> tuple:
    """(signature, constexprs, attrs) for `_attn_fwd`, as the JIT computes them from the launch's arguments."""
    return jit_specialize(_attn_fwd, launch.kwargs)


def compile_gluon(switches: frozenset, arch: int, tile: Tile, shape: Shape):
    """Compile a Gluon variant (kernels/gluon_fwd.py) for sm_90; any other architecture, head dim or tile it does not
    take is a refusal, with the reason."""
    from . import gluon_fwd
    label = stage_of(switches) or switches_label(switches)
    if arch != 90:
        raise TileNotSupportedError(f"{label}: a Gluon stage is built of Hopper's warpgroup MMA and TMA: sm_90 only, "
                                    f"not sm_{arch}")
    switches, snake = small_n_route(switches, tile)
    try:
        return gluon_fwd.compile_for(arch, shape, shape.dtype, shape.causal, tile.block_m, tile.block_n,
                                     tile.num_stages, tile.num_warps, producer_warp="producer_warp" in switches,
                                     two_consumers="two_consumers" in switches,
                                     softmax_overlap="softmax_overlap" in switches,
                                     register_realloc="register_realloc" in switches,
                                     split_consumers="split_consumers" in switches,
                                     pingpong="pingpong" in switches,
                                     persistent="persistent" in switches,
                                     sections="l2_sections" in switches,
                                     fold="folded_pairs" in switches,
                                     lean_barriers="lean_barriers" in switches,
                                     paired_cvt="paired_cvt" in switches,
                                     rare_rescale="rare_rescale" in switches,
                                     fused_exponent="fused_exponent" in switches,
                                     short_reductions="short_reductions" in switches,
                                     lane_sums="lane_sums" in switches,
                                     lane_max="lane_max" in switches,
                                     q_regs="q_registers" in switches,
                                     early_exp="early_exponent" in switches,
                                     snake_sms=SNAKE_BUILD_SMS if snake else 0)
    except Exception as err:  # a tile or shape the kernel does not take, or a refusal of Gluon's compiler
        raise TileNotSupportedError(f"{label}: Gluon cannot build this variant at tile {tile.label()}: "
                                    f"{type(err).__name__}: {str(err).strip().splitlines()[-1] if str(err).strip() else ''}"
                                    ) from err


def compile_variant(switches: frozenset, arch: int, tile: Tile, shape: Shape = HEADLINE):
    """Compile one variant for sm_<arch>; returns Triton's CompiledKernel or raises TileNotSupportedError."""
    if is_gluon(switches):
        return compile_gluon(switches, arch, tile, shape)
    q, k, v = shape.tensors(fill="empty")
    launch = plan_launch(q, k, v, torch.empty_like(q), causal=shape.causal, switches=switches,
                         block_m=tile.block_m, block_n=tile.block_n, num_warps=tile.num_warps,
                         num_stages=tile.num_stages)
    signature, constexprs, attrs = specialize(launch)
    with tempfile.TemporaryFile(mode="w+") as diag:
        try:
            with _stderr_to(diag):
                return triton.compile(ASTSource(_attn_fwd, signature, constexprs, attrs),
                                      target=GPUTarget("cuda", arch, 32), options=launch.options)
        except Exception as err:  # Triton raises many types for a refused tile; all become one clear error
            diag.seek(0)
            raise _compile_failure(launch, err, _failing_pass(diag.read())) from err


@contextlib.contextmanager
def _stderr_to(f):
    """Send file descriptor 2 (where MLIR prints its diagnostics and reproducers) to f for a while."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(f.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _failing_pass(diagnostics: str) -> str:
    """The compiler's one-line verdict: the pass that failed, or its first error."""
    m = re.search(r"Pipeline failed while executing \[(.*?)\]", diagnostics)
    if m:
        return "failed in " + ", ".join(re.findall(r"`(\w+)`", m.group(1)))
    m = re.search(r"error: (.*)", diagnostics)
    return m.group(1).strip() if m else ""


def _tool(name: str, *args) -> str:
    return subprocess.run([str(NVIDIA_BIN / name), *args], check=True, capture_output=True, text=True).stdout


def opcode_family(opcode: str) -> str:
    """FFMA.FTZ -> FFMA; MUFU keeps its function (MUFU.EX2, MUFU.RCP); HGMMA.64x32x16.F32 -> HGMMA."""
    parts = opcode.split(".")
    return ".".join(parts[:2]) if parts[0] == "MUFU" and len(parts) > 1 else parts[0]


def sass_mix(sass: str) -> collections.Counter:
    return collections.Counter(opcode_family(m.group(1)) for m in SASS_LINE.finditer(sass))


def inspect(kernel, arch: int, tile: Tile, outdir: Path) -> dict:
    """Write the artifacts of one compiled kernel and return its metrics."""
    outdir.mkdir(parents=True, exist_ok=True)
    for ext in ("ttgir", "ptx"):
        (outdir / f"kernel.{ext}").write_text(kernel.asm[ext])
    cubin = outdir / "kernel.cubin"
    cubin.write_bytes(kernel.asm["cubin"])
    sass = _tool("cuobjdump", "-sass", str(cubin))
    (outdir / "kernel.sass").write_text(sass)
    res = RESOURCE_LINE.search(_tool("cuobjdump", "-res-usage", str(cubin)))
    registers, stack, _static_shared, local = (int(x) for x in res.groups())
    mix = sass_mix(sass)
    metrics = {"compiles": 1, "registers": registers, "stack_bytes": stack, "local_bytes": local,
               "shared_bytes": kernel.metadata.shared, "spill_stores": mix.get("STL", 0),
               "spill_loads": mix.get("LDL", 0), "sass_instructions": sum(mix.values())}
    metrics.update(blocks_per_sm(arch, registers, kernel.metadata.shared, tile.num_warps))
    metrics.update({f"sass.{op}": n for op, n in sorted(mix.items())})
    return metrics


def build(names, archs, tiles, out: Path, shape: Shape = HEADLINE, log=print) -> list:
    """Compile every variant x arch x tile (tiles None: each variant at its own default tile); return tidy rows (a
    failed compile is a row too, with the reason)."""
    rows = []
    jobs = [(n, a, t) for n in names for a in archs
            for t in (tiles or [default_tile(resolve_variant(n), shape.D, shape.N)])]
    for i, (name, arch, tile) in enumerate(jobs, 1):
        switches = resolve_variant(name)
        base = dict(variant=name, stage=stage_of(switches) or "", switches=switches_label(switches), arch=arch,
                    block_m=tile.block_m, block_n=tile.block_n, num_warps=tile.num_warps,
                    num_stages=tile.num_stages, **shape.as_dict())
        try:
            kernel = compile_variant(switches, arch, tile, shape)
            metrics, note = inspect(kernel, arch, tile, out / f"sm_{arch}" / f"{name}_{tile.label()}"), ""
        except TileNotSupportedError as err:
            metrics, note = {"compiles": 0}, str(err)
        rows += [{**base, "metric": m, "value": v, "note": note} for m, v in metrics.items()]
        status = "ok" if metrics["compiles"] else "REFUSED"
        log(f"[{i}/{len(jobs)}] {name} sm_{arch} {tile.label()}: {status}"
            + (f", {metrics['registers']} regs, {metrics['shared_bytes']} B shared" if metrics["compiles"] else ""))
    return rows


def write_csv(rows, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        w.writerows(rows)


def parse_tile(text: str) -> Tile:
    """'32x32w4s3' (block_m x block_n, warps, stages) -> Tile."""
    m = re.fullmatch(r"(\d+)x(\d+)w(\d+)s(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"tile {text!r} must read BMxBNwWARPSsSTAGES, e.g. 32x32w4s3")
    return Tile(*map(int, m.groups()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", nargs="+", default=list(STAGES),
                    help="stage names, ablation names (v7-exp2, v0+grid_order) or switch labels; 'all' for every one")
    ap.add_argument("--archs", nargs="+", type=int, default=[90, 86, 89, 120], choices=sorted(ARCHS))
    ap.add_argument("--tiles", nargs="+", type=parse_tile, default=None,
                    help="tiles as BMxBNwWARPSsSTAGES (default: each variant's own, kernels.stages.default_tile)")
    ap.add_argument("--shape", default=",".join(str(x) for x in list(HEADLINE.as_dict().values())[:5]),
                    help="B,H,H_kv,N,D (default: the headline shape)")
    ap.add_argument("--dtype", default=HEADLINE.dtype, choices=["float16", "bfloat16"])
    ap.add_argument("--non-causal", action="store_true")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    names = list(named_variants()) if args.variants == ["all"] else args.variants
    for n in names:
        resolve_variant(n)  # fail early on a bad name
    shape = Shape(*map(int, args.shape.split(",")), dtype=args.dtype, causal=not args.non_causal)
    rows = build(names, args.archs, args.tiles, args.out, shape)
    write_csv(rows, args.out / "build.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
