"""The body of the property tests: the kernel on hypothesis-drawn shapes (batch, heads, grouped K/V, ragged sequence
lengths, head dims 16 to 128, causal or not) in Triton's interpreter, each output poisoned first and judged against
float64 within twice PyTorch's own error on the same inputs (kernels.accuracy).

Two kinds, each bound by name in a test module of its own so that pytest-xdist (--dist loadfile) spreads them:

- drawn variants (`switch_tests`): each example a shape and a set of switches. The sets come in complementary pairs
  (example 2i draws a set, example 2i+1 takes every other switch), so that each switch of the Triton kernel
  (kernels.stages.TRITON_SWITCHES) is on in exactly half of a module's examples and off in the other half: every code
  path of the kernel, each switch on and off, runs on EXAMPLES / 2 drawn shapes per module, whatever stages the
  registry holds.
- the stages (`stage_tests`): every registered Triton stage, as it is, on STAGE_EXAMPLES drawn shapes.

The Gluon stages (kernels/gluon_fwd.py) do not run in Triton's interpreter: their correctness is the GPU verify
step's, and their machine code is tests/test_gluon_build.py's.

FA2_PROPERTY_EXAMPLES sets EXAMPLES (default 1000, what CI runs; fewer for a quick local run).
"""
import collections
import os
import random

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kernels import attention, plain_attention, reference_attention
from kernels.accuracy import judge, poisoned_like
from kernels.stages import STAGES, TRITON_STAGES, TRITON_SWITCHES, switches_label

EXAMPLES = int(os.environ.get("FA2_PROPERTY_EXAMPLES", "1000"))
STAGE_EXAMPLES = max(1, EXAMPLES // 50)
SHAPES = dict(B=st.integers(1, 2), H_kv=st.integers(1, 2), group=st.sampled_from([1, 2, 3, 4]), N=st.integers(1, 80),
              D=st.sampled_from([16, 32, 64, 128]), causal=st.booleans(), seed=st.integers(0, 2**31 - 1))


def check_any_shape(switches, B, H_kv, group, N, D, causal, seed) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, h, N, D, generator=g).half() for h in (H_kv * group, H_kv, H_kv))
    out = poisoned_like(q)
    attention(q, k, v, causal=causal, switches=switches, out=out)
    verdict = judge(out, reference_attention(q, k, v, causal=causal), plain_attention(q, k, v, causal=causal))
    assert verdict["ok"], (f"{switches_label(switches)} causal={causal} shape={tuple(q.shape)}/{tuple(k.shape)} "
                           f"seed={seed}: {verdict}")


def drawn_switches(name: str, example: int) -> frozenset:
    """The switch set of a module's example: a set drawn for each pair of examples, and its complement."""
    drawn = frozenset(s for s in TRITON_SWITCHES if random.Random(f"{name}-{example // 2}-{s}").random() < 0.5)
    return drawn if example % 2 == 0 else frozenset(TRITON_SWITCHES) - drawn


def switch_tests(name: str) -> tuple:
    """(test_drawn_variants, test_every_switch_ran_on_and_off) for a module to bind: its own stream of examples."""
    ran = collections.Counter()
    examples = iter(range(10**9))

    # No shrinking: an example's switches are its place in the stream, which a shrinking replay would not keep; a
    # failure names the example, its switches and its shape.
    @given(**SHAPES)
    @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors])
    def test_drawn_variants(B, H_kv, group, N, D, causal, seed):
        example = next(examples)
        switches = drawn_switches(name, example)
        try:
            check_any_shape(switches, B, H_kv, group, N, D, causal, seed)
        except Exception as err:
            raise AssertionError(f"{name} example {example}: {err}") from err
        ran.update((s, s in switches) for s in TRITON_SWITCHES)
        ran["examples"] += 1

    def test_every_switch_ran_on_and_off():
        assert ran["examples"] >= EXAMPLES, dict(ran)
        short = {(s, on): ran[(s, on)] for s in TRITON_SWITCHES for on in (True, False)
                 if ran[(s, on)] < EXAMPLES // 2}
        assert not short, f"switches on or off in fewer than {EXAMPLES // 2} drawn shapes: {short}"

    return test_drawn_variants, test_every_switch_ran_on_and_off


def stage_tests() -> tuple:
    """(test_every_stage, test_every_stage_ran_its_examples) over the registry's stages."""
    ran = collections.Counter()

    @pytest.mark.parametrize("stage", list(TRITON_STAGES))
    @given(**SHAPES)
    @settings(max_examples=STAGE_EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors])
    def test_every_stage(stage, B, H_kv, group, N, D, causal, seed):
        check_any_shape(STAGES[stage].switches, B, H_kv, group, N, D, causal, seed)
        ran[stage] += 1
        ran[(stage, D)] += 1

    def test_every_stage_ran_its_examples():
        assert {s: ran[s] for s in TRITON_STAGES} == {s: STAGE_EXAMPLES for s in TRITON_STAGES}, dict(ran)

    return test_every_stage, test_every_stage_ran_its_examples
