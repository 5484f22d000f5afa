"""A stream of back-to-back calls of one entry at the headline layout (B = 2, H = 16, H_kv = 8, D = 128, causal), for
Nsight Compute to profile a few launches deep in it (--launch-skip), with the clocks as found: the SM clock a kernel
ran at under load, by Nsight's own count of elapsed cycles over its duration (sm__cycles_elapsed.avg.per_second),
beside the clock NVML reports (cap_clock.sh, probes/cap-clock). A synchronize every --sync calls keeps the host's
queue short; the stream's own time per call (CUDA events over the whole stream) is printed at the end.

    ncu --clock-control none --cache-control none --launch-skip 300 --launch-count 3 -k regex:'attn_fwd|cudnn' \
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second python cap_stream.py v36 float16 16384 320
"""
import argparse

import torch

from kernels import attention
from kernels.references import sdpa

ap = argparse.ArgumentParser()
ap.add_argument("entry", help="a stage (v36) or a PyTorch backend (torch-cudnn)")
ap.add_argument("dtype", choices=["float16", "bfloat16"])
ap.add_argument("N", type=int)
ap.add_argument("calls", type=int)
ap.add_argument("--sync", type=int, default=50)
a = ap.parse_args()
B, H, H_kv, D = 2, 16, 8, 128
dtype = getattr(torch, a.dtype)
g = torch.Generator(device="cuda").manual_seed(a.N)
q = torch.randn(B, H, a.N, D, device="cuda", dtype=dtype, generator=g)
k = torch.randn(B, H_kv, a.N, D, device="cuda", dtype=dtype, generator=g)
v = torch.randn(B, H_kv, a.N, D, device="cuda", dtype=dtype, generator=g)
o = torch.empty_like(q)
if a.entry.startswith("torch-"):
    def call():
        sdpa(q, k, v, causal=True, impl=a.entry)
else:
    def call():
        attention(q, k, v, causal=True, stage=a.entry, out=o)
b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
b.record()
for i in range(a.calls):
    call()
    if (i + 1) % a.sync == 0:
        torch.cuda.synchronize()
e.record()
torch.cuda.synchronize()
print(f"cap_stream {a.entry} {a.dtype} N={a.N}: {a.calls} calls, {b.elapsed_time(e) * 1e3 / a.calls:.1f} us per call")
