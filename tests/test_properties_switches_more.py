"""Property tests of drawn variants, the second stream (tests/property_check.py), in a file of its own so that
pytest-xdist runs it beside the first."""
from property_check import switch_tests

test_drawn_variants, test_every_switch_ran_on_and_off = switch_tests("second")
