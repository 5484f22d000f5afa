"""The paper's numbers from Nsight's warp states of v27, v28 and cuDNN at N = 512 with every cache flushed and with
none (data/<gpu>/probes/v28-cold, sealed: Nsight Compute's raw pages, raw_all.csv and raw_none.csv, three launches
per entry). \\val{cold}{<variant>}{<reason>}: how many more warps stall per issue on that reason with every cache
flushed than with none (the medians over launches), for the reasons where the flush adds most."""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed

REASONS = ("no_instruction", "long_scoreboard", "barrier")
VARIANTS = ("v27", "v28", "torch-cudnn")


def stalls(raw: Path) -> pd.DataFrame:
    """Per variant (the entry key's second field, as the NVTX range renames each kernel), the median over its
    launches of the warps stalled per issue on each reason."""
    d = pd.read_csv(raw, skiprows=[1])                # the second line holds the units
    cols = {f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio": r for r in REASONS}
    missing = set(cols) - set(d.columns)
    if missing:
        raise ValueError(f"{raw}: no {sorted(missing)}: the WarpStateStats section was not collected")
    d["variant"] = d["Kernel Name"].str.split("|").str[1]
    g = d.groupby("variant")[list(cols)].median().rename(columns=cols)
    if set(g.index) != set(VARIANTS) or (d.groupby("variant").size() < 3).any():
        raise ValueError(f"{raw}: expected three launches of each of {VARIANTS}")
    return g


def values(seal_file: Path, raw_all: Path, raw_none: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("cold28")
    added = stalls(raw_all) - stalls(raw_none)
    for var in VARIANTS:
        for r in REASONS:
            v.put("cold", var.removeprefix("torch-"), r, fixed(added.loc[var, r], 2))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
