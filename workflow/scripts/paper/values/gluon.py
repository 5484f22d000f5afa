"""The paper's numbers on the Gluon stages' correctness: the newest GPU verification of the Gluon kernel's current
source (a run's verify step, sealed, whose env.json records the kernel's SHA-256: refused unless it is the current
source's), and compute-sanitizer's racecheck, synccheck and memcheck on small calls of the stages its logs name
(data/<gpu>/probes/guards-v21, sealed, at an earlier source of the kernel)."""
import re
import sys
from pathlib import Path

import pandas as pd

from kernels.stages import GLUON, GLUON_STAGES, STAGES

from pipeline import seal
from pipeline.latex import Values, listing

def sanitizer_errors(log: Path) -> int:
    """The error count of a compute-sanitizer log: its ERROR SUMMARY, or racecheck's RACECHECK SUMMARY."""
    text = Path(log).read_text()
    m = re.search(r"(?:ERROR|RACECHECK) SUMMARY: (\d+) (?:errors|hazards)", text)
    if m is None or "ran" not in text.split():
        raise ValueError(f"{log}: no sanitizer summary after a completed run")
    return int(m.group(1))


def sanitized_stages(log: Path) -> list:
    """The stages a sanitizer log's program ran: its line 'ran v21 ...' (the stages, or their list)."""
    for line in Path(log).read_text().splitlines():
        if line.startswith("ran "):
            return re.findall(r"v\d+", line)
    raise ValueError(f"{log}: no 'ran <stages>' line")


def counts(c: pd.DataFrame, stage: str) -> dict | None:
    """ok, WRONG and refused cases of a stage in the grid (None: the stage is not in it)."""
    s = c[c.variant == stage]
    if s.empty:
        return None
    return {status: int((s.status == status).sum()) for status in ("ok", "WRONG", "refused")}


def added_switch(i: int) -> str:
    """The Gluon switch that the i-th Gluon stage adds (the first: the kernel itself, `gluon`)."""
    before = STAGES[GLUON_STAGES[i - 1]].switches if i else frozenset()
    return sorted((STAGES[GLUON_STAGES[i]].switches - before) & GLUON.keys())[0].replace("_", r"\_")


def values(seal_file: Path, grid_seal: Path, correctness: Path, grid_env: Path, kernel: Path, racecheck: Path,
           synccheck: Path, memcheck: Path) -> Values:
    import hashlib
    import json
    seal.verify(Path(seal_file).parent)
    seal.verify(Path(grid_seal).parent)
    v = Values("gluon")
    ran = json.loads(Path(grid_env).read_text())["kernel_sha256"][Path(kernel).as_posix()]
    now = hashlib.sha256(Path(kernel).read_bytes()).hexdigest()
    if ran != now:
        raise ValueError(f"{correctness} verified {kernel} {ran[:12]}..., not its current source "
                         f"{now[:12]}...: verify on a GPU again and point GLUON_GRID at that run")
    folder = Path(grid_seal).parent
    # the grid's folder under data/<gpu>/ (run-35, probes/lane-max-gate) and the GPU it ran on (its env.json's)
    v.macro("GluonGridRun", folder.relative_to(next(p for p in folder.parents if p.parent.name == "data")).as_posix())
    v.macro("GluonGridGpu", json.loads(Path(grid_env).read_text())["gpu"].removeprefix("NVIDIA "))
    c = pd.read_csv(correctness)
    first, second = GLUON_STAGES[0], GLUON_STAGES[1]
    n1, n2 = counts(c, first), counts(c, second)
    if n1 is None or n2 is None:
        raise ValueError(f"{correctness} lacks {first} or {second}: the text describes both")
    v.macro("GluonFirst", first)
    v.macro("GluonFirstOk", n1["ok"])
    v.macro("GluonFirstWrong", n1["WRONG"])
    v.macro("GluonSecond", second)
    v.macro("GluonSecondOk", n2["ok"])
    v.macro("GluonSecondWrong", n2["WRONG"])
    v.macro("GluonSecondRefused", n2["refused"])
    v.macro("GluonSecondSwitch", added_switch(1))
    later = [(s, counts(c, s)) for s in GLUON_STAGES[2:]]
    checked = [f"{s} right in {n['ok']} cases and wrong in {n['WRONG']}"
               + (f" ({n['refused']} tiles it does not take refused)" if n["refused"] else "")
               for s, n in later if n is not None]
    v.macro("GluonLaterChecks", listing(checked) if checked else "none checked")
    unverified = [s for s, n in later if n is None]   # registered since the grid was committed
    v.macro("GluonUnverified", listing(unverified) if unverified else "none")
    sanitized = sanitized_stages(racecheck)
    if sanitized_stages(synccheck) != sanitized or sanitized_stages(memcheck) != sanitized:
        raise ValueError("the three sanitizer logs ran different stages")
    v.macro("GluonSanitized", listing(sanitized))
    if len(GLUON_STAGES) > 2:
        v.macro("GluonThird", GLUON_STAGES[2])
        v.macro("GluonThirdSwitch", added_switch(2))
    v.macro("GluonRacecheckHazards", sanitizer_errors(racecheck))
    v.macro("GluonSynccheckErrors", sanitizer_errors(synccheck))
    v.macro("GluonMemcheckErrors", sanitizer_errors(memcheck))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
