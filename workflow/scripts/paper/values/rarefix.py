"""The paper's numbers on rare_rescale's bug and its fix (data/<gpu>/probes/guards-rare-rescale, at the source the
runs timed, and probes/rare-rescale-fix, at the fixed one; both sealed): the GPU guard tests that failed
(\\RareBugFailed of \\RareBugTests, \\RareBugPerStage for each of \\RareBugStages, relative errors \\RareBugErrMin to
\\RareBugErrMax against bounds up to \\RareBugTolMax), and after the fix the guard tests of the stages before and with
it (\\RareFixGuards passed), the Gluon stages' verify grid (\\RareFixCases cases, \\RareFixWrong wrong) and the
operator's GPU tests (\\RareFixOp passed)."""
import re
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed, listing
from pipeline.pytest_log import passed, summary


def values(bug_seal: Path, bug_guards: Path, fix_seal: Path, fix_guards: Path, fix_correctness: Path,
           fix_op: Path) -> Values:
    seal.verify(Path(bug_seal).parent)
    seal.verify(Path(fix_seal).parent)
    v = Values("rarefix")
    s = summary(bug_guards)
    if not s.get("failed"):
        raise ValueError(f"{bug_guards}: no failure, nothing to report")
    text = Path(bug_guards).read_text()
    failed = re.findall(r"^FAILED tests/test_guards_gpu\.py::\w+\[(v\d+)-", text, re.M)
    if len(failed) != s["failed"]:
        raise ValueError(f"{bug_guards}: {len(failed)} FAILED lines for {s['failed']} failures")
    per_stage = pd.Series(failed).value_counts()
    if per_stage.nunique() != 1:
        raise ValueError(f"{bug_guards}: the stages failed different numbers of cases: {per_stage.to_dict()}")
    v.macro("RareBugFailed", str(s["failed"]))
    v.macro("RareBugTests", str(s["failed"] + s.get("passed", 0)))
    v.macro("RareBugStages", listing(sorted(per_stage.index, key=lambda st: int(st[1:]))))
    v.macro("RareBugPerStage", str(int(per_stage.iloc[0])))
    errors = [float(e) for e in re.findall(r"'rel_error': ([0-9.e+-]+)", text)]
    bounds = [float(e) for e in re.findall(r"'tolerance': ([0-9.e+-]+)", text)]
    v.macro("RareBugErrMin", fixed(min(errors), 2))
    v.macro("RareBugErrMax", fixed(max(errors), 1))
    v.macro("RareBugTolMax", f"{max(bounds):.1e}".replace("e-0", "e-"))
    v.macro("RareFixGuards", str(passed(fix_guards)))
    c = pd.read_csv(fix_correctness)
    v.macro("RareFixCases", str(len(c)))
    v.macro("RareFixWrong", str(int((c.status == "WRONG").sum())))
    v.macro("RareFixOp", str(passed(fix_op)))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
