"""Property tests in Triton's interpreter: every stage of the article on hypothesis-drawn shapes (batch, heads,
grouped K/V, ragged sequence lengths, head dims, causal or not), each output poisoned first and judged against
float64 (tests/property_check.py). FA2_PROPERTY_EXAMPLES examples per stage (default 1000, what CI runs; set fewer
for a quick local run); the last test checks that every stage got them all. Our stages: test_properties_ours.py and test_properties_ours_late.py."""
from kernels.stages import ARTICLE_STAGES
from property_check import property_tests

test_any_shape, test_every_stage_ran_its_examples = property_tests(ARTICLE_STAGES)
