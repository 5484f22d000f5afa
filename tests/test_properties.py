"""Property tests of every registered stage as it is, on drawn shapes with head dims up to 128
(tests/property_check.py)."""
from property_check import stage_tests

test_every_stage, test_every_stage_ran_its_examples = stage_tests()
