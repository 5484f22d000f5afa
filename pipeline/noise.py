"""When a paired change over runs has moved: the one rule of the paper (Section 9, "The claims") for every "no change",
"faster" or "slower" it says of a change measured in several runs, each run's change taken within that run. A change
has moved when its median is beyond NEGLIGIBLE_PCT and a two-sided exact sign test over the runs rejects "no change"
at ALPHA; with fewer runs than can reach ALPHA, by its size alone. The spread of the runs enters only through how many
fall on each side of zero, so a rule that takes the range over runs as the noise, which grows more lenient as the
noise grows, is not used."""
import math
import statistics

NEGLIGIBLE_PCT = 1.0   # a change under this is "no change", the article's and ours
ALPHA = 0.05           # a change has moved when a two-sided sign test over the runs rejects "no change" at this level
SIGN_TEST_MIN_RUNS = next(n for n in range(1, 64) if 2 * 0.5 ** n < ALPHA)  # fewer runs cannot reach ALPHA (6)


def sign_test_p(diffs) -> float:
    """Two-sided exact sign test of "no change" over paired differences (one per run): the probability, under a
    fair coin for each run's sign, of a split at least as lopsided as the one seen. Zero differences are left out
    (they take no side); with none left, 1."""
    above, below = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    n = above + below
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(above, below) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def moved(diffs, negligible: float = NEGLIGIBLE_PCT, alpha: float = ALPHA) -> bool:
    """Whether paired per-run changes are told from no change: their median beyond `negligible` and, with at least
    SIGN_TEST_MIN_RUNS runs, the sign test's p below `alpha` (fewer runs cannot reach it: the size alone). The
    spread of the runs enters only through how many of them fall on each side of zero."""
    diffs = list(diffs)
    # rounded first: a change of exactly `negligible` computed in floating point (99 / 100 - 1 = -1.0000000000000009%)
    # is no change
    if not diffs or round(abs(statistics.median(diffs)), 9) <= negligible:
        return False
    if len(diffs) < SIGN_TEST_MIN_RUNS:
        return True
    return sign_test_p(diffs) < alpha
