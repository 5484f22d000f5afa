"""Checks on what `attention` is given. Every check raises an exception that names the problem and the fix."""
from __future__ import annotations


import torch

from .stages import Tile

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)
SUPPORTED_HEAD_DIMS = (16, 32, 64, 128, 256)
TILE_KEYS = ("block_m", "block_n", "num_warps", "num_stages")
BLOCK_RANGE = (16, 256)  # tl.dot needs at least 16 rows; past 256 no tile fits in shared memory
WARP_CHOICES = (1, 2, 4, 8, 16)
MAX_GRID_AXIS1 = 65535  # CUDA's limit on gridDim.y
MAX_GRID_AXIS0 = 2**31 - 1  # and on gridDim.x


def interpreting() -> bool:
    """Whether Triton interprets, read as Triton itself reads TRITON_INTERPRET."""
    import triton

    return bool(triton.knobs.runtime.interpret)


def check_dense(name: str, t: torch.Tensor) -> None:
    """The kernel reads and writes a tensor's memory as plain strided elements: a sparse or nested tensor has no such
    memory, and a tensor with a lazy bit (negation, conjugation, or a ZeroTensor) means something other than what
    its memory holds. Each is refused with the conversion to make (a refusal, not a silent copy: the copy would be a
    hidden pass over the tensor at every call, which the caller can make once and keep)."""
    if t.is_nested:
        raise ValueError(f"{name} is a nested tensor, which is not supported: the kernel takes dense (B, H, N, D) "
                         f"tensors; pad it with torch.nested.to_padded_tensor({name}, 0.0) (and mask the padding)")
    if t.layout != torch.strided:
        kind = "sparse tensors are" if t.is_sparse or "sparse" in str(t.layout) else f"layout {t.layout} is"
        raise ValueError(f"{name} has layout {t.layout}: {kind} not supported, the kernel reads dense memory; "
                         f"pass {name}.to_dense()")
    if t.is_neg():
        raise ValueError(f"{name} has the negation bit set (a lazy view such as torch._neg_view(x) or the .imag of a "
                         f"conjugated complex tensor): its memory holds the values before negation, which is what "
                         f"the kernel would read; pass {name}.resolve_neg() (a copy with the sign applied)")
    if t.is_conj():
        raise ValueError(f"{name} has the conjugation bit set (x.conj() of a complex tensor): its memory holds the "
                         f"values before conjugation; pass {name}.resolve_conj()"
                         + (" (and a real tensor: the kernel takes torch.float16 or torch.bfloat16, not "
                            f"{t.dtype})" if t.is_complex() else ""))
    if t._is_zerotensor():
        raise ValueError(f"{name} is a ZeroTensor (torch._efficientzerotensor, which autograd makes for zero "
                         f"gradients): it has no memory for the kernel to read; pass torch.zeros_like({name}) "
                         f"or a tensor with data")


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple:
    """Check q, k, v and return (B, H, H_kv, N, D)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        check_dense(name, t)
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


def check_known_miscompiles(label: str, switches: frozenset, device: torch.device) -> None:
    """Switch sets that Triton 3.6 builds into a wrong kernel on the GPU: refused there (the interpreter ignores
    warp specialization and computes them right)."""
    if device.type == "cuda" and {"warp_specialize", "q_in_registers"} <= switches:
        raise ValueError(f"{label}: warp_specialize together with q_in_registers is refused on the GPU: with Q in "
                         f"registers Triton 3.6 warp-specializes this loop on sm_90, and the result was wrong at "
                         f"64x32w4s3 and took twice v13's time at 64x64w4s2 (data/nvidia-h200/probes/probe-ws); "
                         f"turn one of the two switches off")


def check_gluon_device(label: str, q: torch.Tensor) -> None:
    """A Gluon stage runs on a CUDA GPU of compute capability 9 (Hopper) only: Gluon does not run in Triton's
    interpreter, and its kernel is built of Hopper's warpgroup MMA and TMA."""
    from .stages import TRITON_STAGES
    if q.device.type != "cuda":
        raise ValueError(f"{label} is a Gluon kernel, which runs on a CUDA GPU only (Gluon does not run in Triton's "
                         f"interpreter): the tensors are on {q.device}; use a Triton stage there, e.g. "
                         f"{TRITON_STAGES[-1]} or v13")
    major, minor = torch.cuda.get_device_capability(q.device)
    if major != 9:
        raise ValueError(f"{label} is a Gluon kernel for Hopper (compute capability 9.x); this GPU is {major}.{minor}: "
                         f"use a Triton stage, e.g. v13")


def check_runnable(q: torch.Tensor, kernel=None) -> None:
    """The kernel runs on the current CUDA device, or on the CPU under Triton's interpreter; `kernel` (the
    @triton.jit function to launch) must then have been made by the interpreter."""
    if q.device.type == "meta":
        raise ValueError("the tensors are on the meta device: meta tensors hold no data (only shapes and strides), "
                         "so there is nothing to read and nowhere to write; use CUDA tensors (or CPU tensors with "
                         "TRITON_INTERPRET=1)")
    if q.device.type != "cuda":
        if interpreting() and kernel is not None:
            check_interpreted(kernel)
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


def check_interpreted(kernel) -> None:
    """Under TRITON_INTERPRET=1, Triton's own library functions and the kernel must be interpreted ones. Triton
    decides when a @triton.jit function is defined (at import) whether it is compiled or interpreted: with the
    variable set only after `import triton` or `import kernels`, the kernel is a compiled one, which on a machine
    without a GPU fails with Triton's "0 active drivers"."""
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction
    late = [what for what, fn in (("triton", tl.cdiv), ("kernels", kernel)) if not isinstance(fn, InterpretedFunction)]
    if late:
        raise RuntimeError(f"TRITON_INTERPRET=1 was set after {' and '.join(late)} had been imported: Triton decides "
                           f"at import whether a @triton.jit function is compiled or interpreted, so this process "
                           f"holds compiled kernels and would look for a GPU driver; set TRITON_INTERPRET=1 before "
                           f"importing kernels or triton (e.g. `TRITON_INTERPRET=1 python ...`, or os.environ at "
                           f"the very top of the program)")


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


TMA_ALIGN = 16  # bytes: a TMA descriptor's base address and every stride but the last are multiples of this


def check_tma(stage_label: str, **tensors: torch.Tensor) -> None:
    """For TMA descriptors: each tensor's last stride is 1, its other strides are positive multiples of 16 bytes, and
    its data starts on a 16-byte boundary (so that every head's rows do too)."""
    for name, t in tensors.items():
        strides = [st * t.element_size() for st, n in zip(t.stride()[:-1], t.shape[:-1]) if n > 1]
        if t.stride(-1) != 1 or any(st <= 0 or st % TMA_ALIGN for st in strides) or t.data_ptr() % TMA_ALIGN:
            raise ValueError(f"{stage_label} loads and stores through TMA descriptors, which need {name} to start on "
                             f"a {TMA_ALIGN}-byte boundary, with stride(-1) = 1 and the other strides positive "
                             f"multiples of {TMA_ALIGN} bytes; got strides {tuple(t.stride())} at address "
                             f"{t.data_ptr():#x}; pass {name}.contiguous() (a fresh tensor), or use a variant "
                             f"without tma")


def check_out(out: torch.Tensor, q: torch.Tensor) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if out.is_neg() or out.is_conj():
        bit, done = ("negation", "negated") if out.is_neg() else ("conjugation", "conjugated")
        raise ValueError(f"out has the {bit} bit set (a lazy view such as torch._neg_view(x)): the kernel writes its "
                         f"memory directly, so out would then read as the {done} result; pass a tensor without the "
                         f"bit (e.g. torch.empty_like(q)) and negate the result if you need to")
    check_dense("out", out)
    if tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype or out.device != q.device:
        raise ValueError(f"out must match q: shape {tuple(q.shape)}, {q.dtype}, on {q.device}; "
                         f"got {tuple(out.shape)}, {out.dtype}, on {out.device}")
    if any(st == 0 and n > 1 for st, n in zip(out.stride(), out.shape)):
        raise ValueError(f"out has a zero stride {tuple(out.stride())} (an expanded view): several outputs would be "
                         f"written to one place; pass a tensor with memory of its own, e.g. torch.empty_like(q)")
    if not _dense_without_overlap(out):
        raise ValueError(f"out's elements overlap each other (shape {tuple(out.shape)}, strides "
                         f"{tuple(out.stride())}); pass a tensor with memory of its own, e.g. torch.empty_like(q)")


def _dense_without_overlap(t: torch.Tensor) -> bool:
    """True when no two elements can share memory: with the dimensions sorted by stride, each stride reaches past
    everything the smaller ones span (the usual layouts, contiguous or permuted or sliced, all pass)."""
    reach = 0
    for stride, size in sorted((abs(st), n) for st, n in zip(t.stride(), t.shape) if n > 1):
        if stride <= reach:
            return False
        reach += stride * (size - 1)
    return True


def span_offsets(t: torch.Tensor) -> tuple:
    """[first byte, last byte + 1) of the memory a tensor's elements occupy, relative to its data pointer: fixed by
    its shape, strides and dtype."""
    start = t.element_size() * sum(min(0, st) * (n - 1) for st, n in zip(t.stride(), t.shape))
    end = t.element_size() * (1 + sum(max(0, st) * (n - 1) for st, n in zip(t.stride(), t.shape)))
    return start, end


def _span(t: torch.Tensor) -> tuple:
    """[first byte, last byte + 1) of the memory a tensor's elements occupy."""
    start, end = span_offsets(t)
    return t.data_ptr() + start, t.data_ptr() + end


class AliasCheck:
    """check_no_alias for tensors of one layout (shapes, strides, dtypes), from their pointers alone: what a cached
    call checks. `check(q, k, v, out)` raises exactly where check_no_alias raises (it calls it to say why)."""

    __slots__ = ("spans", "out_like_q")

    def __init__(self, q, k, v, out):
        self.spans = tuple(span_offsets(t) for t in (q, k, v, out))
        self.out_like_q = out.stride() == q.stride() and out.shape == q.shape

    def check(self, q, k, v, out) -> None:
        self.check_ptrs(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), q, k, v, out)

    def check_ptrs(self, qp: int, kp: int, vp: int, op: int, q, k, v, out) -> None:
        """check() given the tensors' data pointers (the cached call has read them for its signature)."""
        (q0, q1), (k0, k1), (v0, v1), (o0, o1) = self.spans
        lo, hi = op + o0, op + o1
        if (kp + k0 < hi and lo < kp + k1) or (vp + v0 < hi and lo < vp + v1) or (
                qp + q0 < hi and lo < qp + q1 and not (qp == op and self.out_like_q)):
            check_no_alias(q, k, v, out)


def check_no_alias(q, k, v, out) -> None:
    """out may be q itself (each program reads its block of q before it writes the same block of out), but must not
    share memory with k or v (read by every program while others write) nor overlap q otherwise."""
    o0, o1 = _span(out)
    same_as_q = out.data_ptr() == q.data_ptr() and out.stride() == q.stride() and out.shape == q.shape
    for name, t in (("q", q), ("k", k), ("v", v)):
        if name == "q" and same_as_q:
            continue
        a0, a1 = _span(t)
        if a0 < o1 and o0 < a1:
            raise ValueError(f"out shares memory with {name} (bytes {max(a0, o0) - a0} to {min(a1, o1) - a0} of "
                             f"{name}): the kernel would overwrite what it still reads; pass a separate out "
                             f"(out=q itself is allowed)")


MAX_ROW_OFFSET = 2**31  # the kernel's offsets within one head's rows are 32-bit integers


def check_offsets(**tensors: torch.Tensor) -> None:
    """Within one (batch, head), the kernel's element offsets must fit 32 bits."""
    for name, t in tensors.items():
        N, D = t.shape[-2], t.shape[-1]
        span = (N - 1) * abs(t.stride(-2)) + (D - 1) * abs(t.stride(-1))
        if span >= MAX_ROW_OFFSET:
            raise ValueError(f"{name}'s rows reach element {span} within one head (strides {tuple(t.stride())}), "
                             f"past the kernel's 32-bit offsets (2^31); pass {name}.contiguous() or shorter rows")


def check_grad(q, k, v) -> None:
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        raise ValueError("q, k or v requires grad, but this kernel has no backward pass: its output would be cut "
                         "from the graph; call it under `with torch.no_grad():` or pass .detach()ed tensors")
