"""Checks on what `attention` is given. Every check raises an exception that names the problem and the fix."""
from __future__ import annotations

import os

import torch

from .stages import Tile

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
SUPPORTED_HEAD_DIMS = (16, 32, 64, 128, 256)
TILE_KEYS = ("block_m", "block_n", "num_warps", "num_stages")
BLOCK_RANGE = (16, 256)  # tl.dot needs at least 16 rows; past 256 no tile fits in shared memory
WARP_CHOICES = (1, 2, 4, 8, 16)
MAX_GRID_AXIS1 = 65535  # CUDA's limit on gridDim.y


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple:
    """Check q, k, v and return (B, H, H_kv, N, D)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"{name} must have 4 dimensions (B, H, N, D), got shape {tuple(t.shape)}; "
                             f"add the missing axes (for one sequence, {name}.unsqueeze(0))")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name} has dtype {t.dtype}; the kernel takes torch.float16 or torch.bfloat16: "
                            f"convert with {name}.half() or {name}.bfloat16()")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k, v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}; "
                        f"convert them to one of {[str(d) for d in SUPPORTED_DTYPES]}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v must be on one device, got {q.device}, {k.device}, {v.device}; "
                         f"move them with .to(q.device)")
    B, H, N, D = q.shape
    Bk, H_kv, Nk, Dk = k.shape
    if tuple(v.shape) != tuple(k.shape):
        raise ValueError(f"k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if Bk != B:
        raise ValueError(f"batch sizes differ: q has B={B}, k and v have B={Bk}; give them the same batch size")
    if Nk != N:
        raise ValueError(f"sequence lengths differ: q has N={N}, k and v have N={Nk}; this kernel computes "
                         f"self-attention over one sequence length")
    if Dk != D:
        raise ValueError(f"head dims differ: q has D={D}, k and v have D={Dk}; give them the same head dim")
    if N == 0:
        raise ValueError("the sequence is empty (N = 0); there is nothing to attend to: pass N >= 1")
    if B == 0 or H == 0 or H_kv == 0:
        raise ValueError(f"B, H and H_kv must be at least 1, got B={B}, H={H}, H_kv={H_kv}")
    if H % H_kv != 0:
        raise ValueError(f"the number of query heads H={H} is not a multiple of the key/value heads H_kv={H_kv}; "
                         f"grouped-query attention needs H = g * H_kv")
    if D not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"head dim D={D} is not supported; the kernel takes D in {list(SUPPORTED_HEAD_DIMS)} "
                         f"(pad the head dim to the next one)")
    return B, H, H_kv, N, D


def check_runnable(q: torch.Tensor) -> None:
    """The kernel runs on the current CUDA device, or on the CPU under Triton's interpreter."""
    if q.device.type != "cuda":
        if not interpreting():
            raise ValueError(f"the tensors are on {q.device}; the Triton kernel needs CUDA tensors "
                             f"(or set TRITON_INTERPRET=1 to run it on the CPU, slowly)")
        if q.dtype == torch.bfloat16:
            raise ValueError("bfloat16 in Triton's interpreter gives wrong results (Triton 3.6 multiplies the raw "
                             "bits in a bf16 tl.dot, triton-lang/triton#11584): run bfloat16 on a GPU, or use "
                             "float16 on the CPU")
        return
    current = torch.cuda.current_device()
    if q.device.index != current:
        raise ValueError(f"the tensors are on {q.device} but the current CUDA device is cuda:{current}, where "
                         f"Triton launches; call inside `with torch.cuda.device(q.device):`")


def check_tile(tile: dict, default: Tile) -> Tile:
    """Merge the caller's overrides into the stage's default tile, checking each value."""
    unknown = sorted(set(tile) - set(TILE_KEYS))
    if unknown:
        raise TypeError(f"unknown tile option(s) {unknown}; the options are {list(TILE_KEYS)}")
    for key, value in tile.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{key} must be an int, got {value!r}")
    for key in ("block_m", "block_n"):
        if key in tile:
            value = tile[key]
            if value < BLOCK_RANGE[0] or value > BLOCK_RANGE[1] or value & (value - 1):
                raise ValueError(f"{key}={value} must be a power of two from {BLOCK_RANGE[0]} to {BLOCK_RANGE[1]}")
    if "num_warps" in tile and tile["num_warps"] not in WARP_CHOICES:
        raise ValueError(f"num_warps={tile['num_warps']} must be a power of two in {list(WARP_CHOICES)}")
    if "num_stages" in tile and tile["num_stages"] < 1:
        raise ValueError(f"num_stages={tile['num_stages']} must be at least 1 (the software-pipelining depth)")
    return Tile(**{**default.__dict__, **tile})


def check_rows_contiguous(stage_label: str, **tensors: torch.Tensor) -> None:
    """For constant strides: every tensor's rows must be D contiguous elements (stride_n = D, stride_d = 1)."""
    for name, t in tensors.items():
        D = t.shape[-1]
        if t.stride(-1) != 1 or (t.shape[-2] > 1 and t.stride(-2) != D):
            raise ValueError(f"{stage_label} compiles the strides as constants and needs {name} with contiguous "
                             f"rows (stride(-1) = 1, stride(-2) = D = {D}), got strides {tuple(t.stride())}; "
                             f"pass {name}.contiguous(), or use a stage without const_strides")


def check_out(out: torch.Tensor, q: torch.Tensor) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype or out.device != q.device:
        raise ValueError(f"out must match q: shape {tuple(q.shape)}, {q.dtype}, on {q.device}; "
                         f"got {tuple(out.shape)}, {out.dtype}, on {out.device}")
