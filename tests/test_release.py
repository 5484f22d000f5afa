"""ACM 'Available': the licences, a CITATION.cff valid against the Citation File Format schema (1.2.0, vendored
from the cffconvert package in tests/data), Zenodo metadata that agrees with it, and a release step that tags and
archives a clean tree and refuses a dirty one."""
import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_licences():
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "CC BY 4.0" in (ROOT / "LICENSE-data-and-paper.md").read_text()
    assert "MIT" in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"]


def test_citation_is_valid_and_agrees_with_zenodo_and_the_package():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    schema = json.loads((ROOT / "tests" / "data" / "citation-cff-1.2.0.schema.json").read_text())
    jsonschema.validate(cff, schema)
    bad = dict(cff, authors=[{"nickname": 1}])
    try:
        jsonschema.validate(bad, schema)
        raise AssertionError("the validator accepted an invalid author")
    except jsonschema.ValidationError:
        pass
    zen = json.loads((ROOT / ".zenodo.json").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert zen["title"] == cff["title"] and zen["version"] == cff["version"] == version
    assert [c["name"] for c in zen["creators"]] == [a["name"] for a in cff["authors"]]
    assert zen["license"] == cff["license"]


def test_release_tags_a_clean_tree_and_refuses_a_dirty_one(tmp_path):
    if shutil.which("git") is None:
        raise AssertionError("git is needed for the release step")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(clone)], check=True)
    for name in ("Makefile", "pyproject.toml"):                 # the working tree's, committed in the clone
        shutil.copy(ROOT / name, clone / name)
    subprocess.run(["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-a",
                    "--allow-empty", "-m", "t"], check=True)
    (clone / "stray.txt").write_text("x")
    dirty = subprocess.run(["make", "-s", "release"], cwd=clone, capture_output=True, text=True)
    assert dirty.returncode != 0 and "uncommitted changes" in dirty.stdout + dirty.stderr
    (clone / "stray.txt").unlink()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "PATH": "/usr/bin:/bin:/usr/local/bin"}
    ok = subprocess.run(["make", "-s", "release", "PYTHON=python3"], cwd=clone, capture_output=True, text=True,
                        env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    archives = list((clone / "dist").glob("fa2-triton-stages-*.tar.gz"))
    assert len(archives) == 1
    check = subprocess.run(["sha256sum", "-c", archives[0].name + ".sha256"], cwd=clone / "dist",
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_make_alone_lists_the_commands():
    out = subprocess.run(["make", "-s"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0
    for target in ("help", "smoke", "paper", "test", "measure", "release", "lock", "tex"):
        assert f"{target}:" in out.stdout, f"`make` does not list {target}"


def test_measure_without_a_gpu_says_so_and_writes_nothing(tmp_path):
    before = sorted(p.name for p in (ROOT / "data" / "nvidia-h200").iterdir())
    out = subprocess.run(["make", "-s", "measure", "RUN=run-nogpu"], cwd=ROOT, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.returncode != 0 and "needs NVIDIA GPUs" in out.stdout + out.stderr
    assert sorted(p.name for p in (ROOT / "data" / "nvidia-h200").iterdir()) == before
