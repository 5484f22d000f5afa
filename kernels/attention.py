"""The host side of the kernel: check the inputs, allocate the output, launch one stage or switch subset."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import torch
import triton

from . import inputs
from .flash_fwd import _attn_fwd
from .stages import ALL_SWITCHES, Tile, check_switches, get_stage, variant_name

LOG2E = math.log2(math.e)


class TileNotSupportedError(RuntimeError):
    """Triton could not compile this variant at this tile (raised instead of falling back to another variant)."""


@dataclass(frozen=True)
class Launch:
    """Everything one launch of `_attn_fwd` needs: the build step compiles exactly this."""

    label: str          # stage or variant name, for messages
    switches: frozenset
    tile: Tile
    grid: tuple
    kwargs: dict        # every kernel parameter by name, run-time values and constexprs

    @property
    def options(self) -> dict:
        return {"num_warps": self.tile.num_warps, "num_stages": self.tile.num_stages}


def _stage_or_switches(stage: str | None, switches: Iterable[str] | None) -> tuple:
    """(label, switches, default tile) for a stage name or an explicit switch subset."""
    if switches is not None:
        switches = check_switches(switches)
        return variant_name(switches), switches, get_stage("v0").tile
    st = get_stage(stage)
    return st.name, st.switches, st.tile


def plan_launch(q, k, v, out, *, causal=True, stage="v7", switches=None, sm_scale=None, **tile) -> Launch:
    """Check everything and return the launch; raises with the problem and the fix on any bad input."""
    label, switches, default_tile = _stage_or_switches(stage, switches)
    B, H, H_kv, N, D = inputs.check_qkv(q, k, v)
    inputs.check_out(out, q)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    if isinstance(sm_scale, bool) or not isinstance(sm_scale, (int, float)) or not (0 < sm_scale < math.inf):
        raise ValueError(f"sm_scale must be a positive finite number, got {sm_scale!r} (default 1/sqrt(D))")
    t = inputs.check_tile(tile, default_tile)
    if "const_strides" in switches:
        inputs.check_rows_contiguous(label, q=q, k=k, v=v, out=out)
    on = {sw.kernel_arg: (name in switches) for name, sw in ALL_SWITCHES.items()}
    n_blocks = triton.cdiv(N, t.block_m)
    grid = (n_blocks, B * H) if on["Q_BLOCKS_ON_AXIS0"] else (B * H, n_blocks)
    if grid[1] > inputs.MAX_GRID_AXIS1:
        raise ValueError(f"{label}: grid axis 1 would have {grid[1]} programs, over CUDA's {inputs.MAX_GRID_AXIS1}; "
                         f"split the batch, or use a larger block_m")
    qk_scale = float(sm_scale) * (LOG2E if on["USE_EXP2"] else 1.0)  # with PRESCALE_Q the kernel scales Q by it
    kwargs = dict(Q=q, K=k, V=v, Out=out, qk_scale=qk_scale)
    for prefix, t_ in (("q", q), ("k", k), ("v", v), ("o", out)):
        for axis, s in zip("bhnd", t_.stride()):
            kwargs[f"stride_{prefix}{axis}"] = s
    kwargs.update(H=H, GROUP=H // H_kv, N=N, HEAD_DIM=D, BLOCK_M=t.block_m, BLOCK_N=t.block_n, IS_CAUSAL=causal,
                  **on)
    return Launch(label, switches, t, grid, kwargs)


def _compile_failure(launch: Launch, err: Exception, detail: str = "") -> TileNotSupportedError:
    """The error for a variant Triton refuses; `detail` adds what the compiler printed (its failing pass)."""
    reason = str(err).strip().splitlines()
    reason = reason[-1] if reason else type(err).__name__
    if detail:
        reason = f"{reason} ({detail})"
    return TileNotSupportedError(
        f"{launch.label}: Triton cannot build this variant at tile {launch.tile.label()} "
        f"(block_m={launch.tile.block_m}, block_n={launch.tile.block_n}, num_warps={launch.tile.num_warps}, "
        f"num_stages={launch.tile.num_stages}): {type(err).__name__}: {reason}. Choose another tile or stage.")


def launch_kernel(launch: Launch) -> None:
    try:
        _attn_fwd[launch.grid](**launch.kwargs, **launch.options)
    except (triton.CompilationError, triton.runtime.errors.OutOfResources) as err:
        raise _compile_failure(launch, err) from err
    except RuntimeError as err:  # MLIR pass failures surface as RuntimeError("PassManager::run failed")
        if "PassManager" in str(err) or "failed to" in str(err):
            raise _compile_failure(launch, err) from err
        raise


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = True, stage: str = "v7",
              sm_scale: float | None = None, switches: Iterable[str] | None = None,
              out: torch.Tensor | None = None, **tile) -> torch.Tensor:
    """softmax(q k^T * sm_scale [+ causal mask]) v, by one stage of the article's kernel.

    q: (B, H, N, D); k, v: (B, H_kv, N, D), H a multiple of H_kv (query head h reads K/V head h // (H // H_kv)).
    stage: "v0" ... "v7" (see kernels.STAGES); or switches: any subset of kernels.SWITCHES, which then replaces
    the stage. tile: block_m, block_n, num_warps, num_stages override the stage's tile (BM = BN = 32, 4 warps).
    out: an optional tensor like q to write into. Returns the output, (B, H, N, D), in q's dtype.
    """
    if out is None:
        out = torch.empty_like(q, memory_format=torch.contiguous_format) if isinstance(q, torch.Tensor) else None
    launch = plan_launch(q, k, v, out, causal=causal, stage=stage, switches=switches, sm_scale=sm_scale, **tile)
    inputs.check_runnable(q)
    launch_kernel(launch)
    return out
