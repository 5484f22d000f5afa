"""pipeline.steady_energy: the energy counter read between two of its updates over back-to-back calls, driven by a
fake GPU whose counter moves every 100 ms at a given power, as an H200's does."""
import pytest

from pipeline import steady_energy
from pipeline.steady_energy import SteadyEnergyError


class FakeGpu:
    """A GPU with a clock (host seconds), a queue of chunks each chunk_s of GPU work, and an energy counter that
    adds power_w x 100 ms every 100 ms of the time the GPU was busy (idle_w when not)."""

    def __init__(self, power_w=700.0, idle_w=100.0, chunk_s=0.02, poll_s=0.001, period_s=0.1, launch_s=0.0):
        self.t, self.power_w, self.idle_w, self.chunk_s = 0.0, power_w, idle_w, chunk_s
        self.poll_s, self.period_s, self.launch_s = poll_s, period_s, launch_s
        self.busy_until, self.ends, self.launched = 0.0, [], 0
        self.energy_j, self.counter_mj, self.next_update = 0.0, 0, period_s
        self.busy_s = 0.0

    def advance(self, dt):
        end = self.t + dt
        while self.t < end:
            step = min(end - self.t, 0.0001)
            busy = self.t < self.busy_until
            self.energy_j += (self.power_w if busy else self.idle_w) * step
            self.busy_s += step if busy else 0.0
            self.t += step
            if self.t >= self.next_update:
                self.counter_mj = int(self.energy_j * 1e3)
                self.next_update += self.period_s

    def launch(self):
        self.advance(self.launch_s)
        self.busy_until = max(self.busy_until, self.t) + self.chunk_s
        self.launched += 1
        return self.busy_until

    def done(self, end):
        return self.t >= end

    def read(self):
        return dict(energy_mj=self.counter_mj, power_w=self.power_w * 0.2, sm_mhz=1700.0, capped=True)

    def measure(self, min_s=0.25, **kw):
        return steady_energy.measure(self.launch, self.done, self.read, min_s, clock=lambda: self.t,
                                     sleep=self.advance, poll_s=self.poll_s, **kw)


def test_the_counters_power_over_a_span_of_updates_is_the_busy_gpus():
    gpu = FakeGpu(power_w=700.0)
    r = gpu.measure(min_s=0.25)
    assert r["power_w"] == pytest.approx(700.0, rel=0.02)
    assert 0.25 <= r["span_s"] < 0.25 + 0.1 + 0.01                 # ends at the first update at least 0.25 s on
    assert r["instant_w"] == pytest.approx(140.0)                    # the lagging instant readings, reported beside
    assert r["capped_frac"] == 1.0 and r["sm_mhz"] == 1700.0
    assert r["chunks"] == gpu.launched


def test_the_span_starts_at_the_second_update_not_the_first():
    """The first update after the launch covers idle time before the first chunk: starting there would mix it in.
    The GPU starts 80 ms before the first update; the span's power must still be the busy GPU's."""
    gpu = FakeGpu(power_w=700.0, idle_w=50.0)
    gpu.advance(0.08)
    r = gpu.measure(min_s=0.2)
    assert r["power_w"] == pytest.approx(700.0, rel=0.02)


def test_a_gpu_that_runs_dry_inside_the_span_is_refused():
    """Chunks of 0.5 ms behind a 2 ms poll: the queue drains between refills, the span's power would be too low."""
    gpu = FakeGpu(chunk_s=0.0005, poll_s=0.002)
    with pytest.raises(SteadyEnergyError, match="ran out of queued calls"):
        gpu.measure()


def test_a_counter_that_never_moves_or_goes_back_is_refused():
    gpu = FakeGpu(period_s=100.0)
    with pytest.raises(SteadyEnergyError, match="within 1.0 s"):
        gpu.measure(max_s=1.0)
    gpu = FakeGpu()
    readings = iter([5000, 5000, 6000, 4000])
    with pytest.raises(SteadyEnergyError, match="went back"):
        steady_energy.measure(gpu.launch, gpu.done, lambda: dict(energy_mj=next(readings), power_w=1, sm_mhz=1,
                                                                 capped=False), 0.1, sleep=gpu.advance,
                              clock=lambda: gpu.t)


def test_which_entries_and_the_rows_arithmetic():
    assert steady_energy.wanted(8192, 0, 8192, 1, 0.25)
    assert not steady_energy.wanted(4096, 0, 8192, 1, 0.25)
    assert not steady_energy.wanted(8192, 1, 8192, 1, 0.25)        # the first steady_repeats repeats only
    assert not steady_energy.wanted(16384, 0, 8192, 1, 0.0)        # steady_s = 0: off
    assert steady_energy.chunk_calls(3000.0, 20) == 7 and steady_energy.chunk_calls(50000.0, 20) == 1
    with pytest.raises(ValueError):
        steady_energy.chunk_calls(0.0, 20)
    row = steady_energy.row(dict(power_w=690.0, instant_w=600.0, sm_mhz=1650.0, capped_frac=1.0, span_s=0.3,
                                 chunks=20), call_us=3400.0)
    assert row["steady_energy_mj"] == pytest.approx(690.0 * 3.4) and list(row) == steady_energy.COLUMNS


def test_an_edge_is_timed_at_the_middle_of_the_poll_that_saw_it():
    """With polls of 3 ms the old rule (the time of the reading that saw an update) made every edge up to a whole poll
    late; the middle of the poll makes it at most half a poll off either way, and the bound is returned. The fake's
    busy power is exact, so the measured power shows the span's error."""
    gpu = FakeGpu(power_w=700.0, poll_s=0.003)
    r = gpu.measure(min_s=0.5)
    assert 0 < r["span_err_s"] <= 0.0031 + 1e-9                          # half of each of the two edges' polls
    assert r["power_w"] == pytest.approx(700.0, rel=r["span_err_s"] / r["span_s"] + 0.002)


def test_a_span_the_polls_cannot_time_to_two_percent_is_refused():
    gpu = FakeGpu(power_w=700.0, poll_s=0.007)
    with pytest.raises(SteadyEnergyError, match=r"known to within .*%, more than 2%.*raise steady_s"):
        gpu.measure(min_s=0.25)
