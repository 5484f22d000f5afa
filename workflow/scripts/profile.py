"""Profile step: Nsight Compute on every stage and the PyTorch kernels at the headline shape.

ncu (--set full, --clock-control none: the clocks as found) runs profile_target.py, which launches each entry once
after warm-up in its own NVTX range and profiler window. The report is then read by ncu_tidy.py, in a process of its
own (loaded beside torch the report library has crashed), into ncu.csv, and kept gzipped. A run interrupted after
the report was written resumes at the reading.

    python workflow/scripts/profile.py --config config/config.yaml --out data/<gpu>/<run>/profile
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_env  # noqa: E402

HERE = Path(__file__).resolve().parent


def profile(cfg_path: Path, out: Path, log=print) -> None:
    rep, order, csv_path = out / "profile.ncu-rep", out / "profile_order.json", out / "ncu.csv"
    if csv_path.exists():
        log("profile: already done")
        return
    if not rep.exists():
        ncu = shutil.which("ncu")
        if ncu is None:
            raise SystemExit("ncu (Nsight Compute) is not on the PATH: install it, or add its folder to PATH")
        cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--set", "full",
               "--import-source", "no", "--nvtx", "-f", "-o", str(rep.with_suffix("")), sys.executable,
               str(HERE / "profile_target.py"), "--config", str(cfg_path), "--order", str(order)]
        log("profile: " + " ".join(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        for line in (proc.stdout + proc.stderr).splitlines():
            if line.startswith(("profile target", "==PROF==", "==ERROR==", "==WARNING==")):
                log("  " + line)
        if proc.returncode != 0:
            raise SystemExit(f"ncu failed ({proc.returncode}): {proc.stderr[-2000:]}")
    tidy = subprocess.run([sys.executable, str(HERE / "ncu_tidy.py"), str(rep), str(order), str(csv_path)],
                          capture_output=True, text=True)
    if tidy.returncode != 0 or not csv_path.exists():
        raise SystemExit(f"reading the report failed ({tidy.returncode}): {tidy.stderr[-2000:]}")
    with open(rep, "rb") as src, gzip.open(rep.with_suffix(".ncu-rep.gz"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    rep.unlink()
    log(f"profile: {tidy.stdout.strip()}; report kept as {rep.name}.gz")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=Path("config/config.yaml"))
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    env = gpu_env.start(a.out / "env.json", argv=sys.argv)
    profile(a.config, a.out, log=lambda msg: print(msg, flush=True))
    gpu_env.finish(a.out / "env.json", env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
