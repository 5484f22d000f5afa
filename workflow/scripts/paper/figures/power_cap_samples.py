"""Within an entry at the power cap, sample by sample (run-36 on one H100, the lite plan's N sweep at N = 16384,
float16): (top) each sample's kernel time of v35, v36 and cuDNN against
the time since the entry's first sample, one line per entry and repeat; (bottom) the SM clock NVML read nearest each
sample. The samples start fast and slow down part way through an entry, and the clock NVML reads does not fall with
them."""
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pipeline import plotting as c
from pipeline import seal

a = c.start(snakemake)  # noqa: F821 (given by Snakemake's script directive)
seal.verify(Path(a.input.seal_file).parent)
N, DTYPE = 16384, "float16"
SHOWN = {"torch-cudnn": ("cuDNN", c.TORCH_COLORS["torch-cudnn"]), "v35": ("v35", "#8c564b"),
         "v36": ("v36", c.LAST_COLOR)}
STYLES = {0: "-", 1: "--"}                     # the repeat

t = pd.read_csv(a.input.n_sweep)
t = t[(t.N == N) & (t.dtype == DTYPE) & t.variant.isin(list(SHOWN))]
if t.empty or t.sample_times.isna().any():
    raise ValueError(f"{a.input.n_sweep}: no sample-by-sample record of {sorted(SHOWN)} at N = {N} ({DTYPE})")
fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 5.2), sharex=True, gridspec_kw={"height_ratios": [2, 1]})
for (variant, rep), r in t.groupby(["variant", "repeat"]):
    row = r.iloc[0]
    times = np.array([float(x) for x in row.sample_times.split(";")]) / 1e3
    starts = np.array([float(x) for x in row.sample_starts.split(";")]) / 1e3
    mhz = np.array([float(x) for x in row.sample_mhz.split(";")])
    name, color = SHOWN[variant]
    top.plot(starts, times, STYLES[rep], marker="o", ms=2.5, lw=1, color=color, label=f"{name}, repeat {rep + 1}")
    bottom.plot(starts, mhz, STYLES[rep], marker="o", ms=2.5, lw=1, color=color)
top.set(ylabel="kernel time (ms)", title=f"N = {N}, {DTYPE}, one H100 at its power cap (run-36)")
bottom.set(xlabel="time since the entry's first sample (ms)", ylabel="SM clock, NVML (MHz)")
fig.legend(*top.get_legend_handles_labels(), loc="center left", bbox_to_anchor=(1.0, 0.6), frameon=False)
c.save(fig, a.out)
