"""The paper's numbers on the kernels' arithmetic guards on a GPU, from the guards probe (data/<gpu>/probes/
guards-v21, sealed): the correctness grid of every registered stage at the guarded source (verify.py), and the GPU
tests of the guards (tests/test_guards_gpu.py): pytest's summary as committed, and, from the run before the 16-bit
Q product's cases became strict xfails, the errors of the stages that prescale Q against SDPA's."""
import re
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed, listing
from pipeline.pytest_log import summary

# a failure's section in pytest's log: its header names the case (stage, head dim, log2 of the largest score), its
# assertion the verdict (the kernel's error, SDPA's)
SECTION = re.compile(r"_+ test_large_scores_within_the_kernels_domain\[(v\d+)-(\d+)-x1-2\^(\d+)\] _+\n(.*?)(?=\n_{5,} |\n=+ )",
                     re.S)
VERDICT = re.compile(r"'rel_error': ([0-9.e+-]+),.*'pytorch_rel_error': ([0-9.e+-]+)")


def prescaled_errors(log: Path) -> pd.DataFrame:
    """stage, D, log2 of the largest score, the kernel's error and SDPA's, of each failed domain case in the log."""
    rows = []
    for stage, d, e, body in SECTION.findall(Path(log).read_text()):
        m = VERDICT.search(body)
        if m is None:
            raise ValueError(f"{log}: the failure of {stage} D={d} at 2^{e} has no verdict")
        rows.append(dict(stage=stage, D=int(d), exp=int(e), err=float(m.group(1)), sdpa=float(m.group(2))))
    if not rows:
        raise ValueError(f"{log}: no failed domain case")
    return pd.DataFrame(rows)


def values(seal_file: Path, correctness: Path, tests: Path, tests_before: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("guards")
    c = pd.read_csv(correctness)
    v.macro("GuardGridCases", len(c))
    v.macro("GuardGridVariants", c.variant.nunique())
    v.macro("GuardGridWrong", int((c.status == "WRONG").sum()))
    s = summary(tests)
    if s.get("failed", 0):
        raise ValueError(f"{tests}: the committed GPU test of the guards has failures")
    v.macro("GuardTestsPassed", s["passed"])
    v.macro("GuardTestsXfailed", s.get("xfailed", 0))
    e = prescaled_errors(tests_before)
    v.macro("GuardPrescaledStages", listing(sorted(e.stage.unique(), key=lambda x: int(x[1:]))))
    seven, fourteen = ((e[e.exp == exp].err / e[e.exp == exp].sdpa) for exp in (7, 14))
    v.macro("GuardPrescaledRatioMinSeven", fixed(seven.min(), 1))
    v.macro("GuardPrescaledRatioMaxSeven", fixed(seven.max(), 1))
    v.macro("GuardPrescaledRatioMinFourteen", fixed(round(fourteen.min(), -1)))
    v.macro("GuardPrescaledRatioMaxFourteen", fixed(round(fourteen.max(), -1)))
    top = e[e.exp == e.exp.max()]
    v.macro("GuardPrescaledTopExp", int(e.exp.max()))
    v.macro("GuardPrescaledTopErrMin", fixed(100 * top.err.min(), 1))
    v.macro("GuardPrescaledTopErrMax", fixed(100 * top.err.max(), 1))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
