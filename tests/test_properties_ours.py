"""Property tests of our stages beyond the article, as tests/test_properties.py does the article's: the first half
of them here, the second in tests/test_properties_ours_late.py (files of their own so that pytest-xdist spreads them
over its workers)."""
from kernels.stages import OUR_STAGES
from property_check import property_tests

test_any_shape, test_every_stage_ran_its_examples = property_tests(OUR_STAGES[:len(OUR_STAGES) // 2])
