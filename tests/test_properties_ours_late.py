"""Property tests of the second half of our stages beyond the article (the first half: tests/test_properties_ours.py)."""
from kernels.stages import OUR_STAGES
from property_check import property_tests

test_any_shape, test_every_stage_ran_its_examples = property_tests(OUR_STAGES[len(OUR_STAGES) // 2:])
