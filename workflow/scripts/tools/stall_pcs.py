"""An Nsight Compute report's source-level counters, one row per SASS instruction: its address, its SASS text, and
every metric of the report that Nsight correlates with instruction addresses (the warp-state samples of the
SourceCounters section, smsp__pcsamp_*, per stall reason, and the executed-instruction counts), as a tidy CSV.

    python stall_pcs.py <report.ncu-rep> <out.csv>

One report of one profiled launch (probes/stall-source, workflow/scripts/tools/stall_source.sh); a report of several
launches gets a row per launch and address, told apart by the column `launch`. Read with the `ncu_report` module of
Nsight Compute (pipeline.nsight.import_ncu_report), on the GPU machine or any other.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

from pipeline.nsight import import_ncu_report


def per_address(action) -> dict:
    """{address: {metric: value}} over the action's metrics that carry instruction addresses."""
    rows: dict = {}
    for name in action.metric_names():
        m = action.metric_by_name(name)
        if not m.has_correlation_ids():
            continue
        ids = m.correlation_ids()
        for i in range(m.num_instances()):
            value = m.as_double(i) if m.kind() in (m.ValueKind_DOUBLE, m.ValueKind_FLOAT) else m.as_uint64(i)
            rows.setdefault(ids.as_uint64(i), {})[name] = value
    return rows


def main(report: str, out: str) -> None:
    ncu_report = import_ncu_report()
    ctx = ncu_report.load_report(report)
    table, metrics = [], set()
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            rows = per_address(action)
            if not rows:
                raise SystemExit(f"{report}: launch {action.name()} has no source-level counters "
                                 "(profile it with --section SourceCounters)")
            for address in sorted(rows):
                metrics.update(rows[address])
                table.append(dict(launch=f"{r}.{a}",
                                  kernel=action.name(), address=address, sass=action.sass_by_pc(address),
                                  **rows[address]))
    columns = ["launch", "kernel", "address", "sass"] + sorted(metrics)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(table)
    print(f"{out}: {len(table)} instructions, {len(metrics)} source-level metrics")


if __name__ == "__main__":
    if len(sys.argv) != 3 or not Path(sys.argv[1]).exists():
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
