"""The launch cache of `attention`: a call is checked once per signature, and the signature covers everything the
checks read, so that a cached call can never let a bad input through. (On the CPU, in Triton's interpreter: the
plan cache is the same there; the compiled-kernel launch itself is timed on the GPU, data/*/bench-*/timings.csv.)"""
import importlib
import math

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kernels import attention, reference_attention
from kernels.accuracy import judge

attn = importlib.import_module("kernels.launcher")


def qkv(B=1, H=2, H_kv=1, N=16, D=16, dtype=torch.float16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, h, N, D, generator=g).to(dtype) for h in (H, H_kv, H_kv))


@pytest.fixture
def counted(monkeypatch):
    """Count the full-path checks (plan_launch) that `attention` makes."""
    attn.clear_cache()
    calls = []
    real = attn.plan_launch

    def plan_launch(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(attn, "plan_launch", plan_launch)
    yield calls
    attn.clear_cache()


def test_second_call_skips_the_checks_and_is_still_right(counted):
    q, k, v = qkv()
    ref = reference_attention(q, k, v, causal=True)
    for i in range(3):
        q2, k2, v2 = (t.clone() for t in (q, k, v))          # new tensors, same signature
        out = attention(q2, k2, v2, causal=True, stage="v3")
        assert judge(out, ref)["ok"]
    assert len(counted) == 1 and attn.cached_signatures() == 1
    attention(q, k, v, causal=True, stage="v4")               # another stage: another signature
    assert len(counted) == 2


@pytest.mark.parametrize("change, error, message", [
    (dict(q=lambda q: q.float()), TypeError, "q has dtype torch.float32"),
    (dict(k=lambda k: k.bfloat16()), TypeError, "q, k, v must share one dtype"),
    (dict(q=lambda q: q[:, :, :8]), ValueError, "sequence lengths differ"),
    (dict(q=lambda q: q.expand(1, 2, 16, 16)[:, :, :, :8]), ValueError, "head dims differ"),
    (dict(causal=1), TypeError, "causal must be True or False, got 1"),
    (dict(sm_scale=True), ValueError, "sm_scale must be a positive finite number, got True"),
    (dict(sm_scale=math.nan), ValueError, "sm_scale must be a positive finite number, got nan"),
    (dict(stage="v99"), ValueError, "unknown stage 'v99'"),
    (dict(block_m=32.0), TypeError, "block_m must be an int, got 32.0"),
    (dict(block_m=True), TypeError, "block_m must be an int, got True"),
    (dict(switches="exp2"), TypeError, "got the string 'exp2'; write switches={'exp2'}"),
    (dict(switches=5), TypeError, "switches must be a collection of switch names"),
    (dict(q=lambda q: q.transpose(2, 3)), ValueError, "head dims differ|needs q with contiguous rows"),
    (dict(out=lambda q: torch.empty(1, 2, 16, 16, dtype=torch.bfloat16)), ValueError, "out must match q"),
    (dict(q=torch._neg_view), ValueError, r"q has the negation bit set .* pass q.resolve_neg\(\)"),
    (dict(k=torch._neg_view), ValueError, r"k has the negation bit set .* pass k.resolve_neg\(\)"),
    (dict(v=torch._neg_view), ValueError, r"v has the negation bit set .* pass v.resolve_neg\(\)"),
    (dict(q=lambda q: torch._efficientzerotensor(q.shape, dtype=q.dtype)), ValueError, r"q is a ZeroTensor"),
])
def test_bad_input_after_a_cached_good_one_still_raises(counted, change, error, message):
    """Warm the cache with good calls that differ from the bad one in a single thing, then the bad one raises."""
    q, k, v = qkv()
    base = dict(causal=True, stage="v7", sm_scale=None, block_m=32)
    attention(q, k, v, **base)
    attention(q, k, v, **{**base, "sm_scale": 0.25})
    attention(q, k, v, **{**base, "stage": None, "switches": {"exp2"}})
    tensors = dict(q=q, k=k, v=v, out=None)
    kwargs = dict(base)
    if "switches" in change:
        kwargs["stage"] = None
    for name, value in change.items():
        if name in tensors:
            tensors[name] = value(q if name in ("q", "out") else tensors[name])
        else:
            kwargs[name] = value
    with pytest.raises(error, match=message):
        attention(tensors["q"], tensors["k"], tensors["v"], out=tensors["out"], **kwargs)


def test_a_negated_out_after_a_cached_good_one_is_refused(counted):
    """The cached call with a plain `out`, then the same call with a negated view of it: refused (the kernel would
    write raw memory, which then reads as -out), not launched from the cache."""
    q, k, v = qkv()
    out = torch.empty_like(q)
    attention(q, k, v, out=out)
    with pytest.raises(ValueError, match=r"out has the negation bit set"):
        attention(q, k, v, out=torch._neg_view(out))
    assert len(counted) == 2


def test_switches_from_a_generator_are_read_once(counted):
    q, k, v = qkv()
    out = attention(q, k, v, switches=(s for s in ("causal_skip", "exp2")))
    assert judge(out, reference_attention(q, k, v))["ok"]


def test_interpreter_flag_is_part_of_the_signature(counted, monkeypatch):
    """A call cached under the interpreter must not let the same CPU tensors through once it is switched off."""
    q, k, v = qkv()
    attention(q, k, v)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="the tensors are on cpu; the Triton kernel needs CUDA tensors"):
        attention(q, k, v)


def test_cache_holds_no_tensor(counted):
    import gc
    import weakref
    q, k, v = qkv()
    out = attention(q, k, v)
    refs = [weakref.ref(t) for t in (q, k, v, out)]
    del q, k, v, out
    gc.collect()
    assert all(r() is None for r in refs)


# Inputs drawn from a small space, so that equal signatures come up often: whenever two calls have equal
# signatures, the full checks must give both the same outcome (the same plan, or the same error).
_choice = st.sampled_from


@st.composite
def calls(draw):
    dtype = draw(_choice([torch.float16, torch.bfloat16, torch.float32]))
    H, H_kv = draw(_choice([(2, 1), (2, 2), (3, 2)]))
    N, D = draw(_choice([8, 16])), draw(_choice([16, 24]))
    q, k, v = qkv(H=H, H_kv=H_kv, N=N, D=D, dtype=dtype)
    if draw(st.booleans()):
        q = q.transpose(1, 2).contiguous().transpose(1, 2)    # same shape, other strides
    if draw(st.booleans()):
        k = torch._neg_view(k)                                 # same shape and strides, the negation bit set
    kwargs = dict(causal=draw(_choice([True, False, 1])), stage=draw(_choice(["v0", "v7", "v9"])),
                  sm_scale=draw(_choice([None, 0.5, 1, True, -1.0])))
    if draw(st.booleans()):
        kwargs["switches"] = draw(_choice([frozenset(), frozenset({"exp2"}), frozenset({"warp"})]))
    if draw(st.booleans()):
        kwargs["block_m"] = draw(_choice([16, 32, 32.0, 48]))
    return q, k, v, kwargs


def _outcome(q, k, v, kwargs):
    tile = {key: val for key, val in kwargs.items() if key in ("block_m",)}
    rest = {key: val for key, val in kwargs.items() if key not in tile}
    try:
        out = torch.empty_like(q, memory_format=torch.contiguous_format)
        launch = attn.plan_launch(q, k, v, out, **rest, **tile)
        return ("plan", launch.label, launch.tile, launch.grid,
                tuple(launch.kwargs[n] for n in launch.kernel.arg_names[len(attn.TENSOR_ARGS):]))
    except Exception as err:  # noqa: BLE001  (the outcome is the error itself)
        return ("error", type(err), str(err))


@settings(max_examples=200, deadline=None)
@given(calls(), calls())
def test_equal_signatures_mean_equal_checks(a, b):
    def sig(q, k, v, kwargs):
        tile = {key: val for key, val in kwargs.items() if key == "block_m"}
        sw = kwargs.get("switches")
        return attn.signature(q, k, v, None, kwargs["causal"], kwargs["stage"], kwargs["sm_scale"], sw, tile)

    if sig(*a) == sig(*b):
        assert _outcome(*a) == _outcome(*b)
    assert sig(*a) == sig(*a)


# ---------------------------------------------------------------------------------------------------------------
# The direct launch of a stage with host TMA descriptors (v11 on, and the Gluon stages) expands each descriptor into
# the kernel's parameters itself. Here it is compared with Triton's own expansion (driver.py's
# wrap_handle_tensordesc, around a stand-in for the C launcher), for kernels compiled for sm_90 on the CPU.
# ---------------------------------------------------------------------------------------------------------------
_EXPANSION = r"""
import json, sys
import torch, triton
from triton.backends.nvidia import driver
from kernels import build, gluon_fwd, launcher
from kernels.shapes import Shape
from kernels.stages import default_tile, get_stage


class Utils:   # Triton's fill_tma_descriptor, recorded: returns its arguments (the CUtensorMap they would make)
    def fill_tma_descriptor(self, *args):
        return ("CUtensorMap", *(tuple(a) if isinstance(a, list) else a for a in args))


def values_of(kwargs):
    return list(kwargs.values())[:4]


triton.runtime.driver.set_active(type("FakeDriver", (), {"utils": Utils()})())
shape = Shape(B=1, H=4, H_kv=2, N=256, D=64, dtype="float16", causal=True)
result = {}
for stage in sys.argv[1:]:
    switches = get_stage(stage).switches
    tile = default_tile(switches, shape.D, shape.N)
    kernel = build.compile_variant(switches, 90, tile, shape)
    q, k, v = shape.tensors(fill="empty")
    out = torch.empty_like(q)
    if "gluon" in switches:
        kwargs = gluon_fwd.kernel_args(q, k, v, out, True, tile.block_m, tile.block_n, tile.num_stages,
                                       producer_warp="producer_warp" in switches,
                                       two_consumers="two_consumers" in switches)
        plan = launcher._Plan(stage, tile, (), (), switches=switches)      # the cached launch's descriptors
        assert [d.block_shape for d in plan.tensor_args(q, k, v, out)] == [d.block_shape for d in values_of(kwargs)]
        signature = gluon_fwd.specialize(kwargs)[0]
    else:
        launch = launcher.plan_launch(q, k, v, out, causal=True, stage=stage)
        kwargs, signature = launch.kwargs, build.specialize(launch)[0]
    values = list(kwargs.values())
    descs, rest = tuple(values[:4]), tuple(values[4:])
    meta = kernel.metadata.tensordesc_meta
    seen = []
    wrapped = driver.wrap_handle_tensordesc(lambda *a: seen.append(a), signature, meta)
    base = tuple(range(driver._BASE_ARGS_FORMAT_LEN))
    wrapped(*base, *descs, *rest)                                    # Triton's expansion
    c_launch = launcher.c_launcher(type("Runner", (), {"launch": staticmethod(wrapped)})())
    ours = launcher.descriptor_args(kernel, descs)
    c_launch(*base, *(a for d, t in zip(ours, descs) for a in d.args(t.base.data_ptr())), *rest)   # ours
    result[stage] = dict(n_meta=len(meta or []), unwrapped=c_launch is not wrapped, equal=seen[0] == seen[1],
                         maps=sum(isinstance(a, tuple) and a[0] == "CUtensorMap" for a in seen[1]),
                         n_args=len(seen[0]))
print(json.dumps(result))
"""


def test_direct_launch_expands_host_descriptors_as_triton_does():
    """For kernels compiled for sm_90 on the CPU (in a subprocess, without the interpreter): the arguments that the
    direct launch gives Triton's C launcher equal those that Triton's own descriptor wrapper gives it."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    from kernels.stages import stage_adding
    stages = ["v11", "v13", "v19", stage_adding("producer_warp"), stage_adding("two_consumers"),
              stage_adding("softmax_overlap")]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", _EXPANSION, *stages], cwd=Path(__file__).parents[1], env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for stage in stages:
        r = result[stage]
        assert r["n_meta"] == 4, f"{stage}: its four descriptors are lowered to TMA"
        assert r["unwrapped"], f"{stage}: the C launcher under Triton's descriptor wrapper was found"
        assert r["maps"] == 4 and r["equal"], f"{stage}: the direct launch's arguments differ from Triton's: {r}"


class _FakeUtils:
    """Triton's fill_tma_descriptor, recorded: returns its arguments (the CUtensorMap they would make)."""

    def __init__(self):
        self.calls = 0

    def fill_tma_descriptor(self, *args):
        self.calls += 1
        return ("CUtensorMap", args[0], args[1], args[2], args[3], tuple(args[4]), tuple(args[5]), tuple(args[6]),
                args[7])


@pytest.fixture
def fake_fill(monkeypatch):
    import triton
    utils = _FakeUtils()
    monkeypatch.setattr(triton.runtime.driver, "_active", type("FakeDriver", (), {"utils": utils})())
    return utils


def test_filled_descriptors_are_reused_per_address_and_bounded(fake_fill, monkeypatch):
    q, k, v = qkv(N=64, D=64)
    desc = attn.host_descriptors(q, k, v, torch.empty_like(q), attn.Tile(64, 64, 4, 3))[0]
    meta = dict(swizzle=3, elem_size=2, elem_type=6, block_size=[1, 1, 64, 64], fp4_padded=False)
    d = attn.DescriptorArgs(desc, meta)
    fake_fill.calls = 0
    first = d.args(4096)
    assert d.args(4096) is first and fake_fill.calls == 1       # the same address: the same map
    assert d.args(8192)[0][1] == 8192 and fake_fill.calls == 2   # a new address: a new map, of that address
    monkeypatch.setattr(attn, "DESCRIPTOR_CACHE_SIZE", 3)
    for ptr in range(16, 16 * 20, 16):
        assert d.args(ptr)[0][1] == ptr
    assert len(d.cache) <= 3


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 160), min_size=4, max_size=4), st.booleans())
@example([0, 100, 140, 0], False)      # out = q itself: allowed
@example([0, 100, 140, 0], True)       # out over q's memory in another layout: refused
@example([0, 64, 96, 32], False)       # out over the second half of q and k: refused
def test_the_cached_alias_check_refuses_exactly_what_the_full_one_does(offsets, transposed_out):
    """A cached call given its output checks aliasing from the pointers alone (inputs.AliasCheck, the layout fixed
    by the signature); for q, k, v and out carved out of one buffer at any offsets, it raises exactly when
    check_no_alias does."""
    from kernels import inputs
    buf = torch.zeros(400, dtype=torch.float16)
    q_shape, kv_shape = (1, 2, 4, 8), (1, 1, 4, 8)
    out_stride = (64, 8, 1, 4) if transposed_out else (64, 32, 8, 1)
    q, k, v = (buf.as_strided(s, (64, 32, 8, 1), off) for s, off in
               ((q_shape, offsets[0]), (kv_shape, offsets[1]), (kv_shape, offsets[2])))
    out = buf.as_strided(q_shape, out_stride, offsets[3])

    def raises(check):
        try:
            check(q, k, v, out)
        except ValueError:
            return True
        return False

    assert raises(inputs.AliasCheck(q, k, v, out).check) == raises(inputs.check_no_alias)


# ---------------------------------------------------------------------------------------------------------------
# The cached direct launch itself. On the CPU the JIT runs the interpreter and keeps no direct launch, so these
# tests give each new plan a direct launch whose C launcher records its arguments (and computes nothing): what they
# check is which calls take it, and what the cached path does before it.
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture
def direct(monkeypatch, counted):
    """Every plan the full path makes gets a direct launch into a recorder; returns the recorded launches."""
    launches = []

    def record(*args):
        launches.append(args)

    def _launch_jit(plan, q, k, v, out):
        if plan.direct is None:
            plan.direct = attn._direct(plan, (record, 0, (4, 1, 0), False, False, 0, None))

    monkeypatch.setattr(attn, "_launch_jit", _launch_jit)
    monkeypatch.setattr(attn, "_current_stream", lambda device: 0)
    monkeypatch.setattr(attn, "_get_device", lambda: 0)
    return launches


def test_a_cached_call_given_out_skips_the_full_alias_check(direct, monkeypatch):
    """issue 20: a call given out= cost about 24 us more than one without on the H200's host (the probe at 741af1b),
    where the cached path ran check_no_alias (9 us of Python on this CPU) on every call. The cached call checks the
    pointers against the plan's spans instead, and calls check_no_alias only where they overlap (to say why)."""
    from kernels import inputs
    full = []
    real = inputs.check_no_alias
    monkeypatch.setattr(inputs, "check_no_alias", lambda *a: (full.append(1), real(*a))[1])
    q, k, v = qkv()
    out = torch.empty_like(q)
    attention(q, k, v, out=out)
    assert len(full) == 1 and len(counted := direct) == 0      # the full path: checked, planned, launched by the JIT
    for _ in range(5):
        assert attention(q, k, v, out=out) is out
    assert len(full) == 1, "the cached call given out= ran the full alias check"
    assert len(counted) == 5
    ptrs = [a[13:17] for a in counted]
    assert set(ptrs) == {(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr())}
    # the same layouts with out over k's memory: the cached call refuses it, through check_no_alias's message
    buf = torch.empty(q.numel() + 64, dtype=q.dtype)
    k2 = buf[:k.numel()].view(k.shape)
    out2 = buf[:q.numel()].view(q.shape)
    with pytest.raises(ValueError, match="out shares memory with k"):
        attention(q, k2, v, out=out2)
    assert len(counted) == 5 and len(full) == 2


def test_the_direct_launch_is_taken_only_by_the_cached_signature(direct):
    """A call with the cached signature goes straight to the C launcher; one that differs in anything the checks
    read (layout, dtype, device, a lazy bit, alignment, grad mode, an option) takes the full path: planned anew
    (plan_launch) or refused, never launched from the cache."""
    q, k, v = qkv()
    attention(q, k, v, stage="v7")
    attention(q, k, v, stage="v7")
    assert len(direct) == 1 and len(counted := []) == 0
    plans = attn.cached_signatures()
    buf = torch.empty(q.numel() + 1, dtype=q.dtype)
    changes = {
        "layout": dict(q=q.transpose(1, 2).contiguous().transpose(1, 2)),
        "dtype": dict(q=q.bfloat16(), k=k.bfloat16(), v=v.bfloat16()),
        "device": dict(q=q.to("meta"), k=k.to("meta"), v=v.to("meta")),
        "neg bit": dict(k=torch._neg_view(k)),
        "conj bit": dict(q=q.to(torch.complex64).conj()),
        "conj bit, real": dict(k=real_with_conj_bit(k)),
        "ZeroTensor": dict(v=torch._efficientzerotensor(v.shape, dtype=v.dtype)),
        "ZeroTensor view": dict(v=torch._efficientzerotensor((2, 1, 16, 16), dtype=v.dtype)[1:]),
        "alignment": dict(q=buf[1:].view(q.shape).copy_(q)),
        "grad mode": dict(q=q.clone().requires_grad_()),
        "an option": dict(causal=False),
        "the scale": dict(sm_scale=0.125),
        "a tile": dict(block_m=16),
    }
    for what, change in changes.items():
        before = len(direct)
        args = dict(q=q, k=k, v=v, stage="v7")
        args.update(change)
        try:
            attention(args.pop("q"), args.pop("k"), args.pop("v"), **args)
        except (ValueError, TypeError):
            pass
        assert len(direct) == before, f"{what}: launched from the cache"
    assert attn.cached_signatures() > plans      # the accepted changes were planned anew
    with torch.no_grad():       # grad mode off: requires_grad is irrelevant, the call is the cached one
        attention(q.clone().requires_grad_(), k, v, stage="v7")
    assert len(direct) == 2


def test_the_last_signature_shortcut_keeps_signatures_apart(direct, counted):
    """The cached path compares the key with the last one launched before hashing it: alternating signatures still
    find their own plans, and a new one is planned."""
    q, k, v = qkv()
    q2, k2, v2 = qkv(N=8)
    for _ in range(3):
        attention(q, k, v, stage="v7")
        attention(q2, k2, v2, stage="v7")
    assert len(counted) == 2 and len(direct) == 4
    plans = [attn._PLANS[attn.signature(*t, None, True, "v7", None, None, {})] for t in ((q, k, v), (q2, k2, v2))]
    assert plans[0].rest != plans[1].rest      # N differs
    assert [a[17:] for a in direct] == [plans[0].rest, plans[1].rest] * 2      # each call launched its own plan
    attn.clear_cache()
    attention(q, k, v, stage="v7")
    assert len(counted) == 3, "after clear_cache the last signature is forgotten too"


def real_with_conj_bit(t: torch.Tensor) -> torch.Tensor:
    """A real tensor with the conjugation bit set: torch._C._set_conj sets it, then fails TensorImpl's assertion that
    only complex tensors have it, leaving the bit set."""
    t = t.clone()
    try:
        torch._C._set_conj(t, True)
    except RuntimeError:
        pass
    return t


def test_a_real_tensor_with_the_conjugation_bit_misses_the_cache(direct):
    """The key reads the conjugation bit of every tensor, the real ones too, which PyTorch's own assertion does not
    keep it off: after a cached good call, the same call with the bit set on a real q or out is refused."""
    q, k, v = qkv()
    out = torch.empty_like(q)
    attention(q, k, v, stage="v7")
    attention(q, k, v, stage="v7", out=out)
    bad = real_with_conj_bit(q)
    assert bad.is_conj() and bad.dtype == q.dtype
    with pytest.raises(ValueError, match="conjugation bit"):
        attention(bad, k, v, stage="v7")
    with pytest.raises(ValueError, match="conjugation bit"):
        attention(q, k, v, stage="v7", out=real_with_conj_bit(out))
    assert len(direct) == 0


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "odd stride of a size-1 dim"])
def test_the_cached_output_is_the_one_empty_like_makes(direct, layout):
    """The cached path allocates the output with PyTorch's low-overhead allocator (fast_empty): the same shape,
    contiguous strides, dtype, device, type and autograd state as torch.empty_like(q, contiguous_format), for any
    layout of q, in and out of inference mode; a subclass of Tensor gets empty_like itself."""
    q, k, v = qkv()
    if layout == "transposed":
        q = q.transpose(1, 2).contiguous().transpose(1, 2)
    elif layout == "odd stride of a size-1 dim":
        q = q.as_strided(q.shape, (7, *q.stride()[1:]))
    for mode in (contextlib_null, torch.inference_mode):
        with mode():
            attention(q, k, v, stage="v0")
            out = attention(q, k, v, stage="v0")
            ref = torch.empty_like(q, memory_format=torch.contiguous_format)
        assert (type(out), out.shape, out.stride(), out.dtype, out.device, out.requires_grad, out.is_inference()) == \
            (type(ref), ref.shape, ref.stride(), ref.dtype, ref.device, ref.requires_grad, ref.is_inference())
    assert len(direct) == 3     # inference mode is not in the key: its first call is a cached one too
    assert attn.fast_empty(torch.nn.Parameter(q, requires_grad=False)) is None
    assert attn.fast_empty(q.to("meta")) is None


def contextlib_null():
    import contextlib
    return contextlib.nullcontext()


def test_descriptor_maps_are_filled_anew_when_the_cache_size_is_zero(fake_fill, monkeypatch):
    """host_cost.py's `fill` path sets DESCRIPTOR_CACHE_SIZE = 0 for "every descriptor filled anew on every call":
    then no map is kept, neither per tensor nor per set of pointers (before, a map of the last address was kept, so
    the timed loop, whose addresses repeat, reused it)."""
    q, k, v = qkv(N=64, D=64)
    out = torch.empty_like(q)
    descs = attn.host_descriptors(q, k, v, out, attn.Tile(64, 64, 4, 3))
    meta = dict(swizzle=3, elem_size=2, elem_type=6, block_size=[1, 1, 64, 64], fp4_padded=False)
    launches = []
    plan = attn._Plan("v13", attn.Tile(64, 64, 4, 3), (2, 1), (1.0, 2, 3))
    direct = attn._direct(plan, (lambda *a: launches.append(a), 0, (4, 1, 0), False, False, 0,
                                 tuple(attn.DescriptorArgs(d, meta) for d in descs)))
    monkeypatch.setattr(attn, "_current_stream", lambda device: 0)
    monkeypatch.setattr(attn, "_get_device", lambda: 0)
    ptrs = (4096, 8192, 12288, 16384)
    for size, fills in ((64, 4), (0, 8)):
        monkeypatch.setattr(attn, "DESCRIPTOR_CACHE_SIZE", size)
        direct.args.clear()
        for d in direct.descs:
            d.cache.clear()
        fake_fill.calls = 0
        attn._launch_ptrs(direct, *ptrs)
        attn._launch_ptrs(direct, *ptrs)
        assert fake_fill.calls == fills, f"DESCRIPTOR_CACHE_SIZE={size}"
        assert launches[-1] == launches[-2]
        expected = (*(a for d, p in zip(direct.descs, ptrs) for a in d.args(p)), 1.0, 2, 3)
        assert launches[-1][13:] == expected and launches[-1][:3] == (2, 1, 1)
        assert [a[1] for a in launches[-1][13:] if isinstance(a, tuple)] == list(ptrs)   # each map of its address


# ---------------------------------------------------------------------------------------------------------------
# The guard (issue 20): a call with the signature of the last one launched from the cache is told by the plan's guard
# (launcher._guard, TensorGuards and the rest of the key in Python) instead of its key. It must never pass a call
# whose key differs; these tests would fail with any one of its checks left out.
# ---------------------------------------------------------------------------------------------------------------
class _Sub(torch.Tensor):
    pass


def _call(q, k, v, out=None, causal=True, stage="v7", sm_scale=None, switches=None, **tile):
    return dict(q=q, k=k, v=v, out=out, causal=causal, stage=stage, sm_scale=sm_scale, switches=switches, tile=tile)


def _ptrs(c):
    return (c["q"].data_ptr(), c["k"].data_ptr(), c["v"].data_ptr(), None if c["out"] is None else c["out"].data_ptr())


def _args(c):
    return (c["q"], c["k"], c["v"], c["out"], *_ptrs(c), c["causal"], c["stage"], c["sm_scale"], c["switches"],
            c["tile"])


def _misaligned(t):
    buf = torch.empty(t.numel() + 1, dtype=t.dtype)
    return buf[1:].view(t.shape).copy_(t)


def _padded(t):
    """t with its rows contiguous and a head stride of twice its rows (v7 compiles contiguous rows' strides)."""
    B, H, N, D = t.shape
    buf = torch.zeros(B, H, 2 * N, D, dtype=t.dtype)
    buf[:, :, :N] = t
    return buf[:, :, :N]


def _exclude(*keys):
    ks = torch._C.DispatchKeySet(keys[0])
    for key in keys[1:]:
        ks = ks | torch._C.DispatchKeySet(key)
    return torch._C._ExcludeDispatchKeyGuard(ks)


_NEG = torch._C.DispatchKey.Negative


def _inference_tensors(q, k, v):
    with torch.inference_mode():
        return q.clone(), k.clone(), v.clone()


# name -> (the base call's change (q, k, v -> _call), the context of the checked call, whether its key is the base's)
_GUARD_CASES = {
    "stride": (lambda q, k, v: _call(q.transpose(1, 2).contiguous().transpose(1, 2), k, v), None, False),
    "shape": (lambda q, k, v: _call(*qkv(N=8)), None, False),
    "neg view": (lambda q, k, v: _call(q, torch._neg_view(k), v), None, False),
    "conj bit, complex": (lambda q, k, v: _call(*(t.to(torch.complex64) for t in (q, k)), v.to(torch.complex64)
                                                .conj()), None, False),
    "conj bit, real": (lambda q, k, v: _call(q, k, real_with_conj_bit(v)), None, False),
    "ZeroTensor": (lambda q, k, v: _call(q, k, torch._efficientzerotensor(v.shape, dtype=v.dtype)), None, False),
    "ZeroTensor view": (lambda q, k, v: _call(q, k, torch._efficientzerotensor((2, 1, 16, 16), dtype=v.dtype)[1:]),
                        None, False),
    "subclass": (lambda q, k, v: _call(q.as_subclass(_Sub), k, v), None, False),
    "Parameter": (lambda q, k, v: _call(q, torch.nn.Parameter(k, requires_grad=False), v), None, False),
    "dtype": (lambda q, k, v: _call(q.bfloat16(), k.bfloat16(), v.bfloat16()), None, False),
    "requires_grad, grad mode on": (lambda q, k, v: _call(q, k, v.clone().requires_grad_()), None, False),
    "misaligned pointer": (lambda q, k, v: _call(_misaligned(q), k, v), None, False),
    "out given": (lambda q, k, v: _call(q, k, v, out=torch.empty_like(q)), None, False),
    "out is q": (lambda q, k, v: _call(q, k, v, out=q), None, False),
    "meta device": (lambda q, k, v: _call(q.to("meta"), k.to("meta"), v.to("meta")), None, False),
    "causal False": (lambda q, k, v: _call(q, k, v, causal=False), None, False),
    "causal 1": (lambda q, k, v: _call(q, k, v, causal=1), None, False),
    "sm_scale 0.25": (lambda q, k, v: _call(q, k, v, sm_scale=0.25), None, False),
    "stage v4": (lambda q, k, v: _call(q, k, v, stage="v4"), None, False),
    "switches": (lambda q, k, v: _call(q, k, v, stage=None, switches=frozenset({"exp2"})), None, False),
    "tile": (lambda q, k, v: _call(q, k, v, block_m=16), None, False),
    "inference mode": (lambda q, k, v: _call(q, k, v), torch.inference_mode, True),
    "inference tensors": (lambda q, k, v: _call(*_inference_tensors(q, k, v)), None, True),
    "Negative excluded, neg view": (lambda q, k, v: _call(q, torch._neg_view(k), v), lambda: _exclude(_NEG), False),
}


@pytest.mark.parametrize("what", list(_GUARD_CASES))
def test_the_guard_refuses_a_call_of_another_signature(what):
    """The guard made from a call passes a clone of it, and refuses each call that differs in one thing: every key
    difference (the key being the cache's source of truth), and, stricter than the key, inference mode and
    inference tensors (those calls build their key and find the same plan)."""
    q, k, v = qkv()
    base = _call(q, k, v)
    fast = attn._guard(*_args(base))
    assert fast is not None
    assert attn._same_as_last(fast, *_args(_call(*(t.clone() for t in (q, k, v)))))
    change, context, same_key = _GUARD_CASES[what]
    other = change(q, k, v)
    with (context or contextlib_null)():
        try:
            key = attn._key(*_args(other))
        except Exception:  # noqa: BLE001  (no key: the full path)
            key = None
        assert (key == attn._key(*_args(base))) is same_key
        try:
            passed = attn._same_as_last(fast, *_args(other))
        except Exception:  # noqa: BLE001  (in `attention`: the full path)
            passed = False
    assert not passed, f"{what}: the guard passed a call of another signature"


@pytest.mark.parametrize("base, others", [
    (dict(sm_scale=1.0), [dict(sm_scale=1), dict(sm_scale=True), dict(sm_scale=0.5)]),
    (dict(sm_scale=1), [dict(sm_scale=1.0), dict(sm_scale=True)]),
    (dict(causal=True), [dict(causal=1), dict(causal=1.0), dict(causal=False)]),
    (dict(block_m=32), [dict(block_m=32.0), dict(block_m=True), dict(block_n=32), dict()]),
    (dict(block_m=1), [dict(block_m=True), dict(block_m=1.0)]),
    (dict(), [dict(block_m=32)]),
    (dict(stage="v7"), [dict(stage="v4"), dict(stage=None)]),
])
def test_the_guard_compares_options_by_type_and_value(base, others):
    """1, True and 1.0 are equal in Python but not in the key (each has its type): the guard refuses each for the
    other; an equal value of the same type that is another object passes (a stage name built at run time)."""
    q, k, v = qkv()
    fast = attn._guard(*_args(_call(q, k, v, **base)))
    same = {key: (val if not isinstance(val, str) else "".join(list(val))) for key, val in base.items()}
    assert attn._same_as_last(fast, *_args(_call(q, k, v, **same)))
    for other in others:
        assert attn._key(*_args(_call(q, k, v, **other))) != attn._key(*_args(_call(q, k, v, **base)))
        assert not attn._same_as_last(fast, *_args(_call(q, k, v, **other))), other


def test_requires_grad_passes_the_guard_under_no_grad_only():
    """A guard made under no_grad from a tensor that requires grad passes the same call under no_grad and refuses it
    with grad mode on (the full path then refuses it); the interpreter flag and the CUDA device are checked too."""
    q, k, v = qkv()
    v = v.clone().requires_grad_()
    with torch.no_grad():
        fast = attn._guard(*_args(_call(q, k, v)))
        assert attn._same_as_last(fast, *_args(_call(q, k, v)))
    assert torch.is_grad_enabled() and not attn._same_as_last(fast, *_args(_call(q, k, v)))
    with torch.no_grad():
        assert not attn._same_as_last(fast, *_args(_call(q, k, v.detach())))    # requires_grad differs


def test_the_guard_checks_the_interpreter_flag_and_the_cuda_device(monkeypatch):
    q, k, v = qkv()
    fast = attn._guard(*_args(_call(q, k, v)))
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not attn._same_as_last(fast, *_args(_call(q, k, v)))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert attn._same_as_last(fast, *_args(_call(q, k, v)))
    cuda = fast._replace(cuda=True, device=0)          # the guard of a CUDA call: compares the current device
    monkeypatch.setattr(attn, "_get_device", lambda: 0)
    assert attn._same_as_last(cuda, *_args(_call(q, k, v)))
    monkeypatch.setattr(attn, "_get_device", lambda: 1)
    assert not attn._same_as_last(cuda, *_args(_call(q, k, v)))


def test_no_guard_where_it_could_not_be_exact(monkeypatch):
    """No guard (the key decides) for a misaligned pointer, one tensor passed twice, a dispatch state that hides a
    lazy bit when the guard is made, or a torch without TensorGuards; a guard made outside a dispatch exclusion
    refuses every call inside it (the witness's bits change)."""
    q, k, v = qkv()
    assert attn._guard(*_args(_call(_misaligned(q), k, v))) is None
    assert attn._guard(*_args(_call(k, k, k))) is None
    assert attn._guard(*_args(_call(q, k, v, out=k))) is None
    with _exclude(_NEG):
        assert attn._guard(*_args(_call(q, k, v))) is None
    fast = attn._guard(*_args(_call(q, k, v)))
    with _exclude(torch._C.DispatchKey.ZeroTensor):
        assert not attn._same_as_last(fast, *_args(_call(q, k, v)))
    with _exclude(torch._C.DispatchKey.Conjugate):
        assert not attn._same_as_last(fast, *_args(_call(q, k, real_with_conj_bit(v))))
    assert attn._same_as_last(fast, *_args(_call(q, k, v)))
    monkeypatch.setattr(attn, "_TensorGuards", None)
    assert attn._guard(*_args(_call(q, k, v))) is None


@pytest.fixture
def served(direct, monkeypatch):
    """The plans that cached launches were served (by their direct launch)."""
    plans = []
    real = attn._launch_ptrs
    monkeypatch.setattr(attn, "_launch_ptrs", lambda d, *ptrs: (plans.append(d), real(d, *ptrs))[1])
    return plans


# name -> (q, k, v -> _call, the context, None or (error, message) of the full path)
_END_TO_END = {
    "stride": (lambda q, k, v: _call(_padded(q), k, v), None, None),
    "shape": (lambda q, k, v: _call(*qkv(N=8)), None, None),
    "neg view": (lambda q, k, v: _call(q, torch._neg_view(k), v), None, (ValueError, "negation bit")),
    "conj bit": (lambda q, k, v: _call(q, k, real_with_conj_bit(v)), None, (ValueError, "conjugation bit")),
    "ZeroTensor": (lambda q, k, v: _call(q, k, torch._efficientzerotensor(v.shape, dtype=v.dtype)), None,
                   (ValueError, "ZeroTensor")),
    "subclass": (lambda q, k, v: _call(q.as_subclass(_Sub), k, v), None, None),
    "dtype float32": (lambda q, k, v: _call(q.float(), k.float(), v.float()), None, (TypeError, "q has dtype")),
    "dtype bfloat16": (lambda q, k, v: _call(q.bfloat16(), k.bfloat16(), v.bfloat16()), None,
                       (ValueError, "bfloat16 in Triton's interpreter")),
    "requires_grad, grad mode": (lambda q, k, v: _call(q, k, v.clone().requires_grad_()), None,
                                 (ValueError, "requires grad")),
    "requires_grad, no_grad": (lambda q, k, v: _call(q, k, v.clone().requires_grad_()), torch.no_grad, None),
    "misaligned pointer": (lambda q, k, v: _call(_misaligned(q), k, v), None, None),
    "out given": (lambda q, k, v: _call(q, k, v, out=torch.empty_like(q)), None, None),
    "out is q": (lambda q, k, v: _call(q.clone(), k, v, out="q"), None, None),
    "causal False": (lambda q, k, v: _call(q, k, v, causal=False), None, None),
    "causal 1": (lambda q, k, v: _call(q, k, v, causal=1), None, (TypeError, "causal must be True or False")),
    "sm_scale 0.25": (lambda q, k, v: _call(q, k, v, sm_scale=0.25), None, None),
    "sm_scale True": (lambda q, k, v: _call(q, k, v, sm_scale=True), None, (ValueError, "sm_scale must be")),
    "stage v4": (lambda q, k, v: _call(q, k, v, stage="v4"), None, None),
    "tile": (lambda q, k, v: _call(q, k, v, block_m=16), None, None),
    "tile 32.0": (lambda q, k, v: _call(q, k, v, block_m=32.0), None, (TypeError, "block_m must be an int")),
    "inference mode": (lambda q, k, v: _call(q, k, v), torch.inference_mode, None),
    "inference tensors": (lambda q, k, v: _call(*_inference_tensors(q, k, v)), None, None),
}


def _attend(c):
    out = c["q"] if isinstance(c["out"], str) else c["out"]
    return attention(c["q"], c["k"], c["v"], out=out, causal=c["causal"], stage=c["stage"], sm_scale=c["sm_scale"],
                     switches=c["switches"], **c["tile"])


def _signature(c):
    out = c["q"] if isinstance(c["out"], str) else c["out"]
    return attn.signature(c["q"], c["k"], c["v"], out, c["causal"], c["stage"], c["sm_scale"], c["switches"],
                          c["tile"])


@pytest.mark.parametrize("what", list(_END_TO_END))
def test_a_call_after_a_guarded_one_is_served_its_own_plan(served, what):
    """attention itself: after the base call has its guard, a call that differs in one thing raises the full path's
    error, or is served the plan of its own signature (planned anew, then from the cache, then by its own guard),
    and the base call after it is served the base plan again."""
    q, k, v = qkv()
    base = _call(q, k, v)
    for _ in range(3):
        _attend(base)
    base_plan = attn._PLANS[_signature(base)]
    assert base_plan.fast is not None and served == [base_plan.direct] * 2
    change, context, error = _END_TO_END[what]
    other = change(q, k, v)
    with (context or contextlib_null)():
        for i in range(3):
            served.clear()
            if error is not None:
                with pytest.raises(error[0], match=error[1]):
                    _attend(other)
                assert not served, f"{what}: launched from the cache"
                continue
            _attend(other)
            plan = attn._PLANS[_signature(other)]
            assert served == ([] if plan is not base_plan and i == 0 else [plan.direct]), what
    served.clear()
    _attend(base)
    assert served == [base_plan.direct]


@pytest.fixture
def computing(monkeypatch, counted):
    """Every plan gets a direct launch that runs it in the interpreter on the tensors at the pointers it is given
    (each call's tensors registered by `run`): a cached call computes with the plan it was served."""
    tensors = {}
    real = attn._launch_jit

    def _launch_jit(plan, q, k, v, out):
        real(plan, q, k, v, out)
        if plan.direct is None:
            def launch(*args):
                t = [tensors[p] for p in args[13:17]]
                attn.launch_kernel(attn.Launch(plan.label, plan.switches, plan.tile, plan.grid, plan.kernel_args(*t)))
            plan.direct = attn._direct(plan, (launch, 0, (4, 1, 0), False, False, 0, None))
            new_out = plan.new_out
            plan.new_out = lambda: (lambda o: (tensors.__setitem__(o.data_ptr(), o), o)[1])(new_out())

    monkeypatch.setattr(attn, "_launch_jit", _launch_jit)
    monkeypatch.setattr(attn, "_current_stream", lambda device: 0)
    monkeypatch.setattr(attn, "_get_device", lambda: 0)

    def run(c):
        tensors.clear()
        tensors.update({t.data_ptr(): t for t in (c["q"], c["k"], c["v"], c["out"]) if isinstance(t, torch.Tensor)})
        return _attend(c)
    return run


def test_results_stay_right_across_guarded_calls(computing):
    """Calls that alternate with the base one, each several times (full path, key, guard), computed by the plan each
    was served: every output is right (a stale plan would compute with the base's mask, scale, shape or layout)."""
    q, k, v = qkv(seed=1)
    q2, k2, v2 = qkv(N=8, seed=2)
    base = _call(q, k, v)
    others = [_call(q, k, v, causal=False), _call(q, k, v, sm_scale=0.5), _call(q2, k2, v2),
              _call(_padded(q), k, v), _call(q, k, v, out=torch.empty_like(q)),
              _call(*_inference_tensors(q, k, v))]
    for c in [base] * 3 + [c for other in others for c in [other, other, other, base, base]]:
        out = computing(c)
        ref = reference_attention(c["q"], c["k"], c["v"], causal=c["causal"], sm_scale=c["sm_scale"])
        assert judge(out, ref)["ok"]
    assert attn._PLANS[_signature(base)].fast is not None


def test_a_guarded_plan_holds_no_tensor(direct):
    """The guard records the tensors' properties (TensorGuards keeps no tensor), so a plan with one keeps none."""
    import gc
    import weakref
    q, k, v = qkv()
    out = torch.empty_like(q)
    for _ in range(3):
        attention(q, k, v, stage="v7")
        attention(q, k, v, stage="v7", out=out)
    assert all(p.fast is not None for p in attn._PLANS.values()) and len(direct) == 4
    refs = [weakref.ref(t) for t in (q, k, v, out)]
    del q, k, v, out
    gc.collect()
    assert all(r() is None for r in refs)
