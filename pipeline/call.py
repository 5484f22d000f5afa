"""The checked and the timed call of one measurement entry (pipeline.plan.Entry): the bench, timer-check and profile
steps all call an entry through here, and this is the only caller of the kernel timer.

- `check(entry, seed)`: fresh random inputs from the seed, the output poisoned, the call run twice (the first checks,
  compiles and caches; the second is the cached launch that is timed) and judged against the float64 reference,
  within twice PyTorch's default SDPA's own error on the same inputs (kernels.accuracy). A variant Triton refuses, or a PyTorch backend that cannot take the input, is a status, never
  an exception.
- `time_call(calls, bench)`: the kernel time of a checked entry (pipeline.kernel_timer), its sample count sized from
  a quick event-timed estimate and the plan's budget, with the GPU's state over the timed samples
  (pipeline.gpu_state: SM clock, power, clock event reasons, temperature, energy per call, UUID).
- `settle_call(calls, bench)`: the settle step (pipeline.settle) on a checked entry: run it until the SM clock
  stops falling.
- `preroll_call(calls, bench)`: the pre-roll (pipeline.settle) on a checked entry: run it back to back for
  preroll_ms right before its kernel time, so that its samples start in the GPU's loaded state.
- `steady_call(calls, bench, call_us)`: the steady step (pipeline.steady_energy) on a timed entry: its mean power
  and energy per call from NVML's energy counter over back-to-back calls.
- `kernel_time(fn, n_samples)`: the kernel timer on any callable (the timer check times a call behind a host sleep).
- `timed_with_state(fn, n_samples, gpu, interval_ms, n_flushes)`: the kernel timer with the GPU state sampler around
  its samples, then flushes alone, one flush's energy taken off each call's.
- `host_time_us(fn, calls, loops)`: the host time of one plain call.
"""
from __future__ import annotations

import statistics
import time

from kernels.stages import BASELINE, STAGES

from . import gpu_state, kernel_timer, settle, steady_energy


def inputs(entry, seed: int):
    """q, k, v of the entry's shape on the GPU, standard normal from the seed."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    return entry.shape.tensors(device="cuda", generator=g)


def make_call(entry, q, k, v):
    """(checked, out, plain): checked() writes the entry's output into out (Triton) or returns it (PyTorch, out is
    None); plain() is the call as a user writes it, returning a new output."""
    from kernels import attention, sdpa
    from kernels.accuracy import poisoned_like

    causal = entry.shape.causal
    if entry.impl == "triton":
        t = entry.tile
        how = ({"stage": entry.variant} if entry.variant in STAGES else {"switches": entry.switches})
        if t != STAGES.get(entry.variant, STAGES[BASELINE]).tile:
            how.update(block_m=t.block_m, block_n=t.block_n, num_warps=t.num_warps, num_stages=t.num_stages)
        out = poisoned_like(q)
        return (lambda: attention(q, k, v, causal=causal, out=out, **how)), out, \
            (lambda: attention(q, k, v, causal=causal, **how))
    plain = (lambda: sdpa(q, k, v, causal=causal, impl=entry.impl))
    return plain, None, plain


def check(entry, seed: int) -> tuple:
    """Run once on fresh inputs and judge; returns (status, rel_error, note, calls) with calls = (checked, plain)
    ready to time (None unless the status is ok)."""
    import torch

    from kernels import TileNotSupportedError, reference_attention, sdpa
    from kernels.accuracy import judge

    q, k, v = inputs(entry, seed)
    try:
        checked, out, plain = make_call(entry, q, k, v)
        checked()                      # the first call checks, compiles (or loads) and caches
        torch.cuda.synchronize()
        if out is not None:
            out.fill_(float("nan"))    # poisoned again: the cached launch, which is timed, is the one judged
        res = checked()
        torch.cuda.synchronize()
    except TileNotSupportedError as err:
        return "refused", None, str(err), None
    except RuntimeError as err:  # e.g. a PyTorch backend that cannot take this input
        return "failed", None, f"{type(err).__name__}: {str(err).splitlines()[0]}", None
    causal = entry.shape.causal
    pytorch = sdpa(q, k, v, causal=causal) if entry.impl == "triton" else None   # a backend is judged on its own
    verdict = judge(out if out is not None else res, reference_attention(q, k, v, causal=causal), pytorch)
    return ("ok" if verdict["ok"] else "WRONG"), verdict["rel_error"], "", (checked, plain)


def kernel_time(fn, n_samples: int) -> dict:
    """The kernel timer's statistics of fn's GPU work over n_samples samples, the L2 flushed before each, with the
    name of the method in `timer`."""
    return {**kernel_timer.measure(fn, n_samples), "timer": kernel_timer.TIMER}


def timed_with_state(fn, n_samples: int, gpu, interval_ms: float, n_flushes: int | None = None, *, flush=None,
                     sync=None, recorder=kernel_timer.cupti_recorder, clock=time.perf_counter) -> dict:
    """kernel_time's statistics with gpu_state.STATE_COLUMNS beside them, and each sample's SM clock (sample_mhz,
    ';'-joined: gpu_state.sample_mhz). The sampler (readings every interval_ms)
    spans the timer's n_samples samples, each a flush and a call; then n_flushes flushes alone (n_samples if not
    given) run under a second sampler, and one flush's energy is taken off each call's: energy_mj is the energy of
    one call without its flush (gpu_state.state_row). flush and sync default to the L2 flush kernel and
    torch.cuda.synchronize, clock (the windows' wall time) to time.perf_counter; the tests give fakes."""
    if flush is None:
        from .l2_flush import l2_flush
        flush = l2_flush()
    if sync is None:
        import torch
        sync = torch.cuda.synchronize
    n_flushes = n_samples if n_flushes is None else n_flushes
    window = gpu_state.Sampler(gpu, interval_ms, sync, clock)
    stats = kernel_timer.measure(fn, n_samples, flush=flush, recorder=recorder, window=window)
    series = {c: stats[c] for c in ("sample_times", "sample_starts")}
    series["sample_mhz"] = gpu_state.sample_mhz(window.readings, window.t0, series["sample_starts"],
                                                series["sample_times"])
    with gpu_state.Sampler(gpu, interval_ms, sync, clock) as flushes:
        for _ in range(n_flushes):
            flush()
    return {**stats, "timer": kernel_timer.TIMER, **kernel_timer.joined(series),
            **gpu_state.state_row(window, flushes, n_samples, n_flushes)}


def state_gpu():
    """This process's GPU as NVML reads it (gpu_state.this_gpu), checked to be the GPU torch runs on: NVML's
    indices follow the PCI bus, CUDA's its own order unless CUDA_DEVICE_ORDER=PCI_BUS_ID."""
    import torch

    gpu = gpu_state.this_gpu()
    cuda_uuid = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "uuid", None)
    if cuda_uuid is not None and not gpu_state.same_gpu(gpu.uuid, cuda_uuid):
        raise gpu_state.GpuStateError(f"NVML reads GPU {gpu.uuid} but torch runs on GPU-{cuda_uuid}: set "
                                      f"CUDA_DEVICE_ORDER=PCI_BUS_ID, or CUDA_VISIBLE_DEVICES to the GPU's UUID")
    return gpu


def time_call(calls, bench: dict) -> dict:
    """The kernel time of one checked entry, its samples sized from a quick event-timed estimate (plan.bench: the
    budget rep_ms, the bounds min_samples and max_samples, the flush's own time flush_us), with the GPU's state
    over the timed samples (readings every state_interval_ms; timed_with_state)."""
    from triton.testing import do_bench

    checked, _ = calls
    gpu = state_gpu()                 # before any timing: no NVML, no row
    estimate_us = do_bench(checked, warmup=1, rep=5, return_mode="median") * 1e3
    n = kernel_timer.samples_for(estimate_us + bench["flush_us"], bench["rep_ms"], bench["min_samples"],
                                 bench["max_samples"])
    # the flushes alone: at least as many as the samples, and as many as fill the budget rep_ms, so that the energy
    # counter's resolution weighs on the flush's energy no more than on the window's
    n_flushes = max(n, int(bench["rep_ms"] * 1e3 / max(bench["flush_us"], 1.0)))
    return timed_with_state(checked, n, gpu, bench["state_interval_ms"], n_flushes)


def back_to_back(fn, gpu, interval_ms: float, ms: float) -> tuple:
    """fn run back to back, synchronized after each call (so that the wall time is the GPU's, not a queue's), for ms
    of wall time, the GPU state sampler reading every interval_ms: the wall time it ran (ms) and the median SM clock
    over it (MHz). The settle step's windows and the pre-roll."""
    import torch

    with gpu_state.Sampler(gpu, interval_ms, torch.cuda.synchronize) as s:
        t0 = time.perf_counter()
        end = t0 + ms / 1e3
        while time.perf_counter() < end:
            fn()
            torch.cuda.synchronize()
        ran_ms = (time.perf_counter() - t0) * 1e3
    return ran_ms, gpu_state.summarize(s.readings)["sm_mhz"]


def settle_call(calls, bench: dict) -> dict:
    """The settle step (pipeline.settle) on one checked entry: the call run back to back, synchronized after each
    call, in windows of settle_window_ms whose median SM clock the GPU state sampler reads, until it stops falling
    (settle_tol_pct) or settle_max_s. Returns settle.COLUMNS."""
    checked, _ = calls
    gpu = state_gpu()

    def run_window(ms: float) -> float:
        return back_to_back(checked, gpu, bench["state_interval_ms"], ms)[1]

    return settle.settle(run_window, bench["settle_window_ms"], bench["settle_tol_pct"], bench["settle_max_s"])


def preroll_call(calls, bench: dict) -> dict:
    """The pre-roll (pipeline.settle.needs_preroll) on one checked entry: the call back to back (`back_to_back`) for
    preroll_ms. Returns the wall time it ran (preroll_ms) and the median SM clock over it (preroll_mhz)."""
    checked, _ = calls
    ran_ms, mhz = back_to_back(checked, state_gpu(), bench["state_interval_ms"], bench["preroll_ms"])
    return dict(preroll_ms=ran_ms, preroll_mhz=mhz)


def host_time_us(fn, calls: int, loops: int) -> float:
    """Host time of one call: a loop of `calls` calls with no synchronization inside, its wall time over calls;
    the median of `loops` loops. The GPU is idle at each loop's start, so that no call waits for it."""
    import torch

    per_call = []
    for _ in range(loops):
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        per_call.append((time.perf_counter_ns() - t0) / calls / 1e3)
    torch.cuda.synchronize()
    return statistics.median(per_call)


def steady_call(calls, bench: dict, call_us: float) -> dict:
    """The steady step (pipeline.steady_energy) on one checked, timed entry: the call back to back in chunks of at
    least steady_chunk_ms of GPU time (call_us each, the timer's median), NVML's energy counter read between two of
    its updates at least steady_s apart. Returns steady_energy.COLUMNS."""
    import torch

    checked, _ = calls
    gpu = state_gpu()
    n = steady_energy.chunk_calls(call_us, bench["steady_chunk_ms"])
    events = []

    def launch():
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(n):
            checked()
        end.record()
        events.append((begin, end))
        return end

    def read() -> dict:
        r = gpu.read()
        return {**r, "capped": gpu_state.is_power_capped(r["throttle"])}

    result = steady_energy.measure(launch, lambda end: end.query(), read, bench["steady_s"])
    torch.cuda.synchronize()
    per_call_us = sum(b.elapsed_time(e) for b, e in events) * 1e3 / (n * len(events))
    return steady_energy.row(result, per_call_us)
