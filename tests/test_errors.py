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
    with pytest.raises(ValueError, match=r"unknown stage 'v8'; the stages are \['v0', .*'v7'\]"):
        attention(*qkv(), stage="v8")


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
