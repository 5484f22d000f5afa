"""Property tests in Triton's interpreter: every stage on hypothesis-drawn shapes (batch, heads, grouped K/V,
ragged sequence lengths, head dims, causal or not), each output poisoned first and judged against float64.
FA2_PROPERTY_EXAMPLES examples per stage (default 1000, what CI runs; set fewer for a quick local run); the last
test checks that every stage got them all."""
import collections
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernels import STAGES, attention, reference_attention
from kernels.accuracy import judge, poisoned_like

EXAMPLES = int(os.environ.get("FA2_PROPERTY_EXAMPLES", "1000"))
RAN = collections.Counter()


@pytest.mark.parametrize("stage", list(STAGES))
@given(B=st.integers(1, 2), H_kv=st.integers(1, 2), group=st.sampled_from([1, 2, 3, 4]), N=st.integers(1, 80),
       D=st.sampled_from([16, 32, 64]), causal=st.booleans(), seed=st.integers(0, 2**31 - 1))
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors])
def test_any_shape(stage, B, H_kv, group, N, D, causal, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, h, N, D, generator=g).half() for h in (H_kv * group, H_kv, H_kv))
    out = poisoned_like(q)
    attention(q, k, v, causal=causal, stage=stage, out=out)
    verdict = judge(out, reference_attention(q, k, v, causal=causal))
    assert verdict["ok"], f"{stage} causal={causal} shape={tuple(q.shape)}/{tuple(k.shape)} seed={seed}: {verdict}"
    RAN[stage] += 1


def test_every_stage_ran_its_examples():
    assert {s: RAN[s] for s in STAGES} == {s: EXAMPLES for s in STAGES}, dict(RAN)
