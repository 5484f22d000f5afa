"""Bench step: time every entry of the plan (pipeline.plan) on the GPU, each output checked before it is timed.

For each entry and repeat: fresh random inputs (the seed is recorded); the output is poisoned and judged against the
float64 reference (pipeline.call.check); an entry that is wrong or that Triton refuses is recorded as such and never
timed. Then three figures, never mixed:

- time_us (and min, quartiles, max, mean, count): the kernel time, by pipeline.kernel_timer: the GPU's own start and end
  of each kernel (CUPTI, through torch.profiler), the L2 flushed before every sample; host time cannot enter it;
- call_us (and quartiles): what a user sees, a plain call (`kernels.attention(q, k, v, ...)`, or PyTorch's SDPA)
  timed with CUDA events by `triton.testing.do_bench`, L2 flushed: host time enters when the GPU waits for it;
- host_us: the host time of one plain call, the mean over a loop of calls without synchronization (median of
  loops), after the first call: checks, planning, allocation and the launch.
The last two are measured in a process of their own (UserView), which never runs the profiler.

Beside each kernel time, the GPU's state over its timed samples (pipeline.gpu_state, read through NVML while the
kernels run; a machine without NVML stops the step before any row is written): the GPU's UUID (gpu_uuid); the SM
clock's median, min and max over readings taken every state_interval_ms by a background thread (sm_mhz,
sm_min_mhz, sm_max_mhz); the mean power of those readings (power_w, W; the flushes' included) and the enforced
power limit (power_limit_w); the higher of the temperatures before and after (temp_c); the OR of the clock event
reasons seen (throttle, hex), and whether any reading had a power-cap reason (power_capped: 0x4 software power cap,
0x8 hardware slowdown, 0x80 power brake) with the fraction that did (capped_frac); the energy of one call (energy_mj,
mJ: the window's mean power times its wall time, less one flush's energy per sample, over the number of samples)
and of one flush (flush_energy_mj: flushes alone, run right after: as many as fill rep_ms at flush_us each, or as
many as the samples if more); the window's wall time (window_ms) and the number of readings (state_readings).
And the samples themselves, in the GPU's order, each series joined by ';' (after run-35, where the medians at the
power cap were found to land in either of two groups of samples): each sample's time (sample_times, us, all its GPU
work), its start (sample_starts, us after the first's) and the SM clock of the reading nearest its middle
(sample_mhz).

The settle step (pipeline.settle), before the first entry of each block of one long N (N >= settle_min_N) in a
repeat, and before the first entry timed after a resume: the entry runs back to back in windows of
settle_window_ms until a window's median SM clock is no lower than the one before it less settle_tol_pct percent,
or for at most settle_max_s seconds (0: no settle step). The row records what was done: settle_s (seconds),
settle_mhz (the last window's median clock), settle_windows and settle_stable (False: the time limit ended it);
the columns are empty on rows that were not settled. It runs after the entry's check and before its user view and
kernel time, so that both find the GPU warm.

The pre-roll (pipeline.settle.needs_preroll), at every entry at N >= preroll_min_N: the call back to back for
preroll_ms right before its kernel time (after its user view), so that its samples start in the loaded state
instead of slowing down part way through (run-36); the row records preroll_ms (the wall time it ran) and
preroll_mhz (the median SM clock over it), empty on other rows; preroll_ms = 0 (or a plan without it) turns it off,
as the shipped plan does (probes/preroll-check: 250 ms did not keep the samples in one state).

The steady step (pipeline.steady_energy), after the kernel time of an entry at N >= steady_min_N in the first
steady_repeats repeats: the call back to back (chunks of steady_chunk_ms of GPU time, three queued), NVML's energy
counter read at two of its updates at least steady_s apart. The row gets the counter's mean power over that span
(steady_power_w), the mean of the instant power readings over it (steady_instant_w), their median SM clock and
power-capped fraction (steady_mhz, steady_capped_frac), the span (steady_s), the GPU's time per call in the loop
(steady_call_us) and the energy of one call in a steady stream of calls (steady_energy_mj); empty on other rows,
and on a row whose steady step failed (the GPU ran dry in the span, or the counter did not move), whose note says
why. steady_s = 0 turns the step off.

The whole list runs once per repeat, so drift shows as spread within an entry, not as a difference between
entries; each run of consecutive entries of one shape in the list's order in even repeats and reversed in odd ones
(A B C, C B A, ...: pipeline.plan.timing_order, which says why; up to run-32 one fixed order, A B C, A B C). Every row is appended to timings.partial.csv at once, renamed
timings.csv when all are done: run the same command again after an interruption and it resumes (the partial file is
no declared output, so Snakemake leaves it in place). Resuming (pipeline.partial_csv): the partial file's origin
(timings.partial.csv.origin.json: the commit, each kernel and library file's SHA-256, the plan's and sets' hash) must
be this run's, or the bench is refused before anything is timed, naming what differs (move the partial file and its
origin file away to start again: rows are too costly to drop unasked); a row cut short or with the wrong field count
is dropped, named on stderr, and measured again; an entry whose check failed (status 'failed': a transient error
such as running out of memory) is checked again, while 'WRONG' and 'refused' stay; so it is in a final timings.csv
found when the bench starts (this plan's by its rows: pipeline.run_checks.final_problems), which becomes the partial
file again. One bench at a time per folder:
bench.lock is held for the whole run (pipeline.folder_lock), and a second one stops at once.

Beside the timings: env.json (written when the partial file is begun, kept on a resume: the GPU, its UUID, versions,
the project's commit, nvidia-smi's state at the start and the end, and NVML's view of the GPU under `nvml`: its
name, UUID, power limit and where its power readings come from) and snapshots.jsonl (clocks and throttle reasons at
the start of every repeat, the GPU idle).

Before the first timed sample, worker processes compile every Triton entry of the set in parallel into Triton's
cache, and the timing process loads each from there (`--compile-only` does just that, for the pipeline's compile
step, which runs before any bench job starts).
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

from kernels.stages import BASELINE

from pipeline import folder_lock, gpu_env, gpu_state, origin, partial_csv, run_checks, settle, steady_energy
from pipeline import plan
from pipeline.call import (check, host_time_us, inputs, make_call, preroll_call, settle_call, steady_call,
                           time_call)
from pipeline.kernel_timer import SAMPLE_COLUMNS

ROW_KEYS = list(plan.Entry("", "triton", BASELINE, plan.HEADLINE, plan.Tile()).row())
COLUMNS = ["key", "repeat", *ROW_KEYS, "seed", "status", "rel_error", "time_us", "min_us", "q25_us", "q75_us",
           "max_us", "mean_us", "n_samples", "kernels_us", "kernels", "n_kernels", "call_us", "call_q25_us", "call_q75_us",
           "host_us", "host_calls", "timer", "note", *gpu_state.STATE_COLUMNS, *settle.COLUMNS,
           *steady_energy.COLUMNS, *SAMPLE_COLUMNS]
LOCK = "bench.lock"
SCRIPT = origin.script_name(__file__)


def _user_view(entry, seed: int, bench: dict) -> dict:
    """In the user-view process: the event-timed plain call and the host time per call, on the entry's inputs."""
    import torch
    from triton.testing import do_bench

    q, k, v = inputs(entry, seed)
    _, _, plain = make_call(entry, q, k, v)
    plain()                                                     # the first call checks and compiles (cached)
    torch.cuda.synchronize()
    call_us = sorted(c * 1e3 for c in do_bench(plain, warmup=bench["warmup_ms"], rep=bench["call_rep_ms"],
                                                return_mode="all"))
    cq = statistics.quantiles(call_us, n=4) if len(call_us) > 1 else [call_us[0]] * 3
    call_med = statistics.median(call_us)
    n_host = max(bench["host_min_calls"], min(bench["host_max_calls"],
                                              int(bench["host_budget_ms"] * 1e3 / max(call_med, 1.0))))
    return dict(call_us=call_med, call_q25_us=cq[0], call_q75_us=cq[2],
                host_us=host_time_us(plain, n_host, bench["host_loops"]), host_calls=n_host)


class UserView:
    """What a user sees, measured in a process of its own that never runs the profiler: after a torch.profiler
    session, CUPTI's callbacks stay attached to the process that ran it and slow each of its later launches (seen
    on the H200: PyTorch's SDPA from 20 to 47 us of host time per call). The bench process waits while it works,
    so the two never use the GPU at once."""

    def __init__(self, bench: dict):
        self.bench = bench
        self.pool = mp.get_context("spawn").Pool(1)

    def __call__(self, entry, seed: int) -> dict:
        return self.pool.apply(_user_view, (entry, seed, self.bench))

    def close(self) -> None:
        self.pool.close()
        self.pool.join()


def _compile_one(entry) -> dict:
    """Worker: run a Triton entry once so that its kernel lands in Triton's on-disk cache."""
    import torch

    from kernels import TileNotSupportedError
    t0 = time.perf_counter()
    try:
        checked, _, _ = make_call(entry, *inputs(entry, 0))
        checked()
        torch.cuda.synchronize()
        status, note = "ok", ""
    except TileNotSupportedError as err:
        status, note = "refused", str(err)
    return {"key": entry.key, "status": status, "seconds": round(time.perf_counter() - t0, 3), "note": note}


def precompile(entries, workers: int, log=print) -> list:
    """Compile every Triton entry in worker processes; one row (key, status, seconds, note) per entry."""
    todo = [e for e in entries if e.impl == "triton"]
    t0, rows = time.time(), []
    with mp.get_context("spawn").Pool(workers) as pool:
        for i, row in enumerate(pool.imap_unordered(_compile_one, todo), 1):
            rows.append(row)
            if row["status"] != "ok" or i % 20 == 0 or i == len(todo):
                log(f"  compiled [{i}/{len(todo)} {time.time() - t0:4.0f}s] {row['key']}"
                    + ("" if row["status"] == "ok" else f": REFUSED ({row['note'].split(': ', 1)[-1][:120]})"))
    return rows


def compile_only(entries, workers: int, out_csv: Path, log=print) -> None:
    """The pipeline's compile step: every Triton entry of the plan into Triton's cache, before any timing."""
    rows = sorted(precompile(entries, workers, log), key=lambda r: r["key"])
    tmp = out_csv.with_suffix(".partial")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["key", "status", "seconds", "note"])
        w.writeheader()
        w.writerows(rows)
    tmp.rename(out_csv)


def _valid(row: dict) -> bool:
    return bool(row["key"]) and row["repeat"].isdigit()


def read_rows(path: Path) -> list:
    return partial_csv.read_rows(path, COLUMNS, "bench.py", _valid)


def origin_of(m: dict, entries: list) -> dict:
    """This run's origin (pipeline.origin): the plan and the keys of the entries its sets expand to."""
    return origin.current(SCRIPT, {"plan": m, "entries": [e.key for e in entries]}, "the plan (plan.yaml, --sets)")


def run(m: dict, entries: list, out: Path, workers: int = 8, log=print, env: dict | None = None) -> Path:
    """Time every entry its number of repeats, interleaved, appending to out/timings.partial.csv; resumes; then
    renames it out/timings.csv. Holds out/bench.lock throughout. env: the extras of out/env.json (gpu_env.start),
    written afresh when the partial file is begun and kept on a resume; None: no env.json (the tests)."""
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock.held(out / LOCK, "bench.py"):
        return _run(m, entries, out, workers, log, env)


def _run(m: dict, entries: list, out: Path, workers: int, log, env: dict | None) -> Path:
    final, path = out / "timings.csv", out / "timings.partial.csv"
    expected = {e.key: (e.impl, e.variant, plan.repeats(e, m)) for e in entries}
    if final.exists():
        partial_csv.finished(path)
        problems = run_checks.final_problems(final, expected, run_checks.fixed_bounds())
        if problems:                  # no origin file is left beside a final file: its rows are the witness
            raise partial_csv.OriginError(f"bench: {final} is there but is not this plan's: " + " | ".join(problems))
        with open(final, newline="") as f:
            stopped = any(r.get("status") == "failed" for r in csv.DictReader(f))
        if not stopped:
            log(f"bench: {final} is complete")
            return final
        # entries stopped by a transient failure: checked again, as in a partial file (the final file, this plan's
        # by the checks above, becomes the partial file again, with this run's origin)
        partial_csv.write_origin(partial_csv.origin_path(path), origin_of(m, entries))
        final.rename(path)
        log(f"bench: {final} has entries stopped at status 'failed': resumed from it, those checked again")
    rows = partial_csv.resume(path, COLUMNS, "bench.py", origin_of(m, entries), _valid)
    rows, dropped = run_checks.resumable(rows, expected, run_checks.fixed_bounds())
    if dropped:                       # a hand-edited partial file: such rows are measured again, never promoted
        rows = partial_csv.rewrite(path, COLUMNS, rows)
        log(f"bench: {len(dropped)} rows of {path} dropped, measured again: "
            + "; ".join(f"{r['key']} repeat {r.get('repeat')}: {why}" for r, why in dropped[:5]))
    resumed = bool(rows)
    failed = [r for r in rows if r["status"] == "failed"]
    if failed:                        # transient (out of memory, ...): checked again, unlike WRONG and refused
        rows = partial_csv.rewrite(path, COLUMNS, [r for r in rows if r["status"] != "failed"])
        log(f"bench: {len(failed)} rows of status 'failed' dropped, their entries are checked again: "
            + ", ".join(sorted({r["key"] for r in failed}))[:300])
    env_json = out / "env.json"
    state = gpu_env.start(env_json, resume=resumed, **env) if env is not None else None
    done = {(r["key"], int(r["repeat"])) for r in rows}
    bad = {r["key"] for r in rows if r["status"] != "ok"}
    order = plan.timing_order(entries, m)
    todo = [(r, e) for r, e in order if (e.key, r) not in done and e.key not in bad]
    log(f"bench: {len(entries)} entries, {len(order)} timings, {len(done)} already done, "
        f"{len(bad)} entries refused or wrong (not timed)")
    if todo:
        _time(m, todo, path, out / "snapshots.jsonl", bad, workers, log)
    if state is not None:
        gpu_env.finish(env_json, state)
    return partial_csv.promote(path, final)


def _time(m: dict, todo: list, path: Path, snapshots: Path, bad: set, workers: int, log) -> None:
    """Check and time each (repeat, entry) of todo, appending each row to the partial file at once."""
    precompile(list({e.key: e for _, e in todo}.values()), workers, log)
    viewer = UserView(m["bench"])
    t0, last_repeat, warm = time.time(), None, None   # warm: (repeat, N) of the entry timed last
    b = m["bench"]
    with open(path, "a", newline="") as f, open(snapshots, "a") as snap:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        for i, (r, e) in enumerate(todo, 1):
            if e.key in bad:
                continue
            if r != last_repeat:
                snap.write(gpu_env.json_line({"repeat": r, **gpu_env.snapshot()}))
                snap.flush()
                last_repeat = r
            seed = secrets.randbits(31)
            status, err, note, calls = check(e, seed)
            row = {"key": e.key, "repeat": r, **e.row(), "seed": seed, "status": status, "rel_error": err,
                   "note": note}
            if status == "ok":
                if settle.needs_settle(e.shape.N, r, b["settle_min_N"], b["settle_max_s"], warm):
                    row.update(settle_call(calls, b))
                row.update(viewer(e, seed))
                if settle.needs_preroll(e.shape.N, b.get("preroll_min_N", 0), b.get("preroll_ms", 0)):
                    row.update(preroll_call(calls, b))
                row.update(time_call(calls, b))
                if steady_energy.wanted(e.shape.N, r, b["steady_min_N"], b["steady_repeats"], b["steady_s"]):
                    try:
                        row.update(steady_call(calls, b, row["time_us"]))
                    except steady_energy.SteadyEnergyError as err:   # the row keeps its time; the note says why
                        row["note"] = f"steady step: {err}"          # its steady columns are empty
                        log(f"bench: {e.key}: steady step failed: {err}")
                warm = (r, e.shape.N)
            else:
                bad.add(e.key)
            w.writerow(row)
            f.flush()
            eta = (time.time() - t0) / i * (len(todo) - i)
            log(f"[{i}/{len(todo)} {time.time() - t0:4.0f}s eta {eta:4.0f}s] r{r} {e.key}: "
                + (f"kernel {row['time_us']:9.1f} us, call {row['call_us']:9.1f} us, host {row['host_us']:6.1f} us, "
                   f"SM {row['sm_mhz']:5.0f} MHz, {row['power_w']:4.0f} W"
                   + (" POWER-CAPPED" if row["power_capped"] else "")
                   + (f" (settled {row['settle_s']:.1f} s to {row['settle_mhz']:.0f} MHz)" if "settle_s" in row else "")
                   + (f" (pre-roll {row['preroll_ms']:.0f} ms at {row['preroll_mhz']:.0f} MHz)" if "preroll_ms" in row
                      else "")
                   + (f", steady {row['steady_power_w']:.0f} W {row['steady_energy_mj']:.1f} mJ/call"
                      if "steady_power_w" in row else "")
                   if status == "ok" else f"{status} {note[:150]}"))
        snap.write(gpu_env.json_line({"repeat": "end", **gpu_env.snapshot()}))
    viewer.close()


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the plan: config/config.yaml, or a run's plan.yaml")
    ap.add_argument("--sets", nargs="+", default=list(plan.SETS), choices=plan.SETS)
    ap.add_argument("--out", type=Path, required=True, help="folder for timings.csv, env.json, snapshots.jsonl")
    ap.add_argument("--workers", type=int, default=max(1, min(12, (os.cpu_count() or 2) - 2)))
    ap.add_argument("--compile-only", action="store_true",
                    help="only compile every Triton entry of the sets into Triton's cache; writes compiled.csv")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    cfg = plan.load_config(a.config)
    if a.compile_only:
        entries = {e.key: e for e in plan.expand(cfg, a.sets) + plan.profile_entries(cfg)}
        compile_only(list(entries.values()), a.workers,
                     a.out / "compiled.csv", log=lambda msg: print(msg, flush=True))
        return 0
    nvml = gpu_state.this_gpu().describe()     # no NVML here: stop before any timing
    run(cfg, plan.expand(cfg, a.sets), a.out, a.workers, log=lambda msg: print(msg, flush=True),
        env=dict(argv=sys.argv, plan=cfg, sets=a.sets, nvml=nvml))
    return 0


if __name__ == "__main__":
    sys.exit(main())
