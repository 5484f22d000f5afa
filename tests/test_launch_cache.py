"""The launch cache of `attention`: a call is checked once per signature, and the signature covers everything the
checks read, so that a cached call can never let a bad input through. (On the CPU, in Triton's interpreter: the
plan cache is the same there; the compiled-kernel launch itself is timed on the GPU, data/*/bench-*/timings.csv.)"""
import importlib
import math

import pytest
import torch
from hypothesis import given, settings
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
                tuple(launch.kwargs[n] for n in attn._REST))
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
