"""The paper says what was measured, and where: the scope values step (samples and repeats per set, the variation at
the longest N, the power cap and the clocks, C1's premise runs, our stages' host time) and the abstract's opening."""
import re
from pathlib import Path

import pandas as pd
import pytest
from steps import step

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / "data" / "nvidia-h200" / "probes" / "gpu-state"
scope = step("paper/values/scope")


def _row(set_, variant, us, run="run-18", N=8192):
    """One timed repeat of the headline layout at N, as the aggregate's timings.csv has it."""
    torch = variant.startswith("torch")
    return dict(run=run, key=f"{variant}|{N}", set=set_, status="ok", impl=variant if torch else "triton",
                variant=variant, B=2, H=16, H_kv=8, N=N, D=128, dtype="float16", causal=True, own_tile=not torch,
                kernels_us=us)


def test_a_ratio_pooled_over_a_runs_sets_is_set_against_the_n_sweeps_own():
    """cuDNN timed by the N sweep (100 us) and, in another job, by the Qwen3 set (90, 90): the run's pooled time is 90,
    so v13's pooled ratio 110/90 is 10/9 of the sweep's own 110/100."""
    t = pd.DataFrame([_row("n_sweep", "torch-cudnn", 100.0), _row("n_sweep", "v13", 110.0),
                      _row("qwen3", "torch-cudnn", 90.0), _row("qwen3", "torch-cudnn", 90.0)])
    change = scope.pooled_against_own_set(t)
    assert len(change) == 1 and change.iloc[0] == pytest.approx(100 * (100 / 90 - 1))
    # timed by the sweep alone, nothing moves
    assert scope.pooled_against_own_set(t[t.set == "n_sweep"]).abs().max() == 0


@pytest.fixture
def inputs(tmp_path):
    """Small aggregated tables, with the committed (sealed) GPU-state probe."""
    var = pd.DataFrame([
        dict(dtype="float16", N=16384, variant="torch-cudnn", group="torch-cudnn", runs=3, time_var_pct=8.8,
             x_cudnn_var_pct=0.0, repeats_lo=2, repeats_hi=3),
        dict(dtype="float16", N=16384, variant="v10", group="ours", runs=3, time_var_pct=14.5,
             x_cudnn_var_pct=14.2, repeats_lo=2, repeats_hi=3),
        dict(dtype="float16", N=16384, variant="v0", group="article", runs=3, time_var_pct=4.7,
             x_cudnn_var_pct=7.0, repeats_lo=2, repeats_hi=3),
        dict(dtype="bfloat16", N=16384, variant="torch-cudnn", group="torch-cudnn", runs=3, time_var_pct=30.0,
             x_cudnn_var_pct=0.0, repeats_lo=2, repeats_hi=3),
        dict(dtype="float16", N=1024, variant="torch-cudnn", group="torch-cudnn", runs=3, time_var_pct=1.2,
             x_cudnn_var_pct=0.0, repeats_lo=6, repeats_hi=13),
    ])
    smp = pd.DataFrame([
        dict(set="headline", dtype="float16", N=1024, runs=12, entries=22, repeats_lo=3, repeats_hi=5,
             samples_lo=141, samples_hi=367),
        dict(set="n_sweep", dtype="float16", N=4096, runs=12, entries=22, repeats_lo=2, repeats_hi=3,
             samples_lo=25, samples_hi=136),
        dict(set="n_sweep", dtype="float16", N=16384, runs=12, entries=22, repeats_lo=2, repeats_hi=3,
             samples_lo=25, samples_hi=25),
        dict(set="qwen3", dtype="float16", N=8192, runs=8, entries=88, repeats_lo=1, repeats_hi=3,
             samples_lo=25, samples_hi=44),
    ])
    snap = pd.DataFrame([
        dict(run="run-10-x2", set="n_sweep", repeat="2", uuid="", sm_mhz=1965.0, power_w=547.9, power_limit_w=700.0,
             reasons="0x0000000000000004", power_capped=True),
        dict(run="run-9-x2", set="n_sweep", repeat="0", uuid="", sm_mhz=1980.0, power_w=120.0, power_limit_w=700.0,
             reasons="0x0000000000000000", power_capped=False),
    ])
    claims = pd.DataFrame([
        dict(claim="C1", N=1024, quantity="dram__bytes_read.sum", runs=12),
        dict(claim="C1", N=4096, quantity="dram__bytes_read.sum", runs=9),
        dict(claim="C1", N=16384, quantity="lts__t_sector_hit_rate.pct", runs=9),
        dict(claim="C1", N=16384, quantity="time", runs=12),
    ])
    pr = pd.DataFrame([dict(variant=v, headline=True, own_tile=True, host_min_us=us, run=r)
                       for v, us, r in (("v8", 11.2, "run-9-x2"), ("v8", 12.0, "run-10-x2"), ("v10", 13.8, "run-9-x2"),
                                        ("v11", 73.0, "run-9-x2"), ("v13", 65.9, "run-9-x2"),
                                        ("v18", 71.7, "run-9-x2"), ("v11", 14.5, "run-18"), ("v18", 15.6, "run-18"),
                                        ("v8", 11.9, "run-18"), ("v11", 15.0, "run-19"), ("v8", 11.5, "run-19"))])
    paths = {}
    tim = pd.DataFrame([_row("n_sweep", "torch-cudnn", 100.0), _row("n_sweep", "v13", 110.0),
                        _row("qwen3", "torch-cudnn", 90.0), _row("qwen3", "torch-cudnn", 90.0)])
    for name, df in dict(variation_n=var, sampling=smp, snapshots=snap, claims=claims, per_run=pr,
                         timings=tim).items():
        paths[name] = tmp_path / f"{name}.csv"
        df.to_csv(paths[name], index=False)
    return dict(**paths, seal_file=STATE / "SHA256SUMS", gpu_state=STATE / "gpu_state.json")


def test_scope_values_state_each_figure_where_it_was_measured(inputs):
    m = scope.values(**inputs).macros
    # samples and repeats
    assert (m["SamplesMin"], m["SamplesMax"], m["SamplesLongN"], m["SamplesAtLongN"]) == ("25", "367", "16384", "25")
    assert m["SamplesMinFromN"] == "4096"
    # variation at the longest N, float16 only (bfloat16's cuDNN is not the one quoted)
    assert (m["VarMaxN"], m["VarCudnnMaxNPct"], m["VarStageTimeMaxNPct"], m["VarCudnnHeadPct"]) == (
        "16384", "8.8", "14.5", "1.2")
    # the snapshots' power cap
    assert (m["SnapCount"], m["SnapCappedCount"], m["SnapCappedRuns"], m["SnapCappedMhz"]) == ("2", "1", "run-10-x2",
                                                                                                "1965")
    # C1's premise: the Nsight components away from the headline, not its time
    assert m["CPremiseRuns"] == "9"
    # pooling a run's sets: one entry of the sweep, moved by 11.1%
    assert (m["PoolEntries"], m["PoolOverOnePct"], m["PoolMaxPct"]) == ("1", "1", "11.1")
    # host time: the pointer stages and the host-descriptor stages (kernels/stages.py) apart, best of all runs
    assert (m["HostPtrFirst"], m["HostPtrLast"], m["HostPtrRange"]) == ("v8", "v10", "11.2--13.8")
    assert (m["HostDescFirst"], m["HostDescLast"], m["HostDescRange"]) == ("v11", "v18", "65.9--73.0")
    # the runs whose cached call made the descriptors itself apart (there within twice the pointer stages' time)
    assert (m["HostDescCachedFrom"], m["HostDescLatestRange"]) == ("run-18", "14.5--15.6")   # run-19: 15.0, v11
    assert m["HostDescEarlyLast"] == "v18"


def test_the_gpu_state_probe_saw_the_power_cap_lower_the_clock_at_the_longest_n(inputs):
    """The committed probe (read while the kernels ran): cuDNN at its longest N at or above the power limit, capped,
    its SM clock below the clock of its shortest N."""
    m = scope.values(**inputs).macros
    assert m["GsLongN"] == "16384" and m["GsShortN"] == "1024"
    assert float(m["GsLongPowerW"]) >= float(m["GsPowerLimitW"]) == 700
    assert float(m["GsLongCappedPct"]) > 50
    assert float(m["GsLongMhz"]) < float(m["GsShortMhz"])
    lo, hi = (float(x) for x in m["GsLongMhzRange"].split("--"))
    assert lo <= float(m["GsLongMhz"]) <= hi


def test_the_abstract_says_first_that_the_result_does_not_reproduce_and_why():
    """The abstract's second sentence: the article's result does not reproduce on the H200, with its reasons; and no
    sentence of the abstract repeats the run-to-run variation of the headline as if it held at every N."""
    tex = (ROOT / "paper" / "main.tex").read_text()
    abstract = tex.split("\\begin{abstract}")[1].split("\\end{abstract}")[0]
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z])", " ".join(abstract.split()))
    assert "does not reproduce" in sentences[1] and "because" in sentences[1], sentences[1]
    assert "MaxTimeVariation" not in abstract
