"""Property tests of our stages beyond the article, as tests/test_properties.py does the article's (a file of their
own so that pytest-xdist runs the two side by side)."""
from kernels.stages import OUR_STAGES
from property_check import property_tests

test_any_shape, test_every_stage_ran_its_examples = property_tests(OUR_STAGES)
