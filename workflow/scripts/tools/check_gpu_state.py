"""A few minutes' check, on one GPU and outside the pipeline, of what the GPU state beside every timed row rests on
(pipeline/gpu_state.py). Its numbers are not the paper's; they say whether the state columns can be trusted here:

1. the cost of NVML's readings: read_fast() (the sampler thread's) and read() (the full one), so the sampling rate
   the thread can reach;
2. the energy counter's resolution: polled as fast as possible while an entry runs back to back for --poll-s
   seconds: how often it changes and by how little (a timed window shorter than its update period cannot have an
   energy per call);
3. the sampler's effect on the kernel timer: the entry timed --pairs times with and without the sampler thread,
   interleaved, and the difference of the medians;
4. time_call's row (pipeline.call.time_call, as the bench records it) and the settle step for each entry.

    python workflow/scripts/tools/check_gpu_state.py --config config/config.yaml --out results/gpu_state.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from kernels.shapes import HEADLINE, Shape
from kernels.stages import STAGES, default_tile

from pipeline import gpu_state, kernel_timer, plan
from pipeline.call import check, settle_call, state_gpu, time_call, timed_with_state


def counter_steps(series: list) -> dict:
    """From (seconds, energy_mj) pairs polled in order: how many times the counter changed, the median and the
    largest time between changes (ms), and the smallest and the median increment (mJ)."""
    changes = [(t, e) for (t, e), (_, prev) in zip(series[1:], series[:-1]) if e != prev]
    times = [t for t, _ in changes]
    gaps = [1e3 * (b - a) for a, b in zip(times, times[1:])]
    increments = [b - a for (_, a), (_, b) in zip(series[:-1], series[1:]) if b != a]
    return dict(polls=len(series), changes=len(changes),
                median_update_ms=statistics.median(gaps) if gaps else None, max_update_ms=max(gaps, default=None),
                min_increment_mj=min(increments, default=None),
                median_increment_mj=statistics.median(increments) if increments else None)


def read_cost_us(read, n: int = 500) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        read()
    return (time.perf_counter() - t0) / n * 1e6


def poll_energy(gpu, fn, seconds: float) -> list:
    """Queue fn back to back for about `seconds` of GPU time, poll the energy counter until the GPU is done."""
    import torch

    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-5)
    done = torch.cuda.Event()
    for _ in range(max(1, min(5000, int(seconds / one)))):
        fn()
    done.record()
    series = []
    while not done.query():
        series.append((time.perf_counter(), gpu.nvml.nvmlDeviceGetTotalEnergyConsumption(gpu.handle)))
    torch.cuda.synchronize()
    return series


def entries(stage: str) -> list:
    """The stage and cuDNN at the headline shape, and cuDNN at N = 16384, where the H200 reaches its power limit."""
    long = Shape(**{**HEADLINE.as_dict(), "N": 16384})
    return [plan.Entry("check", "triton", stage, HEADLINE, default_tile(STAGES[stage].switches, HEADLINE.D, HEADLINE.N)),
            plan.Entry("check", "torch-cudnn", "torch-cudnn", HEADLINE),
            plan.Entry("check", "torch-cudnn", "torch-cudnn", long)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the plan whose bench settings time the calls")
    ap.add_argument("--out", type=Path, required=True, help="a JSON file of the findings")
    ap.add_argument("--poll-s", type=float, default=2.0)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--stage", default=list(STAGES)[-1], choices=list(STAGES))
    a = ap.parse_args(argv)
    from triton.testing import do_bench

    bench = plan.load_config(a.config)["bench"]
    gpu = state_gpu()
    out = {"gpu": gpu.describe(), "read_fast_us": read_cost_us(gpu.read_fast), "read_us": read_cost_us(gpu.read),
           "entries": []}
    print(json.dumps(out, indent=1), flush=True)
    for e in entries(a.stage):
        status, _, note, calls = check(e, seed=1234)
        if status != "ok":
            out["entries"].append({"key": e.key, "status": status, "note": note[:300]})
            continue
        checked = calls[0]
        found = {"key": e.key, "energy_counter": counter_steps(poll_energy(gpu, checked, a.poll_s))}
        estimate_us = do_bench(checked, warmup=1, rep=5, return_mode="median") * 1e3
        n = kernel_timer.samples_for(estimate_us + bench["flush_us"], bench["rep_ms"], bench["min_samples"],
                                     bench["max_samples"])
        plain, sampled = [], []
        for _ in range(a.pairs):
            plain.append(kernel_timer.measure(checked, n)["time_us"])
            sampled.append(timed_with_state(checked, n, gpu, bench["state_interval_ms"])["time_us"])
        found.update(plain_us=plain, sampled_us=sampled,
                     sampler_effect_pct=100 * (statistics.median(sampled) / statistics.median(plain) - 1),
                     settle=settle_call(calls, bench), row=time_call(calls, bench))
        found["readings_per_s"] = found["row"]["state_readings"] / (found["row"]["window_ms"] / 1e3)
        found["throttle_reasons"] = gpu_state.reason_names(int(found["row"]["throttle"], 16))
        out["entries"].append(found)
        print(json.dumps(found, indent=1, default=str), flush=True)
    a.out.write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
