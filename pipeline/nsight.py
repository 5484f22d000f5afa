"""Read an Nsight Compute report with NVIDIA's Python report interface and write it as a tidy CSV.

One row per profiled kernel x metric (x instance, for instanced metrics such as the per-opcode instruction
counts): the entry it belongs to (from its NVTX range), the kernel's name, the metric's own Nsight name, its value
and unit. Every numeric metric in the report is kept, except the per-unit breakdowns (names with a unit prefix such
as "TPC.TriageCompute.") and instanced metrics with more than MAX_INSTANCES instances (the per-instruction source
counters): those stay in the report itself. The report may be gzip-compressed (.ncu-rep.gz).

`ncu_report` comes from the `ncu-report` package on PyPI (reads reports on a machine with no GPU), or from the
extras/python folder of an Nsight Compute installation.
"""
from __future__ import annotations

import contextlib
import csv
import glob
import gzip
import re
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from . import keys

MAX_INSTANCES = 256
COLUMNS = ["key", "impl", "variant", "stage", "kernel", "metric", "instance", "value", "unit"]
BREAKDOWN = re.compile(r"^[A-Z][A-Z0-9_]*\.")  # per-unit breakdown metrics, e.g. TPC.TriageCompute.sm__...


def import_ncu_report():
    try:
        import ncu_report
        return ncu_report
    except ImportError:
        pass
    roots = []
    if shutil.which("ncu"):
        roots.append(str(Path(shutil.which("ncu")).resolve().parent / "extras" / "python"))
    roots += sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True)
    for root in roots:
        if Path(root, "ncu_report.py").exists():
            sys.path.insert(0, root)
            import ncu_report
            return ncu_report
    raise ImportError("ncu_report not found: pip install ncu-report, or install Nsight Compute")


def _number(metric, ncu_report, idx=None):
    args = () if idx is None else (idx,)
    try:
        kind = metric.kind(*args)
    except TypeError:  # older report interfaces take no index here
        kind = metric.kind()
    M = ncu_report.IMetric
    if kind in (M.ValueKind_DOUBLE, M.ValueKind_FLOAT):
        return metric.as_double(*args)
    if kind in (M.ValueKind_UINT32, M.ValueKind_UINT64):
        return metric.as_uint64(*args)
    return None  # strings and empty values


def _nvtx_names(action) -> list:
    names = []
    try:
        state = action.nvtx_state()
        for dom_id in state.domains():
            names += list(state.domain_by_id(dom_id).push_pop_ranges())
    except Exception:  # a report without NVTX data
        pass
    return names


@contextlib.contextmanager
def _plain(report: Path):
    """The report as an uncompressed file (ncu_report reads no gzip)."""
    if report.suffix != ".gz":
        yield report
        return
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / report.stem
        with gzip.open(report, "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        yield plain


def describe(key: str) -> dict:
    """impl, variant and stage from an entry key (pipeline.keys)."""
    from kernels.stages import STAGES

    k = keys.parse(key)
    return {"key": key, "impl": k.impl, "variant": k.variant,
            "stage": k.variant if k.impl == "triton" and k.variant in STAGES else ""}


def tidy(report: Path, order: list) -> list:
    """Rows for every kernel in the report. `order` lists the keys of the profiled entries in launch order; a
    kernel is matched to its entry by NVTX range, else by position."""
    ncu_report = import_ncu_report()
    rows, seen = [], set()
    for n, (action, names) in enumerate(_actions(ncu_report, report, order)):
        if not names and n >= len(order):
            raise ValueError(f"{report}: kernel {n} ({action.name()}) is in no profiled entry's NVTX range and past "
                             f"the {len(order)} entries of the order file")
        key = names[-1] if names else order[n]
        base = {**describe(key), "kernel": action.name()}
        for name in action.metric_names():
            if BREAKDOWN.match(name):
                continue
            m = action.metric_by_name(name)
            unit = m.unit()
            inst = m.num_instances() if hasattr(m, "num_instances") else 0
            if inst and m.has_correlation_ids():
                if inst > MAX_INSTANCES:
                    continue
                ids = m.correlation_ids()
                values = [(ids.as_string(i), _number(m, ncu_report, i)) for i in range(inst)]
            else:
                values = [("", _number(m, ncu_report))]
            for instance, v in values:
                ident = (key, base["kernel"], name, instance)
                if v is not None and ident not in seen:
                    seen.add(ident)
                    rows.append({**base, "metric": name, "instance": instance, "value": v, "unit": unit})
    return rows


def _actions(ncu_report, report: Path, order: list):
    """Every profiled kernel of the report, in order, with the names of the profiled entries whose NVTX ranges
    hold it."""
    profiled = set(order)
    with _plain(Path(report)) as plain:
        ctx = ncu_report.load_report(str(plain))
        for r in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                yield action, [x for x in _nvtx_names(action) if x in profiled]


DURATION = "gpu__time_duration.sum"
# The SM clock over the kernel (Hz), collected in the duration pass beside the duration (the same replay), so that a
# difference from the kernel timer can be set against the clock each ran at.
CLOCK = "sm__cycles_elapsed.avg.per_second"
DURATION_METRICS = (DURATION, CLOCK)
DURATION_COLUMNS = ["key", "impl", "variant", "stage", "kernel", "index", "duration_ns", "sm_hz"]


def durations(report: Path, order: list) -> list:
    """One row per profiled kernel: its entry, its position among the entry's kernels, gpu__time_duration in ns and
    the SM clock in Hz (empty where the report has no CLOCK: a pass that did not collect it)."""
    ncu_report = import_ncu_report()
    rows, count = [], {}
    for action, names in _actions(ncu_report, report, order):
        if not names:
            raise ValueError(f"{report}: kernel {action.name()} is in no profiled entry's NVTX range")
        key = names[-1]
        m = action.metric_by_name(DURATION)
        if m is None:
            raise ValueError(f"{report}: {DURATION} missing for {key}")
        value = _number(m, ncu_report)
        unit = m.unit()
        scale = {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9,
                 "second": 1e9}.get(unit)
        if scale is None:
            raise ValueError(f"{report}: {DURATION} in an unknown unit {unit!r}")
        clock = action.metric_by_name(CLOCK)
        hz = _number(clock, ncu_report) if clock is not None else None
        rows.append({**describe(key), "kernel": action.name(), "index": count.get(key, 0),
                     "duration_ns": value * scale, "sm_hz": "" if hz is None else hz})
        count[key] = count.get(key, 0) + 1
    return rows


def write(rows: list, path: Path, columns=COLUMNS) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)


def stream_launches(path: Path) -> "pd.DataFrame":
    """Nsight Compute's --csv output of a profiled program (tools/cap_clock.sh, the v38 gate's second command), past
    the program's own lines: one row per launch, a column per metric, values as numbers (thousands separators read);
    fewer than three launches are refused (the values steps take the median of three)."""
    import io

    import pandas as pd
    lines = Path(path).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    d = pd.read_csv(io.StringIO("\n".join(lines[start:])), thousands=",")
    wide = d.pivot_table(index="ID", columns="Metric Name", values="Metric Value")
    if len(wide) < 3:
        raise ValueError(f"{path}: {len(wide)} profiled launches, where the text takes the median of three")
    return wide


if __name__ == "__main__":
    mode, (report, order, out) = sys.argv[1], map(Path, sys.argv[2:5])
    if mode == "full":
        rows = tidy(report, json.loads(order.read_text()))
        write(rows, out)
    elif mode == "duration":
        rows = durations(report, json.loads(order.read_text()))
        write(rows, out, DURATION_COLUMNS)
    else:
        raise SystemExit(f"usage: python -m pipeline.nsight full|duration REPORT ORDER OUT (got {mode!r})")
    print(f"{len(rows)} rows, {len({r['key'] for r in rows})} entries -> {out}")
    sys.stdout.flush()
    os._exit(0)  # skip the report library's teardown, which has crashed at exit
