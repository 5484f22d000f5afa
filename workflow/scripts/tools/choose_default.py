"""Choose the stage that `kernels.attention` runs by default on each GPU architecture: kernels/default_stages.csv.

For a GPU folder of data/ (one architecture), the default is the leading stage of the aggregate (leader.csv: the
Triton stages by the geometric mean of their time over cuDNN's across the N sweep, the article's included), or, given
gluon_leader.csv (the Gluon stages, sm_90 only, the same measure over the runs that timed them) and where the Gluon
leader's mean is the lower, the Gluon leader; provided the runs' GPU correctness grids (the aggregate's
correctness.csv) have cases of it and no WRONG one. The table names its basis. Only architectures with such data get
a row; elsewhere `attention` runs the article's last stage.

    python workflow/scripts/tools/choose_default.py --leader results/aggregate/leader.csv \\
        --gluon-leader results/aggregate/gluon_leader.csv \\
        --correctness results/aggregate/correctness.csv --arch 90 --out kernels/default_stages.csv
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

COLUMNS = ["arch", "stage", "x_cudnn", "points", "runs", "verified_cases", "fallback", "basis"]


def _leader(path: Path):
    lead = pd.read_csv(path)
    if not lead.leader.astype(bool).any():
        raise ValueError(f"{path} marks no leader")
    return lead[lead.leader.astype(bool)].iloc[0]


def choose(leader: Path, correctness: Path, arch: int, gluon_leader: Path | None = None) -> pd.DataFrame:
    row, which = _leader(leader), "the leader of the aggregate's Triton stages"
    fallback = row.stage          # for a call the default does not take (kernels.defaults): the Triton leader
    if gluon_leader is not None:
        if arch != 90:
            raise ValueError(f"the Gluon stages run on sm_90 only, not on arch {arch}: give no --gluon-leader")
        g = _leader(gluon_leader)
        if float(g.geomean_x_cudnn) < float(row.geomean_x_cudnn):
            row, which = g, (f"the Gluon leader ({float(g.geomean_x_cudnn):.3f}x cuDNN's time, geometric mean, "
                             f"against the Triton leader {row.stage}'s {float(row.geomean_x_cudnn):.3f}x)")
    c = pd.read_csv(correctness)
    cases = c[c.variant == row.stage]
    if cases.empty or (cases.status == "WRONG").any():
        raise ValueError(f"{row.stage} leads, but {correctness} has {len(cases)} GPU cases of it, "
                         f"{int((cases.status == 'WRONG').sum())} WRONG: verify it first")
    return pd.DataFrame([dict(arch=arch, stage=row.stage, x_cudnn=round(float(row.geomean_x_cudnn), 4),
                              points=int(row.points), runs=int(row.runs),
                              verified_cases=int((cases.status == "ok").sum()), fallback=fallback,
                              basis=f"{which}; ok in the GPU grid{'s' if cases.run.nunique() > 1 else ''} of "
                                    f"{cases.run.nunique()} run{'s' if cases.run.nunique() > 1 else ''}")],
                        columns=COLUMNS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leader", type=Path, required=True)
    ap.add_argument("--gluon-leader", type=Path, help="the Gluon stages' leader (gluon_leader.csv; sm_90 only)")
    ap.add_argument("--correctness", type=Path, required=True)
    ap.add_argument("--arch", type=int, required=True, help="the GPU's compute capability as major*10+minor (90)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    choose(a.leader, a.correctness, a.arch, a.gluon_leader).to_csv(a.out, index=False)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
