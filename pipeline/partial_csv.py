"""The partial CSV files the GPU steps append to as they go (bench.py's timings.partial.csv, verify.py's
correctness.partial.csv), so that an interrupted step resumes where it stopped.

Beside each partial file, <partial>.origin.json records what it was begun under (pipeline.origin: the commit, the
SHA-256 of each source file, the plan's); it is written before the partial file itself, so that a partial file with
rows always has one. `resume` reads both before the step appends anything:

- a partial file with rows whose origin differs from this run's (another commit, a kernel or library file edited,
  another plan, other sets or another case list), or that records none, is refused (OriginError) with every
  difference named: its rows cannot be mixed with this run's. The fix, which the error gives: move the partial file
  and its origin file away (or delete them) and run again, which starts the step from nothing; or finish it with the
  code and plan it was begun under;
- a partial file with no rows (empty, header only, its header cut short) is begun afresh under this run's origin;
- a record cut short (no trailing newline: a killed job, a full disk) or with the wrong number of fields is dropped,
  with a message on stderr naming the file and line, so that its entry is measured again; the file is then rewritten
  without it (into a temporary file, renamed over it) before anything is appended;
- a header other than the step's columns is refused: the file comes from another version of the step.

The final CSV is the partial file renamed (or, for verify.py, rewritten from it): exactly the step's columns, the
origin never in it; the origin file is removed once the final file is there. `check_origin` and `write_origin` serve
a step whose state is other files (profile.py: its Nsight reports and per-pass CSVs, under profile.origin.json).
"""
from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

from . import origin as origins


class OriginError(ValueError):
    pass


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def origin_path(path: Path) -> Path:
    return path.with_name(path.name + ".origin.json")


CUT = "no trailing newline (cut short: the step was killed, or the disk was full, while writing it)"


def _records(text: str):
    """(first line, fields, problem) of each CSV record of text: problem is None for a whole record, CUT for one
    without its trailing newline, or what the CSV reader found wrong (fields is then None)."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    if not lines[-1]:
        lines.pop()
    reader, start = csv.reader(iter(lines)), 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            yield start, None, f"not CSV ({err})"
        else:
            yield start, fields, None if lines[reader.line_num - 1].endswith("\n") else CUT
        start = reader.line_num + 1


def _read(path: Path, columns: list, program: str, valid, warn) -> tuple:
    """(rows, clean): the file's good rows as dicts; clean is False when a record was dropped or the header was
    cut short (the file then needs writing again before anything is appended)."""
    if not path.exists():
        return [], True
    with open(path, newline="", errors="replace") as f:     # a record cut inside a character: dropped below
        records = _records(f.read())
    first = next(records, None)
    if first is None:
        return [], True
    if first[2] == CUT:                              # killed while its header was being written: nothing after it
        return [], False
    if first[1] != columns:
        found = first[1] if first[2] is None else first[2]
        raise ValueError(f"{path} has the columns {found}, not {columns}: it comes from another version of "
                         f"{program}; move it away to start again")
    rows, clean = [], True
    for line, fields, problem in records:
        if problem is None and len(fields) != len(columns):
            problem = f"{len(fields)} fields, not {len(columns)}"
        if problem is None and valid is not None and not valid(dict(zip(columns, fields))):
            problem = f"not a row of {program}"
        if problem is None:
            rows.append(dict(zip(columns, fields)))
        else:
            clean = False
            warn(f"{program}: {path}, line {line}: {problem}: dropped, its entry is measured again")
    return rows, clean


def read_rows(path: Path, columns: list, program: str, valid=None, warn=_stderr) -> list:
    """The good rows of a partial file (none for a missing or empty one); dropped records are named on stderr."""
    return _read(Path(path), columns, program, valid, warn)[0]


def _replace(path: Path, write) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def rewrite(path: Path, columns: list, rows: list) -> list:
    """The partial file made exactly its header and rows (atomically); returns rows."""
    def write(f):
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    _replace(Path(path), write)
    return rows


def _check_origin(path: Path, n_rows: int, now: dict, program: str) -> None:
    side, rows = origin_path(path), f"{n_rows} row" + ("s" if n_rows != 1 else "")
    fix = (f"Refused, so that no rows of another origin mix with this run's. To start this step again from nothing, "
           f"move {path} and its origin file {side.name} beside it away (or delete them) and run it again")
    check_origin(side, f"{path} holds {rows}", now, program, fix)


def check_origin(side: Path, holds: str, now: dict, program: str, fix: str) -> None:
    """Refuse (OriginError) state that `holds` describes ('<file> holds 3 rows') unless its origin file `side`
    records this run's origin `now`; fix: what to do, said after every refusal. Also for a step whose state is
    other files than one partial CSV (profile.py's reports)."""
    try:
        recorded = json.loads(Path(side).read_text())
    except FileNotFoundError:
        raise OriginError(f"{holds} but records no origin ({Path(side).name} is missing: begun by a "
                          f"{program} older than origin files, or the file was removed), so nothing shows which "
                          f"code and plan measured them. {fix}") from None
    except (OSError, ValueError) as err:
        raise OriginError(f"{holds} but its origin file {side} cannot be read ({err}). {fix}") from None
    diffs = origins.differences(recorded, now)
    if diffs:
        raise OriginError(f"{holds} begun under another origin than this run's: "
                          + "; ".join(diffs) + f". {fix}; or finish it with the code and plan it was begun under "
                          f"(commit {recorded.get('commit')}).")


def write_origin(side: Path, now: dict) -> None:
    """The origin file written atomically (before the state it describes)."""
    _replace(Path(side), lambda f: f.write(json.dumps(now, indent=2, sort_keys=True) + "\n"))


def resume(path: Path, columns: list, program: str, origin: dict, valid=None, warn=_stderr) -> list:
    """The rows an interrupted step resumes from, checked as the module says (OriginError, ValueError). On return
    the partial file holds exactly its header and these rows, and a partial file begun afresh has this run's
    origin beside it; the step then appends (open it with 'a')."""
    path = Path(path)
    rows, clean = _read(path, columns, program, valid, warn)
    if rows:
        _check_origin(path, len(rows), origin, program)
    else:                                            # begun afresh: the origin first, then the file
        write_origin(origin_path(path), origin)
    if not rows or not clean:
        rewrite(path, columns, rows)
    return rows


def promote(path: Path, final: Path) -> Path:
    """The finished partial file renamed final, then its origin file removed."""
    Path(path).rename(final)
    origin_path(Path(path)).unlink(missing_ok=True)
    return final


def remove(path: Path) -> None:
    """The partial file and its origin file removed (once the final file, made from it, is there)."""
    Path(path).unlink(missing_ok=True)
    origin_path(Path(path)).unlink(missing_ok=True)


def finished(path: Path) -> None:
    """With the final file there: remove an origin file left by a step killed between making the final file and
    removing it (nothing else), so that it is not sealed with the data."""
    if not Path(path).exists():
        origin_path(Path(path)).unlink(missing_ok=True)
