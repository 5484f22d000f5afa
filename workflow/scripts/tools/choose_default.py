"""Choose the stage that `kernels.attention` runs by default on each GPU architecture: kernels/default_stages.csv.

For a GPU folder of data/ (one architecture), the default is the leading stage of the aggregate (leader.csv: our
stages by the geometric mean of their time over cuDNN's across the N sweep, the article's included), provided the
runs' GPU correctness grids (the aggregate's correctness.csv) have cases of it and no WRONG one. The table names its
basis. Only architectures with such data get a row; elsewhere `attention` runs the article's last stage.

    python workflow/scripts/tools/choose_default.py --leader results/aggregate/leader.csv \\
        --correctness results/aggregate/correctness.csv --arch 90 --out kernels/default_stages.csv
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

COLUMNS = ["arch", "stage", "x_cudnn", "points", "runs", "verified_cases", "basis"]


def choose(leader: Path, correctness: Path, arch: int) -> pd.DataFrame:
    lead = pd.read_csv(leader)
    if not lead.leader.astype(bool).any():
        raise ValueError(f"{leader} marks no leader")
    row = lead[lead.leader.astype(bool)].iloc[0]
    c = pd.read_csv(correctness)
    cases = c[c.variant == row.stage]
    if cases.empty or (cases.status == "WRONG").any():
        raise ValueError(f"{row.stage} leads, but {correctness} has {len(cases)} GPU cases of it, "
                         f"{int((cases.status == 'WRONG').sum())} WRONG: verify it first")
    return pd.DataFrame([dict(arch=arch, stage=row.stage, x_cudnn=round(float(row.geomean_x_cudnn), 4),
                              points=int(row.points), runs=int(row.runs),
                              verified_cases=int((cases.status == "ok").sum()),
                              basis=f"the leader of the aggregate; ok in the GPU grids of {cases.run.nunique()} runs")],
                        columns=COLUMNS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leader", type=Path, required=True)
    ap.add_argument("--correctness", type=Path, required=True)
    ap.add_argument("--arch", type=int, required=True, help="the GPU's compute capability as major*10+minor (90)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    choose(a.leader, a.correctness, a.arch).to_csv(a.out, index=False)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
