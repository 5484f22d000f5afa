"""The paper's numbers on correctness: the worst relative error per dtype over every check of the GPU runs, the
counts of checks and of wrong ones, the bench step's own check of each output before it is timed (a wrong one is
never timed, and is counted here rather than dropped unseen), and the checks of this build in Triton's
interpreter."""

import sys
from pathlib import Path

import pandas as pd

from pipeline.latex import Values


def scientific(x: float) -> str:
    """1.2e-03 -> $1.2\\times10^{-3}$."""
    mant, exp = f"{x:.1e}".split("e")
    return f"${mant}\\times10^{{{int(exp)}}}$"


def values(correctness: Path, cpu: Path, timings: Path) -> Values:
    v = Values("correctness")
    checks = pd.read_csv(correctness)
    ok = checks[checks.status == "ok"]
    v.macro("WorstErrFp", scientific(ok[ok.dtype == "float16"].rel_error.max()))
    v.macro("WorstErrBf", scientific(ok[ok.dtype == "bfloat16"].rel_error.max()))
    # PyTorch's default SDPA on the same inputs, against the same float64 reference: its worst error, and ours over
    # its in the check where that is largest (checks where PyTorch's error is 0 left out: no ratio)
    v.macro("WorstErrTorchFp", scientific(ok[ok.dtype == "float16"].torch_default_rel_error.max()))
    v.macro("WorstErrTorchBf", scientific(ok[ok.dtype == "bfloat16"].torch_default_rel_error.max()))
    both = ok[ok.torch_default_rel_error > 0]
    v.macro("ErrOverTorchMax", f"{(both.rel_error / both.torch_default_rel_error).max():.2f}")
    v.macro("ChecksOk", len(ok))
    v.macro("ChecksWrong", int((checks.status == "WRONG").sum()))
    bench = pd.read_csv(timings, usecols=["status"]).status
    v.macro("BenchChecks", int(bench.isin(["ok", "WRONG"]).sum()))
    v.macro("BenchWrong", int((bench == "WRONG").sum()))
    c = pd.read_csv(cpu)
    v.macro("ChecksCpu", len(c))
    v.macro("ChecksCpuWrong", int((c.status != "ok").sum()))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
