"""Property tests in Triton's interpreter: every stage of the article on hypothesis-drawn shapes (batch, heads,
grouped K/V, ragged sequence lengths, head dims, causal or not), each output poisoned first and judged against
float64 (tests/property_check.py). FA2_PROPERTY_EXAMPLES examples per stage (default 1000, what CI runs; set fewer
for a quick local run); the last test checks that every stage got them all. Our stages: test_properties_ours.py."""
import collections

import pytest
from hypothesis import given

from kernels.stages import ARTICLE_STAGES
from property_check import EXAMPLES, SETTINGS, SHAPES, check_any_shape

RAN = collections.Counter()


@pytest.mark.parametrize("stage", list(ARTICLE_STAGES))
@given(**SHAPES)
@SETTINGS
def test_any_shape(stage, B, H_kv, group, N, D, causal, seed):
    check_any_shape(RAN, stage, B, H_kv, group, N, D, causal, seed)


def test_every_stage_ran_its_examples():
    assert {s: RAN[s] for s in ARTICLE_STAGES} == {s: EXAMPLES for s in ARTICLE_STAGES}, dict(RAN)
