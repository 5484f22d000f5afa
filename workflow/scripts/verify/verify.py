"""Verify step: every stage, ablation variant and a set of tiles against the float64 reference, on a GPU; or, with
--device cpu (and TRITON_INTERPRET=1), every stage at small float16 shapes in Triton's interpreter.

Each case draws fresh random inputs (its seed is recorded), poisons the output with NaN, runs the kernel and judges
it against PyTorch's own error on the same inputs (kernels.accuracy: its default SDPA on the GPU). Cases are spread over
worker processes (compiling dominates) and each finished case is appended to correctness.partial.csv at once, so an
interrupted run resumes where it stopped: run the same command again. A variant Triton refuses at a tile is a row
too, status 'refused', with the reason.

Resuming (pipeline.partial_csv): the partial file's origin (correctness.partial.csv.origin.json: the commit, each
kernel and library file's SHA-256, the hash of the case list that --device, --N, --quick and --stages give) must be
this run's, or the run is refused before any case runs, naming what differs: a verification holds for the code it
ran, so after an edit of the kernel (or another N list) move the partial file and its origin file away and verify
again from nothing. A row cut short or with the wrong field count is dropped, named on stderr, and its case run
again; a WRONG case is run again on every resume until it passes (the partial file keeps the failure until then).
One verify at a time per folder: verify.lock is held for the whole run (pipeline.folder_lock).

    python workflow/scripts/verify.py --out data/nvidia-h200/<run>/verify
    TRITON_INTERPRET=1 python workflow/scripts/verify.py --device cpu --N 1 77 130 --out results/verify/cpu
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import multiprocessing as mp
import os
import secrets
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path


from kernels.shapes import HEADLINE, Shape
from kernels.stages import (BASELINE, FINAL, GLUON_STAGES, LAST, STAGES, TRITON_STAGES, Tile, add_one_in, default_tile,
                            extended, last_ablations, leave_one_out, previous_stage, stage_adding, stage_of,
                            switches_label)

from pipeline import folder_lock, gpu_env, keys, origin, partial_csv, run_checks

COLUMNS = ["case", "impl", "variant", "stage", "switches", "B", "H", "H_kv", "N", "D", "dtype", "causal",
           "block_m", "block_n", "num_warps", "num_stages", "seed", "status", "rel_error", "unwritten", "tolerance",
           "torch_default_rel_error", "note"]
LOCK = "verify.lock"
SCRIPT = origin.script_name(__file__)


@dataclass(frozen=True)
class Case:
    variant: str
    switches: frozenset
    shape: Shape
    tile: Tile
    layout: str = "bhnd"    # "bnhd": q, k, v as transposed views of (B, N, H, D) memory (non-contiguous rows)

    @property
    def key(self) -> str:
        return keys.case(self.variant, self.shape, self.tile, self.layout)


def cases(quick: bool = False) -> list:
    """The correctness grid: stages on every shape family, ablations and tiles at the headline layout."""
    out = []
    dtypes = ["float16", "bfloat16"]
    small = [Shape(1, 4, 2, n, 64) for n in (1, 31, 77, 130)]
    gqa = [Shape(2, g * 2, 2, 200, d) for g in range(1, 9) for d in (64, 128)]     # every group size 1 to 8
    # odd, ragged last blocks; one round of tiles on 132 SMs, folded from v28 on (consumer 1 drains 7 key blocks)
    odd = [Shape(1, 6, 3, n, 128) for n in (333, 1023)]
    large = [Shape(HEADLINE.B, HEADLINE.H, HEADLINE.H_kv, n, HEADLINE.D) for n in ((1024,) if quick else (1024, 4096))]
    # more 128-row tiles than an H200 has SMs (132), with ragged last blocks: a persistent grid's programs take
    # several tiles each, the last round partial (3 x 12 x 8 = 288 tiles; 2 x 24 x 7 = 336); and 512 tiles in two
    # sections of SECTIONS' order (v27: eight query heads each on 132 SMs), the last key block ragged
    many = [Shape(3, 12, 4, 1000, 128), Shape(2, 24, 3, 777, 64), Shape(1, 16, 8, 4000, 64)]
    shapes = small + gqa + odd + large + many
    for name, st in STAGES.items():
        for sh in shapes:
            for dt in dtypes:
                for causal in (True, False):
                    out.append(Case(name, st.switches, Shape(**{**sh.as_dict(), "dtype": dt, "causal": causal}),
                                    default_tile(st.switches, sh.D, sh.N)))
    # short sequences in several waves of 64-row programs (small_n_tile's snake, v32: 256 programs at the headline's
    # N = 512, two full waves on 132 SMs; 288, three, the last partial; 160, a partial second), the Gluon stages
    waves = [Shape(2, 16, 8, 512, 128), Shape(3, 12, 4, 500, 64), Shape(4, 8, 2, 300, 128)]
    for name in GLUON_STAGES:
        for sh in waves:
            for dt in dtypes:
                for causal in (True, False):
                    shape = Shape(**{**sh.as_dict(), "dtype": dt, "causal": causal})
                    out.append(Case(name, STAGES[name].switches, shape, default_tile(STAGES[name].switches, sh.D, sh.N)))
    ablations = {**leave_one_out(FINAL), **add_one_in(BASELINE), **extended(FINAL), **last_ablations()}
    for name, sw in ablations.items():
        if stage_of(sw):
            continue  # v7-const_strides is v6, v0+grid_order is v1: already above
        for dt in dtypes:
            for causal in (True, False):
                out.append(Case(name, sw, Shape(**{**HEADLINE.as_dict(), "dtype": dt, "causal": causal}),
                                default_tile(sw, HEADLINE.D, HEADLINE.N)))
    tiles = [Tile(16, 16, 4, 3), Tile(32, 64, 4, 3), Tile(64, 32, 4, 3), Tile(64, 64, 4, 3), Tile(64, 64, 8, 3),
             Tile(128, 64, 8, 3), Tile(128, 128, 8, 2), Tile(64, 128, 4, 2), Tile(32, 32, 4, 2), Tile(32, 32, 4, 4)]
    strided = {**{name: st.switches for name, st in STAGES.items()}, **last_ablations()}
    for name, sw in strided.items():               # non-contiguous inputs, for the variants that take any strides
        if "const_strides" not in sw:
            for causal in (True, False):
                out.append(Case(name, sw, Shape(2, 4, 2, 200, 64, "float16", causal), default_tile(sw, 64, 200),
                                "bnhd"))
    tiles += [Tile(128, 128, 8, 3), Tile(128, 64, 4, 2), Tile(64, 128, 4, 3)]
    ws = stage_adding("warp_specialize")           # other tiles: around warp specialization, the article's final stage
    for name in dict.fromkeys((previous_stage(ws), ws, FINAL, TRITON_STAGES[-1], LAST)):   # and our last ones
        for t in tiles:
            for dt in dtypes:
                out.append(Case(name, STAGES[name].switches, Shape(**{**HEADLINE.as_dict(), "dtype": dt}), t))
    return out


def cpu_cases(ns) -> list:
    """For the interpreter: every Triton stage (Gluon does not run in the interpreter), causal and not, at small
    float16 shapes (bf16: see the tests)."""
    return [Case(name, st.switches, Shape(1, 4, 2, n, 64, "float16", causal), default_tile(st.switches, 64, n))
            for name, st in STAGES.items() if name in TRITON_STAGES for n in ns for causal in (True, False)]


def run_case(case: Case, device: str = "cuda") -> dict:
    import torch

    from kernels import TileNotSupportedError, attention, plain_attention, reference_attention, sdpa
    from kernels.accuracy import judge, poisoned_like

    s, t = case.shape, case.tile
    seed = secrets.randbits(31)
    row = dict(case=case.key, impl="triton", variant=case.variant, stage=stage_of(case.switches) or "",
               switches=switches_label(case.switches), B=s.B, H=s.H, H_kv=s.H_kv, N=s.N, D=s.D, dtype=s.dtype,
               causal=s.causal, block_m=t.block_m, block_n=t.block_n, num_warps=t.num_warps,
               num_stages=t.num_stages, seed=seed, note="")
    g = torch.Generator(device=device).manual_seed(seed)
    q, k, v = s.tensors(device=device, generator=g)
    if case.layout == "bnhd":                      # the same values, in (B, N, H, D) memory: strided rows
        q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v))
    ref = reference_attention(q, k, v, causal=s.causal)
    # PyTorch's own output at this precision: SDPA on the GPU, the plain implementation on the CPU (kernels.accuracy)
    torch_out = sdpa(q, k, v, causal=s.causal) if device == "cuda" else plain_attention(q, k, v, causal=s.causal)
    verdicts = []
    try:
        # The first call checks, compiles and caches; the second is the cached launch that users and the timings
        # see. Each writes into a fresh poisoned output and is judged; the worse verdict is the case's.
        for _ in range(2):
            out = poisoned_like(q)
            attention(q, k, v, causal=s.causal, switches=case.switches, out=out, **asdict(t))
            if device == "cuda":
                torch.cuda.synchronize()
            verdicts.append(judge(out, ref, torch_out))
    except TileNotSupportedError as err:
        return {**row, "status": "refused", "note": str(err)}
    verdict = max(verdicts, key=lambda x: (not x["ok"], x["rel_error"]))
    return {**row, "status": "ok" if verdict["ok"] else "WRONG", "rel_error": verdict["rel_error"],
            "unwritten": verdict["unwritten"], "tolerance": verdict["tolerance"],
            "torch_default_rel_error": verdict["pytorch_rel_error"]}


def _valid(row: dict) -> bool:
    return bool(row["case"]) and bool(row["status"])


def read_rows(path: Path) -> list:
    return partial_csv.read_rows(path, COLUMNS, "verify.py", _valid)


def latest(rows: list) -> dict:
    """case -> its last row: a case measured again replaces its earlier result."""
    return {r["case"]: r for r in rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for correctness.csv and env.json")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--N", type=int, nargs="+", default=[1, 77, 130], help="sequence lengths (cpu only)")
    ap.add_argument("--workers", type=int, default=8, help="processes (cuda only)")
    ap.add_argument("--quick", action="store_true", help="skip N=4096 (cuda only)")
    ap.add_argument("--stages", nargs="+", choices=list(STAGES),
                    help="only the cases of these variants (default all; on the CPU, Triton stages only)")
    args = ap.parse_args(argv)
    if args.device == "cpu" and not os.environ.get("TRITON_INTERPRET"):
        raise SystemExit("--device cpu runs the kernels in Triton's interpreter: set TRITON_INTERPRET=1")
    args.out.mkdir(parents=True, exist_ok=True)
    with folder_lock.held(args.out / LOCK, "verify.py"):
        return verify(args)


def skip_what_this_gpu_cannot_run(grid: list, capability: str | None = None) -> list:
    """The cases this GPU runs (pipeline.plan.needs_hopper: the Gluon variants on compute capability 9.x only); the
    others are left out, and said."""
    from pipeline import gpu_arch, plan
    capability = capability or (gpu_arch.detected_capabilities() or [None])[0]
    kept = [c for c in grid if capability is None or plan.switches_run_on(c.switches, capability)]
    skipped = sorted({c.variant for c in grid} - {c.variant for c in kept})
    if skipped:
        print(f"verify: skipped on this GPU (compute capability {capability}): {len(grid) - len(kept)} cases of "
              f"{', '.join(skipped)}: {plan.HOPPER_ONLY}", flush=True)
    return kept


def verify(args) -> int:
    """The run, under the folder's lock: resume (or begin) the partial file, run every case still to do, write
    correctness.csv when none is wrong."""
    final, partial = args.out / "correctness.csv", args.out / "correctness.partial.csv"
    grid = [c for c in (cpu_cases(args.N) if args.device == "cpu" else cases(args.quick))
            if not args.stages or c.variant in args.stages]
    if args.device == "cuda":                     # what this GPU can run (pipeline.plan: the Gluon stages on Hopper)
        grid = skip_what_this_gpu_cannot_run(grid)
    expected = {c.key: None for c in grid}
    if final.exists():
        partial_csv.finished(partial)
        problems = run_checks.final_problems(final, expected, key="case")
        if problems:                  # no origin file is left beside a final file: its rows are the witness
            raise partial_csv.OriginError(f"verify: {final} is there but is not this case list's: "
                                          + " | ".join(problems))
        print(f"{final} is complete")
        return 0
    now = origin.current(SCRIPT, {"device": args.device, "cases": [c.key for c in grid]},
                         "the case list (--device, --N, --quick, --stages)")
    before = partial_csv.resume(partial, COLUMNS, "verify.py", now, _valid)
    before, dropped = run_checks.resumable(before, expected, key="case")
    if dropped:                       # a hand-edited partial file: such rows are measured again, never written out
        before = partial_csv.rewrite(partial, COLUMNS, before)
        print(f"verify: {len(dropped)} rows of {partial} dropped, measured again: "
              + "; ".join(f"{r['case']}: {why}" for r, why in dropped[:5]), flush=True)
    # a case stays to do until it has a result that is not WRONG: a failure stays a failure until measured again
    done = {k for k, r in latest(before).items() if r["status"] != "WRONG"}
    todo = [c for c in grid if c.key not in done]
    env = gpu_env.start(args.out / "env.json", resume=bool(before), argv=sys.argv) if args.device == "cuda" else None
    t0, new_rows = time.time(), []
    with contextlib.ExitStack() as stack:
        f = stack.enter_context(open(partial, "a", newline=""))
        if args.device == "cuda":
            results = stack.enter_context(mp.get_context("spawn").Pool(args.workers)).imap_unordered(run_case, todo)
        else:
            results = (run_case(c, "cpu") for c in todo)
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        for i, row in enumerate(results, 1):
            w.writerow(row)
            f.flush()
            new_rows.append({k: str(v) if v is not None else "" for k, v in row.items()})
            if row["status"] != "ok" or i % 25 == 0 or i == len(todo):
                print(f"[{i}/{len(todo)} {time.time() - t0:5.0f}s] {row['case']}: {row['status']} "
                      f"err={row.get('rel_error', '')}", flush=True)
    if env is not None:
        gpu_env.finish(args.out / "env.json", env)
    result = latest(before + new_rows)
    wrong = sorted(k for k, r in result.items() if r["status"] == "WRONG")
    print(f"{len(todo)} cases in {time.time() - t0:.0f} s; {len(wrong)} wrong" +
          (f": {', '.join(wrong[:10])}" if wrong else ""))
    if wrong:
        return 1                                        # the partial file keeps them; a re-run measures them again
    tmp = final.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:                  # one row per case, its latest
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(result.values())
    tmp.rename(final)
    partial_csv.remove(partial)
    return 0


if __name__ == "__main__":
    sys.exit(main())
