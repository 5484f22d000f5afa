"""The paper's numbers on issue 22's guards of the exponent: the lowered block maximum (run-28's source and after),
the clamp behind a warp vote, and the exact exponent that replaced both, from five probes on one H200 each
(workflow/rules/paper.smk: PROBE_LOWERED, PROBE_VOTE, PROBE_UNDERFLOW, PROBE_EXACT, PROBE_EXACT_TIMING; their
READMEs say what ran):

- the clamp alone: the large-score cases of the guards' GPU test that failed, with the output's relative error from
  float64 (UnderflowFailed, UnderflowCases, UnderflowErrMin, UnderflowErrMax) and SDPA's on the same inputs
  (UnderflowSdpaErrMax);
- the lowering: the guards' GPU test at its source (LoweredGuardsPassed, LoweredGuardsFailed) and the verify grid
  (LoweredCases, LoweredWrong), and each entry's change in time from the sources before it (A) to the sources with
  it (B), the median of B's repeats over the median of A's, in percent (\\val{lowered}{<entry>@<N>}{change}), with
  the committed prediction (data/predictions/probes.csv, probe lowered_max: pred, held);
- the vote: the same for v29 with the clamp behind a warp vote (B) against the clamp on every score (A)
  (\\val{vote}{<entry>@<N>}{change}, pred, held; probe clamp_vote);
- the exact exponent, (s - m) * scale: the guards' GPU test at its source (ExactGuardsPassed, ExactGuardsFailed; its
  near-tie cases, new with it, ExactNearTies) and the verify grid (ExactCases, ExactWrong), and, in a second
  command, the change in time from the lowered maximum with the clamp (A) to it (B) (\\val{exact}{<entry>@<N>}{change},
  pred, held; probe exact_diff).

Each A/B probe ran its processes in turn, A1 B1 A2 B2 ... on one GPU; cuDNN, which neither source touches, is timed
in each as the control.
"""
import re
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed


def key(variant: str, n: int) -> str:
    return f"{variant.removeprefix('torch-')}@{n}"


def pytest_counts(log: Path) -> dict:
    """passed and failed of a pytest log's summary line (0 where it names none); refused without one."""
    lines = [line for line in Path(log).read_text().splitlines() if re.match(r"=+ .* in [\d.]+s", line)]
    if not lines:
        raise ValueError(f"{log}: no pytest summary line (a run cut short)")
    found = dict((word, int(n)) for n, word in re.findall(r"(\d+) (passed|failed)", lines[-1]))
    return {word: found.get(word, 0) for word in ("passed", "failed")}


def ab_change(folder: Path) -> pd.Series:
    """Per (variant, N): 100 x (median of B's times / median of A's - 1) over the folder's timing-A*/B* files."""
    rows = []
    for f in sorted(Path(folder).glob("timing-[AB]*.csv")):
        t = pd.read_csv(f)
        if (t.status != "ok").any():
            raise ValueError(f"{f}: an entry not ok: {t[t.status != 'ok'][['variant', 'N', 'status']].values.tolist()}")
        rows.append(t.assign(side=f.stem.split("-")[1][0]))
    t = pd.concat(rows)
    med = t.pivot_table(index=["variant", "N"], columns="side", values="time_us", aggfunc="median")
    if med.isna().any().any() or set(med.columns) != {"A", "B"}:
        raise ValueError(f"{folder}: every entry needs both A and B timings")
    return 100 * (med["B"] / med["A"] - 1)


def signed(pct: float) -> str:
    """A predicted bound in percent with its sign (0 without one)."""
    return f"{pct:+g}" if pct else "0"


def changes(probe: str, change: pd.Series, predictions: pd.DataFrame) -> list:
    """(row, column, text) of each entry's change, and of each prediction of `probe` (its range, and whether the
    change fell in it)."""
    out = [(key(var, n), "change", f"{pct:+.1f}") for (var, n), pct in change.items()]
    pred = predictions[predictions.probe == probe]
    if pred.empty:
        raise ValueError(f"no {probe} prediction in data/predictions/probes.csv")
    for row in pred.itertuples():
        stage = row.variant.split("+")[0]
        if (stage, row.N) not in change.index:
            raise ValueError(f"{probe} predicts {row.variant} at N = {row.N}, which the probe did not time")
        pct = change[(stage, row.N)]
        out.append((key(stage, row.N), "pred", f"{signed(row.low_pct)} to {signed(row.high_pct)}"))
        out.append((key(stage, row.N), "held", "held" if row.low_pct <= pct <= row.high_pct else "missed"))
    return out


def values(lowered_seal: Path, vote_seal: Path, underflow_seal: Path, exact_seal: Path, exact_timing_seal: Path,
           exact_regs_seal: Path, predictions: Path) -> Values:
    lowered, vote, underflow, exact, exact_timing, exact_regs = (
        Path(f).parent for f in (lowered_seal, vote_seal, underflow_seal, exact_seal, exact_timing_seal,
                                 exact_regs_seal))
    for folder in (lowered, vote, underflow, exact, exact_timing, exact_regs):
        seal.verify(folder)
    v = Values("lowered")

    before = Path(underflow / "pytest-large-scores-vote.log").read_text()
    counts = pytest_counts(underflow / "pytest-large-scores-vote.log")
    v.macro("UnderflowFailed", counts["failed"])
    v.macro("UnderflowCases", counts["passed"] + counts["failed"])
    errs = [float(e) for e in re.findall(r"'rel_error': ([\d.e+-]+)", before)]
    sdpa = [float(e) for e in re.findall(r"'pytorch_rel_error': ([\d.e+-]+)", before)]
    if len(errs) != counts["failed"] or len(sdpa) != counts["failed"]:
        raise ValueError(f"{underflow}: {len(errs)} errors read for {counts['failed']} failed cases")
    v.macro("UnderflowErrMin", fixed(min(errs), 2))
    v.macro("UnderflowErrMax", fixed(max(errs), 2))
    v.macro("UnderflowSdpaErrMax", fixed(max(sdpa), 1))

    counts = pytest_counts(lowered / "pytest-guards.log")
    v.macro("LoweredGuardsPassed", counts["passed"])
    v.macro("LoweredGuardsFailed", counts["failed"])
    grid = pd.read_csv(lowered / "verify" / "correctness.csv")
    v.macro("LoweredCases", len(grid))
    v.macro("LoweredWrong", int((grid.status == "WRONG").sum()))

    counts = pytest_counts(exact / "pytest-guards.log")
    v.macro("ExactGuardsPassed", counts["passed"])
    v.macro("ExactGuardsFailed", counts["failed"])
    near_ties = re.findall(r"::test_near_ties_at_large_scores\[\S+\] PASSED", (exact / "pytest-guards.log").read_text())
    v.macro("ExactNearTies", len(near_ties))
    grid = pd.read_csv(exact / "verify" / "correctness.csv")
    v.macro("ExactCases", len(grid))
    v.macro("ExactWrong", int((grid.status == "WRONG").sum()))

    pred = pd.read_csv(predictions)
    for row, column, text in changes("lowered_max", ab_change(lowered), pred):
        v.put("lowered", row, column, text)
    for row, column, text in changes("clamp_vote", ab_change(vote), pred):
        v.put("vote", row, column, text)
    for row, column, text in changes("exact_diff", ab_change(exact_timing), pred):
        v.put("exact", row, column, text)
    for row, column, text in changes("exact_regs", ab_change(exact_regs), pred):
        v.put("regs", row, column, text)
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
