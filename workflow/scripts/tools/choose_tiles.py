"""Choose the tile of each sequence length from a recorded tuning run: kernels/tuned_tiles.csv.

The tuning set of a sealed run (bench-tuning/timings.csv: one stage at every tile of plan.tuning's grid, at each N of
the headline layout) is read through the run's checksums; for each N the tile with the lowest median kernel time
wins. The table names its source (run, variant, switches) and the time of the winner and of the runner-up, so that
the choice can be checked against the data; tests/test_stages.py regenerates it from the committed run and compares.

    python workflow/scripts/choose_tiles.py --run data/nvidia-h200/run-10-x2 --out kernels/tuned_tiles.csv
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal

COLUMNS = ["D", "dtype", "N", "block_m", "block_n", "num_warps", "num_stages", "time_us", "runner_up", "runner_up_us",
           "tiles_tried", "run", "variant", "switches"]


def choose(run: Path) -> pd.DataFrame:
    seal.verify(run)
    path = run / "bench-tuning" / "timings.csv"
    if not path.exists():
        raise FileNotFoundError(f"{run} has no tuning set (bench-tuning/timings.csv): measure one with plan.tuning")
    t = pd.read_csv(path)
    t = t[t.set.str.split(",").apply(lambda s: "tuning" in s) & (t.impl == "triton")]
    ok = t[t.status == "ok"]
    if ok.empty:
        raise ValueError(f"{path}: no tuning entry ran")
    keys = ["D", "dtype", "N", "block_m", "block_n", "num_warps", "num_stages"]
    med = ok.groupby(keys + ["variant", "switches"], as_index=False).time_us.median()
    rows = []
    for (D, dtype, N), g in med.groupby(["D", "dtype", "N"]):
        g = g.sort_values("time_us", kind="stable")
        best, second = g.iloc[0], g.iloc[1] if len(g) > 1 else None
        label = (lambda r: f"{int(r.block_m)}x{int(r.block_n)}w{int(r.num_warps)}s{int(r.num_stages)}")
        rows.append(dict(D=int(D), dtype=dtype, N=int(N), block_m=int(best.block_m), block_n=int(best.block_n),
                         num_warps=int(best.num_warps), num_stages=int(best.num_stages),
                         time_us=round(float(best.time_us), 3),
                         runner_up=label(second) if second is not None else "",
                         runner_up_us=round(float(second.time_us), 3) if second is not None else "",
                         tiles_tried=len(g), run=run.name, variant=best.variant, switches=best.switches))
    return pd.DataFrame(rows, columns=COLUMNS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, required=True, help="a sealed run folder with a tuning set")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    table = choose(args.run)
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
