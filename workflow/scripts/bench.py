"""Bench step: time every entry of the plan (bench_plan.py) on the GPU, each output checked before it is timed.

For each entry and repeat: fresh random inputs (the seed is recorded); the output is poisoned and judged against the
float64 reference (kernels.accuracy); an entry that is wrong or that Triton refuses is recorded as such and never
timed. Then `triton.testing.do_bench` times it: L2 flushed before every sample, warm-up, all samples kept, and the
row records their median, quartiles, min, max and count. The whole list runs once per repeat, in one fixed order
(A B C, A B C, ...), so drift shows as spread within an entry, not as a difference between entries. Every row is
appended to timings.partial.csv at once, renamed timings.csv when all are done: run the same command again after an
interruption and it resumes (the partial file is no declared output, so Snakemake leaves it in place).

Beside the timings: env.json (the GPU, its UUID, versions, and nvidia-smi's state at the start and the end) and
snapshots.jsonl (clocks and throttle reasons at the start of every repeat).

Before timing, worker processes compile every Triton entry in parallel into Triton's cache, which the timing
process then loads: compiling dominates the wall time otherwise.
"""
from __future__ import annotations

import csv
import multiprocessing as mp
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_plan  # noqa: E402
import gpu_env  # noqa: E402

ROW_KEYS = list(bench_plan.Entry("", "triton", "v0", bench_plan.HEADLINE, bench_plan.Tile()).row())
COLUMNS = ["key", "repeat", *ROW_KEYS, "seed", "status", "rel_error", "time_us", "min_us", "q25_us", "q75_us",
           "max_us", "mean_us", "n_samples", "rep_ms", "note"]


def inputs(entry, seed):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    return entry.shape.tensors(device="cuda", generator=g)


def make_call(entry, q, k, v):
    """(fn, out): fn() computes the entry's output into out (triton) or returns it (torch)."""
    from kernels import sdpa
    from kernels.accuracy import poisoned_like
    from kernels.attention import launch_kernel, plan_launch

    causal = entry.shape.causal
    if entry.impl == "triton":
        out = poisoned_like(q)
        t = entry.tile
        launch = plan_launch(q, k, v, out, causal=causal, switches=entry.switches, block_m=t.block_m,
                             block_n=t.block_n, num_warps=t.num_warps, num_stages=t.num_stages)
        return (lambda: launch_kernel(launch)), out
    return (lambda: sdpa(q, k, v, causal=causal, impl=entry.impl)), None


def check(entry, seed) -> tuple:
    """Run once on fresh inputs and judge; returns (status, rel_error, note, fn) with fn ready to time."""
    import torch

    from kernels import TileNotSupportedError, reference_attention
    from kernels.accuracy import judge

    q, k, v = inputs(entry, seed)
    try:
        fn, out = make_call(entry, q, k, v)
        res = fn()
        torch.cuda.synchronize()
    except TileNotSupportedError as err:
        return "refused", None, str(err), None
    except RuntimeError as err:  # e.g. a PyTorch backend that cannot take this input
        return "failed", None, f"{type(err).__name__}: {str(err).splitlines()[0]}", None
    verdict = judge(out if out is not None else res, reference_attention(q, k, v, causal=entry.shape.causal))
    return ("ok" if verdict["ok"] else "WRONG"), verdict["rel_error"], "", fn


def time_call(fn, bench: dict) -> dict:
    from triton.testing import do_bench

    estimate_ms = do_bench(fn, warmup=1, rep=5, return_mode="min")
    rep_ms = min(max(bench["rep_ms"], bench["min_samples"] * estimate_ms), bench["max_rep_ms"])
    samples = sorted(do_bench(fn, warmup=bench["warmup_ms"], rep=rep_ms, return_mode="all"))
    us = [s * 1e3 for s in samples]
    q = statistics.quantiles(us, n=4) if len(us) > 1 else [us[0]] * 3
    return dict(time_us=statistics.median(us), min_us=us[0], q25_us=q[0], q75_us=q[2], max_us=us[-1],
                mean_us=statistics.fmean(us), n_samples=len(us), rep_ms=round(rep_ms, 3))


def _compile_one(entry) -> tuple:
    """Worker: run a Triton entry once so that its kernel lands in Triton's on-disk cache."""
    import torch

    from kernels import TileNotSupportedError
    try:
        fn, _ = make_call(entry, *inputs(entry, 0))
        fn()
        torch.cuda.synchronize()
        return entry.key, "ok"
    except TileNotSupportedError as err:
        return entry.key, str(err)


def precompile(entries, workers: int, log=print) -> None:
    todo = [e for e in entries if e.impl == "triton"]
    t0 = time.time()
    with mp.get_context("spawn").Pool(workers) as pool:
        for i, (key, status) in enumerate(pool.imap_unordered(_compile_one, todo), 1):
            if status != "ok" or i % 20 == 0 or i == len(todo):
                log(f"  compiled [{i}/{len(todo)} {time.time() - t0:4.0f}s] {key}"
                    + ("" if status == "ok" else f": REFUSED ({status.split(': ', 1)[-1][:120]})"))


def read_rows(path: Path) -> list:
    if not path.exists():
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def run(m: dict, entries: list, out: Path, workers: int = 8, log=print) -> Path:
    """Time every entry its number of repeats, interleaved, appending to out/timings.partial.csv; resumes; then
    renames it out/timings.csv."""
    final, path = out / "timings.csv", out / "timings.partial.csv"
    if final.exists():
        log(f"bench: {final} is complete")
        return final
    rows = read_rows(path)
    done = {(r["key"], int(r["repeat"])) for r in rows}
    bad = {r["key"] for r in rows if r["status"] != "ok"}
    plan = [(r, e) for r in range(max(bench_plan.repeats(e, m) for e in entries))
            for e in entries if r < bench_plan.repeats(e, m)]
    todo = [(r, e) for r, e in plan if (e.key, r) not in done and e.key not in bad]
    log(f"bench: {len(entries)} entries, {len(plan)} timings, {len(done)} already done, "
        f"{len(bad)} entries refused or wrong (not timed)")
    if not todo:
        path.rename(final)
        return final
    precompile(list({e.key: e for _, e in todo}.values()), workers, log)
    snapshots = out / "snapshots.jsonl"
    fresh = not path.exists()
    t0, last_repeat = time.time(), None
    with open(path, "a", newline="") as f, open(snapshots, "a") as snap:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        if fresh:
            w.writeheader()
        for i, (r, e) in enumerate(todo, 1):
            if e.key in bad:
                continue
            if r != last_repeat:
                snap.write(gpu_env.json_line({"repeat": r, **gpu_env.snapshot()}))
                snap.flush()
                last_repeat = r
            seed = secrets.randbits(31)
            status, err, note, fn = check(e, seed)
            row = {"key": e.key, "repeat": r, **e.row(), "seed": seed, "status": status, "rel_error": err,
                   "note": note}
            if status == "ok":
                row.update(time_call(fn, m["bench"]))
            else:
                bad.add(e.key)
            w.writerow(row)
            f.flush()
            eta = (time.time() - t0) / i * (len(todo) - i)
            log(f"[{i}/{len(todo)} {time.time() - t0:4.0f}s eta {eta:4.0f}s] r{r} {e.key}: "
                + (f"{row['time_us']:9.1f} us" if status == "ok" else f"{status} {note[:150]}"))
        snap.write(gpu_env.json_line({"repeat": "end", **gpu_env.snapshot()}))
    path.rename(final)
    return final


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=Path("config/config.yaml"))
    ap.add_argument("--sets", nargs="+", default=list(bench_plan.SETS), choices=bench_plan.SETS)
    ap.add_argument("--out", type=Path, required=True, help="folder for timings.csv, env.json, snapshots.jsonl")
    ap.add_argument("--workers", type=int, default=max(1, min(12, (os.cpu_count() or 2) - 2)))
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    cfg = bench_plan.load_config(a.config)
    env = gpu_env.start(a.out / "env.json", argv=sys.argv, plan=cfg, sets=a.sets)
    run(cfg, bench_plan.expand(cfg, a.sets), a.out, a.workers,
        log=lambda msg: print(msg, flush=True))
    gpu_env.finish(a.out / "env.json", env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
