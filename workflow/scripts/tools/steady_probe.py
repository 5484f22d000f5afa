"""Steady-state probe: each entry (stages and torch-cudnn) at the headline layout (B = 2, H = 16, H_kv = 8, D = 128,
causal) called back to back for at least --seconds, NVML's energy counter read between two of its updates
(pipeline.steady_energy.measure, as the bench's steady step), in rounds whose order reverses every second round;
per row the GPU's time per call over the loop (CUDA events around each chunk), the counter's mean power, the median
SM clock and the energy of one call, and over the NVML readings of its measure the highest temperature (C) and
every clock event reason any of them gave (NVML's bitmask, ORed: where the clock falls without the power cap's flag,
probes/steady-goal at 16384, which reason held it). A cut run keeps every (N, dtype) it finished. On an H100 the measure's own checks
refused the spans at short lengths (probes/steady-goal's README): at N = 2048 chunks of 20 ms ran dry between the
host's readings and chunks of 100 ms made the readings too slow, --chunk-ms 40 with --seconds 2.5 passed, and at
1024 those chunks ran dry again.
Probes q-regs-steady and steady-goal (data/nvidia-h100-80gb-hbm3/probes) hold the copies that made their data.

    PYTHONPATH=. python workflow/scripts/tools/steady_probe.py OUT.csv --entries torch-cudnn v36 v37 --N 16384 8192 \
        --rounds 6 --seconds 1.5
"""
import argparse, csv
import torch
from kernels import attention
from kernels.references import sdpa
from pipeline import gpu_state, steady_energy

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--entries", nargs="+", required=True)
ap.add_argument("--N", nargs="+", type=int, required=True)
ap.add_argument("--dtypes", nargs="+", default=["float16", "bfloat16"])
ap.add_argument("--rounds", type=int, default=4)
ap.add_argument("--seconds", type=float, default=1.0)
ap.add_argument("--chunk-ms", type=float, default=20.0)
a = ap.parse_args()
gpu = gpu_state.this_gpu()
rows = []
B, H, H_kv, D = 2, 16, 8, 128
for n in a.N:
    for dt in a.dtypes:
        dtype = getattr(torch, dt)
        g = torch.Generator(device="cuda").manual_seed(n)
        q = torch.randn(B, H, n, D, device="cuda", dtype=dtype, generator=g)
        k = torch.randn(B, H_kv, n, D, device="cuda", dtype=dtype, generator=g)
        v = torch.randn(B, H_kv, n, D, device="cuda", dtype=dtype, generator=g)
        o = torch.empty_like(q)

        def fn(name):
            if name.startswith("torch-"):
                return lambda: sdpa(q, k, v, causal=True, impl=name)
            return lambda: attention(q, k, v, causal=True, stage=name, out=o)
        fns = {e: fn(e) for e in a.entries}
        call_us = {}
        for e, f in fns.items():
            f()
            torch.cuda.synchronize()
            b, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            b.record(); f(); en.record(); torch.cuda.synchronize()
            call_us[e] = b.elapsed_time(en) * 1e3
        for r in range(a.rounds):
            order = list(a.entries) if r % 2 == 0 else list(reversed(a.entries))
            for pos, name in enumerate(order):
                f = fns[name]
                nc = steady_energy.chunk_calls(call_us[name], a.chunk_ms)
                events = []

                def launch():
                    b, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    b.record()
                    for _ in range(nc):
                        f()
                    en.record()
                    events.append((b, en))
                    return en

                readings = []

                def read():
                    x = gpu.read()
                    readings.append(x)
                    return {**x, "capped": gpu_state.is_power_capped(x["throttle"])}
                res = steady_energy.measure(launch, lambda en: en.query(), read, a.seconds)
                throttle = 0
                for x in readings:
                    throttle |= int(x["throttle"])
                torch.cuda.synchronize()
                per_call = sum(b.elapsed_time(en) for b, en in events) * 1e3 / (nc * len(events))
                rows.append(dict(N=n, dtype=dt, round=r, position=pos, variant=name, chunks=len(events),
                                 calls_per_chunk=nc, uuid=gpu.read().get("uuid", ""),
                                 **steady_energy.row(res, per_call),
                                 temp_c_max=max(x["temp_c"] for x in readings), throttle_any=hex(throttle)))
                print(n, dt, r, name, round(per_call, 1), "us", round(res["power_w"], 1), "W",
                      res["sm_mhz"], "MHz", flush=True)
        with open(a.out, "w", newline="") as fh:       # after each (N, dtype): a cut run keeps what it measured
            wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
            wr.writeheader(); wr.writerows(rows)
