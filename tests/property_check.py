"""The body of the property tests (tests/test_properties*.py): one stage on one hypothesis-drawn shape, its output
poisoned first and judged against float64. The stages are split over two test files so that pytest-xdist
(--dist loadfile) runs the article's and ours side by side."""
import collections
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels import attention, reference_attention
from kernels.accuracy import judge, poisoned_like

EXAMPLES = int(os.environ.get("FA2_PROPERTY_EXAMPLES", "1000"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors])
SHAPES = dict(B=st.integers(1, 2), H_kv=st.integers(1, 2), group=st.sampled_from([1, 2, 3, 4]), N=st.integers(1, 80),
              D=st.sampled_from([16, 32, 64]), causal=st.booleans(), seed=st.integers(0, 2**31 - 1))


def check_any_shape(ran: collections.Counter, stage, B, H_kv, group, N, D, causal, seed) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, h, N, D, generator=g).half() for h in (H_kv * group, H_kv, H_kv))
    out = poisoned_like(q)
    attention(q, k, v, causal=causal, stage=stage, out=out)
    verdict = judge(out, reference_attention(q, k, v, causal=causal))
    assert verdict["ok"], f"{stage} causal={causal} shape={tuple(q.shape)}/{tuple(k.shape)} seed={seed}: {verdict}"
    ran[stage] += 1


def property_tests(stages) -> tuple:
    """(test_any_shape, test_every_stage_ran_its_examples) over these stages, for a test module to bind by name."""
    stages = list(stages)
    ran = collections.Counter()

    @pytest.mark.parametrize("stage", stages)
    @given(**SHAPES)
    @SETTINGS
    def test_any_shape(stage, B, H_kv, group, N, D, causal, seed):
        check_any_shape(ran, stage, B, H_kv, group, N, D, causal, seed)

    def test_every_stage_ran_its_examples():
        assert {s: ran[s] for s in stages} == {s: EXAMPLES for s in stages}, dict(ran)

    return test_any_shape, test_every_stage_ran_its_examples
