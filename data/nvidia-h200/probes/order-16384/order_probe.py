"""Order probe at N = 16384 (headline layout, causal): v31 and v32 run the same kernel there, yet run-31's N sweep
timed v32 2.6-4.4% faster in all four pairs of repeats. Here cuDNN, v31 and v32 are timed in alternating orders
(round r even: cudnn, v31, v32; odd: v32, v31, cudnn), each entry by pipeline.kernel_timer.measure (L2 flushed
before each sample) inside a pipeline.gpu_state.Sampler window (SM clock, power, energy)."""
import csv, sys, time
import torch
from kernels import attention
from kernels.references import sdpa
from pipeline import kernel_timer, gpu_state

out_csv = sys.argv[1]
rounds, samples = int(sys.argv[2]), int(sys.argv[3])
gpu = gpu_state.this_gpu()
rows = []
B, H, H_kv, N, D = 2, 16, 8, 16384, 128
for dtype in (torch.bfloat16, torch.float16):
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(B, H, N, D, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(B, H_kv, N, D, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(B, H_kv, N, D, device="cuda", dtype=dtype, generator=g)
    o = torch.empty_like(q)
    fns = {"torch-cudnn": lambda: sdpa(q, k, v, causal=True, impl="torch-cudnn"),
           "v31": lambda: attention(q, k, v, causal=True, stage="v31", out=o),
           "v32": lambda: attention(q, k, v, causal=True, stage="v32", out=o)}
    for f in fns.values():
        f()
    torch.cuda.synchronize()
    for r in range(rounds):
        order = ["torch-cudnn", "v31", "v32"] if r % 2 == 0 else ["v32", "v31", "torch-cudnn"]
        for pos, name in enumerate(order):
            w = gpu_state.Sampler(gpu, 5, sync=torch.cuda.synchronize)
            m = kernel_timer.measure(fns[name], samples, warmup=2, window=w)
            st = gpu_state.summarize(w.readings)
            rows.append(dict(dtype=str(dtype).removeprefix("torch."), round=r, position=pos, variant=name,
                             time_us=m["time_us"], min_us=m["min_us"], max_us=m["max_us"],
                             kernels_us=m["kernels_us"], n=samples, seconds=w.seconds,
                             energy_mj=w.after["energy_mj"] - w.before["energy_mj"], temp_c=w.after["temp_c"],
                             uuid=w.after["uuid"], **{f"state_{a}": b for a, b in st.items()}))
            print(rows[-1]["dtype"], r, pos, name, round(m["kernels_us"], 1), st, flush=True)
with open(out_csv, "w", newline="") as f:
    wr = csv.DictWriter(f, fieldnames=list(rows[0]))
    wr.writeheader(); wr.writerows(rows)
