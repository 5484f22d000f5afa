"""Content checks of a sealed run beyond its timings' statistics: what a reseal cannot make right.

A run's checksums say its files are the ones sealed; these say the files are what the steps write:
- rows_against_plan: a bench step's timings.csv holds the rows its plan asked for, each repeat once. The plan is the
  one the step recorded in its env.json (`plan` and `sets`, written by bench.py when it began), expanded by
  pipeline.plan as today's registry has it; the registry only grows, so an entry of a Triton variant that the run
  timed nowhere (a stage added after the run) is not asked of it;
- statuses: every row's status is one a step writes (STATUSES), spelt exactly;
- within_tolerance: a row judged ok is within its bound: correctness.csv records its tolerance; a bench row does not,
  and is held to the fixed bound of its dtype (kernels.accuracy.TOLERANCE, the judge's bound without PyTorch's
  output: every committed bench row is within a third of it); an ok row needs a finite error of at least 0, a finite
  bound above 0 and no poison left (unwritten 0);
- recorded_bounds: a correctness.csv's recorded tolerance is the judge's bound for the row's dtype and recorded
  PyTorch error, recomputed (the rule of today, or the one before ba76eb2 for the early runs);
- json_problems: every sealed env.json, and every snapshots.jsonl line, is a JSON object;
- env_problems: every measurement file has its step's env.json beside it, sealed, with a source_sha256 of 64 hex
  digits;
- ceilings_problems: the ceilings are finite and not negative.
Each returns a list of problems, each naming the file (and the rows) and saying what to do; the aggregate raises
them together.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd

STATUSES = ("ok", "WRONG", "refused", "failed")   # pipeline.call.check and verify.py: nothing else is written
# A sealed file a GPU step writes beside its env.json: the step's measurements.
MEASUREMENTS = ("timings.csv", "correctness.csv", "ncu.csv", "ncu_duration.csv", "ncu_premise.csv",
                "ncu_large_n.csv", "ceilings.csv", "timer_check.csv")
SHOWN = 5
FIX = ("sealed data is what its step wrote: restore the file from git's history of data/, or measure the run again "
       "(make measure); never edit a sealed run")
SHA256 = re.compile(r"[0-9a-f]{64}")


def _some(items) -> str:
    items = list(items)
    return ", ".join(map(str, items[:SHOWN])) + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def statuses(df: pd.DataFrame, path) -> list:
    """Rows whose status is not one of STATUSES (a typo, a case, a space), each named by its line in the file."""
    if "status" not in df:
        return [f"{path}: no status column; {FIX}"]
    bad = df[~df.status.isin(STATUSES)]
    if bad.empty:
        return []
    lines = [f"line {i + 2} ({s!r})" for i, s in zip(bad.index, bad.status)]
    return [f"{path}: status not one a step writes ({', '.join(STATUSES)}): {_some(lines)}; {FIX}"]


def within_tolerance(df: pd.DataFrame, path, fixed: dict | None = None) -> list:
    """Rows judged ok whose rel_error is above their tolerance (the column), or, for a file without one (a bench
    step's), above fixed[dtype]; a row judged ok is refused too without a finite error of at least 0 or without a
    finite bound above 0 (the judge gives nothing else), and, where the file counts the poison left (unwritten),
    with any left."""
    if "status" not in df:
        return []                                   # said by statuses
    ok = df[df.status == "ok"]
    err = (pd.to_numeric(ok.rel_error, errors="coerce").astype(float) if "rel_error" in ok
           else pd.Series(float("nan"), index=ok.index))
    if "tolerance" in ok:
        tol = pd.to_numeric(ok.tolerance, errors="coerce").astype(float)
    else:
        tol = ok.dtype.map(fixed or {}).astype(float) if "dtype" in ok else pd.Series(float("nan"), index=ok.index)
    judged = err.map(math.isfinite) & (err >= 0) & tol.map(math.isfinite) & (tol > 0)
    bad = ok[~(judged & (err <= tol))]            # NaN on either side is not within
    problems = []
    if not bad.empty:
        lines = [f"line {i + 2} ({e:.3g} > {t:.3g})" if e > t else
                 f"line {i + 2} ({e:.3g}, bound {t:.3g}: not a finite error of at least 0 within a finite bound "
                 f"above 0)" for i, e, t in zip(bad.index, err[bad.index], tol[bad.index])]
        problems.append(f"{path}: rows judged ok with rel_error above their tolerance (or none): {_some(lines)}; "
                        f"{FIX}")
    if "unwritten" in ok:
        left = ok[~(pd.to_numeric(ok.unwritten, errors="coerce") == 0)]
        if not left.empty:
            problems.append(f"{path}: rows judged ok with output elements left unwritten (unwritten not 0): "
                            f"{_some(f'line {i + 2} ({u!r})' for i, u in zip(left.index, left.unwritten))}; {FIX}")
    return problems


def judge_bounds(df: pd.DataFrame) -> dict:
    """The bound kernels.accuracy.judge gives each row (dtype, torch_default_rel_error), by the rule of today
    ('judge': PYTORCH_FACTOR x max(PyTorch's error, a quarter of the dtype's unit roundoff), TOLERANCE where PyTorch
    gave none or overflowed) and by the rule before commit ba76eb2 ('before ba76eb2': the larger of TOLERANCE and
    PYTORCH_FACTOR x PyTorch's error), which the committed runs up to run-17-x2 were judged by."""
    from kernels.accuracy import PYTORCH_FACTOR, TOLERANCE, UNIT_ROUNDOFF
    name = lambda d: str(d).removeprefix("torch.")             # noqa: E731
    fixed = {name(d): t for d, t in TOLERANCE.items()}
    roundoff = {name(d): u for d, u in UNIT_ROUNDOFF.items()}
    pt = pd.to_numeric(df.get("torch_default_rel_error", pd.Series(float("nan"), index=df.index)),
                       errors="coerce").astype(float)
    now, before = [], []
    for d, p in zip(df.dtype, pt):
        f = fixed.get(d, float("nan"))
        none = not math.isfinite(p)
        now.append(f if none else PYTORCH_FACTOR * max(p, roundoff.get(d, float("nan")) / 4))
        before.append(f if none else max(f, PYTORCH_FACTOR * p))
    return {"judge": pd.Series(now, index=df.index), "before ba76eb2": pd.Series(before, index=df.index)}


def recorded_bounds(df: pd.DataFrame, path) -> list:
    """A correctness.csv's rows judged ok whose recorded tolerance is not the bound the judge gives for their dtype and
    recorded PyTorch error (judge_bounds), under one rule for the whole file: the recorded bound is not trusted."""
    if not {"status", "tolerance", "dtype"} <= set(df):
        return []                                   # said by the column and status checks
    ok = df[df.status == "ok"]
    if ok.empty:
        return []
    tol = pd.to_numeric(ok.tolerance, errors="coerce").astype(float)
    off = {}
    for rule, want in judge_bounds(ok).items():
        off[rule] = ok[~((tol - want).abs() <= 1e-9 * want.abs())]
    rule = min(off, key=lambda r: len(off[r]))
    bad = off[rule]
    if bad.empty:
        return []
    want = judge_bounds(bad)[rule]
    lines = [f"line {i + 2} ({t!r}, the judge's {w:.6g})" for i, t, w in zip(bad.index, bad.tolerance, want)]
    return [f"{path}: rows whose tolerance is not the judge's bound for their dtype and torch_default_rel_error "
            f"(kernels.accuracy; the rule {rule!r}, nearest the file's): {_some(lines)}; {FIX}"]


def judged_ok_problem(row: dict, fixed: dict | None = None) -> str | None:
    """Why a row (dict of strings) judged ok is not within its bound (its tolerance, else fixed[dtype]), as
    within_tolerance says; None where it is."""
    tol = row.get("tolerance") or (fixed or {}).get(row.get("dtype"))
    if tol in (None, ""):
        return "judged ok with no bound (no tolerance, and no fixed bound of its dtype)"
    try:
        err, bound = float(row.get("rel_error")), float(tol)
    except (TypeError, ValueError):
        return f"judged ok with rel_error {row.get('rel_error')!r} or bound {tol!r} not a number"
    if not (math.isfinite(err) and err >= 0 and math.isfinite(bound) and bound > 0 and err <= bound):
        return f"judged ok with rel_error {row.get('rel_error')!r} not within its bound {tol!r}"
    if row.get("unwritten") not in (None, "") and row.get("unwritten") != "0":
        return f"judged ok with {row.get('unwritten')!r} output elements left unwritten"
    return None


def duplicated_cases(df: pd.DataFrame, path, by=("case",)) -> list:
    twice = df[df.duplicated(list(by), keep=False)]
    if twice.empty:
        return []
    return [f"{path}: cases listed twice: {_some(sorted(set(twice[by[0]])))}; {FIX}"]


def rows_against_plan(df: pd.DataFrame, path, expected: dict, variants_run: set, names_then: bool = True) -> list:
    """df: one bench step's rows (canonical names, columns key, impl, variant, set, repeat, status); expected: key ->
    (impl, variant, repeats) of the entries its recorded plan expands to; variants_run: the Triton variants the run
    timed in any set. Every expected entry (but a Triton variant the run never timed) has rows with repeats
    0 ... R-1, each once; an entry the check refused or judged wrong stops at that row (0 ... j, the last not ok);
    no entry outside the plan (the ablation set's names follow the registry's last stages at the time, so extras
    there are not judged; names_then=False, for the step's own file, judges them)."""
    problems = []
    asked = {k: r for k, (impl, variant, r) in expected.items() if impl != "triton" or variant in variants_run}
    missing = sorted(set(asked) - set(df.key))
    if missing:
        problems.append(f"{path}: entries its plan (env.json's plan and sets) times and the file has no row of: "
                        f"{_some(missing)}; {FIX}")
    sets = set(",".join(df.set.dropna().astype(str)).split(","))
    extra = sorted(set(df.key) - set(expected)) if "ablation" not in sets or not names_then else []
    if extra:
        problems.append(f"{path}: entries its plan (env.json's plan and sets) does not time: {_some(extra)}; {FIX}")
    wrong = []
    for key, g in df[df.key.isin(asked)].groupby("key"):
        reps = pd.to_numeric(g.repeat, errors="coerce")
        order = g.assign(r=reps).sort_values("r")
        got = list(order.r)
        stopped = (order.status != "ok").any()
        want = list(range(len(got))) if stopped else list(range(asked[key]))
        if got != want or (stopped and (order.status.iloc[:-1] != "ok").any()) or len(got) > asked[key]:
            wrong.append(f"{key} has repeats {[int(x) if x == x else x for x in got]}, the plan {asked[key]} "
                         f"(0 ... {asked[key] - 1}, each once)")
    if wrong:
        problems.append(f"{path}: repeats that are not the plan's: {'; '.join(wrong[:SHOWN])}"
                        + (f"; and {len(wrong) - SHOWN} more" if len(wrong) > SHOWN else "") + f"; {FIX}")
    return problems


def json_problems(sealed) -> list:
    """Every sealed env.json is one JSON object, and every line of a sealed snapshots.jsonl (but a blank one) is one
    (the steps write nothing else there): the readers take their fields by name."""
    problems = []
    for f in sorted(map(Path, sealed)):
        if f.name == "env.json":
            try:
                e = json.loads(f.read_text())
            except json.JSONDecodeError as err:
                problems.append(f"{f}: not JSON ({err}); {FIX}")
                continue
            if not isinstance(e, dict):
                problems.append(f"{f}: not a JSON object (a {type(e).__name__}): gpu_env writes one object of "
                                f"named fields; {FIX}")
        elif f.name == "snapshots.jsonl":
            for n, line in enumerate(f.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    e = json.loads(line)
                except json.JSONDecodeError as err:
                    problems.append(f"{f}: line {n} is not a JSON object ({err.msg}, column {err.colno}): a torn "
                                    f"or edited snapshot; {FIX}")
                    continue
                if not isinstance(e, dict):
                    problems.append(f"{f}: line {n} is not a JSON object (a {type(e).__name__}): a torn or edited "
                                    f"snapshot; {FIX}")
    return problems


def env_problems(sealed) -> list:
    """Every sealed measurement file (MEASUREMENTS) has its step's env.json sealed beside it, and every sealed
    env.json is JSON with a source_sha256 of 64 hex digits."""
    sealed = set(map(Path, sealed))
    problems = []
    for f in sorted(sealed):
        if f.name in MEASUREMENTS and f.parent / "env.json" not in sealed:
            problems.append(f"{f}: no sealed env.json beside it (the step's record of its GPU, versions, commit and "
                            f"code); {FIX}")
        if f.name == "env.json":
            try:
                e = json.loads(f.read_text())
            except json.JSONDecodeError as err:
                problems.append(f"{f}: not JSON ({err}); {FIX}")
                continue
            if not isinstance(e, dict):
                problems.append(f"{f}: not a JSON object (a {type(e).__name__}); {FIX}")
                continue
            if not SHA256.fullmatch(str(e.get("source_sha256") or "")):
                problems.append(f"{f}: source_sha256 {e.get('source_sha256')!r} is not a SHA-256 (64 hex digits, "
                                f"gpu_env.source_sha256); {FIX}")
    return problems


def ceilings_problems(df: pd.DataFrame, path) -> list:
    if "value" not in df:
        return [f"{path}: no value column (ceilings.py writes one: the ceiling of each row); {FIX}"]
    v = pd.to_numeric(df.value, errors="coerce")
    bad = df[~(v.map(lambda x: math.isfinite(x)) & (v >= 0))] if len(df) else df
    if bad.empty:
        return []
    return [f"{path}: ceilings not finite or negative: {_some(f'line {i + 2}' for i in bad.index)}; {FIX}"]


# ------------------------------------------------------------------------------ a step's own files, on a resume
RESUME_FIX = ("it is not this run's: move it away (or delete it) and run the step again, or run it with the options "
              "that made it")


def fixed_bounds() -> dict:
    """kernels.accuracy.TOLERANCE by the dtype's name ('float16'): the bound of a row that records none."""
    from kernels.accuracy import TOLERANCE
    return {str(dtype).removeprefix("torch."): tol for dtype, tol in TOLERANCE.items()}


def final_problems(final: Path, expected: dict, fixed: dict | None = None, key: str = "key") -> list:
    """A step's final file (timings.csv, correctness.csv) found when the step starts: its rows against what this run
    asks (expected: key -> (impl, variant, repeats), repeats None for a file of one row per case), each status one a
    step writes and each row judged ok within its bound. The origin file is gone once the final file is there, so
    the rows are the witness."""
    df = pd.read_csv(final, dtype={key: str})
    need = (key, "status", "rel_error") + (("tolerance",) if key == "case" else ("repeat", "impl", "variant", "set",
                                                                              "dtype"))
    missing = [c for c in need if c not in df]
    if missing:                       # not a file a step wrote: nothing more can be read from it
        return [f"{final}: no column {', '.join(missing)} (the step writes {', '.join(need)}); {RESUME_FIX}"]
    problems = statuses(df, final) + within_tolerance(df, final, fixed)
    if key == "case":
        final_only = ("ok", "refused")   # verify writes its final file only when no case is WRONG
        other = df[df.status.isin(STATUSES) & ~df.status.isin(final_only)]
        if not other.empty:
            problems.append(f"{final}: rows of a status verify never writes to its final file (it writes "
                            f"correctness.csv only when no case is WRONG; a failure stays in the partial file): "
                            f"{_some(f'line {i + 2} ({s!r})' for i, s in zip(other.index, other.status))}")
        missing, extra = sorted(set(expected) - set(df.case)), sorted(set(df.case) - set(expected))
        if missing:
            problems.append(f"{final}: cases this run asks for and the file has no row of: {_some(missing)}")
        if extra:
            problems.append(f"{final}: cases this run does not ask for: {_some(extra)}")
        problems += duplicated_cases(df, final)
    else:
        every = {variant for impl, variant, _ in expected.values()}
        problems += rows_against_plan(df, final, expected, every, names_then=False)
    return [p.replace(FIX, RESUME_FIX) for p in problems]


def resumable(rows: list, expected: dict, fixed: dict | None = None, key: str = "key") -> tuple:
    """(kept, dropped) of a partial file's rows (dicts of strings): a row is dropped, to be measured again, where
    its key is not this run's, its repeat is not one the plan asks (bench), its status is not one a step writes,
    or it is judged ok without being within its bound (judged_ok_problem: its tolerance, else fixed[dtype]; a row
    with neither, or with an error or bound not finite, negative, or poison left, is dropped); each dropped row
    with why."""
    kept, dropped = [], []
    for r in rows:
        k = r.get(key, "")
        why = None
        if k not in expected:
            why = "not a case or entry of this run"
        elif r.get("status") not in STATUSES:
            why = f"status {r.get('status')!r} is not one a step writes"
        elif key == "key" and not (str(r.get("repeat", "")).isdigit() and int(r["repeat"]) < expected[k][2]):
            why = f"repeat {r.get('repeat')!r} is not one the plan asks ({expected[k][2]} repeats)"
        elif r.get("status") == "ok":
            why = judged_ok_problem(r, fixed)
        (dropped if why else kept).append((r, why) if why else r)
    return kept, dropped
