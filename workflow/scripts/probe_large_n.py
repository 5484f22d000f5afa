"""A probe Nsight Compute profiles: our last stage and cuDNN's attention at the headline layout with a long sequence
(default N = 16384), each warmed up, then launched once inside the profiler window. Used to see what holds our
kernel behind cuDNN where the loop dominates (the pipeline's profile step runs at the headline N only).

    ncu --profile-from-start off --clock-control none --csv --page raw --metrics ... \\
        python workflow/scripts/probe_large_n.py --N 16384
"""
from __future__ import annotations

import argparse
import sys


def main() -> int:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import kernels
    from kernels.shapes import HEADLINE, Shape
    from kernels.stages import LAST

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--N", type=int, default=16384)
    a = ap.parse_args()
    s = Shape(**{**HEADLINE.as_dict(), "N": a.N})
    q, k, v = s.tensors(device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
    ours = lambda: kernels.attention(q, k, v, causal=True, stage=LAST)  # noqa: E731

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    for name, fn in ((LAST, ours), ("torch-cudnn", cudnn)):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print(f"probe: {name} at N={a.N} profiled", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
