"""The paper's words on what the runs' GPU could run (results/aggregate/runs.csv): the compute capability every run
recorded (env.json), the variants a run's plan skipped because its GPU cannot run them (its plan.yaml's record,
pipeline.plan.adapt), and the stages that need Hopper (pipeline.plan.needs_hopper, over the registry's stages)."""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import STAGES
from pipeline import plan
from pipeline.latex import Values, listing


def values(runs: Path) -> Values:
    v = Values("gpuarch")
    r = pd.read_csv(runs, keep_default_na=False, dtype=str)
    capabilities = sorted({c for cell in r.capability for c in cell.split()})
    if not capabilities:
        raise ValueError(f"{runs}: no run recorded its GPU's compute capability")
    v.macro("RunsCapability", listing(capabilities))
    v.macro("RunsSkippedList", listing(sorted({s for cell in r.skipped for s in cell.split()})))
    v.macro("HopperOnlyStagesList", listing([s for s, st in STAGES.items() if plan.needs_hopper(st.switches)]))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
