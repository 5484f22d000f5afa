"""The host time of a plain call of every stage, under each way of launching its host TMA descriptors, on a GPU and
outside the pipeline: the measurement that chose the launch path (the pipeline's bench step then reports host_us
for every entry it times). At the headline layout and the N given, for each stage:

- `triton`: Triton's Python launcher for a stage with host descriptors (v11 on, and the Gluon stages), which makes
  the descriptors and expands them on every call: the launch path before the direct one covered them;
- `fill`: the direct call of Triton's C launcher, every descriptor filled anew on every call (Triton's own C
  helper, fill_tma_descriptor): the cost of a call whose tensors are at addresses not seen before;
- `cache` (what `kernels.attention` does): the direct call, a filled descriptor reused for an address seen before
  (kernels.launcher.DescriptorArgs);
- and PyTorch's SDPA (default backend, and cuDNN's) for scale.

Each is timed as the bench step times host_us (pipeline.call.host_time_us with the plan's host settings). Before it
is timed, every path's output on fresh tensors (new addresses each call, so that `cache` fills as well as reuses) is
compared with the `triton` path's, bit for bit.

    python workflow/scripts/tools/host_cost.py --config config/config.yaml --out results/host_cost.csv
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from kernels.shapes import HEADLINE, Shape
from kernels.stages import STAGES

from pipeline import gpu_env, plan
from pipeline.call import host_time_us

COLUMNS = ["variant", "N", "dtype", "path", "direct", "host_descriptors", "same_as_triton", "host_us", "host_calls",
           "host_loops", "note"]
PATHS = ("triton", "fill", "cache")


def _set_path(path: str, launcher, real_direct, default_size: int) -> None:
    """Make kernels.launcher take one of the three paths for stages with host descriptors."""
    import torch

    def no_descriptors(kernel, tensors):
        return real_direct(kernel, tensors) if isinstance(tensors[0], torch.Tensor) else None

    launcher._direct_launcher = no_descriptors if path == "triton" else real_direct
    launcher.DESCRIPTOR_CACHE_SIZE = 0 if path == "fill" else default_size
    launcher.clear_cache()


def main(argv=None) -> int:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from kernels import attention, launcher

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the plan whose bench settings time the host loops")
    ap.add_argument("--stages", nargs="+", default=list(STAGES), choices=list(STAGES))
    ap.add_argument("--loops", type=int, help="host loops per measurement (default: the plan's host_loops)")
    ap.add_argument("--N", type=int, default=HEADLINE.N)
    ap.add_argument("--dtype", default=HEADLINE.dtype, choices=["float16", "bfloat16"])
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    bench = plan.load_config(a.config)["bench"]
    calls, loops = bench["host_max_calls"], a.loops or bench["host_loops"]
    shape = Shape(**{**HEADLINE.as_dict(), "N": a.N, "dtype": a.dtype})
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = shape.tensors(device="cuda", generator=g)
    real_direct, default_size = launcher._direct_launcher, launcher.DESCRIPTOR_CACHE_SIZE
    rows = []

    def row(variant, path, direct, descs, same, us, note=""):
        rows.append(dict(variant=variant, N=a.N, dtype=a.dtype, path=path, direct=direct, host_descriptors=descs,
                         same_as_triton=same, host_us=us, host_calls=calls, host_loops=loops, note=note))
        print(f"{variant:>6} {path:>7}: host {us:7.2f} us per call  direct={direct} same_as_triton={same}",
              file=sys.stderr, flush=True)

    try:
        for stage in a.stages:
            outs = {}
            for path in PATHS:
                _set_path(path, launcher, real_direct, default_size)
                try:
                    fresh = [tuple(t.clone() for t in (q, k, v)) for _ in range(3)]   # three sets of addresses
                    outs[path] = [attention(*t, causal=shape.causal, stage=stage) for t in fresh + fresh[:1]]
                except launcher.TileNotSupportedError as err:
                    row(stage, path, None, None, None, None, f"refused: {err}")
                    break
                plan_ = next(iter(launcher._PLANS.values()))
                direct = plan_.direct is not None
                descs = direct and plan_.direct[-1] is not None
                torch.cuda.synchronize()
                same = all(torch.equal(o, r) for o, r in zip(outs[path], outs["triton"]))
                us = host_time_us(lambda: attention(q, k, v, causal=shape.causal, stage=stage), calls, loops)
                row(stage, path, direct, descs, same, us)
                if path == "cache" and direct:      # where the cached call's time goes
                    out = torch.empty_like(q)
                    row(stage, "launch_only", direct, descs, None,
                        host_time_us(lambda: launcher.launch_direct(plan_, q, k, v, out), calls, loops),
                        "launcher.launch_direct into a preallocated output: Triton's C launcher and the driver")
                    row(stage, "signature_only", direct, descs, None,
                        host_time_us(lambda: launcher.signature(q, k, v, None, shape.causal, stage, None, None, {}),
                                     calls, loops), "launcher.signature: the cache key")
                    row(stage, "out_only", direct, descs, None,
                        host_time_us(lambda: torch.empty_like(q, memory_format=torch.contiguous_format), calls,
                                     loops), "torch.empty_like: the output's allocation")
                    row(stage, "cache_out_given", direct, descs, None,
                        host_time_us(lambda: attention(q, k, v, causal=shape.causal, stage=stage, out=out), calls,
                                     loops), "attention(..., out=a preallocated output)")
        _set_path("cache", launcher, real_direct, default_size)
        for name, backends in (("sdpa", None), ("cudnn", [SDPBackend.CUDNN_ATTENTION])):
            group = q.shape[1] // k.shape[1]

            def sdpa():
                if backends is None:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=shape.causal, enable_gqa=group > 1)
                with sdpa_kernel(backends):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=shape.causal, enable_gqa=group > 1)

            sdpa()
            row(name, "torch", None, None, None, host_time_us(sdpa, calls, loops))
    finally:
        launcher._direct_launcher, launcher.DESCRIPTOR_CACHE_SIZE = real_direct, default_size
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    gpu_env.write(a.out.with_suffix(".env.json"), {**gpu_env.collect(), "end": gpu_env.snapshot()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
