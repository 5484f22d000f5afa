"""Choose the stage that `kernels.attention` runs by default on each GPU architecture: kernels/default_stages.csv.

For each GPU of one architecture whose runs are committed (a GPU folder of data/, its own aggregate), that GPU's
choice is its leading stage (leader.csv: the Triton stages by the geometric mean of their time over cuDNN's across
the N sweep, the article's included), or, given its gluon_leader.csv (the Gluon stages, sm_90 only, the same measure
over the runs that timed them) and where the Gluon leader's mean is the lower, its Gluon leader. Where the GPUs'
choices differ (the H200's runs ended at v35, the H100's timed v36-v38), the default is the choice that is faster
than every other choice on each GPU that timed both: ratios are compared within one GPU's runs only, never across
GPUs; two choices that no GPU timed together, or a tie of wins, are refused. The default must have cases in the GPU
correctness grids (the aggregates' correctness.csv) and no WRONG one. The table names its basis. Only architectures
with such data get a row; elsewhere `attention` runs the article's last stage.

    python workflow/scripts/tools/choose_default.py --arch 90 --out kernels/default_stages.csv \\
        --gpu nvidia-h200 results/aggregate/leader.csv results/aggregate/correctness.csv \\
              results/aggregate/gluon_leader.csv \\
        --gpu nvidia-h100-80gb-hbm3 results/gpus/nvidia-h100-80gb-hbm3/aggregate/leader.csv \\
              results/gpus/nvidia-h100-80gb-hbm3/aggregate/correctness.csv \\
              results/gpus/nvidia-h100-80gb-hbm3/aggregate/gluon_leader.csv
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

COLUMNS = ["arch", "stage", "x_cudnn", "points", "runs", "verified_cases", "fallback", "basis"]


@dataclass
class Gpu:
    """One GPU's aggregate: its name (its data/ folder), its Triton leader table and correctness grid, and for sm_90
    its Gluon leader table."""
    name: str
    leader: Path
    correctness: Path
    gluon_leader: Path | None = None

    def tables(self) -> pd.DataFrame:
        """Every stage this GPU's runs timed at every point of the sweep, Triton's and Gluon's, with its mean."""
        parts = [pd.read_csv(self.leader)] + ([pd.read_csv(self.gluon_leader)] if self.gluon_leader else [])
        return pd.concat(parts).set_index("stage")


def _leader(path: Path):
    lead = pd.read_csv(path)
    if not lead.leader.astype(bool).any():
        raise ValueError(f"{path} marks no leader")
    return lead[lead.leader.astype(bool)].iloc[0]


def gpu_choice(gpu: Gpu, arch: int) -> tuple:
    """(the GPU's choice's row, the Triton leader's stage, the words of why)."""
    row, which = _leader(gpu.leader), "the leader of the aggregate's Triton stages"
    triton = row.stage
    if gpu.gluon_leader is not None:
        if arch != 90:
            raise ValueError(f"the Gluon stages run on sm_90 only, not on arch {arch}: give {gpu.name} no Gluon leader")
        g = _leader(gpu.gluon_leader)
        if float(g.geomean_x_cudnn) < float(row.geomean_x_cudnn):
            row, which = g, (f"the Gluon leader ({float(g.geomean_x_cudnn):.3f}x cuDNN's time, geometric mean, "
                             f"against the Triton leader {row.stage}'s {float(row.geomean_x_cudnn):.3f}x)")
    return row, triton, which


def head_to_head(choices: dict, gpus: list) -> str:
    """The GPU whose choice is faster than every other GPU's choice on each GPU that timed both (a GPU that timed
    neither or one of them does not judge the pair)."""
    tables = {g.name: g.tables() for g in gpus}
    stages = {name: str(row.stage) for name, (row, _, _) in choices.items()}
    winners = []
    for name, stage in stages.items():
        beats_all = True
        for other, rival in stages.items():
            if rival == stage:
                continue
            judges = [t for t in tables.values() if stage in t.index and rival in t.index]
            if not judges:
                raise ValueError(f"{stage} ({name}'s choice) and {rival} ({other}'s) never ran at every point on one "
                                 f"GPU: time both in one run before choosing between them")
            beats_all &= all(t.geomean_x_cudnn[stage] < t.geomean_x_cudnn[rival] for t in judges)
        if beats_all:
            winners.append(name)
    if len({stages[w] for w in winners}) != 1:
        raise ValueError(f"the GPUs' choices {stages} have no single stage faster than the others on every GPU that "
                         f"timed both: time them side by side in one run")
    return winners[0]


def choose(gpus: list, arch: int) -> pd.DataFrame:
    if not gpus:
        raise ValueError("give at least one --gpu")
    choices = {g.name: gpu_choice(g, arch) for g in gpus}
    name = head_to_head(choices, gpus)
    row, fallback, which = choices[name]   # fallback: for a call the default does not take (kernels.defaults)
    c = pd.concat([pd.read_csv(g.correctness) for g in gpus])
    cases = c[c.variant == row.stage]
    if cases.empty or (cases.status == "WRONG").any():
        raise ValueError(f"{row.stage} leads, but the correctness grids have {len(cases)} GPU cases of it, "
                         f"{int((cases.status == 'WRONG').sum())} WRONG: verify it first")
    others = sorted({str(r.stage) for n, (r, _, _) in choices.items() if n != name} - {str(row.stage)})
    against = f"; faster than {', '.join(others)} on every GPU that timed both" if others else ""
    runs = cases.run.nunique()
    return pd.DataFrame([dict(arch=arch, stage=row.stage, x_cudnn=round(float(row.geomean_x_cudnn), 4),
                              points=int(row.points), runs=int(row.runs),
                              verified_cases=int((cases.status == "ok").sum()), fallback=fallback,
                              basis=f"on {name}, {which}{against}; ok in the GPU grid{'s' if runs > 1 else ''} of "
                                    f"{runs} run{'s' if runs > 1 else ''}")],
                        columns=COLUMNS)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", nargs="+", action="append", required=True,
                    metavar=("NAME LEADER CORRECTNESS", "GLUON_LEADER"),
                    help="one GPU's aggregate: its name, leader.csv, correctness.csv and, on sm_90, gluon_leader.csv")
    ap.add_argument("--arch", type=int, required=True, help="the GPU's compute capability as major*10+minor (90)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    gpus = []
    for spec in a.gpu:
        if len(spec) not in (3, 4):
            ap.error(f"--gpu {' '.join(spec)}: give NAME LEADER CORRECTNESS [GLUON_LEADER]")
        gpus.append(Gpu(spec[0], *map(Path, spec[1:])))
    choose(gpus, a.arch).to_csv(a.out, index=False)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
