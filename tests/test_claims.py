"""The claim rules, one case each, and the slip test: each assertion could fail if a rule were looser."""

import statistics

import pytest
from steps import step

claims = step("aggregate/claims")


@pytest.mark.parametrize("rule, article, ours, expected", [
    ("change", 50.0, [274.0, 275.0], "partly"),          # same sign, but over twice the size: not "holds"
    ("change", 85.0, [62.0, 63.0], "holds"),             # within a factor of two
    ("change", -40.72, [-29.4, -29.5], "holds"),
    ("change", -4.65, [7.0, 7.1], "does not hold"),      # the other sign
    ("change", -15.0, [-0.5, 0.6], "does not hold"),     # no change: not moved
    ("change", -15.0, [-3.0, -3.2], "partly"),           # same sign, moved (two runs: by size), under half
    ("change", 0.0, [-0.2, 0.1], "holds"),               # "no change", and none here
    ("change", 0.0, [-3.2, -3.1], "does not hold"),      # "no change", but a change beyond 1%
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


def test_the_range_over_runs_is_shown_beside_the_median():
    verdict, median, spread = claims.verdict("change", -15.0, [-1.0, -4.0, -2.0])
    assert (median, spread) == (-2.0, 3.0) and verdict == "partly"    # three runs, all of a's sign, beyond 1%


# v1 against v0 at N=16384 as the runs give it: every run faster, by 0.4% to 5.2% (a range of 4.8 points, wider
# than the 3.7% median change): the range once made this "no change"; the runs all fall one way.
CONSISTENT = [-3.7, -0.4, -5.2, -4.1, -2.9, -3.6, -4.4, -1.8, -3.9, -4.8, -2.2, -3.4]


def test_a_consistent_small_change_over_twelve_runs_is_not_no_change():
    assert max(CONSISTENT) - min(CONSISTENT) > abs(statistics.median(CONSISTENT))
    assert claims.sign_test_p(CONSISTENT) == pytest.approx(2 / 2 ** 12)
    assert claims.moved(CONSISTENT)
    assert claims.verdict("change", 0.0, CONSISTENT)[0] == "does not hold"
    assert claims.verdict("change", -15.0, CONSISTENT)[0] == "partly"       # of a's sign, under half its size
    # a wider spread with every run on the same side changes nothing
    wider = [10 * d for d in CONSISTENT[:6]] + CONSISTENT[6:]
    assert claims.verdict("change", 0.0, wider)[0] == "does not hold"


def test_a_noisy_zero_mean_change_is_no_change():
    noisy = [-6.0, 3.0, -5.0, 4.0, -4.0, 5.0, -3.0, 6.0, -2.5, 6.5, -2.0, -1.5]  # mean ~0, median -1.75, 7 vs 5
    assert abs(statistics.mean(noisy)) < 0.1 and statistics.median(noisy) == -1.75
    assert claims.sign_test_p(noisy) == pytest.approx(2 * 1586 / 2 ** 12) and not claims.moved(noisy)
    assert claims.verdict("change", 0.0, noisy)[0] == "holds"
    assert claims.verdict("change", -15.0, noisy)[0] == "does not hold"     # nor partly: it has not moved


def test_the_sign_test():
    assert claims.sign_test_p([1.0] * 9 + [-1.0] * 3) == pytest.approx(2 * (1 + 12 + 66 + 220) / 2 ** 12)
    assert claims.sign_test_p([0.0, 0.0]) == 1.0 and claims.sign_test_p([2.0, 0.0, -2.0]) == 1.0
    assert claims.SIGN_TEST_MIN_RUNS == 6                  # 2 / 2**5 = 0.0625 cannot reach 0.05; 2 / 2**6 can
    assert not claims.moved([-2.0] * 11 + [3.0] * 4)       # 11 of 15: p = 0.12
    assert claims.moved([-2.0] * 12 + [3.0] * 2)           # 12 of 14: p = 0.013
    assert not claims.moved([-0.8] * 12)                   # every run, but within NEGLIGIBLE_PCT: no change
    assert not claims.moved([100 * (99 / 100 - 1)] * 12)   # exactly NEGLIGIBLE_PCT, however the division rounds


def test_a_run_alone_is_judged_by_size():
    """Too few runs for a sign test to reach ALPHA (claims_by_run's one run): the size alone."""
    assert claims.moved([-3.6]) and not claims.moved([-0.6])
    assert claims.verdict("change", 0.0, [-3.6])[0] == "does not hold"
    assert claims.verdict("change", 0.0, [0.6])[0] == "holds"
    assert claims.moved([-3.0, 2.0, -4.0, -5.0, 3.0])       # five runs: median -3, judged by size


def test_at_least_takes_no_credit_from_the_spread():
    assert claims.verdict("at_least", 100.0, [60.0, 99.5, 140.0])[0] == "holds"
    assert claims.verdict("at_least", 100.0, [60.0, 98.0, 140.0])[0] == "does not hold"  # was within the range


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
