"""gpu_pin's locks are keyed by the GPU's UUID, not by the index a process is shown (issue 21, item 4): two jobs that
are each shown their own GPU as index 0 (as SLURM jobs on one node are) run at once, two jobs on one GPU wait for each
other; inside a SLURM job given one GPU no lock is taken, and the log says why. nvidia-smi is faked: a script that
prints `nvidia-smi -L` for the UUIDs in $FAKE_GPUS."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import gpu_pin

ROOT = Path(__file__).resolve().parents[1]
A = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
B = "GPU-bbbbbbbb-1111-2222-3333-444444444444"


@pytest.fixture
def fake_smi(tmp_path) -> Path:
    """A folder holding a fake nvidia-smi: `-L` lists one GPU per UUID of $FAKE_GPUS (index 0, 1, ...)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text('#!/bin/sh\n[ "$1" = -L ] || exit 2\ni=0\nfor u in $FAKE_GPUS; do\n'
                   '  echo "GPU $i: NVIDIA H200 (UUID: $u)"; i=$((i+1))\ndone\n')
    smi.chmod(0o755)
    return bin_dir


def job_env(fake_smi, tmp_path, gpus, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k != "CUDA_VISIBLE_DEVICES"}
    return {**env, "PATH": f"{fake_smi}{os.pathsep}{env.get('PATH', '')}", "FAKE_GPUS": " ".join(gpus),
            "GPU_LOCK_DIR": str(tmp_path / "locks"), "PYTHONPATH": str(ROOT), **extra}


def start(env, hold: Path, tmp_path, name) -> subprocess.Popen:
    """gpu_pin running a command that writes where it runs (its CUDA_VISIBLE_DEVICES) and holds its GPU until the
    file `hold` is removed."""
    script = (f"import os, pathlib, time; pathlib.Path({str(tmp_path / name)!r}).write_text("
              f"os.environ.get('CUDA_VISIBLE_DEVICES', '<unset>'))\n"
              f"while pathlib.Path({str(hold)!r}).exists(): time.sleep(0.05)")
    return subprocess.Popen([sys.executable, "-m", "pipeline.gpu_pin", "--", sys.executable, "-c", script],
                            env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, timeout=30) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


def test_two_gpus_each_shown_as_index_0_are_two_locks_and_one_gpu_is_one(fake_smi, tmp_path):
    """Job 1 and job 2 are each shown one GPU, index 0, of another UUID: both run at once. Job 3 is shown job 1's
    GPU: it waits until job 1 ends, then runs there."""
    (tmp_path / "locks").mkdir()
    hold = tmp_path / "hold"
    hold.write_text("")
    one = start(job_env(fake_smi, tmp_path, [A]), hold, tmp_path, "one")
    two = start(job_env(fake_smi, tmp_path, [B]), hold, tmp_path, "two")
    try:
        assert wait_for(tmp_path / "one") and wait_for(tmp_path / "two"), "the jobs on two GPUs did not both run"
        assert (tmp_path / "one").read_text() == "0" == (tmp_path / "two").read_text()   # each is shown index 0
        assert sorted(p.name for p in (tmp_path / "locks").iterdir()) == [
            f"fa2-stages-gpu-{A}.lock", f"fa2-stages-gpu-{B}.lock"]
        hold3 = tmp_path / "hold3"
        hold3.write_text("")
        three = start(job_env(fake_smi, tmp_path, [A]), hold3, tmp_path, "three")
        assert not wait_for(tmp_path / "three", timeout=3), "a second job ran on a GPU whose lock is held"
        hold.unlink()
        assert one.wait(30) == 0 and two.wait(30) == 0
        assert wait_for(tmp_path / "three"), "the waiting job did not take the GPU once it was free"
        hold3.unlink()
        assert three.wait(30) == 0
        assert f"({A}; lock " in three.stderr.read()
    finally:
        for p in (one, two):
            if p.poll() is None:
                p.kill()
        hold.unlink(missing_ok=True)


def test_the_lock_key_is_the_uuid_of_the_gpu_cuda_visible_devices_names():
    listed = "GPU 0: NVIDIA H200 (UUID: {a})\n  MIG 1g.18gb Device 0: (UUID: MIG-x)\nGPU 1: NVIDIA H200 (UUID: {b})\n"

    def smi(*_, **__):
        return subprocess.CompletedProcess([], 0, listed.format(a=A, b=B), "")

    def no_smi(*_, **__):
        raise FileNotFoundError("nvidia-smi")

    assert gpu_pin.candidates({}, smi) == [("0", A), ("1", B)]
    assert gpu_pin.candidates({"CUDA_VISIBLE_DEVICES": "1"}, smi) == [("1", B)]
    assert gpu_pin.candidates({"CUDA_VISIBLE_DEVICES": B[:12]}, smi) == [(B[:12], B)]      # a UUID's prefix
    assert gpu_pin.candidates({"CUDA_VISIBLE_DEVICES": f"{B},{A}"}, no_smi) == [(B, B), (A, A)]
    with pytest.raises(gpu_pin.PinError, match="neither the index of a GPU"):
        gpu_pin.candidates({"CUDA_VISIBLE_DEVICES": "2"}, smi)
    with pytest.raises(gpu_pin.PinError, match="nvidia-smi is not on the PATH"):
        gpu_pin.candidates({"CUDA_VISIBLE_DEVICES": "0"}, no_smi)
    with pytest.raises(gpu_pin.PinError, match="lists none"):
        gpu_pin.candidates({}, lambda *_, **__: subprocess.CompletedProcess([], 0, "", ""))


def test_slurm_isolation_is_one_gpu_given_to_a_slurm_job():
    assert gpu_pin.slurm_isolated({"SLURM_JOB_ID": "7", "SLURM_STEP_GPUS": "3"}) == (
        "SLURM job 7 was given this GPU alone (SLURM_STEP_GPUS=3)")
    assert gpu_pin.slurm_isolated({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0"})
    assert gpu_pin.slurm_isolated({"SLURM_JOB_ID": "7", "SLURM_GPUS_ON_NODE": "1"})
    assert gpu_pin.slurm_isolated({"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,1"}) is None   # a node's GPUs: lock
    assert gpu_pin.slurm_isolated({"SLURM_JOB_ID": "7"}) is None                            # no GPU given
    assert gpu_pin.slurm_isolated({"SLURM_STEP_GPUS": "0", "CUDA_VISIBLE_DEVICES": "0"}) is None   # not in a job


def test_in_a_slurm_job_given_one_gpu_no_lock_is_taken_and_the_log_says_so(tmp_path):
    """No nvidia-smi on the PATH, no lock file: the command runs with SLURM's CUDA_VISIBLE_DEVICES."""
    (tmp_path / "locks").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=os.path.dirname(sys.executable), SLURM_JOB_ID="42", SLURM_STEP_GPUS="0", CUDA_VISIBLE_DEVICES="0",
               GPU_LOCK_DIR=str(tmp_path / "locks"), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "pipeline.gpu_pin", "--", sys.executable, "-c",
                           "import os; print(os.environ['CUDA_VISIBLE_DEVICES'])"],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"
    assert proc.stderr.startswith("gpu_pin: running on GPU 0 (no lock: SLURM job 42 was given this GPU alone")
    assert not any((tmp_path / "locks").iterdir())
