"""Profile step: Nsight Compute on every profiled entry (config plan.profile) at the headline shape.

Four passes, each running profile_target.py, which launches each entry after warm-up in its own NVTX range and
profiler window, with the clocks as found (--clock-control none) and the caches flushed before every kernel
(--cache-control all, ncu's default):
- the full metric set (--set full), one launch per entry -> ncu.csv (every numeric metric) and the report, gzipped;
- the duration and the SM clock (gpu__time_duration.sum, sm__cycles_elapsed.avg.per_second: one replay pass),
  `duration_launches` launches of every entry of the three other passes (plan.duration_entries: each profiled
  entry at each of its N) -> ncu_duration.csv, which the aggregate step compares with the kernel timer (the
  cross-check, on the same GPU, in time or, where the clocks differ, in SM cycles);
- the premise entries (plan.profile.premise: where a claim's premise holds and the headline's does not, e.g. a
  working set larger than the L2 for the grid order of C1), a few memory metrics -> ncu_premise.csv;
- the long-sequence entries (plan.profile.large_n: our last stages and cuDNN where the KV loop dominates), the
  metrics that say what limits the loop (pipes, issue, stalls, occupancy) -> ncu_large_n.csv.
Each report is read by pipeline.nsight in a process of its own (loaded beside torch the report library has crashed).
A run interrupted after a report was written resumes at its reading (a report is renamed from its partial name
only once ncu has returned); a pass whose CSV is there is not run again.

Resuming (pipeline.origin): profile.origin.json, written before the first report, records what the folder's reports
and CSVs were begun under (the commit, each kernel and library file's SHA-256, this script's and profile_target.py's,
the hash of the plan's profile section and its entries). A folder that holds any of them is resumed only under the
same origin: otherwise (or with no origin file) the step is refused before ncu runs, naming what differs; move the
folder's reports, *_order.json and ncu*.csv away to start again. The origin file is removed once every pass is done.
env.json is written afresh when the step begins from nothing and kept on a resume. One profile at a time per folder:
profile.lock is held for the whole run (pipeline.folder_lock).

    python workflow/scripts/profile.py --config config/config.yaml --out data/<gpu>/<run>/profile
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
from pathlib import Path

from pipeline import folder_lock, gpu_env, nsight, origin, partial_csv

HERE = Path(__file__).resolve().parent
LOCK = "profile.lock"
ORIGIN = "profile.origin.json"
SCRIPT = origin.script_name(__file__)
TARGET = origin.script_name(str(HERE / "profile_target.py"))
PASSES = ("profile", "duration", "premise", "large_n")
CSVS = ("ncu.csv", "ncu_duration.csv", "ncu_premise.csv", "ncu_large_n.csv")


def _ncu(args: list, target_args: list, log) -> None:
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu (Nsight Compute) is not on the PATH: install it, or add its folder to PATH")
    cmd = [ncu, "--clock-control", "none", "--cache-control", "all", "--profile-from-start", "off",
           "--import-source", "no", "--nvtx", "-f", *args, sys.executable, str(HERE / "profile_target.py"),
           *target_args]
    log("profile: " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith(("profile target", "==ERROR==", "==WARNING==")) or "Report:" in line:
            log("  " + line)
    if proc.returncode != 0:
        raise SystemExit(f"ncu failed ({proc.returncode}): {proc.stderr[-2000:]}")


def _tidy(mode: str, rep: Path, order: Path, csv_path: Path, log) -> None:
    tidy = subprocess.run([sys.executable, "-m", "pipeline.nsight", mode, str(rep), str(order), str(csv_path)],
                          capture_output=True, text=True)
    if tidy.returncode != 0 or not csv_path.exists():
        raise SystemExit(f"reading {rep} failed ({tidy.returncode}): {tidy.stderr[-2000:]}")
    log(f"profile: {tidy.stdout.strip()}")


def _gzip(rep: Path, log) -> None:
    with open(rep, "rb") as src, gzip.open(rep.with_suffix(".ncu-rep.gz"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    rep.unlink()
    log(f"profile: report kept as {rep.name}.gz")


def _pass(out: Path, name: str, csv_name: str, mode: str, ncu_args: list, target_args: list, log) -> None:
    """One Nsight pass: run it (unless its report is there), read the report into csv_name, keep it gzipped; skipped
    when csv_name exists (an interrupted step resumes at the reading). ncu writes the report under a partial name
    (<name>.partial.ncu-rep), renamed once ncu has returned: a pass killed while ncu was writing (run-36's part 2,
    cut at its time limit) leaves no report that a resumed step would take for a finished one; ncu's -f overwrites
    the partial report when the pass runs again."""
    rep, order, csv_path = out / f"{name}.ncu-rep", out / f"{name}_order.json", out / csv_name
    if csv_path.exists():
        log(f"profile: {csv_name} already done")
        return
    if not rep.exists():
        partial = out / f"{name}.partial.ncu-rep"
        _ncu([*ncu_args, "-o", str(partial.with_suffix(""))], [*target_args, "--order", str(order)], log)
        partial.rename(rep)
    _tidy(mode, rep, order, csv_path, log)
    _gzip(rep, log)


def origin_of(cfg: dict) -> dict:
    """This run's origin (pipeline.origin): the sources with profile_target.py's beside this script's, and the
    plan's profile section with the keys of the entries it profiles."""
    from pipeline import plan

    entries = {name: [e.key for e in of(cfg)] if name == "profile" or cfg["profile"].get(name) else []
               for name, of in (("profile", plan.profile_entries), ("premise", plan.premise_entries),
                                ("large_n", plan.large_n_entries))}
    now = origin.current(SCRIPT, {"profile": cfg.get("profile"), "entries": entries},
                         "the plan's profile section (--config)")
    now["sources"].update(origin.sources(TARGET))
    return now


def state(out: Path) -> list:
    """The files of the folder an interrupted profile resumes from: its reports, their orders and its CSVs."""
    names = [f"{p}{ext}" for p in PASSES for ext in (".ncu-rep", ".ncu-rep.gz", "_order.json")] + list(CSVS)
    return sorted(n for n in names if (out / n).exists())


def resume(out: Path, now: dict) -> bool:
    """Whether the folder is resumed (it holds reports or CSVs of an earlier start, begun under this origin); a
    folder begun afresh gets this origin's file first. OriginError (a ValueError) for another origin or none."""
    side, found = out / ORIGIN, state(out)
    if not found:
        partial_csv.write_origin(side, now)
        return False
    fix = (f"Refused, so that no reports or CSVs of another origin mix with this run's. To profile again from "
           f"nothing, move {', '.join(found)} and {ORIGIN} out of {out} (or delete them) and run it again")
    partial_csv.check_origin(side, f"{out} holds {', '.join(found)} of an earlier profile", now, "profile.py", fix)
    return True


def run(cfg_path: Path, out: Path, log=print, env: dict | None = None) -> None:
    """The profile under out/profile.lock: check (or begin) the folder's origin, write env.json (afresh unless
    resumed; env None: none, the tests), run every pass still to do, then remove the origin file."""
    from pipeline import plan

    out.mkdir(parents=True, exist_ok=True)
    with folder_lock.held(out / LOCK, "profile.py"):
        side = out / ORIGIN
        if all((out / n).exists() for n in CSVS) and not side.exists():
            log(f"profile: {out} is complete")
            return
        cfg = plan.load_config(cfg_path)
        resumed = resume(out, origin_of(cfg))
        state_env = gpu_env.start(out / "env.json", resume=resumed, **env) if env is not None else None
        profile(cfg_path, out, log, cfg)
        if state_env is not None:
            gpu_env.finish(out / "env.json", state_env)
        side.unlink(missing_ok=True)


def profile(cfg_path: Path, out: Path, log=print, cfg: dict | None = None) -> None:
    from pipeline import plan

    cfg = plan.load_config(cfg_path) if cfg is None else cfg
    target = ["--config", str(cfg_path)]
    _pass(out, "profile", "ncu.csv", "full", ["--set", "full"], target, log)
    _pass(out, "duration", "ncu_duration.csv", "duration", ["--metrics", ",".join(nsight.DURATION_METRICS)],
          [*target, "--entries", "duration", "--launches", str(int(cfg["profile"]["duration_launches"]))], log)
    for name in ("premise", "large_n"):
        extra = cfg["profile"].get(name)
        csv_name = f"ncu_{name}.csv"
        if not extra:
            nsight.write([], out / csv_name)       # the step's declared output, with no rows
            log(f"profile: no {name} entries asked for")
            continue
        _pass(out, name, csv_name, "full", ["--metrics", ",".join(extra["metrics"])],
              [*target, "--entries", name], log)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the plan: config/config.yaml, or a run's plan.yaml")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    from pipeline import ncu_permission  # the counters' permission first: refused, the fix is named (ERR_NVGPUCTRPERM)
    ncu_permission.check(log=lambda msg: print(msg, flush=True))
    run(a.config, a.out, log=lambda msg: print(msg, flush=True), env={"argv": sys.argv})
    return 0


if __name__ == "__main__":
    sys.exit(main())
