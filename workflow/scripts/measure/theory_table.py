"""The theoretical traffic and FLOPs (kernels/theory.py: the article's T1, T2) of every Triton entry of the plan.

    python workflow/scripts/theory_table.py --config config/config.yaml --out data/<gpu>/<run>/theory.csv
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path


from kernels.theory import traffic

from pipeline import plan


def rows(entries) -> list:
    out = []
    for e in entries:
        if e.impl == "triton":
            t = traffic(e.shape, e.tile.block_m, e.tile.block_n, "causal_skip" in e.switches)
            out += [{"key": e.key, **e.row(), "quantity": q, "value": v} for q, v in t.items()]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="the plan: config/config.yaml, or a run's plan.yaml")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    r = rows(plan.expand(plan.load_config(a.config)))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(r[0]))
        w.writeheader()
        w.writerows(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
