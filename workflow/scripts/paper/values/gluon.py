"""The paper's numbers on the Gluon stages before the pipeline measures them: the first GPU check of v19 (data/<gpu>/
probes/gluon-v19, sealed: the GPU correctness grid of the stage at the commit its env.json records)."""
import sys
from pathlib import Path

import pandas as pd

from kernels.stages import GLUON_STAGES

from pipeline import seal
from pipeline.latex import Values


def values(seal_file: Path, correctness: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("gluon")
    c = pd.read_csv(correctness)
    c = c[c.variant == GLUON_STAGES[0]]
    v.macro("GluonFirst", GLUON_STAGES[0])
    v.macro("GluonChecksOk", int((c.status == "ok").sum()))
    v.macro("GluonChecksWrong", int((c.status == "WRONG").sum()))
    v.macro("GluonChecksRefused", int((c.status == "refused").sum()))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
