"""Bad input: each raises an exception whose message names the problem and the fix."""
import pytest
import torch

from kernels import attention


def qkv(B=1, H=4, H_kv=2, N=16, D=64, dtype=torch.float16):
    return (torch.randn(B, H, N, D).to(dtype), torch.randn(B, H_kv, N, D).to(dtype),
            torch.randn(B, H_kv, N, D).to(dtype))


def test_unsupported_dtype():
    q, k, v = qkv(dtype=torch.float32)
    with pytest.raises(TypeError, match=r"q has dtype torch.float32; the kernel takes torch.float16 or "
                                        r"torch.bfloat16: convert with q.half\(\)"):
        attention(q, k, v)


def test_dtypes_differ():
    q, k, v = qkv()
    with pytest.raises(TypeError, match=r"q, k, v must share one dtype, got torch.float16, torch.bfloat16"):
        attention(q, k.bfloat16(), v)


def test_devices_differ():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"q, k, v must be on one device, got cpu, meta, cpu; move them"):
        attention(q, k.to("meta"), v)


def test_cpu_tensor_without_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"the tensors are on cpu; the Triton kernel needs CUDA tensors "
                                         r"\(or set TRITON_INTERPRET=1"):
        attention(q, k, v)


def test_wrong_rank():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"q must have 4 dimensions \(B, H, N, D\), got shape \(4, 16, 64\); "
                                         r"add the missing axes"):
        attention(q[0], k, v)


@pytest.mark.parametrize("what, change, message", [
    ("B", lambda q, k, v: (q, k.repeat(2, 1, 1, 1), v.repeat(2, 1, 1, 1)), r"batch sizes differ: q has B=1, k and v have B=2"),
    ("N", lambda q, k, v: (q, k[:, :, :8], v[:, :, :8]), r"sequence lengths differ: q has N=16, k and v have N=8"),
    ("D", lambda q, k, v: (q, k[..., :32], v[..., :32]), r"head dims differ: q has D=64, k and v have D=32"),
    ("kv", lambda q, k, v: (q, k, v[:, :1]), r"k and v must have the same shape"),
])
def test_shapes_differ(what, change, message):
    with pytest.raises(ValueError, match=message):
        attention(*change(*qkv()))


def test_heads_not_a_multiple():
    q, k, v = qkv(H=4, H_kv=3)
    with pytest.raises(ValueError, match=r"query heads H=4 is not a multiple of the key/value heads H_kv=3; "
                                         r"grouped-query attention needs H = g \* H_kv"):
        attention(q, k, v)


@pytest.mark.parametrize("D", [8, 48, 96, 512])
def test_unsupported_head_dim(D):
    with pytest.raises(ValueError, match=rf"head dim D={D} is not supported; the kernel takes D in "
                                         r"\[16, 32, 64, 128, 256\] \(pad the head dim"):
        attention(*qkv(D=D))


def test_empty_sequence():
    with pytest.raises(ValueError, match=r"the sequence is empty \(N = 0\).*pass N >= 1"):
        attention(*qkv(N=0))


def test_const_strides_need_contiguous_rows():
    q, k, v = qkv()
    k_strided = k.transpose(1, 2).contiguous().transpose(1, 2)
    with pytest.raises(ValueError, match=r"v7 compiles the strides as constants and needs k with contiguous rows "
                                         r"\(stride\(-1\) = 1, stride\(-2\) = D = 64\).*pass k.contiguous\(\), "
                                         r"or use a stage without const_strides"):
        attention(q, k_strided, v, stage="v7")


def test_unknown_stage():
    with pytest.raises(ValueError, match=r"unknown stage 'v99'; the stages are \['v0', .*'v7', .*\]"):
        attention(*qkv(), stage="v99")


def test_unknown_switch():
    with pytest.raises(ValueError, match=r"unknown switch\(es\) \['turbo'\]"):
        attention(*qkv(), switches={"exp2", "turbo"})


@pytest.mark.parametrize("key, value", [("block_m", 48), ("block_n", 24), ("block_m", 8), ("block_n", 512)])
def test_block_not_a_power_of_two(key, value):
    with pytest.raises(ValueError, match=rf"{key}={value} must be a power of two from 16 to 256"):
        attention(*qkv(), **{key: value})


def test_warps_not_a_power_of_two():
    with pytest.raises(ValueError, match=r"num_warps=3 must be a power of two in \[1, 2, 4, 8, 16\]"):
        attention(*qkv(), num_warps=3)


def test_bad_num_stages():
    with pytest.raises(ValueError, match=r"num_stages=0 must be at least 1"):
        attention(*qkv(), num_stages=0)


def test_unknown_tile_option():
    with pytest.raises(TypeError, match=r"unknown tile option\(s\) \['block_k'\]; the options are"):
        attention(*qkv(), block_k=32)


def test_tile_value_not_an_int():
    with pytest.raises(TypeError, match=r"block_m must be an int, got 32.0"):
        attention(*qkv(), block_m=32.0)


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_scale(scale):
    with pytest.raises(ValueError, match=r"sm_scale must be a positive finite number"):
        attention(*qkv(), sm_scale=scale)


def test_causal_not_a_bool():
    with pytest.raises(TypeError, match=r"causal must be True or False, got 'yes'"):
        attention(*qkv(), causal="yes")


def test_out_does_not_match():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"out must match q: shape \(1, 4, 16, 64\), torch.float16"):
        attention(q, k, v, out=torch.empty(1, 4, 16, 64))


def test_not_a_tensor():
    q, k, v = qkv()
    with pytest.raises(TypeError, match=r"k must be a torch.Tensor, got list"):
        attention(q, [1, 2], v)


# Inputs that gave a wrong answer without an error: each now raises, or stays correct (out=q).
def _qkv_big(dtype=torch.float16):
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(1, h, 16, 16, generator=g).to(dtype) for h in (2, 1, 1))


@pytest.mark.parametrize("make_out, message", [
    (lambda q, k, v: k.expand(1, 2, 16, 16), r"zero stride"),
    (lambda q, k, v: torch.empty(1, 1, 16, 16, dtype=q.dtype).expand(1, 2, 16, 16), r"zero stride"),
    (lambda q, k, v: torch.empty(600, dtype=q.dtype).as_strided((1, 2, 16, 16), (512, 256, 8, 1)),
     r"out's elements overlap each other"),
])
def test_out_that_writes_one_place_twice_is_refused(make_out, message):
    q, k, v = _qkv_big()
    for stage in ("v6", "v7"):                     # with and without the const-strides check
        with pytest.raises(ValueError, match=message):
            attention(q, k, v, out=make_out(q, k, v), stage=stage)


def test_out_sharing_memory_with_k_or_v_is_refused():
    g = torch.Generator().manual_seed(1)
    buf = torch.randn(4, 2, 16, 16, generator=g).half()   # q, k, v and out carved out of one buffer
    q, k, v = buf[0], buf[1, :1], buf[2, :1]
    q, k, v = q[None], k[None], v[None]
    for name, out in (("k", buf[1][None]), ("v", buf[2][None]), ("q", buf[0:2].reshape(1, 4, 16, 16)[:, 1:3])):
        with pytest.raises(ValueError, match=rf"out shares memory with {name}"):
            attention(q, k, v, out=out)
    # out = q itself stays allowed, and right
    from kernels import reference_attention
    from kernels.accuracy import judge
    ref = reference_attention(q, k, v)
    got = attention(q.clone(), k, v, out=None)
    qq = q.clone()
    attention(qq, k, v, out=qq)
    assert judge(qq, ref)["ok"] and judge(got, ref)["ok"]


def test_alias_is_checked_on_every_call_not_only_the_first():
    q, k, v = _qkv_big()
    attention(q, k, v, out=torch.empty_like(q))              # cached signature
    out = torch.empty_like(q)
    k2 = out[:, :1]                                           # same signature as k, but inside out
    k2.copy_(k)
    with pytest.raises(ValueError, match="out shares memory with k"):
        attention(q, k2, v, out=out)


def test_offsets_past_32_bits_are_refused():
    from kernels import plan_launch
    meta = [torch.empty(1, h, 16, 16, dtype=torch.float16, device="meta") for h in (2, 1, 1)]
    q, k, v = meta
    far = torch.empty(0, dtype=torch.float16, device="meta").as_strided((1, 2, 16, 16), (2**33, 2**32, 2**28, 1))
    with pytest.raises(ValueError, match=r"q's rows reach element .* past the kernel's 32-bit offsets"):
        plan_launch(far, k, v, torch.empty_like(q), causal=True, stage="v6")
    plan_launch(q, k, v, torch.empty_like(q), causal=True, stage="v6")         # the same shape, contiguous: fine


@pytest.mark.parametrize("scale, error, message", [
    (1e38, ValueError, "outside what the kernel's float32 scores can carry"),
    (1e-40, ValueError, "outside what the kernel's float32 scores can carry"),
    (torch.tensor(0.5), TypeError, r"got a tensor .* pass float\(sm_scale\)"),
])
def test_sm_scale_out_of_float32_range_or_a_tensor(scale, error, message):
    q, k, v = _qkv_big()
    with pytest.raises(error, match=message):
        attention(q, k, v, sm_scale=scale)


def test_numpy_scale_is_accepted():
    import numpy as np
    from kernels import reference_attention
    from kernels.accuracy import judge
    q, k, v = _qkv_big()
    assert judge(attention(q, k, v, sm_scale=np.float32(0.2)), reference_attention(q, k, v, sm_scale=0.2))["ok"]


def test_stage_and_switches_together_are_refused():
    q, k, v = _qkv_big()
    with pytest.raises(ValueError, match=r"give a stage or switches, not both \(stage='v9'"):
        attention(q, k, v, stage="v9", switches={"exp2"})


def test_inputs_that_require_grad_are_refused_unless_grad_is_off():
    q, k, v = _qkv_big()
    q.requires_grad_(True)
    with pytest.raises(ValueError, match=r"no backward pass.*torch.no_grad\(\)"):
        attention(q, k, v)
    with torch.no_grad():
        attention(q, k, v)


@pytest.mark.parametrize("value, interprets", [("1", True), ("true", True), ("0", False), ("false", False)])
def test_triton_interpret_is_read_as_triton_reads_it(monkeypatch, value, interprets):
    from kernels import inputs
    monkeypatch.setenv("TRITON_INTERPRET", value)
    assert inputs.interpreting() is interprets


def test_warp_specialization_with_q_in_registers_is_refused_on_the_gpu():
    """Triton 3.6 built that pair into a wrong kernel at one tile on the H200 (data/nvidia-h200/probes/probe-ws):
    refused for CUDA tensors, with the fix; the interpreter (which ignores warp specialization) still runs it."""
    import torch
    from kernels import inputs
    pair = frozenset({"warp_specialize", "q_in_registers", "tma"})
    with pytest.raises(ValueError, match="warp_specialize together with q_in_registers is refused on the GPU.*turn one"):
        inputs.check_known_miscompiles("v15+warp_specialize", pair, torch.device("cuda", 0))
    inputs.check_known_miscompiles("v15+warp_specialize", pair, torch.device("cpu"))
    inputs.check_known_miscompiles("v15", pair - {"warp_specialize"}, torch.device("cuda", 0))


@pytest.mark.parametrize("stage, limit", [("v17", "MAX_GRID_AXIS0"), ("v0", "MAX_GRID_AXIS1")])
def test_a_grid_over_cuda_limits_is_refused(monkeypatch, stage, limit):
    """A grid larger than CUDA allows on an axis (2**31 - 1 programs on x, 65535 on y) is refused with the fix, before
    any launch; the limits are lowered here so that small tensors reach them."""
    import torch
    from kernels import inputs, launcher
    monkeypatch.setattr(inputs, limit, 7)
    q, k, v = (torch.randn(1, h, 300, 64, dtype=torch.float16) for h in (4, 2, 2))
    with pytest.raises(ValueError, match=r"over CUDA's 7; split the batch, or use a larger block_m"):
        launcher.plan_launch(q, k, v, torch.empty_like(q), causal=True, stage=stage)


def test_a_gluon_stage_on_the_cpu_says_where_it_runs_and_what_to_use_instead():
    """Gluon does not run in Triton's interpreter: a Gluon stage on CPU tensors is refused, naming a Triton stage."""
    from kernels.stages import GLUON_STAGES, TRITON_STAGES
    q = torch.randn(1, 2, 16, 64).half()
    k = v = torch.randn(1, 1, 16, 64).half()
    with pytest.raises(ValueError, match=rf"{GLUON_STAGES[0]} is a Gluon kernel, which runs on a CUDA GPU only.*"
                                         rf"use a Triton stage there, e\.g\. {TRITON_STAGES[-1]}"):
        attention(q, k, v, stage=GLUON_STAGES[0])


def test_a_gluon_switch_without_the_switch_it_is_built_on_is_refused():
    """two_consumers (v21) is built on producer_warp (v20): without it the variant is refused, naming both, before
    anything is launched (on the CPU too)."""
    from kernels.stages import STAGES, stage_adding
    q = torch.randn(1, 2, 16, 64).half()
    k = v = torch.randn(1, 1, 16, 64).half()
    switches = STAGES[stage_adding("two_consumers")].switches - {"producer_warp"}
    with pytest.raises(ValueError, match=r"two_consumers is built on producer_warp \(v21 on v20\); turn producer_warp "
                                         r"on too, or two_consumers off"):
        attention(q, k, v, switches=switches)


def test_a_gluon_variant_takes_only_the_gluon_switches():
    """The Gluon kernel has one schedule (v13's switches): adding or dropping a Triton switch is refused, saying so."""
    from kernels.stages import GLUON, GLUON_BASE
    q = torch.randn(1, 2, 16, 64).half()
    k = v = torch.randn(1, 1, 16, 64).half()
    for switches in (GLUON_BASE | set(GLUON) | {"lazy_rescale"}, (GLUON_BASE - {"heavy_first"}) | set(GLUON)):
        with pytest.raises(ValueError, match=r"the Gluon kernel has one schedule, v13's switches"):
            attention(q, k, v, switches=switches)


# Inputs and settings that gave another problem's error, or none (issue 22, item 7).
def test_meta_tensors_are_refused_saying_they_hold_no_data():
    q, k, v = (t.to("meta") for t in qkv())
    with pytest.raises(ValueError, match=r"meta tensors hold no data .* use CUDA tensors"):
        attention(q, k, v)


@pytest.mark.parametrize("name", ["q", "k", "v", "out"])
@pytest.mark.parametrize("to_sparse", [torch.Tensor.to_sparse, lambda t: t.to_sparse_csr(dense_dim=2)])
def test_sparse_tensors_are_refused_naming_to_dense(name, to_sparse):
    q, k, v = qkv()
    tensors = dict(q=q, k=k, v=v, out=torch.empty_like(q))
    tensors[name] = to_sparse(tensors[name])
    with pytest.raises(ValueError, match=rf"{name} has layout torch\.sparse_\w+: sparse tensors are not supported.*"
                                         rf"pass {name}\.to_dense\(\)"):
        attention(tensors["q"], tensors["k"], tensors["v"], out=tensors["out"])


def test_nested_tensors_are_refused_naming_the_padding():
    q, k, v = qkv()
    nested = torch.nested.nested_tensor([torch.randn(4, 16, 64).half(), torch.randn(4, 8, 64).half()])
    with pytest.raises(ValueError, match=r"q is a nested tensor.*torch\.nested\.to_padded_tensor"):
        attention(nested, k, v)


@pytest.mark.parametrize("make, message", [
    (torch._neg_view, r"q has the negation bit set .* pass q\.resolve_neg\(\)"),
    (lambda q: torch.randn(q.shape, dtype=torch.complex32).conj().imag, r"q has the negation bit set"),
    (lambda q: torch.randn(q.shape, dtype=torch.complex64).conj(), r"q has the conjugation bit set .* "
                                                                  r"pass q\.resolve_conj\(\) \(and a real tensor"),
    (lambda q: torch._efficientzerotensor(q.shape, dtype=q.dtype), r"q is a ZeroTensor .* torch\.zeros_like\(q\)"),
])
def test_lazy_views_are_refused_naming_the_resolution(make, message):
    """A tensor whose memory means other values (negated, conjugated) or that has none (a ZeroTensor) is refused;
    before, the kernel read the raw memory: attention of -q gave attention of q."""
    q, k, v = qkv()
    with pytest.raises(ValueError, match=message):
        attention(make(q), k, v)


_LATE_INTERPRET = r"""
import os, sys
import torch
{imports}
os.environ["TRITON_INTERPRET"] = "1"
from kernels import attention
q = torch.randn(1, 2, 16, 16).half()
k = v = torch.randn(1, 1, 16, 16).half()
try:
    attention(q, k, v)
except RuntimeError as err:
    print(err)
    sys.exit(3)
"""


@pytest.mark.parametrize("imports, late", [("import kernels.launcher", "triton and kernels"),
                                           ("import triton", "triton had")])
def test_triton_interpret_set_after_import_is_named(imports, late):
    """TRITON_INTERPRET=1 set after `import triton` or `import kernels` (the kernel is then a compiled one: Triton
    decides at import) is named, with the fix, instead of Triton's "0 active drivers" or "Cannot call @triton.jit'd
    outside of the scope of a kernel" (in a subprocess: this one interprets from the start)."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    env = {key: val for key, val in os.environ.items() if key != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", _LATE_INTERPRET.format(imports=imports)], env=env,
                          cwd=Path(__file__).parents[1], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stdout + proc.stderr[-2000:]
    assert f"TRITON_INTERPRET=1 was set after {late}" in proc.stdout, proc.stdout
    assert "set TRITON_INTERPRET=1 before importing kernels or triton" in proc.stdout, proc.stdout


def test_concurrent_calls_in_the_interpreter_are_serialised():
    """Triton's interpreter keeps the running kernel's state in globals: calls from several threads at once failed
    ("x >= grid_dim[0]") or gave wrong results. The launcher runs interpreted launches one at a time."""
    import threading
    from kernels import reference_attention
    from kernels.accuracy import judge
    problems = []

    def work(i):
        g = torch.Generator().manual_seed(i)
        for j in range(4):
            N, D = (16, 24, 40, 8)[j], (16, 32)[i % 2]
            q, k, v = (torch.randn(1, 2, N, D, generator=g).half() for _ in range(3))
            try:
                out = attention(q, k, v, causal=bool(j % 2), stage=("v3", "v7", "v13", "v15")[i % 4])
                verdict = judge(out, reference_attention(q, k, v, causal=bool(j % 2)))
                if not verdict["ok"]:
                    problems.append((i, j, verdict))
            except Exception as err:  # noqa: BLE001  (any failure is the finding)
                problems.append((i, j, repr(err)[:200]))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems, problems


@pytest.mark.parametrize("D", [16, 64, 128])
def test_sm_scale_that_could_overflow_the_float32_scores_is_refused(D):
    """The largest accepted scale is the one at which no score of float16-range inputs can overflow float32
    (kernels.launcher.max_scaled_scale, about 1e26 at D = 128); 1e30 was accepted before, and inputs of a few
    hundred then overflowed the scores (NaN rows)."""
    from kernels.launcher import LOG2E, max_scaled_scale
    q, k, v = (torch.randn(1, h, 16, D).half() for h in (2, 1, 1))
    with pytest.raises(ValueError, match=rf"outside what the kernel's float32 scores can carry .* at D={D}"):
        attention(q, k, v, sm_scale=1e30)
    attention(q, k, v, sm_scale=max_scaled_scale(D) / LOG2E)


def test_a_launch_that_prescales_q_in_16_bits_warns():
    """prescale_q (claim C10; in no stage) rounds q x scale x log2(e) to 16 bits at the default scale: accurate for
    unit-normal inputs only (on an H200, 4 times SDPA's error at scores of 2^7, measured with that code in the old
    v15-v17); the launch says so and names a stage without it. Above the default scale, or without the switch,
    nothing is said: v15-v17 (q_in_registers) no longer scale Q (issue 22), and do not warn."""
    import warnings
    from kernels.launcher import PrescaledQWarning, plan_launch
    from kernels.stages import STAGES
    q, k, v = (torch.randn(1, h, 16, 64).half() for h in (2, 1, 1))
    with pytest.warns(PrescaledQWarning, match=r"v7\+prescale_q rounds q x sm_scale.*use a stage without it"):
        plan_launch(q, k, v, torch.empty_like(q), switches=STAGES["v7"].switches | {"prescale_q"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrescaledQWarning)
        for stage in ("v14", "v15", "v16", "v17"):
            plan_launch(q, k, v, torch.empty_like(q), stage=stage)
        plan_launch(q, k, v, torch.empty_like(q), switches=STAGES["v7"].switches | {"prescale_q"}, sm_scale=1.0)
