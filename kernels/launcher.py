"""The host side of the kernel: check the inputs, allocate the output, launch one stage or switch subset."""
from __future__ import annotations

import functools
import math
import numbers
import threading
from dataclasses import dataclass
from typing import Iterable, NamedTuple

import torch
import triton
from triton.runtime.interpreter import InterpretedFunction
from triton.tools.tensor_descriptor import TensorDescriptor

from . import inputs
from .defaults import default_stage
from .flash_fwd import _attn_fwd
from .stages import (ALL_SWITCHES, GLUON, GLUON_BASE, Tile, check_switches, default_tile, frozen_switches,
                     get_stage, head_group_size, is_gluon, missing_requirements, register_cap, small_n_route,
                     variant_name, GLUON_STAGES, TRITON_SWITCHES)

LOG2E = math.log2(math.e)
TENSOR_ARGS = ("Q", "K", "V", "Out")  # the kernel's first four parameters: tensors, or TMA descriptors of them
FP32_MAX, FP32_MIN_NORMAL = 3.4028234663852886e38, 1.1754943508222875e-38
FP16_MAX = 65504.0  # float16's largest finite value: the range of inputs for which the scores cannot overflow


def max_scaled_scale(D: int) -> float:
    """The largest sm_scale x log2(e) the kernel accepts at head dim D: then every score q.k x sm_scale x log2(e) of
    inputs within float16's range (|x| <= 65504: every float16 input) is at most FP32_MAX / 4 in magnitude (|q.k| <=
    D x 65504^2, and so is every partial sum of the float32 product), so that no finite input gives an infinite
    score (+inf would make its row NaN, -inf would drop a key that has a finite score), and the kernel's
    differences of scores and tl.exp's factor log2(e) have room to spare. About 1e26 at D = 128. (bfloat16 inputs
    beyond 65504 can overflow q.k itself, at any scale: a score of +inf gives a NaN row, as in PyTorch's attention.)"""
    return FP32_MAX / 4 / (D * FP16_MAX * FP16_MAX)


# The exact exponent. So that scores of any size the scale's bound admits are right, every stage keeps the row's
# running maximum m of the raw scores (max does not round) and computes each probability as exp2((s - m) * qk_scale),
# the difference before the scale (issue 22; kernels.flash_fwd._exponent, the same in kernels.gluon_fwd). Both
# roundings are monotone, so every exponent is at most 0 and the largest score's exactly 0, and a near-tie's
# difference is exact; the bound on the scale (max_scaled_scale) keeps (s - m) * qk_scale finite. What came before,
# each measured on an H200: FlashAttention's fused fma(s, qk_scale, -m') against the rounded scaled maximum m' puts
# the largest score's exponent up to half an ulp of m' off either way, which overflowed the float16 probabilities and
# turned rows NaN from |m'| >= 2^28 in log-2 units (data/nvidia-h200/probes/guards-v21) and, once a clamp at 0 cut
# that side, underflowed the largest probability to 0 from 2^29 (data/nvidia-h200/probes/guards-underflow); lowering
# m' one ulp under the clamp mended that (data/nvidia-h200/probes/lowered-check) but gave every score within about
# one ulp of the largest the probability 1, weighting near-ties alike (found by an independent attack); keeping m'
# exact as m' + r (its rounding error) was right (data/nvidia-h200/probes/exact-check) but held two values per row.
# The exponent costs an FADD and an FMUL per score where FlashAttention's costs one FFMA (and the clamp one FMNMX).
# Triton's interpreter computes the same arithmetic (tests/test_exact_max.py), and tests/test_guards_gpu.py
# (near-ties included) passed every case on an H200 at this source (data/nvidia-h200/probes/exact-diff-check).


# PRESCALE_Q (the prescale_q switch, claim C10; in no stage) multiplies Q by the scale at load and rounds the product
# to 16 bits: one more rounding of every element of Q (relative 2^-11), whose error in the scores grows with the
# scores' magnitude (as the scale or the inputs grow), and a product that overflows 16 bits once
# |q| x scale x log2(e) > 65504. At the default scale 1/sqrt(D) and below the product cannot overflow
# (scale x log2(e) < 1) and its error is the one the verify step accepted (measured on the CPU when v15-v17 still
# used this code: up to 2.05 times SDPA's error at the default scale, 2.2 to 2.6 times at 2 to 4 times it); above the
# default, the launch turns PRESCALE_Q off and the scale goes into the float32 scores, as in every other stage.
# PRESCALE_SLACK lets D ** -0.5 pass as well as 1/sqrt(D).
# q_in_registers (v15, and v16, v17 built on it) no longer scales Q: its own flag, Q_IN_REGISTERS, makes Q a computed
# tensor by an exact q + 0 (so that Triton still holds it in registers as the A operand of the q k^T warpgroup MMA)
# and leaves the scale in the float32 scores at every scale; those stages neither round q x scale nor warn.
PRESCALE_SLACK = 1 + 2**-20
# At the default scale the error still grows with the inputs: measured on an H200 (data/nvidia-h200/probes/
# guards-v21, tests/test_guards_gpu.py) with the old v15, v16 and v17, which then set PRESCALE_Q (the code prescale_q
# still runs), they were 4.1 to 4.3 times as far from float64 as SDPA when the largest score (x log2(e)) is 2^7, 290
# to 440 times at 2^14, and 2.0 to 2.6% off at 2^27 where SDPA is exact, while every other stage was within twice
# SDPA's error. Unit-normal inputs (every verify grid) stay within it. A launch that prescales says so, once per
# process (PrescaledQWarning), naming a stage that does not.


class PrescaledQWarning(UserWarning):
    """A launch rounds q x scale x log2(e) to 16 bits (PRESCALE_Q: the prescale_q switch): accurate for scores of a
    few units, not for large ones (see the note at PRESCALE_SLACK)."""


def warn_prescaled_q(label: str) -> None:
    import warnings
    warnings.warn(f"{label} rounds q x sm_scale x log2(e) to 16 bits at load (prescale_q): its error grows with the "
                  f"scores' magnitude, 4 times SDPA's at scores of 2^7 (x log2(e)) on an H200 (measured with this "
                  f"code in the old v15-v17); for inputs of large magnitude use a stage without it (every "
                  f"registered stage is one)",
                  PrescaledQWarning, stacklevel=3)


def prescales_q(sm_scale: float, D: int) -> bool:
    """Whether a launch with prescale_q (PRESCALE_Q) scales Q at load in 16 bits at this scale (see above)."""
    return sm_scale <= PRESCALE_SLACK / math.sqrt(D)


class TileNotSupportedError(RuntimeError):
    """Triton could not compile this variant at this tile (raised instead of falling back to another variant)."""


@dataclass(frozen=True)
class Launch:
    """Everything one launch of the kernel needs (`_attn_fwd`, or the Gluon kernel for a Gluon variant): the build
    step compiles exactly this."""

    label: str          # stage or variant name, for messages
    switches: frozenset
    tile: Tile
    grid: tuple
    kwargs: dict        # every kernel parameter by name, run-time values and constexprs

    @property
    def gluon(self) -> bool:
        return is_gluon(self.switches)

    @property
    def kernel(self):
        if self.gluon:
            from .gluon_fwd import _gluon_attn_fwd
            return _gluon_attn_fwd
        return _attn_fwd

    @property
    def options(self) -> dict:
        if self.gluon:
            from .gluon_fwd import launch_options
            return {"num_stages": self.tile.num_stages,
                    **launch_options(self.tile.block_m, self.tile.block_n, self.kwargs["HEAD_DIM"],
                                     bool(self.kwargs["PRODUCER_WARP"]), bool(self.kwargs["TWO_CONSUMERS"]),
                                     bool(self.kwargs["REGISTER_REALLOC"]), bool(self.kwargs["SPLIT_CONSUMERS"]))}
        cap = register_cap(self.switches, self.tile)
        return {"num_warps": self.tile.num_warps, "num_stages": self.tile.num_stages,
                **({"maxnreg": cap} if cap else {})}


def _stage_or_switches(stage: str | None, switches: Iterable[str] | None, device=None, q=None) -> tuple:
    """(label, switches) for a stage name or an explicit switch subset (neither: the device's default stage)."""
    if switches is not None:
        if stage is not None:
            raise ValueError(f"give a stage or switches, not both (stage={stage!r}, switches={sorted(switches)})")
        switches = check_switches(switches)
        return variant_name(switches), switches
    st = get_stage(default_stage(device, q) if stage is None else stage)
    return st.name, st.switches


def plan_launch(q, k, v, out, *, causal=True, stage=None, switches=None, sm_scale=None, **tile) -> Launch:
    """Check everything and return the launch; raises with the problem and the fix on any bad input."""
    B, H, H_kv, N, D = inputs.check_qkv(q, k, v)
    label, switches = _stage_or_switches(stage, switches, q.device, q)
    inputs.check_out(out, q)
    inputs.check_grad(q, k, v)
    inputs.check_offsets(q=q, k=k, v=v, out=out)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    if isinstance(sm_scale, torch.Tensor):
        raise TypeError(f"sm_scale must be a number, got a tensor {sm_scale!r}; pass float(sm_scale)")
    if isinstance(sm_scale, bool) or not isinstance(sm_scale, numbers.Real) or not (0 < sm_scale < math.inf):
        raise ValueError(f"sm_scale must be a positive finite number, got {sm_scale!r} (default 1/sqrt(D))")
    try:
        scaled, limit = float(sm_scale) * LOG2E, max_scaled_scale(D)
    except OverflowError:                  # an integer beyond float's range passes the checks above (10**400)
        raise ValueError(f"sm_scale={str(sm_scale)[:12]}... ({len(str(sm_scale))} digits) is too large for a float, "
                         f"let alone the kernel's float32 scores (scale x log2(e) must be within "
                         f"[{FP32_MIN_NORMAL:.3g}, {max_scaled_scale(D):.3g}] at D={D}); pass a float in that range "
                         f"(default 1/sqrt(D)), or rescale q instead") from None
    if not (FP32_MIN_NORMAL <= scaled <= limit):
        raise ValueError(f"sm_scale={sm_scale!r} is outside what the kernel's float32 scores can carry "
                         f"(scale x log2(e) must be within [{FP32_MIN_NORMAL:.3g}, {limit:.3g}] at D={D}: above, "
                         f"scores of float16-range inputs could overflow float32); rescale q instead")
    t = inputs.check_tile(tile, default_tile(switches, D, N))
    if "const_strides" in switches:
        inputs.check_rows_contiguous(label, q=q, k=k, v=v, out=out)
    if "tma" in switches:
        inputs.check_tma(label, q=q, k=k, v=v, out=out)
    if is_gluon(switches):
        return _plan_gluon(label, switches, t, q, k, v, out, causal, float(sm_scale))
    on = {}     # kernel flag -> on (were two switches to set one flag, they are or-ed)
    for name in TRITON_SWITCHES:
        sw = ALL_SWITCHES[name]
        if sw.kernel_arg:
            on[sw.kernel_arg] = on.get(sw.kernel_arg, False) or name in switches
    if on["PRESCALE_Q"] and not prescales_q(float(sm_scale), D):
        on["PRESCALE_Q"] = False        # above the default scale: the scale goes into the float32 scores
    if on["PRESCALE_Q"]:
        warn_prescaled_q(label)
    n_blocks = triton.cdiv(N, t.block_m)
    head_group = 1
    if on["HEAD_GROUPS"]:
        head_group = head_group_size(N, D, q.element_size(), H // H_kv, B * H, l2_bytes(q.device))
        grid = (B * H * n_blocks,)
    elif on["Q_BLOCKS_ON_AXIS0"]:
        grid = (n_blocks, B * H)
    else:
        grid = (B * H, n_blocks)
    if grid[0] > inputs.MAX_GRID_AXIS0:
        raise ValueError(f"{label}: the grid would have {grid[0]} programs on its one axis, over CUDA's "
                         f"{inputs.MAX_GRID_AXIS0}; split the batch, or use a larger block_m")
    if len(grid) > 1 and grid[1] > inputs.MAX_GRID_AXIS1:
        raise ValueError(f"{label}: grid axis 1 would have {grid[1]} programs, over CUDA's {inputs.MAX_GRID_AXIS1}; "
                         f"split the batch, or use a larger block_m")
    qk_scale = float(sm_scale) * (LOG2E if on["USE_EXP2"] else 1.0)  # with PRESCALE_Q the kernel scales Q by it
    kwargs = dict(zip(TENSOR_ARGS, host_descriptors(q, k, v, out, t) if on["HOST_DESC"] and on["USE_TMA"]
                      else (q, k, v, out)), qk_scale=qk_scale)
    for prefix, t_ in (("q", q), ("k", k), ("v", v), ("o", out)):
        for axis, s in zip("bhnd", t_.stride()):
            kwargs[f"stride_{prefix}{axis}"] = s
    kwargs.update(H=H, GROUP=H // H_kv, N=N, HEAD_GROUP=head_group, HEAD_DIM=D, BLOCK_M=t.block_m,
                  BLOCK_N=t.block_n, IS_CAUSAL=causal, **on)
    return Launch(label, switches, t, grid, kwargs)


def _plan_gluon(label, switches, t, q, k, v, out, causal, sm_scale) -> Launch:
    """The launch of a Gluon variant (kernels/gluon_fwd.py): a CUDA GPU of compute capability 9 only, the Gluon
    kernel's own switches on top of v13's schedule only, and the head dims, dtypes and tiles it takes."""
    if "gluon" not in switches:
        raise ValueError(f"{label}: {sorted(switches & GLUON.keys())} are switches of the Gluon kernel, which "
                         f"`gluon` turns on: add it (the Gluon stages are {list(GLUON_STAGES)})")
    if switches - set(GLUON) != GLUON_BASE:
        extra, missing = sorted(switches - set(GLUON) - GLUON_BASE), sorted(GLUON_BASE - switches)
        raise ValueError(f"{label}: the Gluon kernel has one schedule, v13's switches; a Gluon variant turns only the "
                         f"Gluon switches {list(GLUON)} on or off (this one adds {extra} and lacks {missing}); "
                         f"for other Triton switches use a Triton stage")
    for switch, required in missing_requirements(switches):
        raise ValueError(f"{label}: {switch} is built on {required} ({ALL_SWITCHES[switch].stage} on "
                         f"{ALL_SWITCHES[required].stage}); turn {required} on too, or {switch} off")
    inputs.check_gluon_device(label, q)
    from . import gluon_fwd
    switches, snake = small_n_route(switches, t)
    two_consumers, register_realloc = "two_consumers" in switches, "register_realloc" in switches
    split_consumers, persistent = "split_consumers" in switches, "persistent" in switches
    try:
        gluon_fwd.check_config(q.shape[-1], q.dtype, t.block_m, t.block_n, t.num_stages, t.num_warps,
                               two_consumers=two_consumers, register_realloc=register_realloc,
                               split_consumers=split_consumers, persistent=persistent)
    except ValueError as err:       # a refusal, as Triton's of a tile: the caller chooses another stage or tile
        raise TileNotSupportedError(f"{label}: {err}; use a Triton stage (e.g. v13) for this call") from None
    B, H, N, _ = q.shape
    grid = gluon_fwd.grid(B, H, N, t.block_m, persistent, _sm_count(q.device) if persistent else None)
    if len(grid) > 1 and grid[1] > inputs.MAX_GRID_AXIS1:
        raise ValueError(f"{label}: grid axis 1 would have {grid[1]} programs, over CUDA's {inputs.MAX_GRID_AXIS1}; "
                         f"split the sequence, or use a larger block_m")
    kwargs = gluon_fwd.kernel_args(q, k, v, out, causal, t.block_m, t.block_n, t.num_stages, sm_scale,
                                   producer_warp="producer_warp" in switches, two_consumers=two_consumers,
                                   softmax_overlap="softmax_overlap" in switches, register_realloc=register_realloc,
                                   split_consumers=split_consumers, pingpong="pingpong" in switches,
                                   persistent=persistent, sections="l2_sections" in switches,
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
                                   snake_sms=_sm_count(q.device) if snake else 0)
    return Launch(label, switches, t, grid, kwargs)


@functools.lru_cache(maxsize=None)
def _sm_count(device) -> int:
    """The device's number of SMs (a persistent grid's programs)."""
    return torch.cuda.get_device_properties(device).multi_processor_count


def host_descriptors(q, k, v, out, tile: Tile) -> tuple:
    """TMA descriptors of the whole (B, heads, N, D) tensors, for the kernel's HOST_DESC path: one block is one
    (batch, head)'s BLOCK_M rows of q and out, or BLOCK_N rows of k and v."""
    D = q.shape[-1]

    def strides(t):  # a dimension of size 1 is never stepped over: give it a stride that TMA accepts (D elements)
        return [st if n > 1 else D for st, n in zip(t.stride()[:-1], t.shape[:-1])] + [1]

    return tuple(TensorDescriptor(t, list(t.shape), strides(t), [1, 1, rows, D])
                 for t, rows in ((q, tile.block_m), (k, tile.block_n), (v, tile.block_n), (out, tile.block_m)))


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


def _scratch(size: int, alignment: int, stream) -> torch.Tensor:
    """Global memory for the kernel's tensor descriptors (Triton asks for it when a kernel makes descriptors on the
    device), from PyTorch's caching allocator on the current device (alignment: PyTorch's blocks start on 512
    bytes, more than Triton's 128)."""
    return torch.empty(size, dtype=torch.uint8, device="cuda" if torch.cuda.is_available() else "cpu")


# The L2 size that the interpreter (no GPU) plans with: the H200's (Nsight: device__attribute_l2_cache_size).
INTERPRETER_L2_BYTES = 62914560


def l2_bytes(device: torch.device) -> int:
    """The L2 cache size of the device the tensors are on (the interpreter's stand-in on the CPU)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).L2_cache_size
    return INTERPRETER_L2_BYTES


def _ensure_allocator() -> None:
    """Give Triton an allocator for descriptor scratch memory, unless the program has set its own."""
    if isinstance(triton.runtime._allocation._allocator.get(), triton.runtime._allocation.NullAllocator):
        triton.set_allocator(_scratch)


# Triton's interpreter keeps the state of the kernel it runs in globals (it patches triton.language for the call, and
# the grid's indices live in its builder): two calls at once from two threads fail ("x >= grid_dim[0]") or give
# wrong results. Interpreted launches therefore run one at a time; compiled ones need no lock.
_INTERPRETER_LOCK = threading.Lock()


def launch_kernel(launch: Launch):
    """Launch through Triton's JIT (compiling on first use); returns the CompiledKernel (None when interpreting).
    Interpreted launches are serialised (_INTERPRETER_LOCK)."""
    if launch.kwargs.get("USE_TMA"):
        _ensure_allocator()
    kernel = launch.kernel
    try:
        if isinstance(kernel, InterpretedFunction):
            with _INTERPRETER_LOCK:
                return kernel[launch.grid](**launch.kwargs, **launch.options)
        return kernel[launch.grid](**launch.kwargs, **launch.options)
    except (triton.CompilationError, triton.runtime.errors.OutOfResources) as err:
        raise _compile_failure(launch, err) from err
    except RuntimeError as err:  # MLIR pass failures surface as RuntimeError("PassManager::run failed")
        if "PassManager" in str(err) or "failed to" in str(err):
            raise _compile_failure(launch, err) from err
        raise


# ---------------------------------------------------------------------------------------------------------------
# The launch cache. Checking the inputs, planning the launch and Triton's JIT dispatch cost 60-90 us of host time
# per call (over 100 with host TMA descriptors, which Triton's Python launcher expands on every call); Triton's
# generated C launcher called with the arguments in order costs about 5. So `attention` checks a call once per
# *signature* -- everything the checks and the JIT's specialization read: each tensor's type, dtype, device, shape,
# strides, 16-byte alignment and lazy bits (negation, conjugation, ZeroTensor: all refused); causal, stage,
# switches, sm_scale and the tile, each with its type; the current CUDA device, and whether Triton interprets -- and
# keeps the checked plan and the compiled kernel. A later call with the same signature goes straight to the C
# launcher, for every stage, the Gluon ones included: host descriptors are expanded as Triton's launcher would
# (DescriptorArgs below). Any other call takes the full path, so every bad input still gets its error. The cache
# holds no tensor (a filled descriptor holds an address, not a reference).
#
# The cached path is Python around the C launcher, so it does each thing once (issue 20): the tensors' pointers are
# read once, for the key's alignment bits, the alias check of a given output (inputs.AliasCheck.check_ptrs) and the
# launch (_launch_ptrs); a call with the last signature launched is told by that plan's guard, a C check of the
# tensors (_same_as_last), without building the key; another key is compared with the last one before it is hashed;
# the output comes from PyTorch's low-overhead allocator (fast_empty); the launch's constant arguments are unpacked
# from one tuple (_Direct), and with host descriptors the kernel's whole argument tuple is kept per set of four
# pointers.
# workflow/scripts/tools/host_python.py times these parts on a CPU, host_cost.py on a GPU host.
# ---------------------------------------------------------------------------------------------------------------
assert tuple(_attn_fwd.arg_names[:len(TENSOR_ARGS)]) == TENSOR_ARGS
CACHE_SIZE = 4096  # signatures kept; the cache is emptied when full
DESCRIPTOR_CACHE_SIZE = 64  # filled TMA descriptors (and argument tuples) kept per plan and tensor (by pointer);
# emptied when full; 0 keeps none (every call fills its maps)


@dataclass
class _Plan:
    """A checked launch without its tensors: the grid, the other arguments in the kernel's order, and, once the
    JIT has compiled it on this device, what calling Triton's generated launcher directly needs."""

    label: str
    tile: Tile
    grid: tuple
    rest: tuple
    host_desc: bool = False      # the tensors go to the kernel as TMA descriptors made on the host
    switches: frozenset = frozenset()   # for the compile options they imply (a register cap)
    direct: "_Direct | None" = None   # the cached launch (_direct), once the JIT has compiled it
    alias: inputs.AliasCheck | None = None   # for a call given its output: check_no_alias from the pointers
    new_out: object = None   # a call without out: allocates it (fast_empty), or None for torch.empty_like
    fast: "_Fast | None" = None   # the C check that a call has this plan's signature (_guard), once it has one

    @property
    def gluon(self) -> bool:
        return is_gluon(self.switches)

    def tensor_args(self, q, k, v, out) -> tuple:
        """The kernel's first four arguments for this call: the tensors, or host TMA descriptors of them."""
        if self.gluon:
            from .gluon_fwd import descriptors, splits_q
            return descriptors(q, k, v, out, self.tile.block_m, self.tile.block_n,
                               splits_q("two_consumers" in self.switches, "register_realloc" in self.switches,
                                        "split_consumers" in self.switches))
        return host_descriptors(q, k, v, out, self.tile) if self.host_desc else (q, k, v, out)

    def kernel_args(self, q, k, v, out) -> dict:
        kernel = Launch(self.label, self.switches, self.tile, (), {}).kernel
        return {**dict(zip(kernel.arg_names[:len(TENSOR_ARGS)], self.tensor_args(q, k, v, out))),
                **dict(zip(kernel.arg_names[len(TENSOR_ARGS):], self.rest))}


_PLANS: dict = {}
_get_device = getattr(torch._C, "_cuda_getDevice", None)
_is_grad_enabled = torch.is_grad_enabled
_empty_like, _CONTIGUOUS = torch.empty_like, torch.contiguous_format


def signature(q, k, v, out, causal, stage, sm_scale, switches, tile) -> tuple:
    """The cache key of a call: equal keys mean that the checks and the compiled kernel are the same. Raises for a
    non-tensor or an unhashable option (the call then takes the full path, which names the problem)."""
    return _key(q, k, v, out, q.data_ptr(), k.data_ptr(), v.data_ptr(), None if out is None else out.data_ptr(),
                causal, stage, sm_scale, switches, tile)


def _key(q, k, v, out, qp, kp, vp, op, causal, stage, sm_scale, switches, tile) -> tuple:
    """signature() from the tensors' data pointers, read once by the caller (`attention` launches with them).

    Per tensor, after its layout: the address modulo 16 (alignment), or for an aligned one whether it is a
    ZeroTensor (no memory; a ZeroTensor's view can have a nonzero address, so the address alone does not say); and
    its negation and conjugation bits (memory that means other values; PyTorch's TensorImpl asserts that only a
    complex tensor has the conjugation bit, but torch._C._set_conj sets it on a real one before that assertion
    fails, so the bit is read for every dtype)."""
    return (type(q), q.dtype, q.device, q.shape, q.stride(), qp & 15 or q._is_zerotensor(), q.is_neg(), q.is_conj(),
            type(k), k.dtype, k.device, k.shape, k.stride(), kp & 15 or k._is_zerotensor(), k.is_neg(), k.is_conj(),
            type(v), v.dtype, v.device, v.shape, v.stride(), vp & 15 or v._is_zerotensor(), v.is_neg(), v.is_conj(),
            None if out is None else (type(out), out.dtype, out.device, out.shape, out.stride(),
                                      op & 15 or out._is_zerotensor(), out.is_neg(), out.is_conj()),
            _get_device() if q.is_cuda else inputs.interpreting(),
            (q.requires_grad or k.requires_grad or v.requires_grad) and _is_grad_enabled(),
            type(causal), causal, type(stage), stage, type(sm_scale), sm_scale, switches,
            _tile_key(tile) if tile else ())


def _tile_key(tile: dict) -> tuple:
    return tuple((key, type(val), val) for key, val in tile.items())


# The last signature launched from the cache and its plan (one tuple: threads replace it whole), so that a call with
# the signature of the one before compares keys instead of hashing one (the comparison is the dictionary's own) or,
# once the plan has its guard (plan.fast), passes that guard instead of building its key.
_last: tuple = (None, None)


def _remember(key, plan, same: bool, q, k, v, out, qp, kp, vp, op, causal, stage, sm_scale, switches, tile) -> None:
    """After a cached launch that built its key: the key becomes the last one, and the plan gets a guard if it has
    none, or a new one if its guard failed on a call of this very signature (`same`: made under another inference
    mode or dispatch state, or from an inference tensor; see the note at _WITNESS)."""
    global _last
    if same or plan.fast is None:
        fast = _guard(q, k, v, out, qp, kp, vp, op, causal, stage, sm_scale, switches, tile)
        if fast is not None:
            plan.fast = fast        # one attribute, replaced whole: a thread reads the old guard or the new one
    if not same:
        _last = (key, plan)


# The guard of a plan: whether a call has the signature of the last one without building its key (2.8 us of ~30
# tensor methods on this CPU, 4-8 us on the H200's host): PyTorch's C check of a tensor's properties, the one
# Dynamo's guards use (torch._C._dynamo.guards.TensorGuards; 0.4 us for q, k, v and _WITNESS here), and the rest of
# the key in Python (_same_as_last; 1.3 us in all here, against 2.9 for the key and its comparison). TensorGuards'
# TensorCheck compares, per tensor, the Python type (exactly), the dispatch key set (the device type, the layout's
# kind, and the negation, conjugation and ZeroTensor bits), the dtype, the device index, requires_grad, and the
# sizes and strides (given as "dynamic dims" lists of ints they are all compared); it also fails when one tensor
# object is passed twice. It reads no address (the alignment is checked in Python) and not the grad mode (the key's
# grad bit is checked in Python). A plan's guard is made once (6 us here), at its first launch from the cache; a
# call of another signature than the last pays a failed check (0.7 us here) before it builds its key.
#
# Thread-local state: TensorCheck compares the key sets after applying the thread's local dispatch sets,
# (keys | included) - excluded (LocalState::apply), when made and when checked. Under an exclusion of Negative a
# negated view would pass a guard made from a plain tensor; so every check includes _WITNESS, a tensor with the
# Negative, Conjugate and ZeroTensor bits: excluding any of them at check time changes the witness's keys, and
# including any changes the call's tensors' (an accepted call's tensors have none), so either fails the guard. A guard
# is made only where the thread's sets touch none of these bits and include no backend bit (the device type is in the
# key set alone, and an exclusion never removes a backend bit), so that what it records is the tensors' own.
# inference_mode excludes the autograd keys: a guard made outside it fails inside it and the other way round, and
# so does an inference tensor against a normal one; such a call builds its key (same plan) and remakes the guard.
try:
    from torch._C._dynamo.guards import TensorGuards as _TensorGuards
    _WITNESS = torch._neg_view(torch._efficientzerotensor((1,), dtype=torch.complex64).conj())
    _DKS, _DK = torch._C.DispatchKeySet, torch._C.DispatchKey
    _LAZY_BITS = (_DKS(_DK.Negative) | _DKS(_DK.Conjugate) | _DKS(_DK.ZeroTensor)).raw_repr()
    _BACKEND_BITS = _DKS(_DK.Dense).raw_repr() - 1      # the backend bits lie below the first functionality's
    assert _WITNESS.is_neg() and _WITNESS.is_conj() and _WITNESS._is_zerotensor() and _BACKEND_BITS > 0
except Exception:   # a torch without them: every call builds its key
    _TensorGuards = None


class _Fast(NamedTuple):
    """A plan's guard (_guard): for a call of its form, TensorGuards and the rest of the key that it does not hold."""

    tensors: object     # TensorGuards over (q, k, v), or (q, k, v, out), and _WITNESS
    form: int           # 0: no out; 1: out given; 2: out is q (TensorGuards refuses one tensor twice)
    cuda: bool          # the key's device entry: the current CUDA device, or (CPU tensors) the interpreter flag
    device: object
    grad: bool | None   # the grad mode the key's grad bit was taken in; None: no tensor requires grad (bit off)
    causal: object      # the options, to compare by identity or by type and value as the key does
    stage: object
    sm_scale: object
    switches: object
    tile: tuple         # _tile_key(tile)


def _guard(q, k, v, out, qp, kp, vp, op, causal, stage, sm_scale, switches, tile) -> _Fast | None:
    """The guard of this call's signature, or None where it cannot be exact: no TensorGuards, a pointer off 16 bytes
    (rare; the key holds its remainder), one tensor passed twice (but out=q), or a dispatch state that hides a bit."""
    form = 0 if out is None else 2 if out is q else 1
    tensors = (q, k, v) if form != 1 else (q, k, v, out)
    if (_TensorGuards is None or (qp | kp | vp | (op or 0)) & 15 or q is k or q is v or k is v
            or form == 1 and (out is k or out is v)):
        return None
    include = torch._C._dispatch_tls_local_include_set().raw_repr()
    exclude = torch._C._dispatch_tls_local_exclude_set().raw_repr()
    if (include | exclude) & _LAZY_BITS or include & _BACKEND_BITS:
        return None
    tensors += (_WITNESS,)
    try:
        guard = _TensorGuards(*tensors, dynamic_dims_sizes=[list(t.shape) for t in tensors],
                              dynamic_dims_strides=[list(t.stride()) for t in tensors])
        cuda = q.is_cuda
        return _Fast(guard, form, cuda, _get_device() if cuda else inputs.interpreting(),
                     _is_grad_enabled() if q.requires_grad or k.requires_grad or v.requires_grad else None,
                     causal, stage, sm_scale, switches, _tile_key(tile) if tile else ())
    except Exception:   # a tensor it cannot describe: that signature builds its key (the launch has happened)
        return None


def _same_as_last(fast: _Fast, q, k, v, out, qp, kp, vp, op, causal, stage, sm_scale, switches, tile) -> bool:
    """Whether this call's key would be that of the plan `fast` guards (False may still be the same key: the call
    then builds it). Everything the key holds: the tensors' (TensorGuards, and the 16-byte alignment: a ZeroTensor,
    whatever its address, differs in its dispatch keys), the device entry, the grad bit, and the options, each of
    the same type and value (an identical object is both)."""
    guards, form, cuda, device, grad, causal_, stage_, sm_scale_, switches_, tile_ = fast
    if out is None:
        if form or (qp | kp | vp) & 15 or not guards.check(q, k, v, _WITNESS):
            return False
    elif out is q:
        if form != 2 or (qp | kp | vp) & 15 or not guards.check(q, k, v, _WITNESS):
            return False
    elif form != 1 or (qp | kp | vp | op) & 15 or not guards.check(q, k, v, out, _WITNESS):
        return False
    return ((_get_device() if cuda else inputs.interpreting()) == device
            and (grad is None or _is_grad_enabled() is grad)
            and (causal is causal_ or type(causal) is type(causal_) and causal == causal_)
            and (stage is stage_ or type(stage) is type(stage_) and stage == stage_)
            and (sm_scale is sm_scale_ or type(sm_scale) is type(sm_scale_) and sm_scale == sm_scale_)
            and (switches is switches_ or switches == switches_)
            and (_tile_key(tile) if tile else ()) == tile_)


def contiguous_strides(shape) -> tuple:
    """The strides of a contiguous tensor of this shape (what torch.empty(shape) has)."""
    strides, step = [], 1
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


# The output's allocation on the cached path. torch.empty_like goes through PyTorch's argument parser and dispatcher
# (0.8 us on a CPU tensor here, 2-4 us of a CUDA one on the H200's host); PyTorch's own low-overhead allocator for
# compiled graphs (torch._C._dynamo.guards._empty_strided_cuda, what Inductor's generated code allocates with) makes
# the same tensor from a shape, strides and dtype: on the current device (the key holds it, and it is the tensors'),
# from the same caching allocator, so on the current stream and inside a CUDA graph's capture alike.
try:
    from torch._C._dynamo.guards import _empty_strided_cpu, _empty_strided_cuda
    _EMPTY_STRIDED = {"cuda": _empty_strided_cuda, "cpu": _empty_strided_cpu}
except ImportError:     # a torch without them: empty_like
    _EMPTY_STRIDED = {}


def fast_empty(q):
    """A function of no arguments that returns a new contiguous tensor of q's shape and dtype on q's device (what
    torch.empty_like(q, memory_format=torch.contiguous_format) returns), or None where that needs empty_like: a
    subclass of Tensor (its __torch_function__ may make its own), or a device without the low-overhead helper."""
    fn = _EMPTY_STRIDED.get(q.device.type)
    if fn is None or type(q) is not torch.Tensor:
        return None
    return functools.partial(fn, tuple(q.shape), contiguous_strides(q.shape), q.dtype)


def clear_cache() -> None:
    """Forget every checked signature (the next call of each takes the full path again)."""
    global _last
    _last = (None, None)
    _PLANS.clear()


def cached_signatures() -> int:
    return len(_PLANS)


_RUNTIME = triton.knobs.runtime
_ENTER, _EXIT = _RUNTIME.launch_enter_hook, _RUNTIME.launch_exit_hook  # Triton's hook chains (added to, not replaced)
try:
    from torch._C import _cuda_getCurrentRawStream as _current_stream  # what Triton's own launcher uses
except ImportError:  # a torch built without CUDA
    _current_stream = None


# Host TMA descriptors. Triton's Python launcher turns each descriptor argument into the kernel's parameters
# (triton/backends/nvidia/driver.py, make_tensordesc_arg): a CUtensorMap that the driver fills from the tensor's
# address, its shape, strides and block, and the TMA dtype and swizzle the compiler chose, followed by the shape and
# strides; or, for a kernel that did not lower the descriptor to TMA, the address, shape, strides, padding, shape and
# strides. Of these only the address changes between calls of one signature, so a plan keeps the rest, and a call
# fills the CUtensorMap of an address it has not seen (by Triton's own C helper, fill_tma_descriptor) and reuses the
# one of an address it has (the map holds nothing else of the tensor: the signature fixes the rest).
_TMA_DTYPE_DEVICE_TO_HOST = {i: i for i in range(16)} | {8: 10, 9: 8, 10: 9}  # as driver.py's table


class DescriptorArgs:
    """The kernel parameters that Triton's launcher makes of one host descriptor, as a function of the tensor's
    address (`args(ptr)`); built once per plan from the first call's descriptor and the compiled kernel's metadata
    (None: the kernel reads the descriptor as pointer, shape and strides)."""

    __slots__ = ("fill", "fill_rest", "tail", "cache")

    def __init__(self, desc, meta: dict | None, fill=None):
        shape, strides = list(desc.shape), list(desc.strides)
        self.cache = {}
        if meta is None:
            self.fill = None
            self.tail = (*shape, *strides, desc.padding == "nan", *shape, *strides)
            return
        if strides[-1] != 1:
            raise ValueError(f"a TMA descriptor needs a last stride of 1, got strides {strides}")
        if meta["fp4_padded"]:
            shape[-1] *= 2
        self.fill = fill if fill is not None else triton.runtime.driver.active.utils.fill_tma_descriptor
        self.fill_rest = (meta["swizzle"], meta["elem_size"], _TMA_DTYPE_DEVICE_TO_HOST[meta["elem_type"]],
                          meta["block_size"], shape, strides, 1 if desc.padding == "nan" else 0)
        self.tail = (*shape, *strides)

    def args(self, ptr: int) -> tuple:
        if self.fill is None:
            return (ptr, *self.tail)
        args = self.cache.get(ptr)
        if args is None:
            args = (self.fill(ptr, *self.fill_rest), *self.tail)
            if DESCRIPTOR_CACHE_SIZE > 0:       # 0: no map is kept, every call fills its own
                if len(self.cache) >= DESCRIPTOR_CACHE_SIZE:
                    self.cache.clear()
                self.cache[ptr] = args
        return args


def descriptor_args(kernel, descriptors: tuple, fill=None) -> tuple:
    """One DescriptorArgs per host descriptor of a compiled kernel's launch (its first four arguments)."""
    metas = getattr(kernel.metadata, "tensordesc_meta", None) or [None] * len(descriptors)
    if len(metas) != len(descriptors):
        raise ValueError(f"the kernel has {len(metas)} descriptor arguments, the launch passes {len(descriptors)}")
    return tuple(DescriptorArgs(d, m, fill) for d, m in zip(descriptors, metas))


def c_launcher(runner):
    """Triton's generated C launcher under its Python launcher. For a kernel with descriptor arguments Triton wraps
    it in a function that expands the descriptors (driver.py, wrap_handle_tensordesc); that function's `launcher`.
    None when Triton's layout differs from the one this was written for (the call then takes Triton's own path)."""
    fn = runner.launch
    code = getattr(fn, "__code__", None)
    if code is None:        # not wrapped: the C function itself
        return fn
    if "launcher" in code.co_freevars and fn.__closure__:
        return fn.__closure__[code.co_freevars.index("launcher")].cell_contents
    return None


def _direct_launcher(kernel, tensors: tuple) -> tuple | None:
    """(launch, function, packed metadata, cooperative, pdl, global scratch bytes per program, descriptor args or
    None) to call Triton's generated C launcher directly, or None when the kernel needs profiler scratch memory or
    more than one CTA per program, which Triton's Python launcher prepares."""
    runner = kernel.run
    if getattr(runner, "profile_scratch_size", 1):
        return None
    scratch = getattr(runner, "global_scratch_size", None)
    if scratch is None or getattr(runner, "num_ctas", 1) != 1:
        return None
    descs = None
    if not isinstance(tensors[0], torch.Tensor):
        launch = c_launcher(runner)
        if launch is None:
            return None
        descs = descriptor_args(kernel, tensors)
    else:
        launch = runner.launch
    return (launch, kernel.function, kernel.packed_metadata, runner.launch_cooperative_grid, runner.launch_pdl,
            scratch, descs)


class _Direct(NamedTuple):
    """What the cached launch of a plan calls Triton's C launcher with, flattened so that a call unpacks it once."""

    launch: object      # Triton's generated C launcher
    g0: int             # the grid
    g1: int
    function: int
    coop: bool
    pdl: bool
    scratch: int        # global scratch bytes for the whole grid (0: none)
    packed: tuple       # the compiled kernel's packed metadata
    descs: tuple | None     # one DescriptorArgs per host descriptor, or None for a kernel that takes pointers
    rest: tuple         # the kernel's other arguments, in its order
    args: dict | None   # host descriptors: the four pointers -> the kernel's whole argument tuple (bounded)


def _direct(plan: _Plan, d: tuple | None) -> _Direct | None:
    if d is None:
        return None
    launch, function, packed, coop, pdl, scratch, descs = d
    g0, g1 = plan.grid if len(plan.grid) == 2 else (plan.grid[0], 1)
    return _Direct(launch, g0, g1, function, coop, pdl, g0 * g1 * scratch, packed, descs, plan.rest,
                   None if descs is None else {})


def _launch_jit(plan: _Plan, q, k, v, out) -> None:
    """Launch a planned call through Triton's JIT, and keep what a direct call of its launcher needs. Later calls
    with the same signature call that launcher directly (in `attention`), unless a launch hook is set (a profiler's,
    e.g. Triton's proton), which needs Triton's own path. The direct call passes the pointers as integers: the
    checks have made sure that they are CUDA memory of the current device, which is all that Triton's per-pointer
    driver query would check again."""
    kwargs = plan.kernel_args(q, k, v, out)
    launch = Launch(plan.label, plan.switches, plan.tile, plan.grid, kwargs)
    kernel = launch_kernel(launch)
    if kernel is not None and q.is_cuda:
        plan.direct = _direct(plan, _direct_launcher(kernel, tuple(kwargs.values())[:len(TENSOR_ARGS)]))


def launch_direct(plan: _Plan, q, k, v, out) -> None:
    """The cached launch: Triton's generated C launcher, called directly (see _launch_jit), on tensors whose call
    signature is the plan's (`attention` makes sure of it)."""
    _launch_ptrs(plan.direct, q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr())


def _launch_ptrs(direct: _Direct, qp: int, kp: int, vp: int, op: int) -> None:
    """launch_direct from the tensors' data pointers (`attention` has read them for the signature)."""
    launch, g0, g1, function, coop, pdl, scratch, packed, descs, rest, cache = direct
    # Kernels that make tensor descriptors on the device get their scratch memory as Triton's launcher would (on
    # the current device, which is the tensors': the signature holds it).
    scratch = torch.empty(scratch, dtype=torch.uint8, device=_get_device()) if scratch else None
    if descs is None:
        launch(g0, g1, 1, _current_stream(_get_device()), function, coop, pdl, scratch, None, packed, None, None,
               None, qp, kp, vp, op, *rest)
        return
    ptrs = (qp, kp, vp, op)
    args = cache.get(ptrs)
    if args is None:        # the maps of addresses not seen together before (each filled once per address)
        dq, dk, dv, do = descs
        args = (*dq.args(qp), *dk.args(kp), *dv.args(vp), *do.args(op), *rest)
        if DESCRIPTOR_CACHE_SIZE > 0:
            if len(cache) >= DESCRIPTOR_CACHE_SIZE:
                cache.clear()
            cache[ptrs] = args
    launch(g0, g1, 1, _current_stream(_get_device()), function, coop, pdl, scratch, None, packed, None, None, None,
           *args)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = True, stage: str | None = None,
              sm_scale: float | None = None, switches: Iterable[str] | None = None,
              out: torch.Tensor | None = None, **tile) -> torch.Tensor:
    """softmax(q k^T * sm_scale [+ causal mask]) v, by one stage of the kernel.

    q: (B, H, N, D); k, v: (B, H_kv, N, D), H a multiple of H_kv (query head h reads K/V head h // (H // H_kv)).
    stage: a name of kernels.STAGES; by default the fastest stage verified on the device's architecture
    (kernels.defaults: on an sm_90 GPU the leading stage of the committed H200 runs, the one listed in
    kernels/default_stages.csv, and where that is a Gluon stage and the call has a head dim or dtype the Gluon kernel
    does not take, the row's fallback, the leading Triton stage; on any other device the article's last stage,
    kernels.FINAL). Or switches: any
    subset of the switches (kernels.stages.ALL_SWITCHES) instead (not both). tile: block_m, block_n, num_warps, num_stages
    override the variant's own tile (kernels.stages.default_tile: the article's 32x32 with 4 warps, or the one its
    switches choose). out: an optional tensor like q to write into (q itself is allowed; memory shared with k or v
    is refused). No backward pass: inputs that require grad are refused while grad mode is on.
    Returns the output, (B, H, N, D), in q's dtype.

    sm_scale: default 1/sqrt(D); any scale with sm_scale x log2(e) from FP32_MIN_NORMAL to max_scaled_scale(D)
    (about 1e26 at D = 128), so that no score of float16-range inputs overflows float32. A variant with prescale_q (no
    stage has it) scales Q at load in 16 bits at the default scale and below; above it the scale goes into the
    float32 scores instead (see prescales_q). Rows that see no finite score (every key masked or -inf) give 0,
    as PyTorch's scaled_dot_product_attention. Scores of any magnitude within that bound are meant to be right on a
    GPU too (see "The exact exponent" in this module).

    Dense memory only: sparse, nested, meta tensors, ZeroTensors and lazy views (a negation or conjugation bit) are
    refused, naming the conversion. Under Triton's interpreter (TRITON_INTERPRET=1, set before triton and kernels
    are imported) calls from several threads are safe but run their launches one at a time.
    """
    if switches is not None and type(switches) is not frozenset:
        switches = frozen_switches(switches)
    try:
        qp, kp, vp = q.data_ptr(), k.data_ptr(), v.data_ptr()
        op = None if out is None else out.data_ptr()
        last_key, plan = _last
        fast = None if plan is None else plan.fast
        if fast is not None and _same_as_last(fast, q, k, v, out, qp, kp, vp, op, causal, stage, sm_scale, switches,
                                              tile):
            key = last_key      # the last call's signature, by its guard
        else:
            fast, key = None, _key(q, k, v, out, qp, kp, vp, op, causal, stage, sm_scale, switches, tile)
            if key != last_key:     # the signature of the call before this one needs no hashing
                plan, last_key = _PLANS.get(key), None
    except Exception:  # a non-tensor, an unhashable option: the full path names the problem
        key = plan = None
    if plan is not None:
        direct = plan.direct
        if direct is not None and not (_ENTER.calls or _EXIT.calls):      # the cached launch
            given = out
            if out is None:
                new_out = plan.new_out
                out = new_out() if new_out is not None else _empty_like(q, memory_format=_CONTIGUOUS)
                op = out.data_ptr()
            else:
                plan.alias.check_ptrs(qp, kp, vp, op, q, k, v, out)     # pointers change from call to call
            _launch_ptrs(direct, qp, kp, vp, op)
            if fast is None:        # the key was built: remember it, and give the plan a guard
                _remember(key, plan, last_key is not None, q, k, v, given, qp, kp, vp, None if given is None else op,
                          causal, stage, sm_scale, switches, tile)
            return out
    out_given = out
    if out is None:
        if plan is None:
            inputs.check_qkv(q, k, v)       # a bad q gets its own error here, not one of empty_like's
        out = torch.empty_like(q, memory_format=torch.contiguous_format)
    elif plan is not None:
        plan.alias.check(q, k, v, out)                 # pointers change from call to call: checked every time
    if plan is None:
        launch = plan_launch(q, k, v, out, causal=causal, stage=stage, switches=switches, sm_scale=sm_scale, **tile)
        inputs.check_runnable(q, launch.kernel)
        inputs.check_known_miscompiles(launch.label, launch.switches, q.device)
        inputs.check_no_alias(q, k, v, out)
        names = launch.kernel.arg_names
        plan = _Plan(launch.label, launch.tile, launch.grid, tuple(launch.kwargs[n] for n in names[len(TENSOR_ARGS):]),
                     host_desc=not isinstance(launch.kwargs[names[0]], torch.Tensor), switches=launch.switches,
                     alias=None if out_given is None else inputs.AliasCheck(q, k, v, out),
                     new_out=fast_empty(q))
        if key is not None:
            if len(_PLANS) >= CACHE_SIZE:
                _PLANS.clear()
            _PLANS[key] = plan
    _launch_jit(plan, q, k, v, out)
    return out
