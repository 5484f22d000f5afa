"""The settle step: before a long-sequence entry is timed, run it until the GPU's SM clock stops falling.

Why: at long sequences the H200 reaches its power limit, and as it warms its clock falls further (more leakage at
the same power), so that the first entries timed after a pause run faster than the later ones. Settling first
brings every entry of a long-N block to the same warm state.

The rule (`settle`): run the entry back to back in windows of window_ms, each giving the median SM clock over the
window (pipeline.gpu_state's sampler); stop when a window's median is no lower than the one before it less
tol_pct percent (the clock has stopped falling), or when max_s seconds have passed (then `settle_stable` is
False). At least two windows run, so that there is a comparison.

Which entries (`needs_settle`): an entry at N >= min_N whose predecessor in this process was not timed at the same
N in the same repeat: the first entry of each block of one long N in a repeat, and the first after a resume.
max_s = 0 turns the step off.

The pre-roll (`needs_preroll`): the settle step brings a block's first entry to the loaded state, but each entry's
own pause before its samples (its user view, its event-timed estimate) lets the GPU recover, and at the power cap
an entry's samples then start fast and slow down part way through (run-36 on an H100: 111 of 160 entries at
N = 16384 slowed by 5-19% from their first third of samples to their last), so that a median of a few repeats lands
in either state. So every entry at N >= preroll_min_N may run back to back for preroll_ms right before its
event-timed estimate and its samples, to start them in the loaded state; preroll_ms = 0 turns it off. The shipped
plan has it off: on an H100, 250 ms did not keep the samples in one state (data/nvidia-h100-80gb-hbm3/probes/
preroll-check, workflow/scripts/tools/preroll_check.py).

The arithmetic is separate from the GPU (`run_window` is given), so that the tests check it with a fake clock.
"""
from __future__ import annotations

import time
from typing import Callable

# The columns a timed row gets from `settle` (empty where the row was not settled), then from the pre-roll (the wall
# time it ran, ms, and the median SM clock over it; empty where the row had none).
COLUMNS = ["settle_s", "settle_mhz", "settle_windows", "settle_stable", "preroll_ms", "preroll_mhz"]


def stable(medians: list, tol_pct: float) -> bool:
    """Whether the clock has stopped falling: the last window's median at least the one before it less tol_pct %."""
    return len(medians) >= 2 and medians[-1] >= medians[-2] * (1 - tol_pct / 100)


def needs_settle(n: int, repeat: int, min_n: int, max_s: float, last: tuple | None) -> bool:
    """Whether an entry at sequence length n in `repeat` is settled first, `last` being the (repeat, N) of the entry
    timed before it in this process (None for the first)."""
    return max_s > 0 and n >= min_n and last != (repeat, n)


def needs_preroll(n: int, min_n: int, ms: float) -> bool:
    """Whether an entry at sequence length n runs its pre-roll (plan.bench's preroll_min_N and preroll_ms)."""
    if ms < 0:
        raise ValueError(f"preroll_ms must be >= 0 (0: no pre-roll), got {ms}")
    return ms > 0 and n >= min_n


def settle(run_window: Callable[[float], float], window_ms: float, tol_pct: float, max_s: float,
           clock: Callable[[], float] = time.monotonic) -> dict:
    """Run windows (run_window(window_ms) runs the entry that long and returns the window's median SM clock, MHz)
    until `stable` or max_s seconds; returns the COLUMNS: seconds spent, the last window's median clock, the number
    of windows, and whether the clock stopped falling (False: the time limit ended it)."""
    if window_ms <= 0 or max_s <= 0:
        raise ValueError(f"window_ms and max_s must be > 0, got {window_ms}, {max_s}")
    t0, medians = clock(), []
    while True:
        medians.append(float(run_window(window_ms)))
        done = stable(medians, tol_pct)
        if done or clock() - t0 >= max_s:
            return dict(settle_s=clock() - t0, settle_mhz=medians[-1], settle_windows=len(medians),
                        settle_stable=done)
