"""Before profiling: may this process read the GPU's performance counters? Checked first, so that a profile step
refused by the driver fails at once, naming the fix, instead of after its first Nsight pass.

Since driver 418.43 (Linux) the NVIDIA driver may restrict the counters to administrators; Nsight Compute then fails
with ERR_NVGPUCTRPERM. The driver says whether it does in /proc/driver/nvidia/params (RmProfilingAdminOnly: 1). The
fix, per NVIDIA's page on the error (https://developer.nvidia.com/nvidia-development-tools-solutions-ERR_NVGPUCTRPERM-
permission-issue-performance-counters): run the profiler as root or with CAP_SYS_ADMIN (from driver R565 also
CAP_PERFMON; in a container, started with --cap-add=SYS_ADMIN, or access enabled on the host), or have an
administrator lift the restriction for all users with the nvidia module's option NVreg_RestrictProfilingToAdminUsers=0
(a file in /etc/modprobe.d/, the module reloaded or the machine rebooted).

The check profiles one small PyTorch kernel with `ncu` (a few seconds) and reads its output for ERR_NVGPUCTRPERM;
the driver's parameter is read to say which case it is.

    python -m pipeline.ncu_permission       # exit 0: permitted; 1: refused, the fix printed
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

PARAMS = Path("/proc/driver/nvidia/params")
ERROR = "ERR_NVGPUCTRPERM"
DOCS = "https://developer.nvidia.com/nvidia-development-tools-solutions-ERR_NVGPUCTRPERM-permission-issue-performance-counters"
PROBE = "import torch; x = torch.ones(1024, device='cuda'); (x * 2).sum().item()"  # one kernel to profile
CAP_SYS_ADMIN, CAP_PERFMON = 21, 38                                                # bits of /proc/self/status CapEff


class CounterPermissionError(SystemExit):
    """ncu may not read the GPU's performance counters here; the message names the fix."""


def admin_only(params: Path = PARAMS) -> bool | None:
    """The driver's RmProfilingAdminOnly (True: counters for administrators only), None where it cannot be read."""
    try:
        m = re.search(r"^RmProfilingAdminOnly:\s*(\d+)", params.read_text(), flags=re.M)
    except OSError:
        return None
    return None if m is None else m.group(1) != "0"


def capabilities(status: Path = Path("/proc/self/status")) -> set:
    """The effective capabilities of this process among CAP_SYS_ADMIN and CAP_PERFMON, by name."""
    try:
        m = re.search(r"^CapEff:\s*([0-9a-f]+)", status.read_text(), flags=re.M)
    except OSError:
        return set()
    bits = int(m.group(1), 16) if m else 0
    return {name for name, bit in (("CAP_SYS_ADMIN", CAP_SYS_ADMIN), ("CAP_PERFMON", CAP_PERFMON)) if bits >> bit & 1}


def fix(restricted: bool | None) -> str:
    why = ("the driver restricts the GPU performance counters to administrators (RmProfilingAdminOnly: 1 in "
           f"{PARAMS})" if restricted else "this user may not read the GPU performance counters")
    return (f"Nsight Compute cannot profile here ({ERROR}): {why}, and this process runs as uid {os.geteuid()} "
            f"with {sorted(capabilities()) or 'neither CAP_SYS_ADMIN nor CAP_PERFMON'}. Fix: run the profile step "
            f"as root or with CAP_SYS_ADMIN (driver R565 or newer: CAP_PERFMON; in a container: --cap-add=SYS_ADMIN, "
            f"or enable access on the host), or have an administrator allow every user: "
            f"`echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' | sudo tee /etc/modprobe.d/"
            f"nvidia-profiling.conf`, then reload the nvidia kernel module (or reboot; where the module is loaded "
            f"from the initramfs, rebuild it first). NVIDIA's page: {DOCS}")


def check(ncu: str | None = None, params: Path = PARAMS, run=subprocess.run, log=print) -> None:
    """Profile PROBE with ncu; raise CounterPermissionError, naming the fix, when the counters are refused
    (ERR_NVGPUCTRPERM), or saying what failed when ncu cannot profile the probe for another reason."""
    ncu = ncu or shutil.which("ncu")
    if ncu is None:
        raise CounterPermissionError("ncu (Nsight Compute) is not on the PATH: install it, or add its folder to PATH")
    restricted = admin_only(params)
    cmd = [ncu, "--metrics", "gpu__time_duration.sum", "--launch-count", "1", sys.executable, "-c", PROBE]
    try:
        proc = run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise CounterPermissionError(f"ncu did not finish profiling one small kernel in 600 s: {' '.join(cmd)}") \
            from None
    out = (proc.stdout or "") + (proc.stderr or "")
    if ERROR in out:
        raise CounterPermissionError(fix(restricted))
    if proc.returncode != 0:
        raise CounterPermissionError(f"ncu could not profile one small kernel ({proc.returncode}) before the "
                                     f"profile step: {' '.join(cmd)}\n{out[-2000:]}")
    log(f"ncu_permission: the GPU performance counters can be read (RmProfilingAdminOnly: "
        f"{'unknown' if restricted is None else int(restricted)}, uid {os.geteuid()})")


def main(argv=None) -> int:
    try:
        check()
    except CounterPermissionError as err:
        print(f"ncu_permission: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
