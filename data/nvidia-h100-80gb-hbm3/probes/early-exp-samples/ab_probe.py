"""A/B timing probe: the given entries (stages and torch-cudnn) at the headline layout (B = 2, H = 16, H_kv = 8,
D = 128, causal), at each N and dtype, in rounds whose order reverses every second round. Each entry is
pipeline.kernel_timer.measure (the L2 flushed before each sample; kernels_us: the kernels alone) inside a
pipeline.gpu_state.Sampler window (SM clock, power, clock-event mask), with each sample's time, start and SM clock
(kernel_timer.SAMPLE_COLUMNS, gpu_state.sample_mhz), so that an entry's fastest samples and the clock of each can be
read (session 26: the version of probes/v34-check plus the sample series).

    python ab_probe.py OUT.csv --entries torch-cudnn v32 v33 --N 1024 16384 --rounds 6 --samples 40
"""
import argparse, csv
import torch
from kernels import attention
from kernels.references import sdpa
from pipeline import kernel_timer, gpu_state

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--entries", nargs="+", required=True)
ap.add_argument("--N", nargs="+", type=int, required=True)
ap.add_argument("--dtypes", nargs="+", default=["float16", "bfloat16"])
ap.add_argument("--rounds", type=int, default=6)
ap.add_argument("--samples", type=int, default=40)
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
        for f in fns.values():
            f()
        torch.cuda.synchronize()
        for r in range(a.rounds):
            order = list(a.entries) if r % 2 == 0 else list(reversed(a.entries))
            for pos, name in enumerate(order):
                w = gpu_state.Sampler(gpu, 5, sync=torch.cuda.synchronize)
                m = kernel_timer.measure(fns[name], a.samples, warmup=2, window=w)
                st = gpu_state.summarize(w.readings)
                mhz = gpu_state.sample_mhz(w.readings, w.t0, m["sample_starts"], m["sample_times"])
                series = kernel_timer.joined(dict(sample_times=m["sample_times"], sample_starts=m["sample_starts"],
                                                  sample_mhz=mhz))
                rows.append(dict(N=n, dtype=dt, round=r, position=pos, variant=name, kernels_us=m["kernels_us"],
                                 time_us=m["time_us"], min_us=m["min_us"], max_us=m["max_us"], n=a.samples,
                                 seconds=w.seconds, temp_c=w.after["temp_c"], uuid=w.after["uuid"],
                                 **{f"state_{x}": y for x, y in st.items()}, **series))
        med = {e: sorted(rr["kernels_us"] for rr in rows if rr["N"] == n and rr["dtype"] == dt and rr["variant"] == e)
               for e in a.entries}
        print(n, dt, {e: round(x[len(x) // 2], 2) for e, x in med.items()}, flush=True)
        with open(a.out, "w", newline="") as f:        # after each (N, dtype): a cut run keeps what it measured
            wr = csv.DictWriter(f, fieldnames=list(rows[0]))
            wr.writeheader(); wr.writerows(rows)
