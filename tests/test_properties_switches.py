"""Property tests of drawn variants, the first stream (tests/property_check.py): every switch on and off."""
from property_check import switch_tests

test_drawn_variants, test_every_switch_ran_on_and_off = switch_tests("first")
