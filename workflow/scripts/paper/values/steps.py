"""The paper's numbers on how long the steps took (results/aggregate/step_times.csv, from Snakemake's benchmark
files): a run's GPU steps one after another (median over runs and the range), this build's CPU steps, and which runs'
times come from their Snakemake logs (sealed before the benchmark files) rather than from benchmark files."""

import sys
from pathlib import Path

import pandas as pd

from pipeline.latex import Values, fixed, listing


def values(step_times: Path) -> Values:
    v = Values("steps")
    st = pd.read_csv(step_times)
    runs = st[st.tier == "run"]
    gpu = runs[runs.gpu].groupby("run").seconds.sum() / 60
    v.macro("StepGpuMin", fixed(gpu.median(), 1))
    v.macro("StepGpuMinLo", fixed(gpu.min(), 1))
    v.macro("StepGpuMinHi", fixed(gpu.max(), 1))
    v.macro("StepBuildMin", fixed(st[st.tier == "build"].seconds.sum() / 60, 1))
    source = runs.drop_duplicates("run").set_index("run").source
    from_logs = sorted(source[source == "snakemake log"].index)
    v.macro("StepRunsFromLogsList", listing(from_logs))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
