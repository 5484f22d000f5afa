"""The Python part of a cached call of `kernels.attention`, on this machine's CPU: no GPU needed.

A cached call (kernels/launcher.py: the signature, the plan's lookup, the output's allocation or the alias check
of a given one, then Triton's C launcher) spends its host time in Python and in the C launcher with the driver. This
tool times the Python part on CPU tensors of the headline shape under Triton's interpreter, with the C launcher
replaced by a no-op (a cached plan whose direct launch calls `lambda *a: None`, host descriptors filled by a fake
helper): what a change to the cached path saves, measured where there is no GPU. On a GPU host the same parts are
timed by host_cost.py (`python_only`, `c_launch_only`). Two differences from a GPU call: the signature reads
Triton's interpreter flag instead of the current CUDA device (about 0.2 us more here), and the allocation is the
CPU allocator's, not PyTorch's CUDA caching allocator.

Each row: the best of `--repeat` timeit repeats of `--number` calls, in us per call.

    python workflow/scripts/tools/host_python.py --out results/host_python.csv
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import timeit
from pathlib import Path

COLUMNS = ["variant", "part", "host_us", "number", "repeat", "note"]
PARTS = {
    "signature": "launcher.signature: the cache key (a call whose signature differs from the last one's)",
    "guard": "launcher._same_as_last: a repeated call's check of the last plan's guard, its pointers read",
    "lookup": "the plan's lookup by that key",
    "alias_check": "inputs.AliasCheck.check of a given output, from the pointers",
    "out_alloc": "torch.empty_like: the output's allocation (CPU allocator)",
    "launch_stub": "launcher.launch_direct with a no-op C launcher: the arguments' assembly",
    "cache": "attention(q, k, v) on its cached path, the C launcher a no-op",
    "cache_out_given": "attention(q, k, v, out=out) on its cached path, the C launcher a no-op",
}
STAGES = ("v10", "v13")     # the last stage that takes pointers, and the leader, which takes host descriptors


def _noop(*args):
    return None


def stub_launches(launcher) -> None:
    """Make every plan that the full path builds from now on a cached one whose C launcher does nothing (on the CPU
    the JIT would run the interpreter instead, and keep no direct launch)."""

    def fake_fill(ptr, *rest):
        return ("CUtensorMap", ptr)

    def _launch_jit(plan, q, k, v, out):
        if plan.direct is not None:
            return
        descs = None
        if plan.host_desc:
            meta = dict(swizzle=3, elem_size=q.element_size(), elem_type=6, fp4_padded=False,
                        block_size=[1, 1, plan.tile.block_m, q.shape[-1]])
            descs = tuple(launcher.DescriptorArgs(d, meta, fake_fill) for d in plan.tensor_args(q, k, v, out))
        plan.direct = launcher._direct(plan, (_noop, 0, (4, 1, 0), False, False, 0, descs))

    launcher._launch_jit = _launch_jit
    launcher._get_device = int              # C builtins in place of torch's: int() is device 0, abs(0) stream 0
    launcher._current_stream = abs


def measure(stages=STAGES, number: int = 20000, repeat: int = 7) -> list[dict]:
    import torch

    from kernels import inputs, launcher
    from kernels.shapes import HEADLINE

    stub_launches(launcher)
    q, k, v = HEADLINE.tensors(fill="empty")
    out = torch.empty_like(q)
    rows = []

    def t(fn):
        return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6

    for stage in stages:
        launcher.clear_cache()
        for _ in range(3):      # the full path, then the cached launch, which gives the plan its guard
            launcher.attention(q, k, v, stage=stage)
        launcher.attention(q, k, v, stage=stage, out=out)
        key = launcher.signature(q, k, v, None, True, stage, None, None, {})
        plan = launcher._PLANS[key]
        if plan.fast is None:
            raise RuntimeError(f"{stage}: the cached plan has no guard (launcher._guard)")
        alias = inputs.AliasCheck(q, k, v, out)
        us = {
            "signature": t(lambda: launcher.signature(q, k, v, None, True, stage, None, None, {})),
            "guard": t(lambda: launcher._same_as_last(plan.fast, q, k, v, None, q.data_ptr(), k.data_ptr(),
                                                      v.data_ptr(), None, True, stage, None, None, {})),
            "lookup": t(lambda: launcher._PLANS.get(key)),
            "alias_check": t(lambda: alias.check(q, k, v, out)),
            "out_alloc": t(lambda: torch.empty_like(q, memory_format=torch.contiguous_format)),
            "launch_stub": t(lambda: launcher.launch_direct(plan, q, k, v, out)),
            "cache": t(lambda: launcher.attention(q, k, v, stage=stage)),
            "cache_out_given": t(lambda: launcher.attention(q, k, v, stage=stage, out=out)),
        }
        if launcher.cached_signatures() != 2:
            raise RuntimeError(f"{stage}: the timed calls left {launcher.cached_signatures()} plans, not the two "
                               f"cached ones: a timed call missed the cache")
        rows += [dict(variant=stage, part=part, host_us=round(value, 4), number=number, repeat=repeat,
                      note=PARTS[part]) for part, value in us.items()]
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stages", nargs="+", default=list(STAGES))
    ap.add_argument("--number", type=int, default=20000, help="calls per timeit repeat")
    ap.add_argument("--repeat", type=int, default=7, help="timeit repeats (the best is kept)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET") != "1" and "kernels" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"    # before triton and kernels are imported: the CPU tensors' path
    rows = measure(a.stages, a.number, a.repeat)
    for r in rows:
        print(f"{r['variant']:>6} {r['part']:>16}: {r['host_us']:7.3f} us", file=sys.stderr)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
