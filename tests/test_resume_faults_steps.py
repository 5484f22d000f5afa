"""The faults of test_resume_faults for the other GPU steps that resume or keep state: profile.py (Nsight Compute and
the report reader replaced by fakes) resumed after a kernel edit is refused, naming the file and the fix, before ncu
runs again; a second profile, ceilings, timer check or Qwen3 run on one folder stops at once; qwen3_e2e.py resumes
after its finished points (an unfinished or out-of-memory one measured again) and refuses another origin; ceilings.py
and timer_check.py, which resume nothing, write env.json afresh rather than keep an earlier start's."""
import json
import os
from pathlib import Path

import pytest

import test_resume_faults as faults
from steps import step

from pipeline import gpu_env, ncu_permission

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config" / "config.yaml"
profile = step("measure/profile")
ceilings = step("measure/ceilings")
timer_check = step("measure/timer_check")
tree_copy, hold, Interrupt = faults.tree_copy, faults.hold, faults.Interrupt


class FakeNcu:
    """profile's _ncu and _tidy replaced: ncu writes its report and order file, the reader a CSV; interrupt_at
    raises on that ncu call (before its report is written)."""

    def __init__(self, monkeypatch):
        self.calls, self.interrupt_at, self.permission_checks, self.killed_writing = [], None, 0, False
        monkeypatch.setattr(profile, "_ncu", self.ncu)
        monkeypatch.setattr(profile, "_tidy", self.tidy)
        monkeypatch.setattr(gpu_env, "collect", lambda: {"project_commit": "fake"})
        monkeypatch.setattr(gpu_env, "snapshot", lambda index=0: {"clocks.sm": "fake"})
        # the counters' permission, checked first (pipeline.ncu_permission, tested on its own): granted
        monkeypatch.setattr(ncu_permission, "check", self.check)

    def check(self, log=print):
        self.permission_checks += 1

    def ncu(self, args, target_args, log):
        self.calls.append(args)
        if len(self.calls) == self.interrupt_at:
            if self.killed_writing:               # ncu killed with its report begun, the order file not yet written
                Path(args[args.index("-o") + 1] + ".ncu-rep").write_text("half a rep")
            raise Interrupt()
        Path(args[args.index("-o") + 1] + ".ncu-rep").write_text("report")
        Path(target_args[target_args.index("--order") + 1]).write_text("[]")

    def tidy(self, mode, rep, order, csv_path, log):
        csv_path.write_text("key,metric,value\n")


def profile_args(out: Path) -> list:
    return ["--config", str(CONFIG), "--out", str(out)]


def interrupted_profile(out: Path, fake: FakeNcu, at: int = 2) -> dict:
    """A profile interrupted at its at-th ncu pass; the folder's files and their bytes."""
    fake.interrupt_at = at
    with pytest.raises(Interrupt):
        profile.main(profile_args(out))
    fake.interrupt_at = None
    return files(out)


def files(out: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "env.json"}


def test_a_profile_resumed_after_a_kernel_edit_is_refused(tmp_path, monkeypatch):
    """The attack: profile, interrupt after the first pass, edit the kernel, resume: the first pass's report was
    made by other code. Refused before ncu runs, naming the file and the fix; the folder is left as it was."""
    root = tree_copy(tmp_path, monkeypatch)
    fake = FakeNcu(monkeypatch)
    out = tmp_path / "profile"
    before = interrupted_profile(out, fake)
    assert "ncu.csv" in before and "profile.ncu-rep.gz" in before
    kernel = root / "kernels" / "flash_fwd.py"
    text = kernel.read_text()
    kernel.write_text(text + "\n# broken\n")
    fake.calls.clear()
    with pytest.raises(ValueError, match=r"kernels/flash_fwd\.py: changed since .*move .*ncu\.csv"):
        profile.main(profile_args(out))
    assert not fake.calls and files(out) == before
    kernel.write_text(text)                                   # the code it was begun with finishes it
    assert profile.main(profile_args(out)) == 0
    assert len(fake.calls) == 3                               # duration, premise, large_n: the first pass kept
    names = set(files(out))
    assert {"ncu.csv", "ncu_duration.csv", "ncu_premise.csv", "ncu_large_n.csv", "profile.ncu-rep.gz"} <= names
    assert not {"profile.lock", "profile.origin.json"} & names          # nothing left to seal


def test_a_pass_killed_while_ncu_wrote_its_report_runs_again(tmp_path, monkeypatch):
    """run-36 (part 2 cut at its time limit with ncu writing the duration pass's report): the resumed step took the
    half-written report for a finished one and failed reading it, its order file missing. ncu now writes under a
    partial name, renamed once it has returned, so the resumed step runs that pass again and finishes."""
    tree_copy(tmp_path, monkeypatch)
    fake = FakeNcu(monkeypatch)
    fake.killed_writing = True
    out = tmp_path / "profile"
    before = interrupted_profile(out, fake)
    assert "profile.ncu-rep.gz" in before and "duration.ncu-rep" not in before
    assert before["duration.partial.ncu-rep"] == b"half a rep"
    fake.calls.clear()
    assert profile.main(profile_args(out)) == 0
    assert len(fake.calls) == 3                               # duration again, premise, large_n
    names = set(files(out))
    assert {"ncu_duration.csv", "duration.ncu-rep.gz"} <= names
    assert not any(".partial." in n for n in names)           # nothing half-written left to seal


def test_a_profile_folder_without_its_origin_is_refused(tmp_path, monkeypatch):
    """Reports with nothing to say which code made them (an older profile.py's, or the origin file removed)."""
    fake = FakeNcu(monkeypatch)
    out = tmp_path / "profile"
    interrupted_profile(out, fake)
    (out / "profile.origin.json").unlink(missing_ok=True)
    with pytest.raises(ValueError, match=r"records no origin .*move .*ncu\.csv"):
        profile.main(profile_args(out))


def test_a_second_profile_on_one_folder_stops_at_once(tmp_path, monkeypatch):
    fake = FakeNcu(monkeypatch)
    out = tmp_path / "profile"
    fd = hold(out / "profile.lock")
    try:
        with pytest.raises(RuntimeError, match=r"another process holds .*profile\.lock"):
            profile.main(profile_args(out))
        assert not fake.calls
    finally:
        os.close(fd)
    assert profile.main(profile_args(out)) == 0
    assert "profile.lock" not in files(out)


@pytest.fixture
def fake_env(monkeypatch):
    commit = {"now": "old"}
    monkeypatch.setattr(gpu_env, "collect", lambda: {"project_commit": commit["now"]})
    monkeypatch.setattr(gpu_env, "snapshot", lambda index=0: {"clocks.sm": "fake"})
    return commit


def fake_ceilings(monkeypatch):
    monkeypatch.setattr(ceilings, "measure", lambda repeats=5: [
        dict(quantity=q, dtype="float16", size=1, repeat=0, value=1.0, unit="") for q in ("matmul_tflops",
                                                                                           "copy_gbps")])


def test_ceilings_write_env_json_afresh_and_hold_the_folder(tmp_path, monkeypatch, fake_env):
    """ceilings.py resumes nothing: a second start's env.json is its own, not the first's; a second process on the
    folder stops at once."""
    fake_ceilings(monkeypatch)
    args = ["--out", str(tmp_path)]
    fd = hold(tmp_path / "ceilings.lock")
    try:
        with pytest.raises(RuntimeError, match=r"another process holds .*ceilings\.lock"):
            ceilings.main(args)
    finally:
        os.close(fd)
    assert not (tmp_path / "env.json").exists()
    assert ceilings.main(args) == 0
    fake_env["now"] = "new"
    assert ceilings.main(args) == 0
    assert json.loads((tmp_path / "env.json").read_text())["project_commit"] == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ceilings.csv", "env.json"]


def test_a_timer_check_writes_env_json_afresh_and_holds_the_folder(tmp_path, monkeypatch, fake_env):
    checked = []

    def check(entry, seed):
        checked.append(entry.key)
        return "refused", None, "fake: nothing timed", None

    monkeypatch.setattr(timer_check, "check", check)
    args = ["--config", str(CONFIG), "--out", str(tmp_path)]
    fd = hold(tmp_path / "timer_check.lock")
    try:
        with pytest.raises(RuntimeError, match=r"another process holds .*timer_check\.lock"):
            timer_check.main(args)
        assert not checked
    finally:
        os.close(fd)
    assert timer_check.main(args) == 0
    fake_env["now"] = "new"
    assert timer_check.main(args) == 0
    assert json.loads((tmp_path / "env.json").read_text())["project_commit"] == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["env.json", "timer_check.csv"]


def test_a_second_qwen3_run_on_one_folder_stops_before_truncating_the_first_ones_files(tmp_path, monkeypatch):
    """A second qwen3_e2e.py on the folder of one still running must stop at once, before it reads, rewrites or
    appends to the first one's partial files."""
    qwen3 = step("measure/qwen3_e2e")
    opened = []
    monkeypatch.setattr(qwen3, "Writer",
                        lambda out, origin: opened.append(out) or pytest.fail("the files were truncated"))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    (tmp_path / "qwen3_e2e.partial.csv").write_text("the first run's rows\n")
    fd = hold(tmp_path / "qwen3_e2e.lock")
    try:
        with pytest.raises(RuntimeError, match=r"another process holds .*qwen3_e2e\.lock"):
            qwen3.main(["--self-check", "--out", str(tmp_path)])
    finally:
        os.close(fd)
    assert not opened and (tmp_path / "qwen3_e2e.partial.csv").read_text() == "the first run's rows\n"


class FakePoints:
    """qwen3_e2e's measure_one replaced: each point writes two rows and one sample (no model runs); a point named in
    `interrupt` is killed after its first row and sample, one in `oom` runs out of memory after them."""

    def __init__(self, qwen3, monkeypatch, interrupt=(), oom=()):
        import torch

        self.calls, self.interrupt, self.oom, self.torch = [], set(interrupt), set(oom), torch
        monkeypatch.setattr(qwen3, "measure_one", self.measure_one)

    def measure_one(self, model, name, layers, layers_full, B, N, a, w, clocks, ours_name):
        self.calls.append(N)
        base = dict(model=name, layers=layers, layers_full=layers_full, batch=B, N=N, stage=a.stage)
        w.row(base, "ours", "eager", "prefill_ms_median", 1.0 + N, "ms")
        w.sample(dict(model=name, layers=layers, batch=B, N=N, impl="ours", mode="eager", sample=0, ms=1.0 + N))
        if N in self.interrupt:
            raise faults.Interrupt(f"killed at N = {N}")
        if N in self.oom:
            raise self.torch.OutOfMemoryError(f"out of memory at N = {N}")
        w.row(base, "sdpa", "eager", "prefill_ms_median", 2.0 + N, "ms")


def _qwen3_rows(folder: Path, name: str) -> list:
    import csv
    return list(csv.DictReader(open(folder / name)))


QWEN3_ARGS = ["--self-check", "--N", "8", "16", "24", "--batch", "1", "--repeats", "1", "--warmup", "0"]


def test_a_qwen3_run_resumes_after_its_finished_points_and_measures_an_unfinished_one_again(tmp_path, monkeypatch):
    """Killed inside its second point, qwen3_e2e.py resumes: the first point is kept and not measured again, the
    second's rows and samples written before the kill are dropped and it is measured again, and the final files hold
    each point's rows once, with no marker row."""
    qwen3 = step("measure/qwen3_e2e")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    args = QWEN3_ARGS + ["--out", str(tmp_path)]
    first = FakePoints(qwen3, monkeypatch, interrupt={16})
    with pytest.raises(faults.Interrupt):
        qwen3.main(args)
    assert first.calls == [8, 16] and not (tmp_path / "qwen3_e2e.csv").exists()
    again = FakePoints(qwen3, monkeypatch)
    assert qwen3.main(args) == 0
    assert again.calls == [16, 24]
    rows = _qwen3_rows(tmp_path, "qwen3_e2e.csv")
    assert sorted((r["N"], r["impl"]) for r in rows) == [(n, i) for n in ("16", "24", "8") for i in ("ours", "sdpa")]
    assert all(r["metric"] != qwen3.POINT_DONE for r in rows)
    assert sorted(s["N"] for s in _qwen3_rows(tmp_path, "samples.csv")) == ["16", "24", "8"]
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []


def test_a_qwen3_point_out_of_memory_is_measured_again_on_resume(tmp_path, monkeypatch):
    """An out-of-memory point (a transient failure) gets no marker: a run killed after it measures it again on
    resume, where a finished point is skipped."""
    qwen3 = step("measure/qwen3_e2e")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    args = QWEN3_ARGS + ["--out", str(tmp_path)]
    first = FakePoints(qwen3, monkeypatch, oom={8}, interrupt={24})
    with pytest.raises(faults.Interrupt):
        qwen3.main(args)
    assert first.calls == [8, 16, 24]
    again = FakePoints(qwen3, monkeypatch)
    assert qwen3.main(args) == 0
    assert again.calls == [8, 24]
    rows = _qwen3_rows(tmp_path, "qwen3_e2e.csv")
    assert not [r for r in rows if r["status"] == "oom"]
    assert sorted((r["N"], r["impl"]) for r in rows) == [(n, i) for n in ("16", "24", "8") for i in ("ours", "sdpa")]


def test_a_qwen3_run_resumed_under_another_plan_is_refused(tmp_path, monkeypatch):
    """A partial file begun for another plan (here more samples per point) is refused, naming the plan and the fix,
    and left as it was."""
    qwen3 = step("measure/qwen3_e2e")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    FakePoints(qwen3, monkeypatch, interrupt={16})
    with pytest.raises(faults.Interrupt):
        qwen3.main(QWEN3_ARGS + ["--out", str(tmp_path)])
    before = (tmp_path / "qwen3_e2e.partial.csv").read_text()
    again = FakePoints(qwen3, monkeypatch)
    other = list(QWEN3_ARGS)
    other[other.index("--repeats") + 1] = "3"
    refused = r"(?s)begun under another origin.*the plan \(models.*move .*qwen3_e2e\.partial"
    with pytest.raises(ValueError, match=refused):
        qwen3.main(other + ["--out", str(tmp_path)])
    assert again.calls == [] and (tmp_path / "qwen3_e2e.partial.csv").read_text() == before


def test_a_qwen3_run_resumed_after_a_kernel_edit_is_refused(tmp_path, monkeypatch):
    """A partial file begun before an edit of the kernels is refused, naming the file edited."""
    qwen3 = step("measure/qwen3_e2e")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    root = tree_copy(tmp_path, monkeypatch)
    out = tmp_path / "out"
    FakePoints(qwen3, monkeypatch, interrupt={16})
    with pytest.raises(faults.Interrupt):
        qwen3.main(QWEN3_ARGS + ["--out", str(out)])
    with open(root / "kernels" / "flash_fwd.py", "a") as f:
        f.write("\n# an edit\n")
    FakePoints(qwen3, monkeypatch)
    with pytest.raises(ValueError, match=r"kernels/flash_fwd\.py: changed since the partial file was begun"):
        qwen3.main(QWEN3_ARGS + ["--out", str(out)])
