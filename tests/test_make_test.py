"""`make test` says before it installs system packages, and `make test SLURM=0` runs the suite without Slurm: no
install, the SLURM test skipped with its reason, never silently (issue 21, item 4). Read from make's dry runs (-n, the
recipes printed, nothing run) and from pytest run on the SLURM test with the variable make sets."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def make_n(*args) -> str:
    proc = subprocess.run(["make", "-n", "-o", ".venv/.installed", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_slurm_0_neither_installs_slurm_nor_runs_its_test():
    plain, without = make_n("test"), make_n("test", "SLURM=0")
    assert "slurm-wlm munge" in plain and "FA2_SKIP_SLURM" not in plain
    assert "slurm-wlm" not in without and "apt-get install" in without            # TeX is still installed
    assert re.search(r"^FA2_SKIP_SLURM=1 \S+/python -m pytest .* tests$", without, flags=re.M), without


def test_each_install_is_said_before_apt_get_runs():
    for target, packages in (("slurm", "slurm-wlm munge"), ("tex", "latexmk")):
        text = make_n(target)
        said, install = text.find(f"installing Debian's {packages}"), text.find("apt-get update")
        assert 0 <= said < install, (target, text)
    assert "make test SLURM=0" in make_n("slurm")


def pytest_slurm(**env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("FA2_SKIP_SLURM", "FA2_REQUIRE_SLURM")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/test_slurm.py", "-k", "cpu_tier"], cwd=ROOT, env={**base, **env},
                          capture_output=True, text=True, timeout=300)


def test_the_slurm_test_skips_saying_why_and_a_required_one_fails():
    proc = pytest_slurm(FA2_SKIP_SLURM="1")
    assert proc.returncode == 0 and "1 skipped" in proc.stdout, proc.stdout[-2000:]
    assert "FA2_SKIP_SLURM=1 (make test SLURM=0): the SLURM test did not run" in proc.stdout, proc.stdout[-2000:]
    proc = pytest_slurm(FA2_SKIP_SLURM="1", FA2_REQUIRE_SLURM="1")
    assert proc.returncode != 0 and "both skipped and required" in proc.stdout, proc.stdout[-2000:]
