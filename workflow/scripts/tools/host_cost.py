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

Where a `cache` call's time goes (rows after each stage's `cache`, PARTS below): the C launcher alone
(`c_launch_only`: Triton's generated launcher and the driver, its arguments built once) and the Python around it
(`python_only`: the same cached call with the C launcher a no-op), which add up to `parts_sum` (compare it with
`cache`); within the Python, the key (`signature_only`), the output's allocation (`out_only`, with `empty_like_only`
beside it), and for a call given its output the alias check (`alias_only`) and the whole call (`cache_out_given`,
`python_out_given`).

`--quick` compiles every stage first in parallel processes (Triton's cache on disk then serves the timed process,
instead of one compile after another) and times each row in at most 3 loops: a look at where the time goes, meant to
take under 2 minutes for every stage on an H200 host; a sealed probe uses the plan's loops.

    python workflow/scripts/tools/host_cost.py --config config/config.yaml --out results/host_cost.csv
    python workflow/scripts/tools/host_cost.py --config config/config.yaml --quick --out results/host_cost_quick.csv
"""
from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

from kernels.shapes import HEADLINE, Shape
from kernels.stages import STAGES

from pipeline import gpu_env, plan
from pipeline.call import host_time_us

COLUMNS = ["variant", "N", "dtype", "path", "direct", "host_descriptors", "same_as_triton", "host_us", "host_calls",
           "host_loops", "note"]
PATHS = ("triton", "fill", "cache")
PARTS = {       # the rows that say where a `cache` call's time goes, and what each times
    "launch_only": "launcher.launch_direct into a preallocated output: the arguments' assembly, Triton's C "
                   "launcher and the driver",
    "c_launch_only": "Triton's C launcher alone, its arguments built once: the C launcher and the driver",
    "python_only": "attention(q, k, v) on the cached path with the C launcher a no-op (a Python function taking "
                   "*args): the call's Python",
    "parts_sum": "python_only + c_launch_only: compare with cache",
    "signature_only": "launcher.signature: the cache key (a call whose signature differs from the last one's)",
    "guard_only": "launcher._same_as_last: a repeated call's check of the last plan's guard, its pointers read",
    "out_only": "the cached path's allocation of the output (launcher.fast_empty, else torch.empty_like)",
    "empty_like_only": "torch.empty_like(q, contiguous_format), for comparison with out_only",
    "alias_only": "inputs.AliasCheck.check: a given output's alias check from the pointers",
    "cache_out_given": "attention(..., out=a preallocated output)",
    "python_out_given": "attention(..., out=...) on the cached path with the C launcher a no-op",
}
QUICK_LOOPS = 3


def _noop(*args):
    return None


def c_launch_args(launcher, plan, q, k, v, out) -> tuple:
    """(Triton's C launcher, its arguments) for the cached launch of a plan on these tensors, as
    launcher._launch_ptrs assembles them (a CPU test compares the two), so that the C launcher can be timed alone."""
    d = plan.direct
    ptrs = (q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr())
    scratch = None
    if d.scratch:
        import torch
        scratch = torch.empty(d.scratch, dtype=torch.uint8, device=launcher._get_device())
    kernel_args = (*ptrs, *d.rest) if d.descs is None else \
        (*(a for desc, p in zip(d.descs, ptrs) for a in desc.args(p)), *d.rest)
    return d.launch, (d.g0, d.g1, 1, launcher._current_stream(launcher._get_device()), d.function, d.coop, d.pdl,
                      scratch, None, d.packed, None, None, None, *kernel_args)


class NoopLauncher:
    """Within it, every cached plan's direct launch calls a no-op instead of Triton's C launcher (the Python part of
    a cached call, timed alone); the plans are restored on exit."""

    def __init__(self, launcher):
        self.launcher = launcher

    def __enter__(self):
        self.saved = [(p, p.direct) for p in self.launcher._PLANS.values() if p.direct is not None]
        for p, d in self.saved:
            p.direct = d._replace(launch=_noop)
        return self

    def __exit__(self, *exc):
        for p, d in self.saved:
            p.direct = d


def _compile_one(job) -> tuple:
    """In a worker process: one call of a stage at the probe's shape, so that Triton compiles it and writes its
    cache on disk (the timed process then loads it). Returns (stage, seconds, error or None)."""
    stage, shape = job
    t0 = time.perf_counter()
    try:
        import torch
        from kernels import attention
        q, k, v = Shape(**shape).tensors(device="cuda", fill="empty")
        attention(q, k, v, causal=shape["causal"], stage=stage)
        torch.cuda.synchronize()
        return stage, time.perf_counter() - t0, None
    except Exception as err:  # noqa: BLE001 (a refusal is the timed process's to report)
        return stage, time.perf_counter() - t0, f"{type(err).__name__}: {str(err).strip()[:200]}"


def precompile(stages, shape: Shape, workers: int) -> None:
    """Compile the stages in `workers` spawned processes at once (each compile is one CPU core's work)."""
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(workers) as pool:
        for stage, seconds, err in pool.imap_unordered(_compile_one, [(s, shape.as_dict()) for s in stages]):
            print(f"{stage:>6} compiled in {seconds:5.1f} s" + (f" ({err})" if err else ""), file=sys.stderr,
                  flush=True)
    print(f"compiled {len(stages)} stages in {time.perf_counter() - t0:.1f} s with {workers} workers",
          file=sys.stderr, flush=True)


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
    ap.add_argument("--quick", action="store_true",
                    help=f"compile the stages in parallel first and time at most {QUICK_LOOPS} loops per row")
    ap.add_argument("--workers", type=int, default=max(1, min(16, (os.cpu_count() or 2) - 1)),
                    help="processes that compile the stages with --quick")
    a = ap.parse_args(argv)
    bench = plan.load_config(a.config)["bench"]
    calls, loops = bench["host_max_calls"], a.loops or bench["host_loops"]
    if a.quick:
        loops = min(loops, QUICK_LOOPS)
    shape = Shape(**{**HEADLINE.as_dict(), "N": a.N, "dtype": a.dtype})
    if a.quick:
        precompile(a.stages, shape, min(a.workers, len(a.stages)))
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = shape.tensors(device="cuda", generator=g)
    real_direct, default_size = launcher._direct_launcher, launcher.DESCRIPTOR_CACHE_SIZE
    rows = []

    def row(variant, path, direct, descs, same, us, note=""):
        rows.append(dict(variant=variant, N=a.N, dtype=a.dtype, path=path, direct=direct, host_descriptors=descs,
                         same_as_triton=same, host_us=us, host_calls=calls, host_loops=loops, note=note))
        print(f"{variant:>6} {path:>7}: host {us:7.2f} us per call  direct={direct} same_as_triton={same}",
              file=sys.stderr, flush=True)

    def parts(stage, plan_) -> dict:
        t = {}
        out = torch.empty_like(q)
        t["launch_only"] = host_time_us(lambda: launcher.launch_direct(plan_, q, k, v, out), calls, loops)
        c_launch, c_args = c_launch_args(launcher, plan_, q, k, v, out)
        t["c_launch_only"] = host_time_us(lambda: c_launch(*c_args), calls, loops)
        t["signature_only"] = host_time_us(
            lambda: launcher.signature(q, k, v, None, shape.causal, stage, None, None, {}), calls, loops)
        fast = plan_.fast
        t["guard_only"] = float("nan") if fast is None else host_time_us(
            lambda: launcher._same_as_last(fast, q, k, v, None, q.data_ptr(), k.data_ptr(), v.data_ptr(), None,
                                           shape.causal, stage, None, None, {}), calls, loops)
        new_out = plan_.new_out or (lambda: torch.empty_like(q, memory_format=torch.contiguous_format))
        t["out_only"] = host_time_us(new_out, calls, loops)
        t["empty_like_only"] = host_time_us(lambda: torch.empty_like(q, memory_format=torch.contiguous_format),
                                            calls, loops)
        t["cache_out_given"] = host_time_us(
            lambda: attention(q, k, v, causal=shape.causal, stage=stage, out=out), calls, loops)
        alias = launcher._PLANS[launcher.signature(q, k, v, out, shape.causal, stage, None, None, {})].alias
        t["alias_only"] = host_time_us(lambda: alias.check(q, k, v, out), calls, loops)
        with NoopLauncher(launcher):
            t["python_only"] = host_time_us(lambda: attention(q, k, v, causal=shape.causal, stage=stage), calls,
                                            loops)
            t["python_out_given"] = host_time_us(
                lambda: attention(q, k, v, causal=shape.causal, stage=stage, out=out), calls, loops)
        t["parts_sum"] = t["python_only"] + t["c_launch_only"]
        return {name: t[name] for name in PARTS}

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
                plan_ = launcher._PLANS[launcher.signature(q, k, v, None, shape.causal, stage, None, None, {})]
                direct = plan_.direct is not None
                descs = direct and plan_.direct.descs is not None
                torch.cuda.synchronize()
                same = all(torch.equal(o, r) for o, r in zip(outs[path], outs["triton"]))
                us = host_time_us(lambda: attention(q, k, v, causal=shape.causal, stage=stage), calls, loops)
                row(stage, path, direct, descs, same, us)
                if path == "cache" and direct:      # where the cached call's time goes
                    part = parts(stage, plan_)
                    for name, value in part.items():
                        row(stage, name, direct, descs, None, value, PARTS[name])
                    print(f"{stage:>6}   python_only + c_launch_only = {part['parts_sum']:.2f} us against cache "
                          f"{us:.2f}", file=sys.stderr, flush=True)
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
