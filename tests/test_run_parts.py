"""workflow/scripts/tools/run_parts.sh, the lite run in parts on a machine a part may not find again: a part on a
fresh machine resumes from the archive of the same commit's earlier part, with its files newer than the tree, and
refuses an archive of another commit (run here up to its part check: no GPU, no Snakemake)."""
import os
import subprocess
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "workflow" / "scripts" / "tools" / "run_parts.sh"
A, B = "abc123" + "0" * 34, "def456" + "0" * 34          # two whole commits (40 hex digits)


def archive(tmp_path: Path, commit: str) -> Path:
    """An earlier part's archive: one CSV of run-x's staging folder, its commit beside it, Snakemake's metadata."""
    src = tmp_path / "src"
    staging = src / "results" / "staging" / "nvidia-h200" / "run-x"
    (staging / "verify").mkdir(parents=True)
    (staging / "verify" / "correctness.csv").write_text("key,status\na,ok\n")
    (src / "results" / "staging" / "nvidia-h200" / "run-x.commit").write_text(commit + "\n")
    (src / ".snakemake" / "metadata").mkdir(parents=True)
    (src / ".snakemake" / "metadata" / "m").write_text("{}")
    old = time.time() - 3600
    for p in src.rglob("*"):
        os.utime(p, (old, old))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    with tarfile.open(wheels / "staging-run-x.tar.gz", "w:gz") as t:
        for name in ("results", ".snakemake"):
            t.add(src / name, arcname=name)
    return wheels


def run_part(tmp_path: Path, wheels: Path, commit: str, part: str = "0", **extra) -> subprocess.CompletedProcess:
    work, out, site = tmp_path / "work", tmp_path / "out", tmp_path / "site"
    work.mkdir(exist_ok=True)
    out.mkdir(exist_ok=True)
    site.mkdir(exist_ok=True)
    (site / ".done").touch()           # the wheels' install is the machine's, not this test's
    env = {**os.environ, "PROJECT_COMMIT": commit, "OUT": str(out), "WHEELS": str(wheels), "SITE": str(site),
           "GPU": "nvidia-h200", **extra}
    return subprocess.run(["bash", str(SCRIPT), "run-x", part], cwd=work, env=env, capture_output=True, text=True)


def test_a_fresh_machine_resumes_from_the_same_commits_archive_with_its_files_newer_than_the_tree(tmp_path):
    wheels = archive(tmp_path, A)
    before = time.time() - 1
    p = run_part(tmp_path, wheels, A)
    assert p.returncode == 2 and "part 0: expected 1, 2 or 3" in p.stderr    # stopped at the part check, after it
    assert "resumed run-x" in p.stdout and "1 CSV files" in p.stdout
    f = tmp_path / "work" / "results" / "staging" / "nvidia-h200" / "run-x" / "verify" / "correctness.csv"
    assert f.read_text() == "key,status\na,ok\n" and f.stat().st_mtime >= before


def test_an_archive_of_another_commit_is_refused_and_left_unpacked_nowhere(tmp_path):
    wheels = archive(tmp_path, A)
    p = run_part(tmp_path, wheels, B)
    assert p.returncode == 8 and f"from commit {A}, not {B}: not resumed" in p.stderr
    assert not (tmp_path / "work" / "results" / "staging" / "nvidia-h200" / "run-x").exists()


def test_a_commit_prefix_is_refused_before_anything_runs(tmp_path):
    """run-19's and run-29's PROJECT_COMMIT were 8-character prefixes typed by hand, each with a wrong eighth
    character; the aggregate takes only a whole commit, so the script refuses anything else at once."""
    wheels = archive(tmp_path, A)
    for bad in ("1c7a071e", A[:39], A.upper(), A + "0"):
        p = run_part(tmp_path, wheels, bad)
        assert p.returncode == 2 and "give the whole commit, 40 hex digits" in p.stderr, bad
        assert "resumed" not in p.stdout


def test_a_step_that_is_not_a_runs_is_refused_before_snakemake(tmp_path):
    """STEPS names the long steps a command takes beside part 1's; a misspelt one stops the command at once rather
    than leaving it to Snakemake's 'missing input' after the lease's minutes."""
    wheels = archive(tmp_path, A)
    p = run_part(tmp_path, wheels, A, "1", STEPS="bench-n_sweep profil")
    assert p.returncode == 2 and "STEPS: profil is not a step of a run" in p.stderr
    assert "GPU: nvidia-h200" in p.stdout and not (tmp_path / "out" / "snakemake-part1.log").exists()


WHEELS_SCRIPT = ROOT / "workflow" / "scripts" / "tools" / "device_wheels.sh"
# what the GPU steps import that the lent machine's image lacks: Snakemake (and its greedy scheduler's needs), the
# bench's and the seal's pandas and YAML, the config schema's jsonschema, Qwen3 end to end's transformers
NEEDED_ON_THE_GPU_MACHINE = ("snakemake", "pandas", "pyyaml", "jsonschema", "transformers", "tokenizers",
                             "safetensors", "huggingface-hub")


def lock_names() -> set:
    lines = (ROOT / "requirements" / "lock.txt").read_text().splitlines()
    return {line.split("==")[0].lower() for line in lines if "==" in line and not line.startswith((" ", "#"))}


def skipped_pattern() -> str:
    line = next(x for x in WHEELS_SCRIPT.read_text().splitlines() if x.startswith("SKIP="))
    return line.split("=", 1)[1].strip("'")


def test_the_device_wheels_skip_only_packages_of_the_lock_and_keep_what_the_gpu_steps_import():
    """device_wheels.sh leaves out the image's packages and those no GPU step imports, by name: each name it skips
    is a package of the lock (a renamed or dropped one would be skipped in vain, or a new one downloaded unasked),
    and none of the packages the measurement imports on the lent machine is among them."""
    import re
    pattern = skipped_pattern()
    names = lock_names()
    listed = [n for n in pattern.strip("^$()").split("|") if ".*" not in n]
    assert listed, pattern
    assert sorted(set(listed) - names) == []
    assert [n for n in NEEDED_ON_THE_GPU_MACHINE if n not in names] == []
    assert [n for n in NEEDED_ON_THE_GPU_MACHINE if re.match(pattern, n)] == []
    assert re.match(pattern, "torch") and re.match(pattern, "nvidia-cudnn-cu13") and re.match(pattern, "pulp")
