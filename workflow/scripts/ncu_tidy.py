"""Read an Nsight Compute report with NVIDIA's Python report interface and write it as a tidy CSV.

One row per profiled kernel x metric (x instance, for instanced metrics such as the per-opcode instruction
counts): the entry it belongs to (from its NVTX range), the kernel's name, the metric's own Nsight name, its value
and unit. Every numeric metric in the report is kept; instanced metrics with more than MAX_INSTANCES instances (the
per-instruction source counters) are left to the report itself.

`ncu_report` comes from the `ncu-report` package on PyPI (reads reports on a machine with no GPU), or from the
extras/python folder of an Nsight Compute installation.
"""
from __future__ import annotations

import csv
import glob
import json
import shutil
import sys
from pathlib import Path

MAX_INSTANCES = 256
COLUMNS = ["key", "kernel", "metric", "instance", "value", "unit"]


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


def tidy(report: Path, order: list) -> list:
    """Rows for every kernel in the report; `order` names the entries in launch order, for kernels without NVTX."""
    ncu_report = import_ncu_report()
    ctx = ncu_report.load_report(str(report))
    rows, n = [], 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            names = [x for x in _nvtx_names(action) if x in order]
            key = names[-1] if names else (order[n] if n < len(order) else f"kernel-{n}")
            n += 1
            for name in action.metric_names():
                m = action.metric_by_name(name)
                unit = m.unit()
                inst = m.num_instances() if hasattr(m, "num_instances") else 0
                if inst and m.has_correlation_ids():
                    if inst > MAX_INSTANCES:
                        continue
                    ids = m.correlation_ids()
                    for i in range(inst):
                        v = _number(m, ncu_report, i)
                        if v is not None:
                            rows.append(dict(key=key, kernel=action.name(), metric=name,
                                             instance=ids.as_string(i), value=v, unit=unit))
                    continue
                v = _number(m, ncu_report)
                if v is not None:
                    rows.append(dict(key=key, kernel=action.name(), metric=name, instance="", value=v, unit=unit))
    return rows


def write(rows: list, path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    report, order, out = map(Path, sys.argv[1:4])
    rows = tidy(report, json.loads(order.read_text()))
    write(rows, out)
    print(f"{len(rows)} rows, {len({r['key'] for r in rows})} kernels -> {out}")
