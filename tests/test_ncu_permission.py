"""The profile step checks first that Nsight Compute may read the GPU's performance counters, and when the driver
refuses them (ERR_NVGPUCTRPERM) fails at once, naming the fix (NVreg_RestrictProfilingToAdminUsers=0, or root /
CAP_SYS_ADMIN), before it writes anything (issue 21, item 4). ncu is faked: a script that records how it was called
and answers as the driver would."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import ncu_permission

ROOT = Path(__file__).resolve().parents[1]
REFUSED = ("==PROF== Connected to process 1234\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
           "access NVIDIA GPU Performance Counters on the target device 0.\n")


def fake_ncu(folder: Path, answer: str, rc: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    ncu = folder / "ncu"
    ncu.write_text(f'#!/bin/sh\necho "$@" >> "{folder}/calls"\ncat <<"EOF"\n{answer}EOF\nexit {rc}\n')
    ncu.chmod(0o755)
    return ncu


def params(tmp_path, value: int) -> Path:
    p = tmp_path / "params"
    p.write_text(f'ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: {value}\nEnableMSI: 1\n')
    return p


def test_refused_counters_name_the_fix(tmp_path):
    ncu = fake_ncu(tmp_path / "bin", REFUSED, 1)
    with pytest.raises(ncu_permission.CounterPermissionError) as err:
        ncu_permission.check(str(ncu), params(tmp_path, 1))
    text = str(err.value)
    assert "ERR_NVGPUCTRPERM" in text and "RmProfilingAdminOnly: 1" in text
    assert "options nvidia NVreg_RestrictProfilingToAdminUsers=0" in text and "CAP_SYS_ADMIN" in text
    assert ncu_permission.DOCS in text
    call = (tmp_path / "bin" / "calls").read_text()
    assert "--metrics gpu__time_duration.sum" in call and sys.executable in call     # it profiled a kernel
    # the same refusal where the driver's parameter cannot be read: the fix without the driver's reason
    with pytest.raises(ncu_permission.CounterPermissionError, match="this user may not read"):
        ncu_permission.check(str(ncu), tmp_path / "no-such-params")


def test_permitted_counters_pass_and_another_failure_is_said(tmp_path):
    logged = []
    ok = fake_ncu(tmp_path / "ok", "==PROF== Disconnected from process 1234\n", 0)
    ncu_permission.check(str(ok), params(tmp_path, 0), log=logged.append)
    assert logged == [f"ncu_permission: the GPU performance counters can be read (RmProfilingAdminOnly: 0, uid "
                      f"{os.geteuid()})"]
    broken = fake_ncu(tmp_path / "broken", "==ERROR== The application returned an error code (1).\n", 1)
    with pytest.raises(ncu_permission.CounterPermissionError, match=r"could not profile one small kernel \(1\)"):
        ncu_permission.check(str(broken), params(tmp_path, 0))


def test_the_driver_parameter_and_capabilities_are_read(tmp_path):
    assert ncu_permission.admin_only(params(tmp_path, 1)) is True
    assert ncu_permission.admin_only(params(tmp_path, 0)) is False
    assert ncu_permission.admin_only(tmp_path / "missing") is None
    status = tmp_path / "status"
    status.write_text(f"Name:\tpython\nCapEff:\t{1 << 21 | 1 << 38:016x}\n")
    assert ncu_permission.capabilities(status) == {"CAP_SYS_ADMIN", "CAP_PERFMON"}
    status.write_text("CapEff:\t0000000000000000\n")
    assert ncu_permission.capabilities(status) == set()


def test_the_profile_step_stops_before_writing_anything(tmp_path):
    """profile.py with the refusing ncu first on the PATH: it exits non-zero with the fix, and its --out folder is
    never made (no lock, no origin, no env.json)."""
    fake_ncu(tmp_path / "bin", REFUSED, 1)
    out = tmp_path / "profile"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "workflow/scripts/measure/profile.py", "--config", "config/config.yaml",
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "ERR_NVGPUCTRPERM" in proc.stderr and "NVreg_RestrictProfilingToAdminUsers=0" in proc.stderr, proc.stderr
    assert not out.exists()
