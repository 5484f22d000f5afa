"""The paper's numbers from the host-cost probe of v28's session (data/<gpu>/probes/host-cost-v28, sealed;
workflow/scripts/tools/host_cost.py at the commit its env.json records): a cached call of every stage registered at
its commit (v0-v28, its `--quick` pass) and of the Gluon stages (the plan's loops), PyTorch's SDPA on the same host, and the
counts of the GPU tests it ran (v28's guards, the operator)."""
import json
import sys
from pathlib import Path

import pandas as pd

from kernels.stages import STAGES
from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.pytest_log import passed
from pipeline.selection import HOST_TARGET_US as TARGET_US


def values(seal_file: Path, quick: Path, gluon: Path, env: Path, guards: Path, op: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("host28")
    q = pd.read_csv(quick)
    cache = q[q.path == "cache"].set_index("variant").host_us
    if not set(cache.index) <= set(STAGES) or "v28" not in cache.index:
        raise ValueError(f"{quick}: the quick pass should cover v28 and registered stages only")
    if not q[q.path.isin(["triton", "fill", "cache"])].same_as_triton.astype(bool).all():
        raise ValueError(f"{quick}: a launch path's output differs from Triton's own launch")
    v.macro("HostQuickStages", len(cache))
    v.macro("HostQuickMin", fixed(cache.min(), 1))
    v.macro("HostQuickMax", fixed(cache.max(), 1))
    v.macro("HostQuickMaxStage", cache.idxmax())
    v.macro("HostQuickOver", int((cache > TARGET_US).sum()))
    g = pd.read_csv(gluon)
    gc = g[g.path == "cache"].set_index("variant").host_us
    torch = g[g.path == "torch"].set_index("variant").host_us
    v.macro("HostGluonStages", f"{gc.index[0]}--{gc.index[-1]}")
    v.macro("HostGluonMin", fixed(gc.min(), 1))
    v.macro("HostGluonMax", fixed(gc.max(), 1))
    v.macro("HostFoldUs", fixed(gc["v28"], 1))
    v.macro("HostGluonSdpaUs", fixed(torch["sdpa"], 1))
    v.macro("HostGluonLoops", int(g.host_loops.iloc[0]))
    v.macro("HostGluonCommit", json.loads(Path(env).read_text())["project_commit"][:7])
    v.macro("HostFoldGuardsPassed", passed(guards))
    v.macro("HostOpPassed", passed(op))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
