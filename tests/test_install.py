"""The install resolves where a reviewer installs: on the public index alone, with this machine's local wheels and
extra indexes switched off (pip --isolated), to a torch whose wheel asks for the triton we pin. And the lock file
that `make` installs satisfies every declared requirement."""
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"


def locked() -> dict:
    """name -> version pinned in the lock file."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", line)
        if m:
            pins[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return pins


def declared() -> list:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in ("test", "workflow", "hf"):
        reqs += project["optional-dependencies"][extra]
    return [Requirement(r) for r in reqs]


def test_the_lock_satisfies_every_declared_requirement():
    pins = locked()
    for req in declared():
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"{req.name} is declared in pyproject.toml but not in the lock: run `make lock`"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"the lock pins {req.name}=={pins[name]}, outside {req}: run `make lock`"
    assert all("--hash=sha256:" in block for block in LOCK.read_text().split("\n\n") if "==" in block)


def resolve(*args) -> dict:
    """pip's own resolution report on the public index alone (no local wheels, no extra index, no config)."""
    cmd = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed", "--quiet",
           "--report", "-", *args]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{' '.join(args)} does not resolve on the public index: {proc.stderr[-3000:]}"
    return {re.sub(r"[-_.]+", "-", item["metadata"]["name"]).lower(): item["metadata"]
            for item in json.loads(proc.stdout)["install"]}


def torch_asks_for_triton(meta: dict) -> str | None:
    for r in meta.get("requires_dist", []):
        req = Requirement(r)
        if req.name == "triton" and (req.marker is None or req.marker.evaluate({"extra": ""})):
            return str(req.specifier)
    return None


@pytest.mark.parametrize("what", ["declared", "lock"])
def test_resolves_on_the_public_index_with_torch_and_triton_agreeing(what):
    got = resolve(".[test,workflow,hf]") if what == "declared" else resolve("-r", str(LOCK))
    torch, triton = got["torch"], got["triton"]
    wants = torch_asks_for_triton(torch)
    assert wants is not None and Requirement(f"triton{wants}").specifier.contains(triton["version"]), \
        f"torch {torch['version']} asks for triton{wants}, but triton {triton['version']} resolved"
    assert triton["version"] == locked()["triton"] and torch["version"] == locked()["torch"]
