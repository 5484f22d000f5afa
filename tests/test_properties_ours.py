"""Property tests of our stages beyond the article, as tests/test_properties.py does the article's (a file of their
own so that pytest-xdist runs the two side by side)."""
import collections

import pytest
from hypothesis import given

from kernels.stages import OUR_STAGES
from property_check import EXAMPLES, SETTINGS, SHAPES, check_any_shape

RAN = collections.Counter()


@pytest.mark.parametrize("stage", list(OUR_STAGES))
@given(**SHAPES)
@SETTINGS
def test_any_shape(stage, B, H_kv, group, N, D, causal, seed):
    check_any_shape(RAN, stage, B, H_kv, group, N, D, causal, seed)


def test_every_stage_ran_its_examples():
    assert {s: RAN[s] for s in OUR_STAGES} == {s: EXAMPLES for s in OUR_STAGES}, dict(RAN)
