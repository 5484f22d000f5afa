"""README.md against the tree: each number it quotes with the paper's macro beside it is that macro's value as the
values steps make it; the stages of its stage table are the registry's; the architectures it names for the build
are the config's; each command of its section "For reviewers" exists."""
import re
from pathlib import Path

import pytest
import yaml

from pipeline_run import snakemake

from kernels.stages import STAGES

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# a number followed by the macro of the paper that gives it: "2.3% (`\MaxTimeVariation`)"
QUOTED = re.compile(r"(\d[\d.,]*)(?:%| min| s)?\s+\(`\\([A-Za-z]+)`[,)]")


def section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


@pytest.fixture(scope="module")
def values() -> dict:
    """Every literal macro the values steps made (their jobs alone: the README quotes no table or figure)."""
    subjects = sorted(f.stem for f in (ROOT / "workflow" / "scripts" / "paper" / "values").glob("*.py"))
    proc = snakemake("--cores", "2", "--", *[f"results/paper/values/{s}.tex" for s in subjects])
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    made = {}
    for f in (ROOT / "results" / "paper" / "values").glob("*.tex"):
        made.update(re.findall(r"^\\newcommand\{\\(\w+)\}\{(.*)\}$", f.read_text(), re.M))
    return made


def test_each_number_the_readme_quotes_with_a_macro_is_the_macros_value(values):
    quoted = QUOTED.findall(README)
    assert len(quoted) >= 10, quoted                               # the section "For reviewers" quotes them
    for number, name in quoted:
        assert name in values, f"README quotes \\{name}, which no values step makes"
        assert number.replace(",", "") == values[name].replace(",", ""), (
            f"README says {number} for \\{name}; the data gives {values[name]}")


def test_the_readmes_stage_table_is_the_registry():
    rows = set(re.findall(r"^\| (v\d+) \| ", README, re.M))
    assert rows == set(STAGES), sorted(rows ^ set(STAGES))


def test_the_readme_names_the_configs_build_architectures():
    archs = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["build"]["archs"]
    row = next(ln for ln in README.splitlines() if ln.startswith("| build | `build_variants` |"))
    assert sorted(map(int, re.findall(r"sm_(\d+)", row))) == sorted(archs), row
    intro = README[:README.index("## ")]
    assert sorted(map(int, re.findall(r"sm_(\d+)", intro))) == sorted(archs), intro


def test_each_make_command_for_reviewers_is_a_target_and_each_script_exists():
    text = section("For reviewers")
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"`make (\w+)", text))
    assert {"paper", "measure", "compare"} <= targets
    for target in targets:
        assert re.search(rf"^{target}:", makefile, re.M), f"make {target}: no such target"
    for path in set(re.findall(r"((?:workflow|tests|kernels)/[\w/.-]+\.py)", text)):
        assert (ROOT / path).is_file(), path
    for path in set(re.findall(r"`(data/[\w/.-]+/)", text)) - {"data/<gpu>/"}:
        if "<" not in path:
            assert (ROOT / path).is_dir(), path
