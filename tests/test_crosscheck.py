"""The aggregate step's checks of the kernel timer: against Nsight Compute's durations, and against a host sleep.
Each must fail, naming the entry, when the numbers disagree beyond the bound."""
from pathlib import Path

import pandas as pd
import pytest

from steps import step

ROOT = Path(__file__).resolve().parents[1]
aggregate = step("aggregate/aggregate")
bench = step("measure/bench")

KEY_V7 = "triton|v7|2,16,8,1024,128|float16|causal|32x32w4s3"
KEY_CUDNN = "torch-default|torch-default|2,16,8,1024,128|float16|causal|-"


def per_run(timer_v7=100.0, timer_cudnn=30.0, cudnn_kernels=1):
    rows = [dict(run="run-a", key=KEY_V7, impl="triton", variant="v7", stage="v7", block_m=32, block_n=32,
                 num_warps=4, num_stages=3, time_us=timer_v7, kernels_us=timer_v7, n_kernels=1),
            dict(run="run-a", key=KEY_CUDNN, impl="torch-default", variant="torch-default", stage="",
                 block_m=None, block_n=None, num_warps=None, num_stages=None, time_us=timer_cudnn + 1.5,
                 kernels_us=timer_cudnn, n_kernels=cudnn_kernels)]
    return pd.DataFrame(rows)


def durations(v7_us=(101.0, 99.0, 100.5), cudnn_us=(30.2, 29.9, 30.1), cudnn_split=1):
    rows = [dict(run="run-a", key=KEY_V7, kernel="_attn_fwd", index=i, duration_ns=d * 1e3)
            for i, d in enumerate(v7_us)]
    i = 0
    for d in cudnn_us:
        for part in range(cudnn_split):
            rows.append(dict(run="run-a", key=KEY_CUDNN, kernel=f"cudnn_{part}", index=i,
                             duration_ns=d * 1e3 / cudnn_split))
            i += 1
    return pd.DataFrame(rows)


def test_agreement_within_the_bound():
    out = aggregate.crosscheck(per_run(), durations(), 5.0)
    v7 = out[out.key == KEY_V7].iloc[0]
    assert v7.ncu_us == pytest.approx(100.5) and v7.ncu_launches == 3 and v7.within
    assert v7.diff_pct == pytest.approx(100 * (100 / 100.5 - 1))


def test_a_miss_fails_naming_the_entry():
    with pytest.raises(aggregate.CrossCheckError, match=r"more than 5%.*torch-default\|torch-default.*"
                                                        r"timer 33.0 us, Nsight 30.1 us \(\+9.6%\)"):
        aggregate.crosscheck(per_run(timer_cudnn=33.0), durations(), 5.0)
    aggregate.crosscheck(per_run(timer_cudnn=33.0), durations(), 10.0)       # the bound is the config's


def test_a_waiver_reports_a_miss_instead_of_failing_and_must_name_one():
    """A waiver (config crosscheck_waivers) keeps a named miss in the table, outside the bound, with its reason; a
    miss it does not name still fails; a waiver that names an entry within the bound fails (it would hide nothing)."""
    waiver = {"run": "run-a", "variant": "torch-default", "reason": "a reason long enough to say something"}
    out = aggregate.crosscheck(per_run(timer_cudnn=33.0), durations(), 5.0, [waiver])
    row = out[out.key == KEY_CUDNN].iloc[0]
    assert not row.within and row.waiver == waiver["reason"]
    assert out[out.key == KEY_V7].iloc[0].waiver == ""
    with pytest.raises(aggregate.CrossCheckError, match=r"triton\|v7"):             # an unnamed miss still fails
        aggregate.crosscheck(per_run(timer_v7=120.0, timer_cudnn=33.0), durations(), 5.0, [waiver])
    with pytest.raises(aggregate.CrossCheckError, match=r"crosscheck_waivers name entries that are within"):
        aggregate.crosscheck(per_run(), durations(), 5.0, [waiver])


def test_a_call_of_several_kernels_is_summed_per_launch():
    out = aggregate.crosscheck(per_run(cudnn_kernels=2), durations(cudnn_split=2), 5.0)
    assert out[out.key == KEY_CUDNN].iloc[0].ncu_us == pytest.approx(30.1)
    with pytest.raises(aggregate.CrossCheckError, match="not a multiple"):
        aggregate.crosscheck(per_run(cudnn_kernels=2), durations(cudnn_us=(30.0,), cudnn_split=3), 5.0)


def test_a_profiled_entry_not_timed_is_listed_not_compared():
    """An entry profiled but not timed in its run (run-12-x2's lighter plan) is a row of its own, outside the bound;
    a run where no profiled entry was timed has nothing to cross-check and fails."""
    out = aggregate.crosscheck(per_run().iloc[:1], durations(), 5.0)
    untimed = out[~out.timed]
    assert len(untimed) == 1 and untimed.within.all() and untimed.diff_pct.isna().all()
    assert out[out.timed].within.all()
    with pytest.raises(aggregate.CrossCheckError, match="no profiled entry was also timed"):
        aggregate.crosscheck(per_run().iloc[:0], durations(), 5.0)
    with pytest.raises(aggregate.CrossCheckError, match="no Nsight durations"):
        aggregate.crosscheck(per_run(), pd.DataFrame(), 5.0)


def checks(kernel_with_sleep=100.4):
    base = dict(run="run-a", key=KEY_V7, status="ok")
    return pd.DataFrame([{**base, "sleep_us": 0, "time_us": 100.0, "event_us": 104.0},
                         {**base, "sleep_us": 1000, "time_us": kernel_with_sleep, "event_us": 1010.0}])


def test_timer_check():
    out = aggregate.timer_check(checks(), 5.0)
    slept = out[out.sleep_us == 1000].iloc[0]
    assert slept.kernel_change_pct == pytest.approx(0.4) and slept.event_change_pct > 800
    with pytest.raises(aggregate.CrossCheckError, match=r"moved with a host sleep by more than 5%.*sleep 1000 us"):
        aggregate.timer_check(checks(kernel_with_sleep=110.0), 5.0)


def test_launch_cost_rows():
    pr = pd.DataFrame([
        dict(run=r, key=k, impl=i, variant=v, stage=s, B=2, H=16, H_kv=8, N=1024, D=128, dtype="float16",
             causal=True, block_m=bm, block_n=bm, num_warps=w, num_stages=st, time_us=t, call_us=t + 5, host_us=h,
             host_min_us=h - 1)
        for r in ("run-a", "run-b")
        for k, i, v, s, bm, w, st, t, h in [
            ("a", "triton", "v7", "v7", 32, 4, 3, 100.0, 11.0 if r == "run-a" else 13.0),
            ("b", "triton", "v7", "v7", 64, 4, 3, 40.0, 12.0),            # another tile: not in the table
            ("c", "torch-default", "torch-default", "", None, None, None, 30.0, 20.0)]])
    info = pd.DataFrame([dict(run="run-b", started="2026-11-30T10:00", commit="bbb"),
                         dict(run="run-a", started="2026-11-30T09:00", commit="aaa")])
    out = aggregate.launch_cost(pr, info)
    assert list(zip(out.run, out.entry)) == [("run-a", "v7"), ("run-a", "torch-default"), ("run-b", "v7"),
                                             ("run-b", "torch-default")]
    assert list(out.host_us[out.entry == "v7"]) == [11.0, 13.0] and list(out.commit.unique()) == ["aaa", "bbb"]


def test_resume_from_an_empty_or_foreign_partial_file(tmp_path):
    """A bench killed before its header reached the disk leaves an empty file: it is read as fresh. A partial file
    written by another version of bench.py is refused, not appended to."""
    path = tmp_path / "timings.partial.csv"
    path.write_text("")
    assert bench.read_rows(path) == []
    path.write_text("key,repeat,time_us\nx,0,1.0\n")
    with pytest.raises(ValueError, match="from another version of bench.py"):
        bench.read_rows(path)


def test_the_clocks_are_reported_beside_the_times_not_judged():
    """With the SM clock on both sides (run-18 on) the two clocks and the difference in SM cycles (time x clock) are
    columns of the table, but the bound is on the time alone: in run-18 the two clock readings differed by 2-19%
    where the times agreed, so agreement in cycles passes nothing. The error names both clocks."""
    pr = per_run(timer_v7=92.0).assign(sm_mhz=[1980.0, 1800.0])
    d = durations().assign(sm_hz=1.8e9)
    with pytest.raises(aggregate.CrossCheckError, match=r"v7.*-8.5%; in SM cycles \+0.7%, at 1980 and 1800 MHz"):
        aggregate.crosscheck(pr, d, 5.0)
    out = aggregate.crosscheck(per_run().assign(sm_mhz=[1980.0, 1800.0]), d, 5.0)
    v7 = out[out.key == KEY_V7].iloc[0]
    assert v7.within and v7.timer_mhz == 1980.0 and v7.ncu_mhz == pytest.approx(1800.0)
    assert v7.cycles_diff_pct == pytest.approx(100 * (100 * 1980 / (100.5 * 1800) - 1))
    # without a clock on either side the cycles are empty
    out = aggregate.crosscheck(per_run(), durations(), 5.0)
    assert out[out.key == KEY_V7].iloc[0].cycles_diff_pct != out[out.key == KEY_V7].iloc[0].cycles_diff_pct


def test_the_timer_is_compared_on_the_gpu_nsight_ran_on():
    """The timer's rows of another GPU than the profile's are not compared with it: an entry timed only there is a
    row with timed False and untimed 'on another GPU'; rows of the profile's GPU are the timer's figure."""
    pr = pd.concat([per_run(timer_v7=100.0).assign(gpu="GPU-A"), per_run(timer_v7=130.0).assign(gpu="GPU-B")])
    out = aggregate.crosscheck(pr, durations().assign(step_gpu="GPU-A"), 5.0)
    assert out[out.key == KEY_V7].iloc[0].timer_us == 100.0
    only_b = pr[pr.gpu == "GPU-B"]
    out = aggregate.crosscheck(pd.concat([only_b[only_b.key == KEY_V7], pr[(pr.gpu == "GPU-A") & (pr.key != KEY_V7)]]),
                               durations().assign(step_gpu="GPU-A"), 5.0)
    row = out[out.key == KEY_V7].iloc[0]
    assert not row.timed and row.untimed == "on another GPU" and row.within


def test_timer_per_gpu_takes_each_rows_uuid_else_its_steps():
    t = pd.DataFrame([dict(run="r", key=KEY_V7, status="ok", kernels_us=k, time_us=k, sm_mhz=m, gpu_uuid=u,
                           step_gpu="GPU-S", n_kernels=1, impl="triton", variant="v7")
                      for k, m, u in ((100.0, 1900, "GPU-A"), (102.0, 1800, "GPU-A"), (200.0, 1500, None))])
    g = aggregate.timer_per_gpu(t).set_index("gpu")
    assert g.loc["GPU-A"].kernels_us == 101.0 and g.loc["GPU-A"].sm_mhz == 1850 and g.loc["GPU-A"].repeats == 2
    assert g.loc["GPU-S"].kernels_us == 200.0


def test_the_settle_probe_names_the_long_n_gaps_cause_and_is_refused_once_the_cooled_timer_leaves_the_bound(tmp_path):
    """probes/settle-cause: the timer on a cooled GPU agrees with Nsight within the bound at every entry and the
    bench's settled timer reads above it; a copy whose cooled timer is moved 6% off is refused by the values step,
    so that the paper cannot state the cause on data that no longer shows it."""
    import shutil

    import pandas as pd

    from pipeline import seal
    from steps import step

    settle = step("paper/values/settle")
    probe = ROOT / "data" / "nvidia-h200" / "probes" / "settle-cause"
    v = settle.values(probe / "SHA256SUMS", probe / "crosscheck_cause.csv").macros
    assert float(v["SettleCooledMaxAbs"]) <= settle.BOUND_PCT < float(v["SettledMax"])
    copy = tmp_path / "settle-cause"
    shutil.copytree(probe, copy)
    d = pd.read_csv(copy / "crosscheck_cause.csv")
    moved = (d.way == "timer_flush") & (d.variant == "v28") & (d.N == 8192)
    d.loc[moved, "us"] = d.loc[moved, "us"] * 1.06
    d.to_csv(copy / "crosscheck_cause.csv", index=False)
    seal.write(copy)
    seal.record(copy, tmp_path / seal.MANIFEST)
    with pytest.raises(ValueError, match=r"cooled timer is beyond 5% of Nsight for \[\('v28', 8192\)\]"):
        settle.values(copy / "SHA256SUMS", copy / "crosscheck_cause.csv")
