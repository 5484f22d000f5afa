"""Faults injected into an interrupted bench or verify (the GPU replaced by test_measure's fakes): a resume under
another kernel source, commit, plan or case list is refused and the partial file left as it was; a row cut short or
with the wrong field count is dropped, named on stderr and measured again, so that the final CSV is well formed; a
second process on the same folder stops at once; an entry whose check failed (a transient error) is checked again,
one WRONG or refused is not."""
import csv
import fcntl
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import test_measure as measure_tests

from pipeline import gpu_env
from pipeline import plan as bench_plan

ROOT = Path(__file__).resolve().parents[1]
CFG, Interrupt, bench, verify = measure_tests.CFG, measure_tests.Interrupt, measure_tests.bench, measure_tests.verify
fake_gpu = measure_tests.fake_gpu
ENTRIES = bench_plan.expand(CFG, ["headline"])
PLAN = {**CFG, "repeats": {**CFG["repeats"], "headline": 2}}


def quiet(msg):
    pass


def interrupted_bench(out: Path, fake, m=PLAN, at: int = 5) -> bytes:
    """A bench interrupted at its at-th timing; the partial file's bytes."""
    fake.interrupt_at = at
    with pytest.raises(Interrupt):
        bench.run(m, ENTRIES, out, log=quiet)
    fake.interrupt_at = None
    return (out / "timings.partial.csv").read_bytes()


def timings(out: Path) -> pd.DataFrame:
    """The final timings.csv, read as the aggregate reads it, checked to be one row per (entry, repeat)."""
    df = pd.read_csv(out / "timings.csv")
    assert list(df.columns) == bench.COLUMNS
    assert not df.duplicated(["key", "repeat"]).any()
    assert set(df.key) <= {e.key for e in ENTRIES}
    return df


def tree_copy(tmp_path: Path, monkeypatch) -> Path:
    """The code the steps hash, copied: an edit of the copy is an edit of the kernel as the steps see it."""
    root = tmp_path / "tree"
    for sub in ("kernels", "pipeline", "workflow/scripts"):
        shutil.copytree(ROOT / sub, root / sub, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(gpu_env, "ROOT", root)
    return root


class FakeCases:
    """verify's run_case replaced: every case passes; interrupt_at raises on that call."""

    def __init__(self, monkeypatch):
        self.calls, self.interrupt_at = [], None
        monkeypatch.setattr(verify, "run_case", self)

    def __call__(self, case, device="cuda"):
        self.calls.append(case.key)
        if len(self.calls) == self.interrupt_at:
            raise Interrupt()
        return {"case": case.key, "variant": case.variant, "status": "ok", "rel_error": 1e-4}


def interrupted_verify(out: Path, fake: FakeCases, args: list, at: int = 3) -> bytes:
    fake.interrupt_at = at
    with pytest.raises(Interrupt):
        verify.main(args)
    fake.interrupt_at = None
    return (out / "correctness.partial.csv").read_bytes()


def verify_args(out: Path, *n) -> list:
    return ["--device", "cpu", "--N", *map(str, n or (16,)), "--stages", "v0", "v1", "--out", str(out)]


# ---- another origin -----------------------------------------------------------------------------------------------

def test_a_verify_resumed_after_a_kernel_edit_is_refused(tmp_path, monkeypatch):
    """The attack: verify v0, interrupt, break the kernel, resume: the cases that passed before the edit must not
    count. The resume is refused, naming the file that changed and the fix; the partial file is untouched."""
    root = tree_copy(tmp_path, monkeypatch)
    fake = FakeCases(monkeypatch)
    out = tmp_path / "verify"
    before = interrupted_verify(out, fake, verify_args(out))
    kernel = root / "kernels" / "flash_fwd.py"
    kernel.write_text(kernel.read_text() + "\n# broken\n")
    fake.calls.clear()
    with pytest.raises(ValueError, match=r"kernels/flash_fwd\.py: changed since .*move .*correctness\.partial\.csv"):
        verify.main(verify_args(out))
    assert not fake.calls and not (out / "correctness.csv").exists()
    assert (out / "correctness.partial.csv").read_bytes() == before


def test_a_verify_resumed_with_another_n_list_is_refused(tmp_path, monkeypatch):
    fake = FakeCases(monkeypatch)
    out = tmp_path / "verify"
    before = interrupted_verify(out, fake, verify_args(out, 16))
    fake.calls.clear()
    with pytest.raises(ValueError, match=r"the case list \(--device, --N"):
        verify.main(verify_args(out, 16, 32))
    assert not fake.calls and (out / "correctness.partial.csv").read_bytes() == before
    assert verify.main(verify_args(out, 16)) == 0          # the list it was begun with finishes it
    with open(out / "correctness.csv") as f:
        assert {r["case"] for r in csv.DictReader(f)} == {c.key for c in verify.cpu_cases([16])
                                                          if c.variant in ("v0", "v1")}


def test_a_bench_resumed_under_another_plan_is_refused(tmp_path, fake_gpu):
    """Interrupted under plan A, resumed under plan B (another repeat count, or other sets): refused before
    anything is timed, so that timings.csv never holds rows of entries B does not contain; A finishes it."""
    before = interrupted_bench(tmp_path, fake_gpu)
    n = len(fake_gpu.calls)
    other = {**PLAN, "repeats": {**PLAN["repeats"], "headline": 3}}
    with pytest.raises(ValueError, match=r"the plan \(plan\.yaml, --sets\).*move .*timings\.partial\.csv"):
        bench.run(other, ENTRIES, tmp_path, log=quiet)
    with pytest.raises(ValueError, match=r"the plan"):
        bench.run(PLAN, bench_plan.expand(CFG, ["headline", "bf16"]), tmp_path, log=quiet)
    assert len(fake_gpu.calls) == n and (tmp_path / "timings.partial.csv").read_bytes() == before
    bench.run(PLAN, ENTRIES, tmp_path, log=quiet)
    assert len(timings(tmp_path)) == 2 * (len(ENTRIES) - 1) + 1


def test_a_bench_resumed_at_another_commit_or_after_a_kernel_edit_is_refused(tmp_path, fake_gpu, monkeypatch):
    monkeypatch.setenv("PROJECT_COMMIT", "aaaa")
    root = tree_copy(tmp_path, monkeypatch)
    out = tmp_path / "bench"
    out.mkdir()
    before = interrupted_bench(out, fake_gpu)
    monkeypatch.setenv("PROJECT_COMMIT", "bbbb")
    with pytest.raises(ValueError, match=r"the commit: the partial file was begun at aaaa, the tree is at bbbb"):
        bench.run(PLAN, ENTRIES, out, log=quiet)
    monkeypatch.setenv("PROJECT_COMMIT", "aaaa")
    (root / "kernels" / "launcher.py").write_text("")
    with pytest.raises(ValueError, match=r"kernels/launcher\.py: changed since"):
        bench.run(PLAN, ENTRIES, out, log=quiet)
    assert (out / "timings.partial.csv").read_bytes() == before


def test_a_partial_file_without_its_origin_is_refused(tmp_path, fake_gpu):
    """Rows with nothing to say which code and plan made them (an older bench.py's, or the origin file removed)."""
    before = interrupted_bench(tmp_path, fake_gpu)
    (tmp_path / "timings.partial.csv.origin.json").unlink(missing_ok=True)
    with pytest.raises(ValueError, match=r"records no origin .*move .*timings\.partial\.csv"):
        bench.run(PLAN, ENTRIES, tmp_path, log=quiet)
    assert (tmp_path / "timings.partial.csv").read_bytes() == before


def test_a_bench_begun_again_writes_its_env_json_afresh(tmp_path, fake_gpu, monkeypatch):
    """env.json describes the start of the rows beside it: kept on a resume, written afresh when the partial file
    is begun (an earlier start's env.json, its partial file moved away, is not kept)."""
    commit = {"now": "old"}
    monkeypatch.setattr(gpu_env, "collect", lambda: {"project_commit": commit["now"]})
    env = {"plan": PLAN, "sets": ["headline"]}
    fake_gpu.interrupt_at = 5
    with pytest.raises(Interrupt):
        bench.run(PLAN, ENTRIES, tmp_path, log=quiet, env=env)
    for name in ("timings.partial.csv", "timings.partial.csv.origin.json"):
        (tmp_path / name).rename(tmp_path / f"{name}.moved")       # the fix the refusal names
    commit["now"] = "new"
    fake_gpu.interrupt_at = len(fake_gpu.calls) + 3
    with pytest.raises(Interrupt):
        bench.run(PLAN, ENTRIES, tmp_path, log=quiet, env=env)
    commit["now"] = "newer"                                   # a resume keeps its start's env.json
    fake_gpu.interrupt_at = None
    bench.run(PLAN, ENTRIES, tmp_path, log=quiet, env=env)
    assert json.loads((tmp_path / "env.json").read_text())["project_commit"] == "new"


# ---- torn rows ----------------------------------------------------------------------------------------------------

def cut(path: Path, where: str) -> None:
    """Append a copy of the file's last row cut short: inside its (quoted) key, in its middle, or just before its
    newline; or put a row of the wrong field count in the middle of the file (two writers)."""
    text = path.read_bytes()
    lines = text.split(b"\r\n")
    last = lines[-2]
    if where == "fields":
        lines.insert(2, last.split(b",", 3)[-1])
        path.write_bytes(b"\r\n".join(lines))
        return
    at = {"key": 12, "middle": len(last) // 2, "newline": len(last)}[where]
    path.write_bytes(text + last[:at] + (b"\r" if where == "newline" else b""))


@pytest.mark.parametrize("where", ["key", "middle", "newline", "fields"])
def test_a_torn_row_is_dropped_and_measured_again(tmp_path, fake_gpu, capsys, where):
    """A row cut short (a killed job, a full disk) or of the wrong field count: the resume drops it, naming the file
    and line on stderr, and finishes a timings.csv that pandas reads, every (entry, repeat) once."""
    interrupted_bench(tmp_path, fake_gpu)
    partial = tmp_path / "timings.partial.csv"
    n_lines = partial.read_bytes().count(b"\n")
    cut(partial, where)
    capsys.readouterr()
    bench.run(PLAN, ENTRIES, tmp_path, log=quiet)
    df = timings(tmp_path)
    assert len(df) == 2 * (len(ENTRIES) - 1) + 1 and set(df.status) == {"ok", "refused"}
    err = capsys.readouterr().err
    line = 3 if where == "fields" else n_lines + 1
    assert f"{partial}, line {line}: " in err and "dropped, its entry is measured again" in err


def test_a_verify_row_cut_inside_its_key_is_dropped(tmp_path, monkeypatch, capsys):
    fake = FakeCases(monkeypatch)
    out = tmp_path / "verify"
    interrupted_verify(out, fake, verify_args(out))
    partial = out / "correctness.partial.csv"
    with open(partial, "ab") as f:
        f.write(b'"triton|v1|1,4,2,1')
    assert verify.main(verify_args(out)) == 0
    df = pd.read_csv(out / "correctness.csv")
    assert len(df) == 4 and not df.case.duplicated().any() and set(df.status) == {"ok"}
    assert f"{partial}, line 4: no trailing newline" in capsys.readouterr().err
    assert not partial.exists() and not (out / "correctness.partial.csv.origin.json").exists()


# ---- two writers --------------------------------------------------------------------------------------------------

def hold(path: Path):
    """Another process's lock on the folder (flock locks conflict between open files, in one process too)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def test_a_second_bench_on_one_folder_stops_at_once(tmp_path, fake_gpu):
    before = interrupted_bench(tmp_path, fake_gpu)
    n = len(fake_gpu.calls)
    fd = hold(tmp_path / "bench.lock")
    try:
        with pytest.raises(RuntimeError, match=r"another process holds .*bench\.lock"):
            bench.run(PLAN, ENTRIES, tmp_path, log=quiet)
        assert len(fake_gpu.calls) == n and (tmp_path / "timings.partial.csv").read_bytes() == before
    finally:
        os.close(fd)
    bench.run(PLAN, ENTRIES, tmp_path, log=quiet)           # the first one gone: it resumes
    timings(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshots.jsonl", "timings.csv"]   # nothing to seal


def test_a_second_verify_on_one_folder_stops_at_once(tmp_path, monkeypatch):
    fake = FakeCases(monkeypatch)
    out = tmp_path / "verify"
    fd = hold(out / "verify.lock")
    try:
        with pytest.raises(RuntimeError, match=r"another process holds .*verify\.lock"):
            verify.main(verify_args(out))
        assert not fake.calls
    finally:
        os.close(fd)
    assert verify.main(verify_args(out)) == 0
    assert sorted(p.name for p in out.iterdir()) == ["correctness.csv"]


# ---- a transient failure ------------------------------------------------------------------------------------------

def test_a_failed_check_is_retried_on_resume_but_not_a_wrong_or_refused_one(tmp_path, fake_gpu, monkeypatch):
    """v2's check fails the first time (out of memory): recorded 'failed', not timed in that run; the resume checks
    it again, and it is timed every repeat. v3 is WRONG and v5 refused: each checked once, never again."""
    checks, oom = [], {"v2"}
    fake_check = bench.check

    def check(entry, seed):
        checks.append(entry.variant)
        if entry.variant in oom:
            oom.discard(entry.variant)
            return "failed", None, "OutOfMemoryError: CUDA out of memory", None
        if entry.variant == "v3":
            return "WRONG", 0.5, "", None
        return fake_check(entry, seed)

    monkeypatch.setattr(bench, "check", check)
    assert {"v2", "v3", "v5"} <= {e.variant for e in ENTRIES}
    interrupted_bench(tmp_path, fake_gpu, at=len(ENTRIES) - 3 + 2)   # in the second repeat: v2 skipped there
    assert checks.count("v2") == 1
    bench.run(PLAN, ENTRIES, tmp_path, log=quiet)
    assert checks.count("v2") == 1 + 2 and checks.count("v3") == 1 and checks.count("v5") == 1
    df = timings(tmp_path)
    v2 = df[df.variant == "v2"]
    assert sorted(v2.repeat) == [0, 1] and set(v2.status) == {"ok"} and v2.time_us.notna().all()
    assert list(df[df.variant == "v3"].status) == ["WRONG"] and list(df[df.variant == "v5"].status) == ["refused"]
    assert "failed" not in set(df.status)

