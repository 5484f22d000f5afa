"""The claim rules, one case each, and the slip test: each assertion could fail if a rule were looser."""

import pytest
from steps import step

claims = step("aggregate/claims")


@pytest.mark.parametrize("rule, article, ours, expected", [
    ("change", 50.0, [274.0, 275.0], "partly"),          # same sign, but over twice the size: not "holds"
    ("change", 85.0, [62.0, 63.0], "holds"),             # within a factor of two
    ("change", -40.72, [-29.4, -29.5], "holds"),
    ("change", -4.65, [7.0, 7.1], "does not hold"),      # the other sign
    ("change", -15.0, [-0.5, 0.6], "does not hold"),     # lost in the noise
    ("change", -15.0, [-3.0, -3.2], "partly"),           # same sign, above the noise, under half
    ("change", 0.0, [-0.2, 0.1], "holds"),               # "no change", and none here
    ("change", 0.0, [-3.2, -3.1], "does not hold"),      # "no change", but a change beyond noise and 1%
    ("change_points", 24.22, [33.6], "holds"),
    ("at_least", 100.0, [22.8, 22.8], "does not hold"),
    ("at_least", 100.0, [99.5, 99.6], "holds"),
    ("ratio", 112.4, [195.0, 196.0], "does not hold"),   # no credit for being below a starting ratio
    ("ratio", 112.4, [115.0, 116.0], "holds"),
    ("static", None, [16.0, 16.0], "holds"),
    ("static", None, [16.0, 12.0], "does not hold"),
])
def test_rules(rule, article, ours, expected):
    assert claims.verdict(rule, article, ours)[0] == expected


def test_noise_is_the_range_over_runs():
    verdict, median, noise = claims.verdict("change", -15.0, [-1.0, -4.0, -2.0])
    assert (median, noise) == (-2.0, 3.0) and verdict == "does not hold"


def test_claim_verdicts():
    assert claims.claim_verdict(["holds", "not testable here", "holds"]) == "holds"
    assert claims.claim_verdict(["does not hold", "not testable here"]) == "does not hold"
    assert claims.claim_verdict(["holds", "does not hold"]) == "partly"
    assert claims.claim_verdict(["not testable here"]) == "not testable here"


@pytest.mark.parametrize("printed, recomputed, slip", [
    (-97.0, -89.59, True), (-16.23, -15.66, True), (1.57, 1.538, True),
    (-4.64, -4.6455, False),                             # truncated, not wrong
    (-40.72, -40.7246, False), (None, -3.0, False),
])
def test_slips(printed, recomputed, slip):
    assert claims.is_slip(printed, recomputed) is slip
