"""The steady energy of a call: NVML's energy counter over back-to-back calls, read between two of its updates.

Why: a timed row's energy_mj (pipeline.gpu_state) is the timed window's mean power, read every few milliseconds,
times its wall time. On a power-capped kernel that window reads about 135 W where the board's limit is 700 W
(probes/settle-cause): the power readings lag a window of 30-100 ms that starts from a GPU idled by the entry's
check. NVML's total-energy counter does not lag, but on an H200 it moves only about every 100 ms, in steps of
60-70 J (probes/gpu-state), which no timed window can resolve. Here the entry runs back to back for longer, and the
counter is read at two of its updates (edges: the first reading that differs from the one before), so that its
change over the time between them is the GPU's mean power over that span. An update is seen at the first reading
after it, up to one poll late; its time is taken as the middle of the poll that saw it (between the reading before
and this one), so that the span is off by at most half of each edge's poll (`span_err_s`, reported), not by a
whole poll always in one direction.

The rule (`measure`): keep `depth` chunks of back-to-back calls queued on the GPU (each chunk at least chunk_ms of
GPU time), poll the counter between launches; the span runs from the second edge seen once the first chunk is
queued (the first may cover time before the GPU started) to the first edge at least min_s later. Once the span has
begun, some chunk must still be queued at each refill (the GPU busy over the whole span), or the measurement
raises. Power is the counter's change over the span's time; the energy of one call is that power times the GPU's time per call over the loop (CUDA events around every chunk, with the gaps between
back-to-back kernels), as a steady stream of calls spends it.

Which entries (`wanted`): N >= steady_min_N, in the first steady_repeats repeats; steady_s = 0 turns the step off.

The loop is separate from the GPU (launch, done, read, clock are given), so that the tests drive it with fakes.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable

# The columns a timed row gets from `measure` (empty where the row had no steady step): the counter's mean power
# (W) over the span, the mean of the instant power readings polled over it (W), their median SM clock (MHz) and the
# fraction of them power-capped, the span (s), the GPU's time per call in the loop (us) and the energy of one call
# (mJ).
COLUMNS = ["steady_power_w", "steady_instant_w", "steady_mhz", "steady_capped_frac", "steady_s", "steady_call_us",
           "steady_energy_mj"]


# The most the span may be off, as a fraction of it (half of each edge's poll together), before it is refused.
MAX_SPAN_ERR = 0.02


class SteadyEnergyError(RuntimeError):
    """The span could not be measured: the GPU ran dry inside it, or no counter update came in time."""


def wanted(n: int, repeat: int, min_n: int, repeats: int, seconds: float) -> bool:
    """Whether an entry at sequence length n in `repeat` gets the steady step."""
    return seconds > 0 and n >= min_n and repeat < repeats


def chunk_calls(call_us: float, chunk_ms: float) -> int:
    """How many calls make one chunk of at least chunk_ms of GPU time (at least one)."""
    if call_us <= 0:
        raise ValueError(f"a call's time must be > 0 us, got {call_us}")
    return max(1, -(-int(chunk_ms * 1e3) // max(1, int(call_us))))


def measure(launch: Callable[[], object], done: Callable[[object], bool], read: Callable[[], dict],
            min_s: float, depth: int = 3, max_s: float = 10.0, poll_s: float = 0.0005,
            clock: Callable[[], float] = time.perf_counter, sleep: Callable[[float], None] = time.sleep) -> dict:
    """Run the span. launch() queues one chunk and returns its token; done(token) says whether it has finished on
    the GPU; read() is one NVML reading with energy_mj (the counter), power_w (instant), sm_mhz and capped (bool).
    Returns power_w (the counter's), instant_w, sm_mhz, capped_frac (over the span's readings), span_s, span_err_s
    (the most the span can be off: half of each edge's poll), chunks (how many were launched). Raises
    SteadyEnergyError when the GPU ran dry inside the span, the counter went back, or max_s passed without a span."""
    if min_s <= 0 or depth < 1:
        raise ValueError(f"min_s must be > 0 and depth >= 1, got {min_s}, {depth}")
    queue: list = []
    chunks = 0

    def top_up() -> bool:
        """Refill the queue to depth chunks; True when every chunk queued before had finished (the GPU ran dry)."""
        nonlocal chunks
        dry = bool(queue) and all(done(tok) for tok in queue)
        queue[:] = [tok for tok in queue if not done(tok)]
        while len(queue) < depth:
            queue.append(launch())
            chunks += 1
        return dry

    top_up()
    t_begin = clock()
    last, t_last = read(), clock()
    edges, start, seen = 0, None, []
    while True:
        dry = top_up()
        if dry and start is not None:
            raise SteadyEnergyError("the GPU ran out of queued calls inside the span: a chunk is too short for the "
                                    "host's polling (raise steady_chunk_ms)")
        r, t = read(), clock()
        if start is not None:
            seen.append(r)
        if r["energy_mj"] != last["energy_mj"]:
            if r["energy_mj"] < last["energy_mj"]:
                raise SteadyEnergyError(f"the energy counter went back ({last['energy_mj']} -> {r['energy_mj']} mJ)")
            edges += 1
            # the update came after the reading before and by this one: the middle of that poll, +- half of it
            edge, half = (t_last + t) / 2, (t - t_last) / 2
            # the first update may cover time before the first chunk started: the span starts at the second
            if edges == 2:
                start, seen = (edge, r["energy_mj"], half), [r]
            elif start is not None and edge - start[0] >= min_s:
                span = edge - start[0]
                if start[2] + half > MAX_SPAN_ERR * span:
                    raise SteadyEnergyError(f"the polls that saw the span's updates took {1e3 * 2 * start[2]:.1f} and "
                                            f"{1e3 * 2 * half:.1f} ms: the span of {span:.3f} s is known to within "
                                            f"{100 * (start[2] + half) / span:.1f}%, more than "
                                            f"{100 * MAX_SPAN_ERR:g}% (the host is too slow between readings; "
                                            "lower steady_chunk_ms or raise steady_s)")
                return dict(power_w=(r["energy_mj"] - start[1]) / 1e3 / span,
                            instant_w=statistics.fmean(float(x["power_w"]) for x in seen),
                            sm_mhz=statistics.median(float(x["sm_mhz"]) for x in seen),
                            capped_frac=sum(bool(x["capped"]) for x in seen) / len(seen),
                            span_s=span, span_err_s=start[2] + half, chunks=chunks)
        last, t_last = r, t
        if t - t_begin > max_s:
            raise SteadyEnergyError(f"no span of {min_s} s between two energy counter updates within {max_s} s: "
                                    "does this GPU's NVML update its total-energy counter?")
        sleep(poll_s)


def row(result: dict, call_us: float) -> dict:
    """The COLUMNS of a row from `measure`'s result and the GPU's time per call over the loop (us)."""
    return dict(steady_power_w=result["power_w"], steady_instant_w=result["instant_w"],
                steady_mhz=result["sm_mhz"], steady_capped_frac=result["capped_frac"], steady_s=result["span_s"],
                steady_call_us=call_us, steady_energy_mj=result["power_w"] * call_us / 1e3)
