"""The kernel timer's arithmetic, on a fake GPU clock: host time cannot enter a kernel time, samples are cut at the
flushes, and a trace that is not what was asked for is refused. (On the GPU the same code reads CUPTI's
timestamps; the timer-check step records rows that show the same property on the H200.)"""

import pytest


import pipeline.kernel_timer as kt
from pipeline.kernel_timer import KernelRecord, TimerError


class FakeGPU:
    """One stream: a launch costs the host `launch_ns`; a kernel starts when both the host has launched it and the
    previous kernel has ended, and takes its fixed duration. The recorder returns what the GPU ran during `run`."""

    def __init__(self, launch_ns=5_000):
        self.host_ns, self.gpu_ns, self.launch_ns, self.records = 0, 0, launch_ns, []

    def launch(self, name, duration_ns):
        self.host_ns += self.launch_ns
        start = max(self.gpu_ns, self.host_ns)
        self.gpu_ns = start + duration_ns
        self.records.append(KernelRecord(name, start, self.gpu_ns))

    def sleep(self, ns):
        self.host_ns += ns

    def event_time_us(self, fn):
        """What an event pair around fn measures on this GPU: from the first event (recorded when the host reaches
        it, or after the queued work) to the end of fn's last kernel."""
        t0 = max(self.host_ns, self.gpu_ns)
        fn()
        return (self.gpu_ns - t0) / 1e3

    def recorder(self, run):
        self.records = []
        run()
        return list(self.records)

    def flush(self):
        self.launch(kt.FLUSH_KERNEL, 80_000)


def test_host_time_cannot_enter():
    gpu = FakeGPU()
    quiet = kt.measure(lambda: gpu.launch("attn", 30_000), 50, flush=gpu.flush, recorder=gpu.recorder)
    sleepy = kt.measure(lambda: (gpu.sleep(400_000), gpu.launch("attn", 30_000)), 50, flush=gpu.flush,
                        recorder=gpu.recorder)
    assert quiet["time_us"] == sleepy["time_us"] == 30.0
    assert quiet["min_us"] == sleepy["max_us"] == 30.0 and sleepy["n_samples"] == 50
    # an event pair around the same sleepy call sees the sleep: the fault the kernel timer removes
    gpu.flush()
    assert gpu.event_time_us(lambda: (gpu.sleep(400_000), gpu.launch("attn", 30_000))) > 10 * 30


def test_a_sample_is_the_sum_of_its_kernels_without_the_gaps():
    gpu = FakeGPU()

    def two_kernels():
        gpu.launch("a", 10_000)
        gpu.sleep(50_000)
        gpu.launch("b", 2_500)

    stats = kt.measure(two_kernels, 20, flush=gpu.flush, recorder=gpu.recorder)
    assert stats["time_us"] == 12.5 and stats["kernels"] == "a;b" and stats["n_kernels"] == 2


def test_statistics_of_varying_samples():
    gpu = FakeGPU()
    durations = iter(range(1_000, 101_000, 1_000))              # 1 ... 100 us
    stats = kt.measure(lambda: gpu.launch("k", next(durations)), 100, warmup=0, flush=gpu.flush,
                       recorder=gpu.recorder)
    assert stats["time_us"] == 50.5 and stats["min_us"] == 1 and stats["max_us"] == 100
    assert stats["q25_us"] == pytest.approx(25.25) and stats["q75_us"] == pytest.approx(75.75)
    assert stats["mean_us"] == pytest.approx(50.5)


def rec(name, start, end):
    return KernelRecord(name, start, end)


F = kt.FLUSH_KERNEL


def test_memsets_count_in_the_time_but_not_as_kernels():
    gpu = FakeGPU()

    def memset_then_kernel():
        gpu.launch("Memset (Device)", 1_500)
        gpu.launch("cudnn_sdpa", 30_000)

    stats = kt.measure(memset_then_kernel, 10, flush=gpu.flush, recorder=gpu.recorder)
    assert stats["time_us"] == 31.5 and stats["kernels_us"] == 30.0 and stats["n_kernels"] == 1
    assert stats["kernels"] == "Memset (Device);cudnn_sdpa"


def test_records_are_taken_in_the_gpus_order():
    records = [rec("k", 300, 310), rec(F, 0, 100), rec("k", 120, 140), rec(F, 200, 290)]
    assert kt.sample_times_us(kt.split_samples(records, 2)) == [0.02, 0.01]


@pytest.mark.parametrize("records, n, message", [
    ([rec("other", 0, 5), rec(F, 10, 20), rec("k", 30, 40)], 1, "GPU work before the first flush: 'other'"),
    ([rec(F, 0, 10), rec("k", 20, 30)], 2, "the trace holds 1 flushes for 2 samples"),
    ([rec(F, 0, 10), rec("k", 20, 30), rec(F, 40, 50)], 2, "1 of 2 samples hold no kernel"),
])
def test_bad_traces_are_refused(records, n, message):
    with pytest.raises(TimerError, match=message):
        kt.split_samples(records, n)


def test_samples_must_launch_the_same_kernels():
    samples = kt.split_samples([rec(F, 0, 1), rec("a", 2, 3), rec(F, 4, 5), rec("b", 6, 7)], 2)
    with pytest.raises(TimerError, match=r"samples launched different kernels: sample 0 \['a'\], sample 1 \['b'\]"):
        kt.kernel_names(samples)


def test_sample_count_from_the_budget():
    assert kt.samples_for(100.0, 100, 25, 1000) == 1000         # 100 ms / 100 us
    assert kt.samples_for(10_000.0, 100, 25, 1000) == 25        # a slow kernel still gets the minimum
    assert kt.samples_for(0.01, 100, 25, 1000) == 1000
    with pytest.raises(ValueError, match="min_samples <= max_samples"):
        kt.samples_for(1.0, 100, 50, 10)
