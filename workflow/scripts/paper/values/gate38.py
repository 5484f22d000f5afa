"""The paper's numbers on v38 (early_exponent) before any run, beyond the A/B of its gate (values/gates.py):
data/nvidia-h100-80gb-hbm3/probes/early-exp-gate (sealed; its second command: Nsight's cycles deep in a stream at
N = 16384 and the steady state at the power cap) and probes/early-exp-samples (sealed, another H100: Nsight's warp
samples of v38 and an A/B at N = 512 and 2048).

- \\val{gate38ncu}{<fp16|bf16>}{mcyc38|mcyc36|mcyccu}: the median over the profiled launches of each entry's elapsed
  SM cycles per call (millions); {cycstep}: v38's over v36's, a change in percent; {cycx}: v38's over cuDNN's;
  {tensor38|tensor36}: the tensor pipe's active share of the active cycles (%);
- \\val{gate38steady}{<N>}{<fp16|bf16>x|<fp16|bf16>x36}: v38's and v36's time per call over cuDNN's at the power
  cap's steady state (the medians over the rounds); {<fp16|bf16>step}: v38's over v36's (%);
  \\GateThirtyEightSteadyRounds: the rounds;
- \\val{gate38short}{<512|2048>}{<fp16|bf16>x}: v38's time over cuDNN's (kernels alone, the median over the rounds);
  {<fp16|bf16>step}: v38's over v36's (%); \\GateThirtyEightShortGpu: that probe's GPU;
- \\val{gate38stall}{<N>}{softmax|mmawait|max|exp}: v38's shares of its KV loop's warp samples (%,
  pipeline.warp_samples);
- \\GateThirtyEightWorstX, \\GateThirtyEightWorstAt: the highest of v38's median ratios to cuDNN over the goal's
  lengths and both dtypes in the two A/B probes (two GPUs: not the goal's verdict, which takes one run on one GPU),
  and where.
"""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed, signed
from pipeline.nsight import stream_launches
from pipeline.warp_samples import instructions, shares

SHORT = {"float16": "fp16", "bfloat16": "bf16"}
ENTRIES = ("torch-cudnn", "v36", "v38")


def rounds_of(path: Path, value: str) -> pd.DataFrame:
    """An A/B or steady probe's table: one row per (N, dtype, round), a column per entry; refuses more than one GPU
    or a round without its three entries."""
    t = pd.read_csv(path)
    if t.uuid.nunique() != 1:
        raise ValueError(f"{path}: more than one GPU: {sorted(t.uuid.unique())}")
    wide = t.pivot_table(index=["N", "dtype", "round"], columns="variant", values=value)
    if set(wide.columns) != set(ENTRIES) or wide.isna().any().any():
        raise ValueError(f"{path}: entries {sorted(wide.columns)} in every round expected: {ENTRIES}")
    return wide


def values(gate_seal: Path, samples_seal: Path, ncu: list, steady: Path, short_ab: Path, gate_ab: Path,
           stall: list) -> Values:
    seal.verify(Path(gate_seal).parent)
    seal.verify(Path(samples_seal).parent)
    v = Values("gate38")
    med = {}
    for path in map(Path, ncu):
        entry, dtype = path.stem.removeprefix("ncu-").rsplit("-", 1)
        med[(entry, dtype)] = stream_launches(path).median()
    for dtype, col in SHORT.items():
        a, b, c = (med[(e, dtype)] for e in ("v38", "v36", "torch-cudnn"))
        cyc = "sm__cycles_elapsed.avg"
        tensor = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
        v.put("gate38ncu", col, "mcyc38", fixed(a[cyc] / 1e6, 3))
        v.put("gate38ncu", col, "mcyc36", fixed(b[cyc] / 1e6, 3))
        v.put("gate38ncu", col, "mcyccu", fixed(c[cyc] / 1e6, 3))
        v.put("gate38ncu", col, "cycstep", signed((a[cyc] / b[cyc] - 1) * 100, 1))
        v.put("gate38ncu", col, "cycx", fixed(a[cyc] / c[cyc], 3))
        v.put("gate38ncu", col, "tensor38", fixed(a[tensor], 1))
        v.put("gate38ncu", col, "tensor36", fixed(b[tensor], 1))

    s = rounds_of(Path(steady), "steady_call_us")
    v.macro("GateThirtyEightSteadyRounds", str(s.groupby(level=["N", "dtype"]).size().min()))
    for (n, dtype), w in s.groupby(level=["N", "dtype"]):
        col = SHORT[dtype]
        x, x36 = (w.v38 / w["torch-cudnn"]).median(), (w.v36 / w["torch-cudnn"]).median()
        step = ((w.v38 / w.v36).median() - 1) * 100
        if col == "fp16":
            v.put("gate38steady", str(n), "fp16x", fixed(x, 3))
            v.put("gate38steady", str(n), "fp16x36", fixed(x36, 3))
            v.put("gate38steady", str(n), "fp16step", signed(step, 1))
        else:
            v.put("gate38steady", str(n), "bf16x", fixed(x, 3))
            v.put("gate38steady", str(n), "bf16x36", fixed(x36, 3))
            v.put("gate38steady", str(n), "bf16step", signed(step, 1))

    short = rounds_of(Path(short_ab), "kernels_us")
    v.macro("GateThirtyEightShortGpu", pd.read_csv(short_ab).uuid.iloc[0][:12])
    ratios = {}
    for label, wide in (("short", short), ("gate", rounds_of(Path(gate_ab), "kernels_us"))):
        for (n, dtype), w in wide.groupby(level=["N", "dtype"]):
            x = (w.v38 / w["torch-cudnn"]).median()
            ratios[(n, dtype)] = x
            if label == "short":
                step = ((w.v38 / w.v36).median() - 1) * 100
                if dtype == "float16":
                    v.put("gate38short", str(n), "fp16x", fixed(x, 3))
                    v.put("gate38short", str(n), "fp16step", signed(step, 1))
                else:
                    v.put("gate38short", str(n), "bf16x", fixed(x, 3))
    (n, dtype), worst = max(ratios.items(), key=lambda kv: kv[1])
    v.macro("GateThirtyEightWorstX", fixed(worst, 3))
    v.macro("GateThirtyEightWorstAt", f"$N={n}$ in {dtype}")

    for path in map(Path, stall):
        n = path.name.removesuffix(".csv.gz").rsplit("-", 1)[1]
        share = shares(instructions(path))
        v.put("gate38stall", n, "softmax", fixed(share["softmax"], 1))
        v.put("gate38stall", n, "mmawait", fixed(share["mma_wait"], 1))
        v.put("gate38stall", n, "max", fixed(share["max"], 1))
        v.put("gate38stall", n, "exp", fixed(share["exp"], 1))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
