"""The checked and the timed call of one measurement entry (pipeline.plan.Entry): the bench, timer-check and profile
steps all call an entry through here, and this is the only caller of the kernel timer.

- `check(entry, seed)`: fresh random inputs from the seed, the output poisoned, the call run twice (the first checks,
  compiles and caches; the second is the cached launch that is timed) and judged against the float64 reference,
  within twice PyTorch's default SDPA's own error on the same inputs (kernels.accuracy). A variant Triton refuses, or a PyTorch backend that cannot take the input, is a status, never
  an exception.
- `time_call(calls, bench)`: the kernel time of a checked entry (pipeline.kernel_timer), its sample count sized from
  a quick event-timed estimate and the plan's budget.
- `kernel_time(fn, n_samples)`: the kernel timer on any callable (the timer check times a call behind a host sleep).
- `host_time_us(fn, calls, loops)`: the host time of one plain call.
"""
from __future__ import annotations

import statistics
import time

from kernels.stages import BASELINE, STAGES

from . import kernel_timer


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


def time_call(calls, bench: dict) -> dict:
    """The kernel time of one checked entry, its samples sized from a quick event-timed estimate (plan.bench: the
    budget rep_ms, the bounds min_samples and max_samples, the flush's own time flush_us)."""
    from triton.testing import do_bench

    checked, _ = calls
    estimate_us = do_bench(checked, warmup=1, rep=5, return_mode="median") * 1e3
    n = kernel_timer.samples_for(estimate_us + bench["flush_us"], bench["rep_ms"], bench["min_samples"],
                                 bench["max_samples"])
    return kernel_time(checked, n)


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
