"""The paper's numbers from v32's first check on the GPU, before any run (data/<gpu>/probes/small-n, sealed;
verify.py --stages v32 and check_stages.py in two passes): v32 (small_n_tile) runs v19's kernel with its programs
dealt in a snake over the SMs at N <= 512, v31's above.

- \\SmallNGpu, \\SmallNKernel: the GPU and the first hexadecimal digits of kernels/gluon_fwd.py's SHA-256 as it ran;
  \\SmallNCases, \\SmallNWrong, \\SmallNOk: the grid's cases, the wrong ones, v32's right ones;
- \\val{snstep}{v32-<variant>@<N>}{<dtype>-<pass>}: v32's time against the variant's (percent; each stage at its own
  tile, the bench's timer, a call's kernels summed); in float16's first pass, \\val{sn}{<variant>@<N>}{fp16-1} the
  time of a call in us and \\val{snx}{<variant>@<N>}{fp16-1} that over cuDNN's call (its Memset included);
- \\val{sntile}{<variant>@<tile>}{fp16-1}: at N = 512, v19 and v32 at the other tiles timed (us, float16's first pass);
- \\val{sntilestep}{<tile>}{fp16-<pass>}: at N = 512, v32's time against v19's at the same tile (percent, float16);
- \\val{snpred}{<what>}{range|held}: the predictions committed before the check (data/predictions/probes.csv: the
  snake against v19, and whether it held in both passes; stages.csv: v32 against v31 and its ratio to cuDNN at 512,
  ranges alone: a run judges them, and the check's cuDNN call includes its Memset where a run's ratio does not).
"""
import csv
import sys
from pathlib import Path

import pandas as pd

from kernels.stages import STAGES, default_tile
from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.sweep import predicted

DTYPES = {"float16": "fp16", "bfloat16": "bf16"}
# the value columns, a dtype's and a pass's (the check's two passes)
COLUMNS = {("float16", 1): "fp16-1", ("float16", 2): "fp16-2", ("bfloat16", 1): "bf16-1", ("bfloat16", 2): "bf16-2"}
FIRST = "fp16-1"        # the column of the values quoted for one pass alone: float16's first
HEAD_DIM = 128          # the headline layout's, which check_stages.py times


def held(xs, low: float, high: float) -> str:
    if all(low <= x <= high for x in xs):
        return "held"
    return "missed, faster" if all(x < low for x in xs) else ("missed, slower" if all(x > high for x in xs)
                                                                else "held in one pass")


def values(seal_file: Path, correctness: Path, passes: list, nvidia_smi: Path, kernel_sums: Path, kernel: Path,
           stage_predictions: Path, probe_predictions: Path) -> Values:
    folder = Path(seal_file).parent
    seal.verify(folder)
    v = Values("smalln")
    with open(nvidia_smi, newline="") as f:
        v.macro("SmallNGpu", next(csv.DictReader(f, skipinitialspace=True))["uuid"][:12])
    sums = dict(line.split()[::-1] for line in Path(kernel_sums).read_text().splitlines())
    v.macro("SmallNKernel", sums[str(kernel)][:8])      # the Gluon kernel's source as the check ran it
    c = pd.read_csv(correctness)
    if not (c.status == "ok").any():
        raise ValueError(f"{correctness}: no case passed")
    v.macro("SmallNCases", str(len(c)))
    v.macro("SmallNWrong", str(int((c.status == "WRONG").sum())))
    v.macro("SmallNOk", str(int(((c.variant == "v32") & (c.status == "ok")).sum())))

    snake = {dtype: [] for dtype in DTYPES}     # v32's step against v19 at N = 512 in each pass, per dtype
    for i, path in enumerate(passes, start=1):
        t = pd.read_csv(path)
        if (t.status != "ok").any():
            raise ValueError(f"{path}: an entry is not ok: {list(t[t.status != 'ok'].key)}")
        t["tile"] = t.key.str.split("|").str[-1]
        # each stage at its own tile (PyTorch's backends have none); the others are the extra tiles timed
        t["own"] = [r.variant not in STAGES or r.tile == default_tile(STAGES[r.variant].switches, HEAD_DIM, r.N).label()
                    for r in t.itertuples()]
        for (dtype, n), g in t.groupby(["dtype", "N"]):
            col = COLUMNS[dtype, i]
            own = g[g.own].set_index("variant").time_us
            if col == FIRST:        # the times and the ratios to cuDNN's call: the first pass's, float16
                for var, us in own.items():
                    v.put("sn", f"{var}@{n}", FIRST, fixed(us, 2))
                    v.put("snx", f"{var}@{n}", FIRST, fixed(us / own["torch-cudnn"], 3))
            for var in ("v19", "v31"):
                v.put("snstep", f"v32-{var}@{n}", col, f"{100 * (own['v32'] / own[var] - 1):+.1f}")
            if n != 512:
                continue
            snake[dtype].append(round(100 * (own["v32"] / own["v19"] - 1), 1))
            other = g[~g.own & g.variant.isin(["v19", "v32"])]
            if col == FIRST:
                for r in other.itertuples():
                    v.put("sntile", f"{r.variant}@{r.tile}", FIRST, fixed(r.time_us, 2))
            if dtype == "float16":
                tiles = other.set_index(["variant", "tile"]).time_us
                for tile in sorted(set(other.tile)):
                    if ("v19", tile) in tiles.index and ("v32", tile) in tiles.index:
                        v.put("sntilestep", tile, col, f"{100 * (tiles['v32', tile] / tiles['v19', tile] - 1):+.1f}")

    # The probe's own prediction (the snake against v19) is judged here; v32's run predictions (against v31, and its
    # ratio to cuDNN) are quoted, and judged by the run that times them (the check's cuDNN call includes its Memset)
    probe = pd.read_csv(probe_predictions)
    stage = pd.read_csv(stage_predictions)
    for dtype in DTYPES:
        p = probe[(probe.probe == "small_n") & (probe.dtype == dtype) & (probe.N == 512)]
        lo, hi = float(p.low_pct.iloc[0]), float(p.high_pct.iloc[0])
        v.put("snpred", f"snake-{DTYPES[dtype]}", "range", f"{lo:g} to {hi:g}")
        v.put("snpred", f"snake-{DTYPES[dtype]}", "held", held(snake[dtype], lo, hi))
        lo, hi = predicted(stage, "v32", "time", 512, dtype)
        v.put("snpred", f"v31-{DTYPES[dtype]}", "range", f"{lo:g} to {hi:g}")
    lo, hi = predicted(stage, "v32", "time_ratio", 512, "float16")
    v.put("snpred", "x-fp16", "range", f"{1 + lo / 100:.2f} to {1 + hi / 100:.2f}")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
