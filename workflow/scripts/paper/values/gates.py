"""The paper's numbers from the gates of the stages that no run has timed yet: data/<gpu>/probes/v33-check,
v34-check and (on H100s) lane-max-gate and q-regs-gate (sealed), each an A/B timing (ab_probe.py) of a stage, the
stage before it and cuDNN at the headline layout, in rounds whose order reverses every second round, on one GPU,
beside that stage's verify grid and guard tests. The committed predictions of each stage against the one before it
(data/predictions/stages.csv, quantity time) are checked against the probe's medians.

- \\GateRounds: the rounds per length and dtype (the fewest of v33's and v34's probes), \\GateThirtySixRounds v36's,
  \\GateThirtySevenRounds v37's, \\GateThirtyEightRounds v38's (probes/early-exp-gate, against v36);
- \\GateThirtyThreeGpu, \\GateThirtyFourGpu, \\GateThirtySixGpu, \\GateThirtySevenGpu, \\GateThirtyEightGpu: each probe's GPU (its UUID's
  first 12 characters);
- \\val{gate}{<stage>@<N>}{<fp16|bf16>}: the stage's time over the stage before it's in a round (kernels alone), the
  median over the rounds, as a change in percent;
- \\val{gate}{<stage>@<N>}{x}: the median over the rounds of the stage's time over cuDNN's (float16);
- \\GateThirtyThreeSlowerRounds (and ThirtyFour): the rounds at N = 4096 (float16, at the full clock) in which the
  stage took longer than the stage before it;
- \\GateThirtyThreeHeld / \\GateThirtyThreeChecked (and ThirtyFour): the stage's time predictions at the probe's
  lengths that its median change fell inside, of those checked.
- v37's steady state (probes/q-regs-steady, on q-regs-gate's GPU: cuDNN, v36 and v37 each called back to back until
  NVML's energy counter moved over a span, in rounds whose order reverses every second round):
  \\val{gatesteady}{<N>}{<fp16|bf16>x}, {<fp16|bf16>xhi}: v36's time per call over cuDNN's, the median over the
  rounds and the highest round; \\val{gatesteady}{<N>}{<fp16|bf16>step}: v37's over v36's, as a change in percent;
  \\val{gatesteady}{<N>}{<fp16|bf16>slower}: the rounds in which v37 took longer;
  \\val{gatesteady}{16384}{<fp16|bf16><mhz|mj><36|37>}: each stage's median SM clock (MHz) and energy per call (mJ)
  there; \\GateSteadyRounds: the rounds; \\GateSteadyGpu: its GPU.
- The same probe on a second H100 at the goal's lengths (probes/steady-goal, at v37's source):
  \\val{goalsteady}{<N>}{<fp16|bf16>x}, {..xlo}, {..xhi}: v36's time per call over cuDNN's, the median, lowest and
  highest round (four digits: the goal's bound is met or missed in the fourth); \\GoalSteadyLengths: its lengths;
  \\GoalSteadyMet / \\GoalSteadyOf: the (N, dtype) points whose median is at most the goal's GOAL_X;
  \\GoalSteadyStraddle: the points whose rounds lie on both sides of it;
  \\GoalSteadySlower / \\GoalSteadyRounds: the rounds in which v37 took longer than v36, of all;
  \\GoalSteadyStepMin, \\GoalSteadyStepMax: the least and most of v37's median change over v36 (percent);
  \\GoalSteadyWattsMin/Max, \\GoalSteadyMhzMin/Max: the entries' median power and SM clock at 16384 (their range);
  \\GoalSteadyGpu: its GPU.
"""
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.selection import GOAL_X
from pipeline.latex import Values, fixed, signed

DTYPES = {"float16": "fp16", "bfloat16": "bf16"}
# stage -> (the stage before it, its macros: GPU, rounds slower at 4096, predictions held, predictions checked)
GATES = {"v33": ("v32", ("GateThirtyThreeGpu", "GateThirtyThreeSlowerRounds", "GateThirtyThreeHeld",
                         "GateThirtyThreeChecked")),
         "v34": ("v33", ("GateThirtyFourGpu", "GateThirtyFourSlowerRounds", "GateThirtyFourHeld",
                         "GateThirtyFourChecked")),
         "v36": ("v35", ("GateThirtySixGpu", "GateThirtySixSlowerRounds", "GateThirtySixHeld",
                         "GateThirtySixChecked")),
         "v37": ("v36", ("GateThirtySevenGpu", "GateThirtySevenSlowerRounds", "GateThirtySevenHeld",
                         "GateThirtySevenChecked")),
         "v38": ("v36", ("GateThirtyEightGpu", "GateThirtyEightSlowerRounds", "GateThirtyEightHeld",
                         "GateThirtyEightChecked"))}
STEADY = ("torch-cudnn", "v36", "v37")     # the steady probe's entries: cuDNN, the stage before v37, v37
# gatesteady's columns per dtype: v36 over cuDNN (median, highest round), v37's change, its slower rounds
STEADY_COLUMNS = {"float16": ("fp16x", "fp16xhi", "fp16step", "fp16slower"),
                  "bfloat16": ("bf16x", "bf16xhi", "bf16step", "bf16slower")}
# goalsteady's per dtype: v36 over cuDNN, the median, lowest and highest round
GOAL_STEADY_COLUMNS = {"float16": ("fp16x", "fp16xlo", "fp16xhi"), "bfloat16": ("bf16x", "bf16xlo", "bf16xhi")}
# and at 16384 per (dtype, stage): its median SM clock and energy per call
CLOCK_COLUMNS = {("float16", "v36"): ("fp16mhz36", "fp16mj36"), ("float16", "v37"): ("fp16mhz37", "fp16mj37"),
                 ("bfloat16", "v36"): ("bf16mhz36", "bf16mj36"), ("bfloat16", "v37"): ("bf16mhz37", "bf16mj37")}


def per_round(ab: Path, stage: str, before: str) -> tuple[str, pd.DataFrame]:
    """The probe's GPU (its UUID) and one row per (N, dtype, round): the stage's, the stage before it's and cuDNN's
    kernels_us; refuses a probe of more than one GPU or without its three entries in every round."""
    t = pd.read_csv(ab)
    if t.uuid.nunique() != 1:
        raise ValueError(f"{ab}: more than one GPU: {sorted(t.uuid.unique())}")
    if set(t.variant) != {"torch-cudnn", stage, before}:
        raise ValueError(f"{ab}: entries {sorted(set(t.variant))}, not cuDNN, {before} and {stage}")
    wide = t.pivot_table(index=["N", "dtype", "round"], columns="variant", values="kernels_us")
    if wide.isna().any().any():
        raise ValueError(f"{ab}: a round without one of its entries")
    return t.uuid.iloc[0], wide


def steady(v: Values, seal_file: Path, steady_csv: Path, gate_gpu: str) -> None:
    """v37's steady probe: v36 over cuDNN and v37 over v36 by the steady stream's time per call (steady_call_us), per
    round, their medians; refuses a probe of another GPU than the gate's, or without its three entries in every
    round."""
    seal.verify(Path(seal_file).parent)
    t = pd.read_csv(steady_csv)
    if set(t.uuid) != {gate_gpu}:
        raise ValueError(f"{steady_csv}: GPU {sorted(set(t.uuid))}, not the gate's {gate_gpu}")
    wide = t.pivot_table(index=["N", "dtype", "round"], columns="variant", values="steady_call_us")
    if set(wide.columns) != set(STEADY) or wide.isna().any().any():
        raise ValueError(f"{steady_csv}: entries {sorted(wide.columns)} in every round expected: {STEADY}")
    cudnn, before, stage = STEADY
    v.macro("GateSteadyGpu", gate_gpu[:12])
    v.macro("GateSteadyRounds", str(wide.groupby(level=["N", "dtype"]).size().min()))
    for (n, dtype), w in wide.groupby(level=["N", "dtype"]):
        x, xhi, step, slower = STEADY_COLUMNS[dtype]
        v.put("gatesteady", str(n), x, fixed((w[before] / w[cudnn]).median(), 3))
        v.put("gatesteady", str(n), xhi, fixed((w[before] / w[cudnn]).max(), 3))
        v.put("gatesteady", str(n), step, signed(((w[stage] / w[before]).median() - 1) * 100, 1))
        v.put("gatesteady", str(n), slower, str(int((w[stage] > w[before]).sum())))
    med = t[t.N == 16384].groupby(["dtype", "variant"])[["steady_mhz", "steady_energy_mj"]].median()
    for (dtype, variant), (mhz, mj) in CLOCK_COLUMNS.items():
        v.put("gatesteady", "16384", mhz, f"{med.loc[(dtype, variant), 'steady_mhz']:.0f}")
        v.put("gatesteady", "16384", mj, f"{med.loc[(dtype, variant), 'steady_energy_mj']:.0f}")


def steady_at_goal(v: Values, seal_file: Path, csvs: list) -> None:
    """The steady probe at the goal's lengths on a second GPU (probes/steady-goal): v36 over cuDNN per round (its
    median, lowest and highest round) against the goal's GOAL_X, and v37 over v36; refuses a probe of more than one
    GPU or without its three entries in every round."""
    seal.verify(Path(seal_file).parent)
    t = pd.concat([pd.read_csv(f) for f in csvs], ignore_index=True)
    if t.uuid.nunique() != 1:
        raise ValueError(f"{seal_file}: more than one GPU: {sorted(t.uuid.unique())}")
    wide = t.pivot_table(index=["N", "dtype", "round"], columns="variant", values="steady_call_us")
    if set(wide.columns) != set(STEADY) or wide.isna().any().any():
        raise ValueError(f"{csvs}: entries {sorted(wide.columns)} in every round expected: {STEADY}")
    cudnn, before, stage = STEADY
    ratio = wide[before] / wide[cudnn]
    met, straddle = 0, {}
    for (n, dtype), r in ratio.groupby(level=["N", "dtype"]):
        x, xlo, xhi = GOAL_STEADY_COLUMNS[dtype]
        v.put("goalsteady", str(n), x, fixed(r.median(), 4))
        v.put("goalsteady", str(n), xlo, fixed(r.min(), 4))
        v.put("goalsteady", str(n), xhi, fixed(r.max(), 4))
        met += bool(r.median() <= GOAL_X)
        if r.min() <= GOAL_X < r.max():
            straddle.setdefault(n, []).append(dtype)
    step = ((wide[stage] / wide[before]).groupby(level=["N", "dtype"]).median() - 1) * 100
    lengths = sorted(set(t.N))
    v.macro("GoalSteadyGpu", t.uuid.iloc[0][:12])
    v.macro("GoalSteadyLengths", ", ".join(map(str, lengths[:-1])) + f" and {lengths[-1]}")
    v.macro("GoalSteadyMet", str(met))
    v.macro("GoalSteadyOf", str(len(step)))
    v.macro("GoalSteadyStraddle", "; ".join(f"$N={n}$ ({' and '.join(sorted(d, reverse=True))})"
                                            for n, d in sorted(straddle.items())) or "no point")
    v.macro("GoalSteadySlower", str(int((wide[stage] > wide[before]).sum())))
    v.macro("GoalSteadyRounds", str(len(wide)))
    v.macro("GoalSteadyStepMin", fixed(step.min(), 1))
    v.macro("GoalSteadyStepMax", fixed(step.max(), 1))
    at = t[t.N == max(lengths)].groupby(["dtype", "variant"])[["steady_power_w", "steady_mhz"]].median()
    v.macro("GoalSteadyWattsMin", f"{at.steady_power_w.min():.0f}")
    v.macro("GoalSteadyWattsMax", f"{at.steady_power_w.max():.0f}")
    v.macro("GoalSteadyMhzMin", f"{at.steady_mhz.min():.0f}")
    v.macro("GoalSteadyMhzMax", f"{at.steady_mhz.max():.0f}")


def values(predictions: Path, v37_steady_seal: Path, v37_steady: Path, goal_steady_seal: Path, goal_steady: list,
           **probes) -> Values:
    v = Values("gates")
    pred = pd.read_csv(predictions)
    rounds = {}                 # stage -> the fewest rounds of any length and dtype of its probe
    gpus = {}                   # stage -> its probe's GPU
    for stage, (before, (gpu, slower, held_name, checked)) in GATES.items():
        seal.verify(Path(probes[f"{stage}_seal"]).parent)
        uuid, wide = per_round(Path(probes[f"{stage}_ab"]), stage, before)
        gpus[stage] = uuid
        v.macro(gpu, uuid[:12])
        rounds[stage] = wide.groupby(level=["N", "dtype"]).size().min()
        step = (wide[stage] / wide[before]).groupby(level=["N", "dtype"]).median()
        ratio = (wide[stage] / wide["torch-cudnn"]).groupby(level=["N", "dtype"]).median()
        for (n, dtype), r in step.items():
            v.put("gate", f"{stage}@{n}", DTYPES[dtype], signed((r - 1) * 100, 1))
        for n in (8192, 16384):
            v.put("gate", f"{stage}@{n}", "x", fixed(ratio[(n, "float16")], 3))
        rows = pred[(pred.stage == stage) & (pred.compared_to == before) & (pred.quantity == "time")
                    & (pred.dtype == "float16") & pred.N.isin(step.index.get_level_values("N"))]
        held = sum(row.low_pct <= (step[(row.N, "float16")] - 1) * 100 <= row.high_pct for row in rows.itertuples())
        at4096 = wide.xs((4096, "float16"), level=["N", "dtype"])
        v.macro(slower, str(int((at4096[stage] > at4096[before]).sum())))
        v.macro(held_name, str(held))
        v.macro(checked, str(len(rows)))
    v.macro("GateRounds", str(min(rounds["v33"], rounds["v34"])))     # the two gates the paper quotes together
    v.macro("GateThirtySixRounds", str(rounds["v36"]))
    v.macro("GateThirtySevenRounds", str(rounds["v37"]))
    v.macro("GateThirtyEightRounds", str(rounds["v38"]))
    steady(v, v37_steady_seal, v37_steady, gpus["v37"])
    steady_at_goal(v, goal_steady_seal, list(goal_steady))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
