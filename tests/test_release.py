"""ACM 'Available': the licences (both, each for its part), a CITATION.cff valid against the Citation File Format
schema (1.2.0, vendored from the cffconvert package in tests/data), Zenodo metadata that agrees with it, and a release
step that tags and archives a clean tree with the built paper and report, and refuses a dirty one, the repository's
placeholder address and a date other than the release's."""
import datetime
import json
import re
import shutil
import subprocess
import tarfile
import tomllib
from pathlib import Path

import jsonschema
import yaml
from steps import step

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
    # both licences, each for its part: the code MIT, the data and the paper CC BY 4.0 (Zenodo holds one licence
    # field: the code's; its notes name both)
    assert cff["license"] == ["MIT", "CC-BY-4.0"]
    assert zen["license"] == "MIT" and "MIT" in zen["notes"] and "CC-BY-4.0" in zen["notes"]
    assert zen["publication_date"] == cff["date-released"]
    assert cff["repository-code"] == cff["preferred-citation"]["repository-code"]
    assert zen["related_identifiers"][0]["identifier"] == cff["repository-code"]
    assert cff["preferred-citation"]["title"] == cff["title"] and cff["preferred-citation"]["license"] == "CC-BY-4.0"
    assert str(cff["preferred-citation"]["year"]) == cff["date-released"][:4]


RELEASE_FILES = ("Makefile", "pyproject.toml", "CITATION.cff", ".zenodo.json",
                 "workflow/scripts/tools/check_release.py")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "PATH": "/usr/bin:/bin:/usr/local/bin"}
URL = "https://example.org/fa2-triton-stages"


def clone(tmp_path, edit=None) -> Path:
    """A clone of this repository with the working tree's release files, edited by `edit` (path -> text -> text),
    committed; the built paper and report stand in results/ (ignored by git, as `make paper report` leaves them)."""
    if shutil.which("git") is None:
        raise AssertionError("git is needed for the release step")
    c = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(c)], check=True)
    for name in RELEASE_FILES:
        text = (ROOT / name).read_text()
        (c / name).parent.mkdir(parents=True, exist_ok=True)
        (c / name).write_text(edit(name, text) if edit else text)
    subprocess.run(["git", "-C", str(c), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(c), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "t"], check=True)
    (c / "results").mkdir()
    (c / "results" / "paper.pdf").write_bytes(b"%PDF-1.5 the paper")
    (c / "results" / "report.html").write_text("<html>the report</html>")
    return c


def released_today(name: str, text: str) -> str:
    """The metadata as a maintainer sets it on release day: the address set, today's date."""
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    text = text.replace("https://github.com/CHANGE-ME/fa2-triton-stages", URL)
    text = re.sub(r'date-released: "[0-9-]+"', f'date-released: "{today}"', text)
    text = re.sub(r'"publication_date": "[0-9-]+"', f'"publication_date": "{today}"', text)
    return re.sub(r"^  year: \d+", f"  year: {today[:4]}", text, flags=re.M)


def release(c: Path):
    return subprocess.run(["make", "-s", "release", "PYTHON=python3", "RELEASE_BUILD="], cwd=c, capture_output=True,
                          text=True, env=GIT_ENV)


def test_release_tags_a_clean_tree_and_refuses_a_dirty_one(tmp_path):
    c = clone(tmp_path, released_today)
    (c / "stray.txt").write_text("x")
    dirty = release(c)
    assert dirty.returncode != 0 and "uncommitted changes" in dirty.stdout + dirty.stderr
    (c / "stray.txt").unlink()
    ok = release(c)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    archives = list((c / "dist").glob("fa2-triton-stages-*.tar.gz"))
    assert len(archives) == 1
    check = subprocess.run(["sha256sum", "-c", archives[0].name + ".sha256"], cwd=c / "dist",
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    # the archive: the tagged source, and the built paper and HTML report beside it
    with tarfile.open(archives[0]) as tar:
        names = set(tar.getnames())
        prefix = archives[0].name.removesuffix(".tar.gz")
        assert {f"{prefix}/results/paper.pdf", f"{prefix}/results/report.html", f"{prefix}/CITATION.cff",
                f"{prefix}/Makefile"} <= names
        assert tar.extractfile(f"{prefix}/results/paper.pdf").read() == b"%PDF-1.5 the paper"
        assert URL in tar.extractfile(f"{prefix}/CITATION.cff").read().decode()


def test_release_refuses_the_placeholder_and_a_stale_date(tmp_path):
    """Shipped as committed, CITATION.cff's repository-code is the CHANGE-ME placeholder: the release refuses it,
    naming it, and tags nothing; so it does with the address set but another day's date."""
    c = clone(tmp_path, lambda name, text: released_today(name, text).replace(URL, "https://github.com/CHANGE-ME/x"))
    out = release(c)
    assert out.returncode != 0 and "CHANGE-ME" in out.stderr and "repository-code" in out.stderr, out.stderr
    assert subprocess.run(["git", "tag"], cwd=c, capture_output=True, text=True).stdout == ""
    assert not (c / "dist").exists()
    check = step("tools/check_release")
    assert any("date-released" in p for p in check.problems(c, "2000-01-01"))
    assert "CHANGE-ME" in (ROOT / "CITATION.cff").read_text()       # the committed tree ships the placeholder


def test_release_refuses_without_the_built_paper_and_report(tmp_path):
    c = clone(tmp_path, released_today)
    (c / "results" / "report.html").unlink()
    out = release(c)
    assert out.returncode != 0 and "make paper report" in out.stdout + out.stderr
    assert not (c / "dist").exists()


def test_make_alone_lists_the_commands():
    """`make` lists every documented target once, in the order a newcomer uses them, clean among them."""
    out = subprocess.run(["make", "-s"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0
    for target in ("help", "smoke", "paper", "test", "measure", "compare", "report", "release", "lock", "tex",
                   "clean"):
        assert f"{target}:" in out.stdout, f"`make` does not list {target}"
    listed = re.findall(r"^([a-z_-]+):", out.stdout, flags=re.M)
    documented = re.findall(r"^## ([a-z_-]+):", (ROOT / "Makefile").read_text(), flags=re.M)
    assert sorted(listed) == sorted(documented) and len(set(listed)) == len(listed)
    first = ["smoke", "paper", "test", "measure", "compare"]
    assert listed[:len(first)] == first and listed[-1] == "clean"


def test_measure_without_a_gpu_says_so_and_writes_nothing(tmp_path):
    before = sorted(p.name for p in (ROOT / "data" / "nvidia-h200").iterdir())
    out = subprocess.run(["make", "-s", "measure", "RUN=run-nogpu"], cwd=ROOT, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.returncode != 0 and "needs NVIDIA GPUs" in out.stdout + out.stderr
    assert sorted(p.name for p in (ROOT / "data" / "nvidia-h200").iterdir()) == before
