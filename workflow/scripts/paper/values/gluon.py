"""The paper's numbers on the Gluon stages before the pipeline measures them: the newest GPU check of the Gluon
kernel's current source (data/<gpu>/probes/gluon-v20, sealed: the GPU correctness grid of every Gluon stage at the
commit its env.json records, and compute-sanitizer's racecheck, synccheck and memcheck on small calls of each)."""
import re
import sys
from pathlib import Path

import pandas as pd

from kernels.stages import GLUON, GLUON_STAGES, STAGES

from pipeline import seal
from pipeline.latex import Values, listing

ORDINALS = ("First", "Second", "Third", "Fourth", "Fifth", "Sixth", "Seventh", "Eighth")


def sanitizer_errors(log: Path) -> int:
    """The error count of a compute-sanitizer log: its ERROR SUMMARY, or racecheck's RACECHECK SUMMARY."""
    text = Path(log).read_text()
    m = re.search(r"(?:ERROR|RACECHECK) SUMMARY: (\d+) (?:errors|hazards)", text)
    if m is None or "ran" not in text.split():
        raise ValueError(f"{log}: no sanitizer summary after a completed run")
    return int(m.group(1))


def values(seal_file: Path, correctness: Path, racecheck: Path, synccheck: Path, memcheck: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("gluon")
    c = pd.read_csv(correctness)
    unverified = []
    for i, (ordinal, stage) in enumerate(zip(ORDINALS, GLUON_STAGES)):
        s = c[c.variant == stage]
        v.macro(f"Gluon{ordinal}", stage)
        if s.empty:     # registered since the grid was committed: not verified yet, and the text says so
            unverified.append(stage)
            continue
        v.macro(f"Gluon{ordinal}Ok", int((s.status == "ok").sum()))
        v.macro(f"Gluon{ordinal}Wrong", int((s.status == "WRONG").sum()))
        v.macro(f"Gluon{ordinal}Refused", int((s.status == "refused").sum()))
        added = STAGES[stage].switches - (STAGES[GLUON_STAGES[i - 1]].switches if i else set())
        v.macro(f"Gluon{ordinal}Switch", sorted(added & GLUON.keys())[0].replace("_", r"\_"))
    v.macro("GluonUnverified", listing(unverified) if unverified else "none")
    v.macro("GluonRacecheckHazards", sanitizer_errors(racecheck))
    v.macro("GluonSynccheckErrors", sanitizer_errors(synccheck))
    v.macro("GluonMemcheckErrors", sanitizer_errors(memcheck))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
