"""The host-cost tool (workflow/scripts/tools/host_cost.py) on the CPU: the parts it times add up to what a cached
call does. Its timings themselves need a GPU (data/nvidia-h200/probes/host-cost)."""
import importlib

import pytest
import torch

from steps import step

attn = importlib.import_module("kernels.launcher")
host_cost = step("tools/host_cost")


def _plan(descs):
    plan = attn._Plan("v13", attn.Tile(64, 64, 4, 3), (4, 2), (0.5, 7, 9))
    launches = []
    plan.direct = attn._direct(plan, (lambda *a: launches.append(a), 11, (4, 1, 0), False, True, 0, descs))
    return plan, launches


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(attn, "_current_stream", lambda device: 1234)
    monkeypatch.setattr(attn, "_get_device", lambda: 0)


class _Fill:
    def __init__(self):
        self.calls = 0

    def __call__(self, ptr, *rest):
        self.calls += 1
        return ("CUtensorMap", ptr)


@pytest.mark.parametrize("host_descriptors", [False, True])
def test_the_c_launcher_is_timed_with_the_arguments_the_cached_launch_gives_it(no_gpu, host_descriptors):
    """c_launch_args builds the C launcher's arguments once, as launcher._launch_ptrs does on every call: the same
    arguments, so that c_launch_only times the very call that the cached path makes."""
    q, k, v = (torch.zeros(1, h, 64, 64, dtype=torch.float16) for h in (2, 1, 1))
    out = torch.empty_like(q)
    descs = None
    if host_descriptors:
        meta = dict(swizzle=3, elem_size=2, elem_type=6, block_size=[1, 1, 64, 64], fp4_padded=False)
        descs = tuple(attn.DescriptorArgs(d, meta, _Fill())
                      for d in attn.host_descriptors(q, k, v, out, attn.Tile(64, 64, 4, 3)))
    plan, launches = _plan(descs)
    attn.launch_direct(plan, q, k, v, out)
    launch, args = host_cost.c_launch_args(attn, plan, q, k, v, out)
    launch(*args)
    assert len(launches) == 2 and launches[0] == launches[1]
    assert launches[0][:4] == (4, 2, 1, 1234) and launches[0][-3:] == (0.5, 7, 9)
    ptrs = [t.data_ptr() for t in (q, k, v, out)]
    if host_descriptors:        # one filled map per tensor, of its address, each followed by its shape and strides
        assert [a[1] for a in launches[0][13:] if isinstance(a, tuple)] == ptrs
        assert len(launches[0]) == 13 + 4 * 9 + 3
    else:
        assert list(launches[0][13:17]) == ptrs and len(launches[0]) == 13 + 4 + 3


def test_the_python_part_is_timed_with_a_no_op_launcher(no_gpu):
    """Inside NoopLauncher every cached plan's launch is a no-op (the call's Python alone); outside, the launcher
    is the plan's own again."""
    plan, launches = _plan(None)
    real = plan.direct
    attn.clear_cache()
    attn._PLANS["key"] = plan
    try:
        q, k, v = (torch.zeros(1, h, 64, 64, dtype=torch.float16) for h in (2, 1, 1))
        with host_cost.NoopLauncher(attn):
            assert plan.direct.launch is host_cost._noop and plan.direct[1:] == real[1:]
            attn.launch_direct(plan, q, k, v, torch.empty_like(q))
        assert plan.direct is real and not launches
        attn.launch_direct(plan, q, k, v, torch.empty_like(q))
        assert len(launches) == 1
    finally:
        attn.clear_cache()


def test_the_parts_keep_the_rows_the_paper_reads():
    """The values step (paper/values/hostcost.py) reads launch_only, signature_only, out_only and cache_out_given
    from the probe: the tool still writes them, beside the Python and C parts."""
    assert {"launch_only", "signature_only", "out_only", "cache_out_given", "python_only", "c_launch_only",
            "parts_sum"} <= set(host_cost.PARTS)
    assert host_cost.QUICK_LOOPS < 11


def test_a_compile_worker_reports_a_failure_instead_of_raising():
    """--quick's compile workers return each stage's error (here: no GPU) for the timed process to meet again."""
    stage, seconds, err = host_cost._compile_one(("v3", dict(B=1, H=2, H_kv=1, N=64, D=64, dtype="float16",
                                                            causal=True)))
    assert stage == "v3" and seconds >= 0 and err
