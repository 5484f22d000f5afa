"""The aggregate's checks of what it reads, each against an attack on a copy of a real sealed run in tmp_path: the
data edited and sealed again is refused by the manifest, and, recorded there too (as a reviewed reseal would be),
by the content checks: halved times, a row twice, a NaN, zero or negative time, a kernel time that is not its
kernels' sum, an env.json of another GPU or of a commit git does not know, a copied run, a neighbour's rows listed
through '..'. Rows the bench step judged wrong are counted in the paper, not dropped unseen."""
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from steps import step

from pipeline import git, seal

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
RUN = "run-9-x2"
aggregate = step("aggregate/aggregate")
ARTICLE = ["--article-timings", str(DATA / "article" / "timings.csv"),
           "--article-ncu", str(DATA / "article" / "ncu.csv")]


@pytest.fixture
def data(tmp_path) -> Path:
    """tmp_path/data with a copy of RUN and run-8-x2 and their rows of the committed manifest."""
    rows = seal.read_manifest(DATA / seal.MANIFEST)
    out = tmp_path / "data"
    names = [f"nvidia-h200/{RUN}", "nvidia-h200/run-8-x2"]
    for name in names:
        shutil.copytree(DATA / name, out / name)
    seal.write_manifest(out / seal.MANIFEST, {n: rows[n] for n in names})
    return out


def run_aggregate(runs, out: Path) -> int:
    return aggregate.main(["--runs", *map(str, runs), *ARTICLE, "--out", str(out)])


def edit_timings(run: Path, change, set_="headline") -> None:
    path = run / f"bench-{set_}" / "timings.csv"
    t = pd.read_csv(path)
    change(t)
    t.to_csv(path, index=False)


def reseal(run: Path, out: Path, error: str):
    """Seal the edited run again: the manifest refuses it; recorded there as well, the aggregate refuses it with
    `error` (a content check)."""
    seal.write(run)
    with pytest.raises(seal.SealError, match="differs from the one .*SEALS.csv records"):
        run_aggregate([run], out / "unrecorded")
    seal.record(run)
    with pytest.raises(aggregate.DataError, match=error):
        run_aggregate([run], out / "recorded")


def test_the_copy_aggregates_as_committed(data, tmp_path):
    assert run_aggregate([data / "nvidia-h200" / RUN], tmp_path / "agg") == 0


def halve(t):
    t.loc[t.status == "ok", "time_us"] /= 2


def twice(t):
    t.loc[len(t)] = t.iloc[3]


def nan(t):
    t.loc[5, "time_us"] = float("nan")


def negative(t):
    t.loc[5, ["time_us", "kernels_us", "min_us", "q25_us", "q75_us", "max_us", "mean_us"]] *= -1


def zero_host(t):
    t.loc[7, "host_us"] = 0


def not_its_kernel_sum(t):
    pure = t.kernels.str.count(";") == 0
    i = t[pure & (t.status == "ok")].index[0]
    t.loc[i, "kernels_us"] = t.loc[i, "time_us"] * 1.01


def halve_all_but_the_kernels(t):
    ok = t.status == "ok"
    t.loc[ok, ["time_us", "min_us", "q25_us", "q75_us", "max_us", "mean_us"]] /= 2


def kernels_above_all(t):
    memset = t.kernels.str.contains("Memset")
    i = t[memset & (t.status == "ok")].index[0]
    t.loc[i, "kernels_us"] = t.loc[i, "time_us"] * 1.5


def miscounted(t):
    t.loc[t.status == "ok", "n_kernels"] += 1


@pytest.mark.parametrize("change, error", [
    (halve, r"time_us is not its kernels' sum|min_us above q25_us"),
    (halve_all_but_the_kernels, r"time_us is not its kernels' sum"),
    (twice, r"rows listed twice \(one run, set, key and repeat\): run-9-x2 "),
    (nan, r"time_us empty, not finite or not positive: run-9-x2 "),
    (negative, r"time_us empty, not finite or not positive"),
    (zero_host, r"host_us empty, not finite or not positive"),
    (not_its_kernel_sum, r"time_us is not its kernels' sum"),
    (kernels_above_all, r"kernels_us above time_us"),
    (miscounted, r"n_kernels is not the number of kernels that `kernels` names"),
], ids=lambda x: x.__name__ if callable(x) else "")
def test_edited_timings_sealed_again_are_refused(data, tmp_path, change, error):
    run = data / "nvidia-h200" / RUN
    edit_timings(run, change)
    reseal(run, tmp_path, error)


def edit_env(run: Path, **fields) -> Path:
    path = run / "bench-headline" / "env.json"
    env = json.loads(path.read_text())
    env.update(fields)
    path.write_text(json.dumps(env, indent=2))
    return path


def test_an_env_json_of_another_gpu_is_refused(data, tmp_path):
    run = data / "nvidia-h200" / RUN
    edit_env(run, gpu="NVIDIA H100 80GB HBM3")
    reseal(run, tmp_path, r"bench-headline/env.json: the GPU 'NVIDIA H100 80GB HBM3' \(data/nvidia-h100-80gb-hbm3/\) "
                          r"is not its folder's, data/nvidia-h200/")


@pytest.mark.skipif(not git.history(ROOT), reason="no .git: git's history is the witness of which commits exist")
@pytest.mark.parametrize("commit", ["0123456789abcdef0123456789abcdef01234567", "unknown", "HEAD", None])
def test_an_env_json_of_a_commit_git_does_not_know_is_refused(data, tmp_path, commit):
    run = data / "nvidia-h200" / RUN
    edit_env(run, project_commit=commit)
    reseal(run, tmp_path, r"bench-headline/env.json: the project commit .* is not a commit of this repository's")


def test_the_commit_check_is_skipped_saying_so_without_git_history(data, tmp_path, monkeypatch, capsys):
    run = data / "nvidia-h200" / RUN
    edit_env(run, project_commit="0123456789abcdef0123456789abcdef01234567")
    seal.write(run)
    seal.record(run)
    monkeypatch.setattr(aggregate.git, "history", lambda root=None: False)
    assert run_aggregate([run], tmp_path / "agg") == 0
    assert "the env.json commits were not checked" in capsys.readouterr().err


def test_a_copied_run_is_refused_even_sealed_anew(data, tmp_path):
    """run-18, a copy of run-9-x2: in no manifest row; its seal is another run's, so it cannot be recorded; with one
    file added and sealed anew it can, and the aggregate finds run-9-x2's rows in it (one key, seed and time)."""
    run = data / "nvidia-h200" / RUN
    copy = run.with_name("run-18")
    shutil.copytree(run, copy)
    with pytest.raises(seal.SealError, match="run-18: not listed in"):
        run_aggregate([run, copy], tmp_path / "a")
    with pytest.raises(seal.SealError, match="one is a copy"):
        seal.record(copy)
    (copy / "note.txt").write_text("a second run\n")
    seal.write(copy)
    seal.record(copy)
    with pytest.raises(aggregate.DataError, match=r"rows with one key, seed and time \(a row copied"):
        run_aggregate([run, copy], tmp_path / "b")


def test_a_neighbours_rows_listed_through_dotdot_are_refused(data, tmp_path):
    """run-9-x2's SHA256SUMS naming run-8-x2's timings ('../run-8-x2/...', with its right checksum), recorded: the
    aggregate counted run-8-x2's rows twice; now the seal is refused, naming the line."""
    run = data / "nvidia-h200" / RUN
    name = "../run-8-x2/bench-headline/timings.csv"
    sums = run / seal.NAME
    sums.write_text(sums.read_text() + f"{seal._digest(run / name)}  {name}\n")
    seal.write_manifest(data / seal.MANIFEST, {**seal.read_manifest(data / seal.MANIFEST),
                                               f"nvidia-h200/{RUN}": seal._digest(sums)})
    with pytest.raises(seal.SealError, match=r"line \d+: '\.\./run-8-x2/bench-headline/timings.csv' is a path that "
                                             r"leads out of the folder"):
        run_aggregate([run], tmp_path / "agg")


def test_the_committed_runs_pass_every_content_check():
    """What the aggregate reads of data/: every run's timings and env.json pass the content checks (the whole
    aggregate of them: tests/test_measure.py)."""
    runs = sorted(p for p in (DATA / "nvidia-h200").glob("run-*"))
    aggregate.verified(runs)
    recorded = aggregate.load(runs, "timings.csv")
    aggregate.check_timer(recorded)
    aggregate.check_timings(recorded)
    aggregate.check_envs(runs)


def test_wrong_bench_rows_are_counted_in_the_paper(data, tmp_path):
    """A bench row judged WRONG is never timed, so the tables leave it out: the paper counts it (BenchWrong), from
    the aggregate's timings.csv through the correctness values step."""
    run = data / "nvidia-h200" / RUN

    def wrong(t):
        i = t[t.status == "ok"].index[0]
        t.loc[i, "status"] = "WRONG"
        t.loc[i, [c for c in t.columns if c.endswith("_us")] + ["kernels", "n_kernels", "timer"]] = None
        # an entry judged wrong is never checked again: its later repeats have no row (bench.py)
        t.drop(t[(t.key == t.key[i]) & (t.repeat > t.repeat[i])].index, inplace=True)
    edit_timings(run, wrong)
    seal.write(run)
    seal.record(run)
    out = tmp_path / "agg"
    assert run_aggregate([run], out) == 0
    cpu = tmp_path / "cpu.csv"
    cpu.write_text("status\nok\n")
    values = step("paper/values/correctness").values(out / "correctness.csv", cpu, out / "timings.csv").macros
    timings = pd.read_csv(out / "timings.csv")
    assert values["BenchWrong"] == "1" and values["BenchChecks"] == str(int(timings.status.isin(["ok", "WRONG"]).sum()))


def test_sampling_counts_the_repeats_of_each_entry_in_a_run_and_the_samples_of_each_repeat():
    """sampling.csv: per set, dtype and N, the repeats of an entry in a run (lowest, highest) and the samples of a
    repeat; rows that are not ok are not counted."""
    agg = step("aggregate/aggregate")
    base = dict(set="n_sweep", dtype="float16", N=16384, status="ok")
    t = pd.DataFrame([
        {**base, "run": "r1", "key": "a", "repeat": 0, "n_samples": 25},
        {**base, "run": "r1", "key": "a", "repeat": 1, "n_samples": 25},
        {**base, "run": "r1", "key": "b", "repeat": 0, "n_samples": 31},
        {**base, "run": "r2", "key": "a", "repeat": 0, "n_samples": 27},
        {**base, "run": "r2", "key": "a", "repeat": 1, "n_samples": 400, "status": "WRONG"},
        {**base, "run": "r1", "key": "a", "repeat": 0, "n_samples": 300, "N": 1024, "set": "headline"},
    ])
    s = agg.sampling(t).set_index(["set", "N"])
    r = s.loc[("n_sweep", 16384)]
    assert (r.runs, r.entries, r.repeats_lo, r.repeats_hi, r.samples_lo, r.samples_hi) == (2, 2, 1, 2, 25, 31)
    assert s.loc[("headline", 1024)].samples_hi == 300


def test_snapshots_flag_the_power_cap_from_the_reason_mask(tmp_path):
    """snapshots.csv: a snapshot is power-capped where its active reasons hold 0x4 (software power cap), whatever
    other bit is set, or where nvidia-smi says the cap is active; the clock and power are read as numbers, NaN where
    nvidia-smi gave none."""
    agg = step("aggregate/aggregate")
    run = tmp_path / "run-1"
    (run / "bench-n_sweep").mkdir(parents=True)
    lines = [dict(repeat=0, **{"clocks.sm": "1980 MHz", "power.draw": "120.5 W", "power.limit": "700.00 W",
                               "clocks_event_reasons.active": "0x0000000000000001"}),
             dict(repeat=1, **{"clocks.sm": "1965 MHz", "power.draw": "547.91 W", "power.limit": "700.00 W",
                               "clocks_event_reasons.active": "0x0000000000000005"}),
             dict(repeat="end", **{"clocks.sm": "1500 MHz", "power.draw": "[N/A]", "power.limit": "700.00 W",
                                   "clocks_event_reasons.active": "[N/A]",
                                   "clocks_event_reasons.sw_power_cap": "Active"})]
    (run / "bench-n_sweep" / "snapshots.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    agg._SEALED[run] = [run / "bench-n_sweep" / "snapshots.jsonl"]
    try:
        s = agg.snapshots([run])
    finally:
        del agg._SEALED[run]
    assert list(s.power_capped) == [False, True, True]
    assert list(s.sm_mhz) == [1980.0, 1965.0, 1500.0] and s.power_w.iloc[1] == 547.91 and pd.isna(s.power_w.iloc[2])
    assert set(s.set) == {"n_sweep"} and list(s.repeat) == ["0", "1", "end"]


MEANT = "166b6209b5c8c16ba630d3b686017cd49bb9b6ed"   # a commit of the history (run-19's, whose record has a slip)


@pytest.mark.skipif(not git.history(ROOT) or git.unknown_commits({MEANT}, ROOT),
                    reason="git's history is the witness of which commits exist and of their code")
@pytest.mark.parametrize("same_code", [True, False])
def test_a_commit_slip_is_taken_only_when_commit_corrections_names_a_commit_of_the_same_code(data, tmp_path,
                                                                                            same_code):
    """A run recorded with a commit name git does not know ('166b620a', a slip) is refused; listed in
    data/COMMIT_CORRECTIONS.csv with the commit meant, it is taken when that commit's tree hashes to the run's
    recorded source_sha256, and refused, naming the mismatch, when it does not."""
    run = data / "nvidia-h200" / RUN
    code = git.source_sha256_at(MEANT) if same_code else "0" * 64
    edit_env(run, project_commit="166b620a", source_sha256=code)
    reseal(run, tmp_path / "no-correction", r"the project commit '166b620a' is not a commit of this repository's")
    pd.DataFrame([dict(folder=f"nvidia-h200/{RUN}", recorded="166b620a", commit=MEANT, reason="a slip")]).to_csv(
        data / "COMMIT_CORRECTIONS.csv", index=False)
    if same_code:
        assert run_aggregate([run], tmp_path / "agg") == 0
        runs = pd.read_csv(tmp_path / "agg" / "runs.csv")
        assert MEANT in runs.loc[runs.run == RUN, "commit"].iloc[0]
    else:
        with pytest.raises(aggregate.DataError, match=r"COMMIT_CORRECTIONS.csv names 166b6209b5c8 for the recorded "
                                                      r"commit '166b620a', but that commit's code hashes to"):
            run_aggregate([run], tmp_path / "agg")


def test_the_steady_steps_columns_are_judged_where_filled_only():
    """run-27's steady step filled steady_call_us on its long-N rows of the first repeat alone: the empty rest
    passes; a filled value that is zero, negative or not a number is refused, naming the column."""
    run = DATA / "nvidia-h200" / "run-27"
    recorded = aggregate.load([run], "timings.csv")
    filled = recorded.steady_call_us.notna()
    assert filled.any() and (~filled).any()
    aggregate.check_timings(recorded)
    for bad in (0.0, -3.0, "x"):
        broken = recorded.copy()
        broken["steady_call_us"] = broken.steady_call_us.astype(object)
        broken.loc[broken.index[filled.to_numpy()][0], "steady_call_us"] = bad
        with pytest.raises(aggregate.DataError, match="steady_call_us empty, not finite or not positive"):
            aggregate.check_timings(broken)


def _rows(gpu, variant, repeats, n=1024, run="run-x2"):
    return [dict(run=run, key=f"{variant}|{n}", variant=variant, B=2, H=16, H_kv=8, N=n, D=128, dtype="float16",
                 causal=True, gpu_uuid="", step_gpu=gpu, repeat=r, time_us=100.0 if gpu == "GPU-a" else 90.0)
            for r in range(repeats)]


def test_an_entry_timed_on_two_gpus_keeps_the_gpu_of_cudnn_at_its_shape():
    """A run whose sets ran on two GPUs: the headline set (cuDNN, v7, 3 repeats) on GPU-a, the N sweep (cuDNN, v7,
    2 repeats; v8 only there) on GPU-b, and a tile sweep of 40 entries at the same shape on GPU-b (the most rows).
    cuDNN, timed most on GPU-a, anchors the shape: v7 keeps GPU-a's repeats alone (not the 5 pooled), v8 keeps its
    own GPU; at N = 2048, timed on GPU-b alone, nothing is dropped."""
    import pandas as pd
    rows = (_rows("GPU-a", "torch-cudnn", 3) + _rows("GPU-a", "v7", 3) + _rows("GPU-b", "torch-cudnn", 2)
            + _rows("GPU-b", "v7", 2) + _rows("GPU-b", "v8", 2)
            + [r for i in range(40) for r in _rows("GPU-b", f"v7-tile{i}", 1)]
            + _rows("GPU-b", "torch-cudnn", 2, n=2048) + _rows("GPU-b", "v7", 2, n=2048))
    kept = aggregate.one_gpu(pd.DataFrame(rows))
    by = kept.groupby("key").gpu.agg(["unique", "size"])
    assert list(by.loc["v7|1024", "unique"]) == ["GPU-a"] and by.loc["v7|1024", "size"] == 3
    assert list(by.loc["torch-cudnn|1024", "unique"]) == ["GPU-a"]
    assert list(by.loc["v8|1024", "unique"]) == ["GPU-b"] and by.loc["v8|1024", "size"] == 2
    assert by.loc["v7|2048", "size"] == 2 and len(kept) == len(rows) - 4      # GPU-b's cuDNN and v7 at 1024 dropped


def test_a_paper_row_on_another_gpu_than_cudnn_is_refused():
    """check_ratio_gpus: v8 (a paper row) timed only on GPU-b while cuDNN's shape is GPU-a's: refused, naming it;
    the same entry as no paper row (a tile of the sweep) passes."""
    import pandas as pd
    base = dict(run="run-x2", B=2, H=16, H_kv=8, N=1024, D=128, dtype="float16", causal=True)
    pr = pd.DataFrame([dict(base, key="cudnn", variant="torch-cudnn", gpu="GPU-a", paper_row=True),
                       dict(base, key="v7", variant="v7", gpu="GPU-a", paper_row=True),
                       dict(base, key="v8", variant="v8", gpu="GPU-b", paper_row=True)])
    with pytest.raises(aggregate.DataError, match="run-x2 v8 on GPU-b, cuDNN on GPU-a"):
        aggregate.check_ratio_gpus(pr)
    aggregate.check_ratio_gpus(pr.assign(paper_row=[True, True, False]))


def test_a_runs_entry_order_is_read_from_the_order_its_rows_were_timed(tmp_path):
    """runs.csv's entry_order: 'fixed' where repeat 1 timed a shape's entries as repeat 0 did, 'alternating' where in
    reverse (pipeline.plan.timing_order, from run-33's bench on), '' where no shape says; the method's phrase."""
    values = step("paper/values/stages")
    shape = dict(B=2, H=16, H_kv=8, D=128, dtype="float16", causal=True)

    def timings(name, orders):
        rows = [dict(key=f"{k}@{n}", repeat=r, N=n, **shape) for r, keys in enumerate(orders)
                for n in (512, 1024) for k in keys]
        path = tmp_path / name / "timings.csv"
        path.parent.mkdir()
        pd.DataFrame(rows).to_csv(path, index=False)
        return path

    assert aggregate.entry_order([timings("a", [["x", "y", "z"], ["x", "y", "z"]])]) == "fixed"
    assert aggregate.entry_order([timings("b", [["x", "y", "z"], ["z", "y", "x"], ["x", "y", "z"]])]) == "alternating"
    assert aggregate.entry_order([timings("c", [["x", "y", "z"], ["y", "x", "z"]])]) == ""
    assert aggregate.entry_order([timings("d", [["x"], ["x"]])]) == ""             # one entry a shape: nothing to tell
    assert aggregate.entry_order([timings("e", [["x", "y"], ["x", "y"]]),
                                  timings("f", [["x", "y"], ["y", "x"]])]) == ""    # the sets disagree
    runs = pd.DataFrame(dict(run=["run-30", "run-31", "run-33"], entry_order=["fixed", "fixed", "alternating"]))
    assert values.entry_order_phrase(runs.iloc[:2]) == "in every run of this paper in one fixed order within a repeat"
    phrase = values.entry_order_phrase(runs)
    assert "run-30 and run-31" in phrase and "reversed every second repeat in run-33" in phrase
