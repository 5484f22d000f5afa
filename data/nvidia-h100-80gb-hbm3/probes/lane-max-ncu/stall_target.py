import torch, sys
from kernels import attention
from kernels.references import sdpa
B, H, Hk, N, D = 2, 16, 8, 16384, 128
g = torch.Generator(device="cuda").manual_seed(0)
q = torch.randn(B, H, N, D, device="cuda", dtype=torch.float16, generator=g)
k = torch.randn(B, Hk, N, D, device="cuda", dtype=torch.float16, generator=g)
v = torch.randn(B, Hk, N, D, device="cuda", dtype=torch.float16, generator=g)
o = torch.empty_like(q)
for name in sys.argv[1:]:
    f = (lambda: sdpa(q, k, v, causal=True, impl=name)) if name.startswith("torch-") else (lambda: attention(q, k, v, causal=True, stage=name, out=o))
    for _ in range(3): f()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(name); torch.cuda.profiler.start(); f(); torch.cuda.synchronize(); torch.cuda.profiler.stop(); torch.cuda.nvtx.range_pop()
