"""The measurement programs' logic on the CPU: the plan, interleaved and resumable timing (with the GPU parts
replaced by fakes), checksums, the theoretical traffic, and the committed data."""
import csv
import shutil
from pathlib import Path

import pytest

from steps import step

from kernels.shapes import HEADLINE
from kernels.stages import ARTICLE_STAGES, STAGES
from kernels.theory import traffic

from pipeline import nsight as ncu_tidy
from pipeline import plan as bench_plan
from pipeline import seal as checksums
from pipeline.kernel_timer import SAMPLE_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
aggregate = step("aggregate/aggregate")
bench = step("measure/bench")
verify = step("verify/verify")

CFG = bench_plan.load_config(ROOT / "config" / "config.yaml")
DATA = ROOT / "data" / "nvidia-h200"
ARTICLE = ["--article-timings", str(ROOT / "data" / "article" / "timings.csv"),
           "--article-ncu", str(ROOT / "data" / "article" / "ncu.csv")]


def test_plan_covers_the_sets():
    entries = bench_plan.expand(CFG)
    keys = [e.key for e in entries]
    assert len(keys) == len(set(keys))
    head = [e for e in entries if "headline" in e.set.split(",")]
    assert {e.variant for e in head} == set(STAGES) | set(CFG["torch_impls"])
    # the headline is also the n_sweep's N=1024 point and the Qwen3-0.6B layout: one entry, three sets
    v7 = next(e for e in head if e.variant == "v7")
    assert v7.set.split(",")[:3] == ["headline", "n_sweep", "qwen3"] and v7.layout == "Qwen3-0.6B/1.7B"
    assert bench_plan.repeats(v7, CFG) == max(CFG["repeats"][s] for s in ("headline", "n_sweep", "qwen3", "tiles"))
    assert {e.shape.N for e in entries if "n_sweep" in e.set} == set(CFG["n_sweep"])
    assert {e.shape.H for e in entries if "qwen3" in e.set} == {16, 32, 40, 64}
    # v7 and v7-warp_specialize at the article tile are already in the headline and ablation sets
    assert sum(e.set == "tiles" for e in entries) == 2 * 4 * 4 * 2 * 3 - 2
    with pytest.raises(ValueError, match=r"unknown set\(s\) \['warp'\]"):
        bench_plan.expand(CFG, ["warp"])
    # the premise entries (C1 where the working set exceeds the L2) are timed in the N sweep and so compiled first
    premise = bench_plan.premise_entries(CFG)
    assert premise and {e.key.replace("premise", "") for e in premise} <= {e.key for e in entries}
    profiled = {e.key for e in bench_plan.profile_entries(CFG)}
    assert profiled <= set(keys)                                    # every profiled entry is timed too
    # the long-sequence Nsight entries too (each at its own tile at that N, as the N sweep times it), with cuDNN
    large = bench_plan.large_n_entries(CFG)
    assert {e.shape.N for e in large} == set(CFG["profile"]["large_n"]["N"]) and len(large) == len(set(large))
    assert {e.key for e in large} <= set(keys)
    assert {e.variant for e in large} >= set(CFG["profile"]["large_n"]["torch_impls"])


def test_the_goal_plan_times_the_triton_leader_and_the_gluon_stages_and_profiles_only_what_it_times():
    """config/goal.yaml (a run that fits a short lease): the stage sets time v13 and every Gluon stage beside
    PyTorch's kernels, and no other stage; every profiled entry is timed; the N sweep takes three repeats; the lite
    plan's other sets and repeats are kept."""
    from snakemake.utils import update_config
    import yaml
    from kernels.stages import GLUON_STAGES
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    lite = bench_plan.expand(cfg["plan"])
    for name in ("lite.yaml", "goal.yaml"):
        update_config(cfg, yaml.safe_load((ROOT / "config" / name).read_text()))
    m = cfg["plan"]
    entries = bench_plan.expand(m)
    keys = {e.key for e in entries}
    for s in ("headline", "bf16", "n_sweep", "qwen3"):
        timed = {e.variant for e in entries if s in e.set.split(",") and e.impl == "triton"}
        assert timed == {"v13", *GLUON_STAGES}, s
    assert {e.key for e in entries if "ablation" in e.set} == {e.key for e in lite if "ablation" in e.set}
    assert len(entries) < 0.7 * len(bench_plan.expand({k: v for k, v in m.items() if k != "stages"}))
    for of in (bench_plan.profile_entries, bench_plan.large_n_entries):
        assert of(m) and {e.key for e in of(m)} <= keys
    assert bench_plan.premise_entries(m) == []
    lite_repeats = yaml.safe_load((ROOT / "config" / "lite.yaml").read_text())["plan"]["repeats"]
    assert m["repeats"] == {**lite_repeats, "n_sweep": 3}      # the N sweep's third repeat, the lite plan's others
    sweep = [e for e in entries if "n_sweep" in e.set.split(",")]
    assert {bench_plan.repeats(e, m) for e in sweep} == {3}
    with pytest.raises(ValueError, match=r"plan.stages: \['v99'\] not stages; name stages"):
        bench_plan.expand({**m, "stages": ["v13", "v99"]})


class Interrupt(Exception):
    pass


def fake_state(nth: int) -> dict:
    """The GPU state columns (pipeline.gpu_state.STATE_COLUMNS) of an entry's nth timing: the first is
    power-capped, at a lower clock and a higher power."""
    capped = nth == 1
    return dict(gpu_uuid="GPU-fake-0001", sm_mhz=1755.0 if capped else 1980.0, sm_min_mhz=1710.0,
                sm_max_mhz=1980.0, power_w=700.0 if capped else 600.0, power_limit_w=700.0, temp_c=70,
                throttle="0x4" if capped else "0x0", power_capped=capped, capped_frac=0.5 if capped else 0.0,
                energy_mj=60.0, flush_energy_mj=25.0, window_ms=55.0, state_readings=11)


@pytest.fixture
def fake_gpu(monkeypatch):
    """bench.run with the GPU replaced: checks pass (but v5 at 16x16 tiles is refused), timings and the GPU's state
    are fake; the settle step records which entries it settled (fake.settled: (key, N) in order)."""
    calls, timed = [], {}

    def check(entry, seed):
        if entry.variant == "v5":
            return "refused", None, "v5: Triton cannot build this variant", None
        return "ok", 1e-4, "", ("checked", entry)

    def time_call(fn, b):
        calls.append(1)
        if len(calls) == fake.interrupt_at:
            raise Interrupt()
        key = fn[1].key
        timed[key] = timed.get(key, 0) + 1
        return dict(time_us=100.0, min_us=99.0, q25_us=99.5, q75_us=100.5, max_us=101.0, mean_us=100.0,
                    n_samples=50, kernels="_attn_fwd", n_kernels=1, kernels_us=100.0, timer="fake",
                    sample_times=";".join(["99.000", *["100.000"] * 48, "101.000"]),
                    sample_starts=";".join(f"{200.0 * i:.1f}" for i in range(50)), sample_mhz=";".join(["1980"] * 50),
                    **fake_state(timed[key]))

    def settle_call(fn, b):
        entry = fn[1]
        fake.settled.append((entry.key, entry.shape.N))
        return dict(settle_s=2.5, settle_mhz=1800.0, settle_windows=5, settle_stable=True)

    def preroll_call(fn, b):
        fake.prerolled.append((fn[1].key, fn[1].shape.N))
        return dict(preroll_ms=float(b["preroll_ms"]), preroll_mhz=1750.0)

    def steady_call(fn, b, call_us):
        fake.steady.append((fn[1].key, fn[1].shape.N, call_us))
        if fn[1].key in fake.steady_fails:
            from pipeline.steady_energy import SteadyEnergyError
            raise SteadyEnergyError("the GPU ran out of queued calls inside the span")
        return dict(steady_power_w=690.0, steady_instant_w=600.0, steady_mhz=1700.0, steady_capped_frac=1.0,
                    steady_s=0.3, steady_call_us=call_us, steady_energy_mj=0.69 * call_us)

    class UserView:
        def __init__(self, bench):
            pass

        def __call__(self, entry, seed):
            return dict(call_us=110.0, call_q25_us=109.0, call_q75_us=111.0, host_us=12.0, host_calls=100)

        def close(self):
            pass

    fake = type("Fake", (), {"interrupt_at": None, "calls": calls, "settled": [], "prerolled": [], "steady": [],
                                  "steady_fails": set()})()
    monkeypatch.setattr(bench, "check", check)
    monkeypatch.setattr(bench, "time_call", time_call)
    monkeypatch.setattr(bench, "settle_call", settle_call)
    monkeypatch.setattr(bench, "preroll_call", preroll_call)
    monkeypatch.setattr(bench, "steady_call", steady_call)
    monkeypatch.setattr(bench, "UserView", UserView)
    monkeypatch.setattr(bench, "precompile", lambda entries, workers, log: None)
    monkeypatch.setattr(bench.gpu_env, "snapshot", lambda index=0: {"clocks.sm": "fake"})
    return fake


def test_timing_is_interleaved_and_resumes(tmp_path, fake_gpu):
    entries = bench_plan.expand(CFG, ["headline"])
    m = {**CFG, "repeats": {**CFG["repeats"], "headline": 3}}
    fake_gpu.interrupt_at = 20
    with pytest.raises(Interrupt):
        bench.run(m, entries, tmp_path, log=lambda s: None)
    assert not (tmp_path / "timings.csv").exists()              # only a finished bench has its declared output
    with open(tmp_path / "timings.partial.csv") as f:
        partial = list(csv.DictReader(f))
    assert 0 < len(partial) < 3 * len(entries)
    fake_gpu.interrupt_at = None
    bench.run(m, entries, tmp_path, log=lambda s: None)
    assert not (tmp_path / "timings.partial.csv").exists()
    with open(tmp_path / "timings.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows[:len(partial)] == partial                         # nothing measured was lost or redone
    pairs = [(r["key"], int(r["repeat"])) for r in rows]
    assert len(pairs) == len(set(pairs))
    repeats = [int(r["repeat"]) for r in rows]
    assert repeats == sorted(repeats)                              # the whole list per repeat
    timed = [[r["key"] for r in rows if int(r["repeat"]) == k] for k in range(3)]
    refused = {r["key"] for r in rows if r["status"] == "refused"}
    assert timed[0] == [e.key for e in entries]                   # one shape: A B C, C B A, A B C, across the resume
    assert timed[1] == [k for k in timed[0][::-1] if k not in refused]
    assert timed[2] == [k for k in timed[0] if k not in refused]
    v5 = [r for r in rows if r["variant"] == "v5"]
    assert len(v5) == 1 and v5[0]["status"] == "refused" and v5[0]["time_us"] == ""   # refused: never timed
    ok = [r for r in rows if r["status"] == "ok"]
    assert len(ok) == 3 * (len(entries) - 1)


def test_each_second_repeat_takes_a_shapes_entries_in_reverse():
    """The bench's order (pipeline.plan.timing_order): the whole list per repeat, shapes in the list's order, the
    entries of one shape forward in even repeats and reversed in odd ones; an entry leaves after its own repeats."""
    entries = bench_plan.expand(CFG, ["headline", "n_sweep"])
    m = {**CFG, "repeats": {**CFG["repeats"], "headline": 3, "n_sweep": 2}}
    order = bench_plan.timing_order(entries, m)
    assert sorted((r, e.key) for r, e in order) == sorted(
        (r, e.key) for e in entries for r in range(bench_plan.repeats(e, m)))    # each entry its repeats, once each
    assert [r for r, _ in order] == sorted(r for r, _ in order)
    shapes = list(dict.fromkeys(e.shape for e in entries))
    assert len(shapes) > 2
    for r in range(3):
        of_r = [e for q, e in order if q == r]
        assert list(dict.fromkeys(e.shape for e in of_r)) == [s for s in shapes if any(e.shape == s for e in of_r)]
        for s in shapes:
            listed = [e.key for e in entries if e.shape == s and bench_plan.repeats(e, m) > r]
            assert [e.key for e in of_r if e.shape == s] == (listed if r % 2 == 0 else listed[::-1])
    assert {e.key for r, e in order if r == 2} == {e.key for e in entries if "headline" in e.set}
    assert bench_plan.timing_order([], m) == []


def test_checksums(tmp_path):
    """A folder's checksums (check), then the same as a sealed folder of a data folder (verify: its seal recorded in
    the manifest above it)."""
    run = tmp_path / "data" / "run-a"
    (run / "sub").mkdir(parents=True)
    (run / "a.csv").write_text("1\n")
    (run / "sub" / "b.csv").write_text("2\n")
    with pytest.raises(FileNotFoundError, match="never sealed"):
        checksums.verify(run)
    checksums.write(run)
    checksums.check(run)
    with pytest.raises(ValueError, match="no SEALS.csv in any folder above it"):
        checksums.verify(run)
    checksums.record(run, tmp_path / "data" / "SEALS.csv")
    checksums.verify(run)
    (run / "a.csv").write_text("3\n")
    (run / "sub" / "b.csv").unlink()
    with pytest.raises(ValueError, match=r"a.csv: changed since the run.*sub/b.csv: missing"):
        checksums.verify(run)



def test_a_sealed_run_is_exactly_its_listed_files(tmp_path):
    """An extra file (a stray timings.csv), an emptied or malformed SHA256SUMS are refused, each named; the
    aggregate reads only listed files."""
    run = tmp_path / "run-x"
    (run / "bench-a").mkdir(parents=True)
    (run / "bench-a" / "timings.csv").write_text("key\n1\n")
    checksums.write(run)
    checksums.record(run, tmp_path / "SEALS.csv")
    assert [p.name for p in checksums.verify(run)] == ["timings.csv"]
    (run / "bench-extra").mkdir()
    (run / "bench-extra" / "timings.csv").write_text("key\n2\n")
    with pytest.raises(ValueError, match=r"bench-extra/timings.csv: not listed in SHA256SUMS"):
        checksums.verify(run)
    (run / "bench-extra" / "timings.csv").unlink()
    sums = run / "SHA256SUMS"
    good = sums.read_text()
    sums.write_text("")
    with pytest.raises(ValueError, match="lists no file"):
        checksums.verify(run)
    sums.write_text("nonsense\n")
    with pytest.raises(ValueError, match=r"SHA256SUMS, line 1: not '<sha256>  <path>'"):
        checksums.verify(run)
    sums.write_text(good)
    checksums.verify(run)
    sums.write_text(good + good.splitlines()[0].split("  ")[0] + "  bench-a/more.csv\n")
    with pytest.raises(ValueError, match="differs from the one .*SEALS.csv records"):    # sealed again, unrecorded
        checksums.verify(run)


def test_theoretical_traffic():
    """T1 and T2 for the headline at BM = 32. The article's T1 reads 528 MiB (566.94 MB), but its own formula
    gives 520 MiB = 545.26 MB, which is the L2 read figure the article measured for v0."""
    full = traffic(HEADLINE, 32, 32, causal_skip=False)
    assert full["requested_read_bytes"] == 32 * 32 * (32 * 128 + 2 * 1024 * 128) * 2 == 545_259_520
    assert full["requested_write_bytes"] == 8 * 2**20
    skip = traffic(HEADLINE, 32, 32, causal_skip=True)
    assert skip["kv_blocks_visited"] == 32 * (32 * 33 // 2)       # C2: 32x32 -> 32x33/2 blocks
    assert skip["kv_blocks_visited"] / full["kv_blocks_visited"] == pytest.approx(1 - 0.484375)
    assert full["matmul_flops_executed"] == 2 * full["matmul_flops_useful"]


def test_ncu_key_parsing():
    assert ncu_tidy.describe("triton|v3|2,16,8,1024,128|float16|causal|32x32w4s3")["stage"] == "v3"
    d = ncu_tidy.describe("torch-flash|torch-flash|2,16,8,1024,128|float16|causal|-")
    assert d["impl"] == "torch-flash" and d["stage"] == ""


def test_committed_runs_aggregate(tmp_path):
    """The committed H200 runs verify against their checksums and give each stage's headline ratio per run."""
    out = tmp_path / "agg"
    import json

    import pandas as pd
    import yaml
    waivers = [w for w in yaml.safe_load((ROOT / "config" / "config.yaml").read_text()).get("crosscheck_waivers", [])
               if w.get("gpu", DATA.name) == DATA.name]             # the H200's: another GPU's runs are apart
    aggregate.main(["--runs", *map(str, sorted(DATA.glob("run-*"))), *ARTICLE,
                    "--crosscheck-waivers", json.dumps(waivers), "--out", str(out)])
    head = pd.read_csv(out / "headline.csv")
    runs = sorted(set(head.run))
    assert len(runs) >= 2
    assert set(head.stage) == set(ARTICLE_STAGES)              # the article's stages at its tile, in every run
    assert (head["pct_of_torch-default"] > 100).all() and (head.repeats >= 3).all()   # 3: run-15-x2's lite plan
    assert set(head.article_us.dropna()) == {1380, 818, 780, 792, 668, 654, 652}
    cross = pd.read_csv(out / "crosscheck.csv")   # the timer agrees with Nsight in every run, but the waived entries
    waived = cross.waiver.fillna("") != ""
    assert (cross.within | waived).all() and set(cross.run) == set(runs)
    assert sorted(set(zip(cross[waived].run, cross[waived].variant))) == sorted((w["run"], w["variant"]) for w in waivers)
    with pytest.raises(aggregate.CrossCheckError, match="differ by more than 5%"):   # without the waivers: fails
        aggregate.main(["--runs", *map(str, sorted(DATA.glob("run-*"))), *ARTICLE,
                        "--out", str(tmp_path / "agg2")])


OTHER_GPUS = sorted(p for p in (ROOT / "data").iterdir() if p != DATA and p.is_dir() and any(p.glob("run-*")))


@pytest.mark.parametrize("folder", OTHER_GPUS, ids=lambda p: p.name)
def test_another_gpus_committed_runs_aggregate_with_their_own_waivers(folder, tmp_path):
    """Another GPU's committed runs (data/<gpu>/run-*, aggregated apart): the timer agrees with Nsight but at the
    entries that GPU's waivers name, each of them beyond the bound; the H200's waivers are not theirs."""
    import json

    import pandas as pd
    import yaml
    every = yaml.safe_load((ROOT / "config" / "config.yaml").read_text()).get("crosscheck_waivers", [])
    waivers = [w for w in every if w.get("gpu") == folder.name]
    runs = [*map(str, sorted(folder.glob("run-*")))]
    aggregate.main(["--runs", *runs, *ARTICLE, "--crosscheck-waivers", json.dumps(waivers), "--out", str(tmp_path)])
    cross = pd.read_csv(tmp_path / "crosscheck.csv")
    waived = cross.waiver.fillna("") != ""
    assert (cross.within | waived).all() and not cross[waived].within.any()
    assert sorted(set(zip(cross[waived].run, cross[waived].variant))) == sorted((w["run"], w["variant"]) for w in waivers)
    with pytest.raises(aggregate.CrossCheckError, match="within 5% of Nsight or were not profiled"):
        aggregate.main(["--runs", *runs, *ARTICLE, "--crosscheck-waivers", json.dumps(every),
                        "--out", str(tmp_path / "every")])


def test_history_runs_are_sealed_and_refused_by_the_aggregate(tmp_path):
    """The event-timed runs are archived whole: each unpacks to a sealed folder whose checksums still hold, and the
    aggregate step refuses it, since its timings were not made by the kernel timer."""
    import tarfile
    archives = sorted((DATA / "history").glob("run-*.tar.xz"))
    assert [a.name for a in archives] == [f"{r}.tar.xz" for r in ("run-1", "run-2", "run-3", "run-4-x2", "run-5-x2")]
    history = tmp_path / "data" / "nvidia-h200"
    for archive in archives:
        with tarfile.open(archive) as tar:
            tar.extractall(history, filter="data")
    runs = sorted(p for p in history.iterdir() if p.is_dir())
    assert len(runs) == 5
    for run in runs:
        checksums.check(run)                                      # every checksum still holds
        checksums.record(run, tmp_path / "data" / "SEALS.csv")    # read as if committed in data/ again
    aggregate.verified(runs)
    with pytest.raises(ValueError, match=r"not made by the kernel timer .*history"):
        aggregate.main(["--runs", str(runs[2]), *ARTICLE,
                        "--out", str(tmp_path / "agg")])


def test_tampered_data_is_refused(tmp_path):
    copy = tmp_path / "data" / "nvidia-h200"
    shutil.copytree(DATA, copy)
    shutil.copy(DATA.parent / "SEALS.csv", copy.parent)
    run = sorted(copy.glob("run-*"))[0]
    timings = run / "bench-headline" / "timings.csv"
    timings.write_text(timings.read_text() + "\n")
    with pytest.raises(ValueError, match="timings.csv: changed since the run"):
        aggregate.verified(sorted(copy.glob("run-*")))
    shutil.copy(timings.with_name("env.json"), run / "bench-headline" / "stray.json")   # an unlisted file too
    with pytest.raises(ValueError, match="stray.json: not listed"):
        aggregate.verified([run])


def test_article_figures_name_metrics_we_measure():
    """Every Nsight metric the article's figures are filed under is one our profile collects, so they join."""
    import pandas as pd
    article = pd.read_csv(ROOT / "data" / "article" / "ncu.csv")
    ours = set(pd.read_csv(sorted(DATA.glob("run-*"))[0] / "profile" / "ncu.csv", usecols=["metric"]).metric)
    not_nsight = {"blocks_per_sm", "flop_count_unclear", "lts__t_bytes_read_write", "dram__bytes_read_write"}
    assert set(article.metric) - not_nsight <= ours
    timings = pd.read_csv(ROOT / "data" / "article" / "timings.csv")
    assert set(timings.stage.dropna()) == set(ARTICLE_STAGES)


def test_a_wrong_case_stays_wrong_until_measured_again(tmp_path, monkeypatch):
    """verify: a run that found a WRONG case exits 1; a re-run measures that case again (and only it) and exits 0
    only when it passes; the final file has one row per case, its latest."""
    outcome = {"status": "WRONG"}
    calls = []

    def run_case(case, device="cuda"):
        calls.append(case.key)
        status = outcome["status"] if case.causal_flag else "ok"
        return {"case": case.key, "variant": case.variant, "status": status, "rel_error": 0.5 if status == "WRONG"
                else 1e-4, "tolerance": 1e-3, "unwritten": 0}      # as verify's run_case writes them

    monkeypatch.setattr(verify, "run_case", run_case)
    monkeypatch.setattr(verify.Case, "causal_flag", property(lambda c: c.shape.causal), raising=False)
    args = ["--device", "cpu", "--N", "16", "--stages", "v0", "--out", str(tmp_path)]
    assert verify.main(args) == 1 and len(calls) == 2
    assert not (tmp_path / "correctness.csv").exists()
    calls.clear()
    assert verify.main(args) == 1 and len(calls) == 1          # still wrong: the failure stays a failure
    outcome["status"] = "ok"
    calls.clear()
    assert verify.main(args) == 0 and len(calls) == 1          # measured again, and passes
    with open(tmp_path / "correctness.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 and {r["status"] for r in rows} == {"ok"}


@pytest.mark.parametrize("kill_after", ["nothing", "header", "rows"])
def test_bench_resumes_to_a_well_formed_csv_from_any_write_point(tmp_path, fake_gpu, kill_after):
    """A bench killed before its header reached the disk (an empty file), right after it, or after some rows,
    resumes to one well-formed timings.csv with every (entry, repeat) once."""
    entries = bench_plan.expand(CFG, ["headline"])
    m = {**CFG, "repeats": {**CFG["repeats"], "headline": 2}}
    partial = tmp_path / "timings.partial.csv"
    if kill_after == "nothing":
        partial.write_text("")
    elif kill_after == "header":
        partial.write_text(",".join(bench.COLUMNS) + "\n")
    else:
        fake_gpu.interrupt_at = 5
        with pytest.raises(Interrupt):
            bench.run(m, entries, tmp_path, log=lambda s: None)
        fake_gpu.interrupt_at = None
    bench.run(m, entries, tmp_path, log=lambda s: None)
    with open(tmp_path / "timings.csv") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == bench.COLUMNS
        rows = list(reader)
    pairs = [(r["key"], r["repeat"]) for r in rows]
    assert len(pairs) == len(set(pairs)) == sum(1 for r in rows if r["status"] == "ok") + 1   # v5 refused once
    assert not partial.exists()


@pytest.mark.parametrize("kill_after", ["nothing", "header"])
def test_verify_resumes_from_an_empty_or_header_only_file(tmp_path, monkeypatch, kill_after):
    monkeypatch.setattr(verify, "run_case", lambda case, device="cuda": {"case": case.key, "variant": case.variant,
                                                                       "status": "ok", "rel_error": 1e-4})
    partial = tmp_path / "correctness.partial.csv"
    partial.write_text("" if kill_after == "nothing" else ",".join(verify.COLUMNS) + "\n")
    assert verify.main(["--device", "cpu", "--N", "16", "--stages", "v0", "--out", str(tmp_path)]) == 0
    with open(tmp_path / "correctness.csv") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == verify.COLUMNS and len(list(reader)) == 2


def test_the_gpu_grid_holds_every_group_size_odd_lengths_and_strided_inputs():
    from kernels.shapes import Shape
    from kernels.stages import LAST as STAGES_LAST, STAGES, Tile
    grid = verify.cases()
    assert {c.shape.H // c.shape.H_kv for c in grid} >= set(range(1, 9))
    assert any(c.shape.N % 2 for c in grid if c.shape.N > 200)
    # a persistent grid takes several tiles per program (132 SMs on an H200), with a ragged last one
    assert any(c.shape.B * c.shape.H * -(-c.shape.N // 128) > 2 * 132 and c.shape.N % 128 for c in grid
               if c.variant == STAGES_LAST)
    # and SECTIONS' order (v27) in more than one section there
    from kernels.gluon_fwd import section_heads
    assert any(section_heads(c.shape.B * c.shape.H, c.shape.H // c.shape.H_kv, -(-c.shape.N // 128), 132)
               < c.shape.B * c.shape.H for c in grid if c.variant == STAGES_LAST and c.shape.N % 128)
    # and FOLD's folded grid (v28: causal, one round), a consumer draining several key blocks (1 x 6 x 8 tiles at
    # N = 1023) and tiles with a consumer whose rows are all past N (N = 130)
    from kernels.gluon_fwd import fold, folded_blocks
    folded = [c for c in grid if c.variant == STAGES_LAST and c.shape.causal
              and fold(c.shape.B * c.shape.H * -(-c.shape.N // 128), 132, True)]
    assert any(max(t0 - t1 for _, _, t0, _, _, t1 in (folded_blocks(s, c.shape.N, True, True)
                                                      for s in range(-(-c.shape.N // 128)))) >= 4 for c in folded)
    assert any(-(-c.shape.N // 64) % 2 for c in folded)
    strided = [c for c in grid if c.layout == "bnhd"]
    assert strided and all("const_strides" not in c.switches for c in strided)
    # and small_n_tile's snake (v32) over more than one wave of 64-row programs (132 SMs), a last wave partial too
    programs = {c.shape.B * c.shape.H * -(-c.shape.N // c.tile.block_m) for c in grid
                if c.variant == STAGES_LAST and c.tile.block_m == 64 and c.shape.causal}
    assert any(n >= 2 * 132 for n in programs) and any(n > 132 and n % 132 for n in programs)
    # the strided layout really is non-contiguous, and right, in the interpreter
    case = verify.Case("v3", STAGES["v3"].switches, Shape(1, 2, 1, 24, 16, "float16", True), Tile(), "bnhd")
    row = verify.run_case(case, "cpu")
    assert row["status"] == "ok" and case.key.endswith("|bnhd")


def test_a_run_reaches_data_only_sealed(tmp_path):
    """publish: the staging folder is sealed, then appears in data/ whole (an empty folder made for the output is
    replaced); an existing run is never overwritten; nothing is left in staging."""
    staging, data = tmp_path / "staging" / "run-a", tmp_path / "data" / "run-a"
    (staging / "bench-x").mkdir(parents=True)
    (staging / "bench-x" / "timings.csv").write_text("key\n1\n")
    data.mkdir(parents=True)                                    # what Snakemake makes before the job
    with pytest.raises(ValueError, match="no SEALS.csv in any folder above it to record the seal in"):
        checksums.publish(staging, data)                        # refused before anything moved
    assert (staging / "bench-x" / "timings.csv").exists() and not any(data.iterdir())
    checksums.publish(staging, data, tmp_path / "data" / "SEALS.csv")
    assert (data / "SHA256SUMS").exists() and not staging.exists()
    assert [p.name for p in checksums.verify(data)] == ["timings.csv"]        # recorded in the manifest
    assert checksums.read_manifest(tmp_path / "data" / "SEALS.csv") == {"run-a": checksums._digest(data / "SHA256SUMS")}
    (staging / "bench-x").mkdir(parents=True)
    (staging / "bench-x" / "timings.csv").write_text("key\n2\n")
    with pytest.raises(FileExistsError, match="never overwritten"):
        checksums.publish(staging, data)


def test_a_plan_that_profiles_an_untimed_entry_is_refused():
    """The cross-check needs every profiled entry timed in the same run: a plan without it fails at parse time. The
    lighter plan (config/lite.yaml over config/config.yaml) passes."""
    import copy

    import yaml
    m = bench_plan.load_config(ROOT / "config" / "config.yaml")
    bad = copy.deepcopy(m)
    bad["profile"]["extra"] = [{"variant": "v7", "block_m": 32, "block_n": 32, "num_warps": 2, "num_stages": 3}]
    with pytest.raises(ValueError, match="no bench set times"):
        bench_plan.check_plan(bad)
    lite = yaml.safe_load((ROOT / "config" / "lite.yaml").read_text())["plan"]
    merged = copy.deepcopy(m)
    for key, value in lite.items():
        merged[key] = {**merged[key], **value} if isinstance(value, dict) and key != "tuning" else value
    bench_plan.check_plan(merged)


def test_the_nsight_reader_loads_neither_pandas_nor_torch():
    """NVIDIA's report library has crashed when loaded beside them (a segfault reading a report on the H200, seen
    after the reader first imported the entry keys' module with pandas at its top): the reader's process keeps to
    the standard library and the registry."""
    import subprocess
    import sys
    code = ("import sys, pipeline.nsight; "
            "bad = {'pandas', 'numpy', 'torch', 'triton'} & set(sys.modules); assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_rows_carry_the_gpu_state_through_an_interrupted_and_resumed_run(tmp_path, fake_gpu):
    """Every timed row has the GPU's state (pipeline.gpu_state's columns, after the older ones); a refused row has
    none. The settle step runs before the first entry of each repeat at a long N (here the headline's N counts as
    long) and before the first entry timed after the resume, and only there its columns are filled."""
    from pipeline import gpu_state, settle, steady_energy
    entries = bench_plan.expand(CFG, ["headline"])
    bench_cfg = {**CFG["bench"], "settle_min_N": HEADLINE.N}
    m = {**CFG, "bench": bench_cfg, "repeats": {**CFG["repeats"], "headline": 3}}
    fake_gpu.interrupt_at = 20
    with pytest.raises(Interrupt):
        bench.run(m, entries, tmp_path, log=lambda s: None)
    with open(tmp_path / "timings.partial.csv") as f:
        partial = list(csv.DictReader(f))
    fake_gpu.interrupt_at = None
    bench.run(m, entries, tmp_path, log=lambda s: None)
    with open(tmp_path / "timings.csv") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    tail = gpu_state.STATE_COLUMNS + settle.COLUMNS + steady_energy.COLUMNS + SAMPLE_COLUMNS
    assert reader.fieldnames[-len(tail):] == tail
    assert rows[:len(partial)] == partial
    ok = [r for r in rows if r["status"] == "ok"]
    # the samples themselves, one series per column, each through the CSV and the resume intact
    # (tests/test_gpu_state.py checks what the real timer puts in them)
    assert all(len(r[c].split(";")) == int(r["n_samples"]) for r in ok for c in SAMPLE_COLUMNS)
    assert all(r["gpu_uuid"] == "GPU-fake-0001" and float(r["sm_mhz"]) > 0 and float(r["energy_mj"]) == 60.0
               for r in ok)
    assert {r["power_capped"] for r in ok} == {"True", "False"}
    refused = [r for r in rows if r["status"] == "refused"]
    assert refused and all(r[c] == "" for r in refused
                           for c in gpu_state.STATE_COLUMNS + settle.COLUMNS + SAMPLE_COLUMNS)
    # settled: the first ok row of each repeat, and the first row timed after the resume
    first_of_repeat = {next(i for i, r in enumerate(rows) if r["repeat"] == str(rep) and r["status"] == "ok")
                       for rep in range(3)}
    after_resume = next(i for i, r in enumerate(rows) if i >= len(partial) and r["status"] == "ok")
    settled = {i for i, r in enumerate(rows) if r["settle_s"] != ""}
    assert settled == first_of_repeat | {after_resume} and len(settled) == 4
    assert all(rows[i]["settle_mhz"] == "1800.0" and rows[i]["settle_stable"] == "True" for i in settled)
    assert [k for k, _ in fake_gpu.settled] == [rows[i]["key"] for i in sorted(settled)]


def test_the_settle_step_runs_before_each_block_of_one_long_n(tmp_path, fake_gpu):
    """In the N sweep (N >= settle_min_N = 8192: two N, two dtypes), each repeat settles four times, each time at
    the first entry of a block; settle_max_s = 0 turns the step off."""
    entries = bench_plan.expand(CFG, ["n_sweep"])
    m = {**CFG, "repeats": {**CFG["repeats"], "n_sweep": 1}}
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    bench.run(m, entries, tmp_path / "on", log=lambda s: None)
    with open(tmp_path / "on" / "timings.csv") as f:
        rows = list(csv.DictReader(f))
    long_n = [n for n in CFG["n_sweep"] if n >= CFG["bench"]["settle_min_N"]]
    assert len(fake_gpu.settled) == len(long_n) * len(CFG["n_sweep_dtypes"]) == 4
    for key, n in fake_gpu.settled:
        i = next(i for i, r in enumerate(rows) if r["key"] == key)
        assert int(rows[i]["N"]) == n and (i == 0 or rows[i - 1]["N"] != rows[i]["N"]
                                           or rows[i - 1]["status"] != "ok")
    fake_gpu.settled.clear()
    off = {**m, "bench": {**CFG["bench"], "settle_max_s": 0}}
    bench.run(off, entries, tmp_path / "off", log=lambda s: None)
    assert fake_gpu.settled == []


def test_every_long_n_entry_runs_its_pre_roll_right_before_its_kernel_time(tmp_path, fake_gpu):
    """In the N sweep, every timed row at N >= preroll_min_N (every repeat, not only a block's first entry as the
    settle step) records its pre-roll, and no other row; preroll_ms = 0, or a plan without it (the runs before it),
    turns it off."""
    from pipeline import settle
    entries = bench_plan.expand(CFG, ["n_sweep"])
    on = {**CFG["bench"], "preroll_ms": 250}          # the shipped plan has it off (probes/preroll-check)
    m = {**CFG, "bench": on, "repeats": {**CFG["repeats"], "n_sweep": 2}}
    assert CFG["bench"]["preroll_min_N"] in CFG["n_sweep"]
    for name in ("on", "off", "older"):
        (tmp_path / name).mkdir()
    bench.run(m, entries, tmp_path / "on", log=lambda s: None)
    with open(tmp_path / "on" / "timings.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "ok"]
    long = [r for r in rows if int(r["N"]) >= CFG["bench"]["preroll_min_N"]]
    assert long and len(fake_gpu.prerolled) == len(long) == len({(r["key"], r["repeat"]) for r in long})
    assert all(float(r["preroll_ms"]) == 250 and r["preroll_mhz"] == "1750.0" for r in long)
    assert all(r["preroll_ms"] == r["preroll_mhz"] == "" for r in rows if r not in long)
    fake_gpu.prerolled.clear()
    bench.run({**m, "bench": {**on, "preroll_ms": 0}}, entries, tmp_path / "off", log=lambda s: None)
    older = {k: v for k, v in on.items() if not k.startswith("preroll")}
    bench.run({**m, "bench": older}, entries, tmp_path / "older", log=lambda s: None)
    assert fake_gpu.prerolled == []
    with pytest.raises(ValueError, match="preroll_ms must be >= 0"):
        settle.needs_preroll(16384, 8192, -1)


def test_the_steady_step_gives_long_n_rows_of_the_first_repeats_their_energy(tmp_path, fake_gpu):
    """In the N sweep, the rows at N >= steady_min_N of repeat 0 (steady_repeats = 1) get the steady step's
    columns, from the kernel time just measured; every other row has them empty; steady_s = 0 turns it off."""
    from pipeline import steady_energy
    entries = bench_plan.expand(CFG, ["n_sweep"])
    bench_cfg = {**CFG["bench"], "steady_min_N": 8192, "steady_repeats": 1, "steady_s": 0.25}
    m = {**CFG, "bench": bench_cfg, "repeats": {**CFG["repeats"], "n_sweep": 2}}
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    failing = next(e.key for e in entries if e.shape.N == 16384)
    fake_gpu.steady_fails.add(failing)
    bench.run(m, entries, tmp_path / "on", log=lambda s: None)
    with open(tmp_path / "on" / "timings.csv") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    tail = steady_energy.COLUMNS + SAMPLE_COLUMNS
    assert reader.fieldnames[-len(tail):] == tail
    want = [r for r in rows if r["status"] == "ok" and int(r["N"]) >= 8192 and r["repeat"] == "0"]
    assert want and len(fake_gpu.steady) == len(want)
    # a failed steady step keeps the row and its time, with empty steady columns and the reason in its note
    failed = [r for r in want if r["key"] == failing]
    assert len(failed) == 1 and failed[0]["steady_power_w"] == "" and failed[0]["time_us"] != ""
    assert failed[0]["note"].startswith("steady step: the GPU ran out")
    want = [r for r in want if r["key"] != failing]
    assert all(r["steady_energy_mj"] != "" and float(r["steady_call_us"]) == float(r["time_us"]) for r in want)
    assert all(r["steady_power_w"] == "" for r in rows if r not in want)
    fake_gpu.steady.clear()
    bench.run({**m, "bench": {**bench_cfg, "steady_s": 0}}, entries, tmp_path / "off", log=lambda s: None)
    assert fake_gpu.steady == []


def test_the_aggregate_reads_runs_with_and_without_the_gpu_state(tmp_path, fake_gpu):
    """A committed run (timed before the GPU state was recorded) and a run with it: per_run's older columns of the
    old run are what they were without the new run beside it, its GPU state columns are empty; the new run's are
    the medians over repeats, the count of power-capped repeats, and TFLOP/s per watt of the median power."""
    import numpy as np
    import pandas as pd

    from kernels.shapes import attention_flops
    old_csv = sorted(DATA.glob("run-*"))[-1] / "bench-headline" / "timings.csv"
    with open(old_csv) as f:
        old_header = next(csv.reader(f))
    assert bench.COLUMNS[:len(old_header)] == old_header               # the new columns come after the old ones
    entries = bench_plan.expand(CFG, ["headline"])
    bench.run({**CFG, "repeats": {**CFG["repeats"], "headline": 3}}, entries, tmp_path, log=lambda s: None)
    old = pd.read_csv(old_csv).assign(run="run-old")
    new = pd.read_csv(tmp_path / "timings.csv").assign(run="run-new")
    both = aggregate.per_run(aggregate.canonical_names(pd.concat([old, new], ignore_index=True)))
    alone = aggregate.per_run(aggregate.canonical_names(old))
    assert list(both.columns) == list(alone.columns)
    assert list(both.columns[-len(aggregate.STATE):]) == list(aggregate.STATE)
    # the role `last` is our last stage measured in any of the runs read together: the new run's stages move it
    older = [c for c in alone.columns if c not in aggregate.STATE and c != "last"]
    pd.testing.assert_frame_equal(both[both.run == "run-old"][older].reset_index(drop=True),
                                  alone[older].reset_index(drop=True), check_dtype=False)
    assert both[both.run == "run-old"][list(aggregate.STATE)].isna().all().all()
    assert alone[list(aggregate.STATE)].isna().all().all()
    n = both[both.run == "run-new"]
    assert len(n) == len(entries) - 1                                   # v5 refused
    # of each entry's three repeats, the first was capped
    assert (n.capped_repeats == 1).all() and (n.energy_mj == 60.0).all()
    assert (n.power_w == 600.0).all() and (n.sm_mhz == 1980.0).all()   # medians over (capped, two not)
    r = n.iloc[0]
    assert r.tflops_per_watt == pytest.approx(attention_flops(r.B, r.H, r.N, r.D, bool(r.causal))
                                              / (r.time_us * 1e-6) / 1e12 / 600.0)
    assert np.isfinite(n.tflops_per_watt).all()
