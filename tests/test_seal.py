"""The seals of data/ and what anchors them: the git history (every sealed file is the version committed with its
seal), the manifest (data/SEALS.csv records every seal; a seal written again, a copied run, a folder it does not list
are refused), the names a seal may list, `make paper`'s check of every seal before Snakemake decides anything, and
the sealed Snakemake logs the step table reads. Each attack is made on a copy of a real sealed folder in tmp_path."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from steps import step

from pipeline import git
from pipeline import seal

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
RUN = "run-9-x2"                      # a run sealed before the benchmark files: its step times come from its log
step_times = step("aggregate/step_times")


def witness_problems(root: Path, data: Path) -> list:
    """What the git history of root does not witness: for each SHA256SUMS under data, the commit that last changed
    it must hold the SHA256SUMS and every file it lists exactly as the working tree does."""
    problems, pending = [], {}
    for folder in seal.sealed_folders(data):
        rel = folder.relative_to(root)
        sums = (rel / seal.NAME).as_posix()
        commit = git.last_commit(sums, root)
        if commit is None:
            problems.append(f"{sums}: never committed (a new seal is committed with its data)")
            continue
        blobs = git.tree_blobs(commit, rel, root)
        for name in [seal.NAME, *seal.listed(folder)]:
            path = (rel / name).as_posix()
            if path not in blobs:
                problems.append(f"{path}: not in commit {commit[:10]}, the one that last changed {sums}")
            else:
                pending[path] = (blobs[path], commit)
    now = git.file_blobs(pending, root)
    problems += [f"{path}: not the version committed with its seal (commit {commit[:10]}): edited since, or sealed "
                 f"again without a commit" for path, (blob, commit) in sorted(pending.items()) if now[path] != blob]
    return problems


needs_git = pytest.mark.skipif(not git.history(ROOT), reason=f"{ROOT} has no .git: the git history is the witness of "
                                                             f"the seals, and this copy of the tree has none")


@needs_git
def test_every_sealed_file_is_the_version_committed_with_its_seal():
    problems = witness_problems(ROOT, DATA)
    assert not problems, "\n".join(problems)


@needs_git
def test_the_witness_sees_an_edit_sealed_again(tmp_path):
    """In a repository of its own: a committed seal holds; an edit sealed again (and recorded in the manifest)
    passes the checksums and the manifest, but not the history, until it is committed, a reviewed change."""
    repo = tmp_path / "repo"
    run = repo / "data" / "nvidia-h200" / "run-a"
    run.mkdir(parents=True)
    (run / "timings.csv").write_text("key,time_us\na,100\n")
    seal.write(run)
    seal.record(run, repo / "data" / "SEALS.csv")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "run-a"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True, env=env, capture_output=True)
    assert witness_problems(repo, repo / "data") == []
    (run / "timings.csv").write_text("key,time_us\na,50\n")       # halved, sealed again, recorded
    seal.write(run)
    seal.record(run)
    seal.verify_all(repo / "data")
    problems = witness_problems(repo, repo / "data")
    assert len(problems) == 2 and all("not the version committed with its seal" in p for p in problems)
    copy = run.with_name("run-b")                                  # a copied run, never committed
    shutil.copytree(run, copy)
    assert any("run-b/SHA256SUMS: never committed" in p for p in witness_problems(repo, repo / "data"))


def test_the_manifest_records_every_seal_of_data_and_each_holds():
    folders = seal.verify_all(DATA)
    assert set(seal.read_manifest(DATA / seal.MANIFEST)) == {f.relative_to(DATA).as_posix() for f in folders}
    assert {f.relative_to(DATA).as_posix() for f in folders} >= {
        f"nvidia-h200/{RUN}", "nvidia-h200/probes/host-cost", "nvidia-h200/snakemake-logs"}


def copy_sealed(tmp_path: Path, *names: str) -> Path:
    """The named sealed folders of data/ copied into tmp_path/data, with their rows of the committed manifest."""
    data = tmp_path / "data"
    rows = seal.read_manifest(DATA / seal.MANIFEST)
    for name in names:
        shutil.copytree(DATA / name, data / name)
    seal.write_manifest(data / seal.MANIFEST, {n: rows[n] for n in names})
    return data


def test_a_seal_written_again_over_an_edit_is_refused(tmp_path):
    """Halved times, sealed again: the checksums hold, the manifest does not, and the error says how a reseal that
    is meant is recorded."""
    data = copy_sealed(tmp_path, f"nvidia-h200/{RUN}")
    run = data / "nvidia-h200" / RUN
    seal.verify(run)
    timings = run / "bench-headline" / "timings.csv"
    import pandas as pd
    t = pd.read_csv(timings)
    t["time_us"] /= 2
    t.to_csv(timings, index=False)
    seal.write(run)
    seal.check(run)
    with pytest.raises(seal.SealError, match=r"differs from the one .*SEALS.csv records .*python -m pipeline.seal "
                                             r"manifest"):
        seal.verify(run)


def test_a_copied_run_is_refused(tmp_path):
    """A run copied under a new name (run-18) is in no manifest row; recording it is refused, since its seal is
    another run's; and a manifest that lists it by hand is refused too."""
    data = copy_sealed(tmp_path, f"nvidia-h200/{RUN}")
    copy = data / "nvidia-h200" / "run-18"
    shutil.copytree(data / "nvidia-h200" / RUN, copy)
    with pytest.raises(seal.SealError, match="run-18: not listed in .*SEALS.csv"):
        seal.verify(copy)
    with pytest.raises(seal.SealError, match=f"{RUN} has the same SHA256SUMS as nvidia-h200/run-18: one is a copy"):
        seal.record(copy)
    with pytest.raises(seal.SealError, match="one is a copy"):
        seal.manifest(data)
    (data / seal.MANIFEST).write_text((data / seal.MANIFEST).read_text() + "nvidia-h200/run-18," +
                                      (data / seal.MANIFEST).read_text().splitlines()[1].split(",")[1] + "\n")
    with pytest.raises(seal.SealError, match="one is a copy"):
        seal.verify(copy)


@pytest.mark.parametrize("name, error", [
    ("../run-8-x2/bench-headline/timings.csv", r"leads out of the folder \(\.\.\)"),
    ("bench-headline/../../run-8-x2/bench-headline/timings.csv", r"leads out of the folder \(\.\.\)"),
    ("/etc/hostname", "is an absolute path"),
    ("./bench-headline/timings.csv", "not a plain path"),
    ("bench-headline", "is a folder"),
])
def test_a_seal_lists_only_plain_paths_of_files_inside_its_folder(tmp_path, name, error):
    """A neighbour's file ('..'), an absolute one, or a folder (it gave IsADirectoryError) in SHA256SUMS is refused,
    naming the line, before any file is read: a neighbour's rows were counted twice."""
    data = copy_sealed(tmp_path, f"nvidia-h200/{RUN}", "nvidia-h200/run-8-x2")
    run = data / "nvidia-h200" / RUN
    target = (run / name) if not name.startswith("/") else Path(name)
    digest = seal._digest(target) if target.is_file() else "0" * 64
    sums = run / seal.NAME
    sums.write_text(sums.read_text() + f"{digest}  {name}\n")
    with pytest.raises(seal.SealError, match=rf"SHA256SUMS, line \d+: .*{error}"):
        seal.listed(run)
    with pytest.raises(seal.SealError, match=error):
        seal.verify(run)


def test_verify_all_catches_what_make_would_find_up_to_date(tmp_path):
    """A sealed file deleted, or one byte of it changed with its mtime kept, or a manifest row whose folder is gone:
    `python -m pipeline.seal verify-all` fails naming it (the command `make paper` runs before Snakemake)."""
    data = copy_sealed(tmp_path, f"nvidia-h200/{RUN}", "nvidia-h200/probes/host-cost")
    cli = [sys.executable, "-m", "pipeline.seal", "verify-all", str(data)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = subprocess.run(cli, capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and "2 sealed folders" in ok.stdout, ok.stderr
    timings = data / "nvidia-h200" / RUN / "bench-headline" / "timings.csv"
    st = timings.stat()
    raw = bytearray(timings.read_bytes())
    i = raw.index(b",ok,") + 5
    raw[i] = ord("9") if raw[i] != ord("9") else ord("8")
    timings.write_bytes(bytes(raw))
    os.utime(timings, ns=(st.st_atime_ns, st.st_mtime_ns))           # the same mtime: make sees nothing new
    bad = subprocess.run(cli, capture_output=True, text=True, env=env)
    assert bad.returncode == 1 and "bench-headline/timings.csv: changed since the run" in bad.stderr
    timings.unlink()
    with pytest.raises(seal.SealError, match="bench-headline/timings.csv: missing"):
        seal.verify_all(data)
    shutil.rmtree(data / "nvidia-h200" / "probes" / "host-cost")
    with pytest.raises(seal.SealError, match="probes/host-cost: listed in .*SEALS.csv but holds no SHA256SUMS"):
        seal.verify_all(data)


def test_make_paper_verifies_every_seal_before_snakemake():
    """`make paper` and `make smoke`: the verify-all command comes before Snakemake, which would find a built tree
    up to date whatever happened to the data."""
    for target in ("paper", "smoke"):
        recipe = subprocess.run(["make", "-n", "-C", str(ROOT), target], capture_output=True, text=True).stdout
        lines = recipe.splitlines()
        check = next(i for i, line in enumerate(lines) if "-m pipeline.seal verify-all data" in line)
        assert check < next(i for i, line in enumerate(lines) if "snakemake --profile profiles/cpu" in line), target


def test_the_step_table_reads_a_snakemake_log_only_sealed(tmp_path):
    """run-9-x2's step times come from its Snakemake log: the log's folder must be sealed and recorded. A moved
    timestamp (it changed a range to 319-21943 s) is refused, sealed again or not; an unsealed log folder too."""
    data = copy_sealed(tmp_path, f"nvidia-h200/{RUN}", "nvidia-h200/snakemake-logs")
    run, logs = data / "nvidia-h200" / RUN, data / "nvidia-h200" / "snakemake-logs"
    log = logs / f"{RUN}.log"
    assert set(step_times.table([run], logs=[log], cpu=[]).source) == {"snakemake log"}
    stamp = "[Mon Nov 30 10:17:50 2026]"
    assert stamp in log.read_text()
    log.write_text(log.read_text().replace(stamp, "[Mon Nov 30 04:17:50 2026]", 1))      # one job 6 h longer
    with pytest.raises(ValueError, match=f"{RUN}.log: changed since the run"):
        step_times.table([run], logs=[log], cpu=[])
    seal.write(logs)
    with pytest.raises(ValueError, match="differs from the one .*SEALS.csv records"):
        step_times.table([run], logs=[log], cpu=[])
    (logs / seal.NAME).unlink()
    with pytest.raises(FileNotFoundError, match="reads a Snakemake log only sealed"):
        step_times.table([run], logs=[log], cpu=[])


@needs_git
def test_the_logs_the_step_table_reads_are_the_ones_committed_with_their_runs():
    """Each run sealed before the benchmark files (its step times from its log): the log is as the commit that
    sealed the run holds it, not only as the later seal of the logs folder does."""
    logs = DATA / "nvidia-h200" / "snakemake-logs"
    runs = [f for f in sorted((DATA / "nvidia-h200").glob("run-*"))
            if not any(n.startswith("benchmarks/") for n in seal.listed(f))]
    assert {r.name for r in runs} >= {"run-6-x2", "run-7-x2", "run-8-x2", "run-9-x2"}
    for run in runs:
        log = (logs / f"{run.name}.log").relative_to(ROOT)
        commit = git.last_commit((run / seal.NAME).relative_to(ROOT), ROOT)
        blob = git.tree_blobs(commit, log.parent, ROOT).get(log.as_posix())
        assert blob == git.file_blobs([log], ROOT)[str(log)], f"{log} is not the log committed with {run.name}"
