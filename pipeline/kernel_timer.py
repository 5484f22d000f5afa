"""Kernel timer: the time the GPU spends in the kernels that a callable launches, from the GPU's own timestamps.

One sample is: our flush kernel (`_l2_flush`, which writes FLUSH_BYTES and so evicts the whole L2), then the
callable. All samples of a measurement run inside one `torch.profiler` session that records CUDA activity only:
CUPTI's start and end timestamps of every kernel (and memset or copy), taken on the GPU. The trace is cut into
samples at each flush kernel; a sample's time is the sum of the durations of the GPU work that follows its flush, up
to the next (`kernels_us` counts the kernels alone, as Nsight Compute does). Host time
(Python, input checks, the launch itself, a sleep) passes between kernels and is in no kernel's duration, so it
cannot enter; gaps between two kernels of one callable do not enter either. This is the quantity Nsight Compute
reports as gpu__time_duration, which the pipeline compares against it (aggregate.py, `crosscheck`).

The arithmetic (cutting a trace into samples, the statistics) is separate from the recording, so that the tests
check it with a fake GPU clock (tests/test_kernel_timer.py); `cupti_recorder` is the real one.

    from pipeline.kernel_timer import measure
    stats = measure(lambda: attention(q, k, v, out=out), n_samples=200)   # stats["time_us"]: median
"""
from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

FLUSH_KERNEL = "_l2_flush"   # pipeline.l2_flush's kernel: the trace is cut at its launches
TIMER = "cupti-kernel-sum"  # how time_us was measured, as recorded in every row
# a timed row's series of its samples, each ';'-joined: sample_series's two and each sample's SM clock (added by
# pipeline.call.timed_with_state, from pipeline.gpu_state.sample_mhz)
SAMPLE_COLUMNS = ["sample_times", "sample_starts", "sample_mhz"]
SAMPLE_DECIMALS = {"sample_times": 3, "sample_starts": 1, "sample_mhz": 0}     # joined's, per column


@dataclass(frozen=True)
class KernelRecord:
    """One kernel (or other GPU activity) as the GPU's clock saw it."""

    name: str
    start_ns: int
    end_ns: int

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


class TimerError(RuntimeError):
    """The trace cannot be read as the samples that were asked for."""


def split_samples(records: Sequence[KernelRecord], n_samples: int, flush_name: str = FLUSH_KERNEL) -> list:
    """The records after each flush kernel, one list per sample, in the GPU's order.

    Raises TimerError if the trace does not hold exactly n_samples flushes, if GPU work precedes the first flush
    (something else ran in the window), or if a sample holds no kernel (the callable launched nothing)."""
    records = sorted(records, key=lambda r: (r.start_ns, r.end_ns))
    samples: list = []
    for r in records:
        if r.name == flush_name:
            samples.append([])
        elif not samples:
            raise TimerError(f"GPU work before the first flush: {r.name!r}; nothing else may run in the window")
        else:
            samples[-1].append(r)
    if len(samples) != n_samples:
        raise TimerError(f"the trace holds {len(samples)} flushes for {n_samples} samples: records were lost "
                         f"(CUPTI's buffer?) or another flush ran")
    empty = sum(not s for s in samples)
    if empty:
        raise TimerError(f"{empty} of {n_samples} samples hold no kernel: the callable launched no GPU work")
    return samples


def kernel_names(samples: list) -> tuple:
    """The kernels of one sample, in order; raises if the samples did not all launch the same kernels."""
    names = [tuple(r.name for r in s) for s in samples]
    first = names[0]
    odd = [i for i, n in enumerate(names) if n != first]
    if odd:
        raise TimerError(f"samples launched different kernels: sample 0 {list(first)}, sample {odd[0]} "
                         f"{list(names[odd[0]])} ({len(odd)} of {len(names)} differ)")
    return first


def is_kernel_name(name: str) -> bool:
    """A kernel's name, as opposed to a memset's or memcopy's (CUPTI's names for those)."""
    return not name.startswith(("Memset", "Memcpy"))


def is_kernel(record: KernelRecord) -> bool:
    """A kernel, as opposed to a memset or memcopy the call also put on the GPU."""
    return is_kernel_name(record.name)


def sample_times_us(samples: list, only=lambda r: True) -> list:
    """Each sample's time: the sum of the durations of its records (those `only` keeps), in microseconds."""
    return [sum(r.duration_ns for r in s if only(r)) / 1e3 for s in samples]


def sample_series(samples: list) -> dict:
    """The samples themselves, in the GPU's order: sample_times, each sample's time (us, all its GPU work, as
    time_us's statistics take it) and sample_starts, when it began (us after the first sample began, by the GPU's
    clock). A median hides their distribution: at the power cap an entry's samples fall in two groups, the clock's
    states, and the median lands in either (the paper's run-35)."""
    t0 = samples[0][0].start_ns
    return dict(sample_times=sample_times_us(samples), sample_starts=[(s[0].start_ns - t0) / 1e3 for s in samples])


def joined(series: dict) -> dict:
    """SAMPLE_COLUMNS' series (lists of numbers) as a row holds them: each joined by ';', at its column's decimals."""
    return {c: ";".join(f"{x:.{SAMPLE_DECIMALS[c]}f}" for x in xs) for c, xs in series.items()}


def summarize(us: Sequence[float]) -> dict:
    """Median (time_us), quartiles, extremes, mean and count of the sample times."""
    us = sorted(us)
    if not us:
        raise TimerError("no samples")
    q = statistics.quantiles(us, n=4) if len(us) > 1 else [us[0]] * 3
    return dict(time_us=statistics.median(us), min_us=us[0], q25_us=q[0], q75_us=q[2], max_us=us[-1],
                mean_us=statistics.fmean(us), n_samples=len(us))


def samples_for(estimate_us: float, budget_ms: float, min_samples: int, max_samples: int) -> int:
    """How many samples fit the time budget at about estimate_us each (flush included), within the bounds."""
    if min_samples < 1 or max_samples < min_samples:
        raise ValueError(f"need 1 <= min_samples <= max_samples, got {min_samples}, {max_samples}")
    n = int(budget_ms * 1e3 / max(estimate_us, 1e-3))
    return max(min_samples, min(max_samples, n))


# ---------------------------------------------------------------------------------------------------------------
# The GPU side (pipeline.l2_flush holds the flush kernel; importing this module loads neither Triton nor torch)
# ---------------------------------------------------------------------------------------------------------------
def cupti_recorder(run: Callable[[], None]) -> list:
    """Run `run` inside a torch.profiler session recording CUDA activity only; every GPU activity as a record."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    records = [KernelRecord(e.name, round(e.time_range.start * 1e3), round(e.time_range.end * 1e3))
               for e in prof.events() if e.device_type == DeviceType.CUDA]
    if not records:
        raise TimerError("the profiler recorded no GPU activity: CUPTI is not working here (is libcupti found?)")
    return records


def measure(fn: Callable[[], object], n_samples: int, *, warmup: int = 3, flush: Callable[[], object] | None = None,
            recorder: Callable[[Callable[[], None]], list] = cupti_recorder, window=None) -> dict:
    """Time the GPU work of fn over n_samples samples, the L2 flushed before each. Returns summarize()'s statistics
    of all the GPU work of a sample (kernels, and the memsets or copies the call makes), plus `kernels_us` (the
    median of the kernels alone: what Nsight Compute profiles), `kernels` (the names of one sample's records,
    joined by ';'), `n_kernels` (how many of them are kernels) and the samples themselves (sample_series).

    `window`, if given, is a context manager entered just before the first timed sample is launched and left after
    the last (inside the recording, after the warm-up): pipeline.gpu_state's sampler, which reads the GPU's clock,
    power and energy over exactly the timed samples."""
    if flush is None:
        from .l2_flush import l2_flush
        flush = l2_flush()
    for _ in range(warmup):
        flush()
        fn()

    def run():
        with window if window is not None else contextlib.nullcontext():
            for _ in range(n_samples):
                flush()
                fn()

    samples = split_samples(recorder(run), n_samples)
    names = kernel_names(samples)
    return {**summarize(sample_times_us(samples)),
            "kernels_us": statistics.median(sample_times_us(samples, only=is_kernel)),
            "kernels": ";".join(names), "n_kernels": sum(is_kernel(r) for r in samples[0]), **sample_series(samples)}
