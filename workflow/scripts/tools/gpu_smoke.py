"""A few minutes' check of the GPU tier on one GPU, before a full run: compile, bench (the headline set, one repeat),
timer check, profile (two stages and two PyTorch kernels), seal and aggregate (the cross-check included), all into a
scratch folder with a reduced copy of config/config.yaml; nothing is written to data/.

    python workflow/scripts/tools/gpu_smoke.py --out results/gpu-smoke
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

from kernels.stages import BASELINE, FINAL
from pipeline import config_check

SCRIPTS = Path(__file__).resolve().parents[1]
ROOT = SCRIPTS.parents[1]


def smoke_config(full: Path, out: Path) -> Path:
    cfg = config_check.load_yaml(full)   # a key given twice is refused, as when the pipeline is parsed
    plan = cfg["plan"]
    plan["repeats"] = {name: 1 for name in plan["repeats"]}
    plan["profile"] = {"variants": [BASELINE, FINAL], "extra": [], "torch_impls": ["torch-default", "torch-flash"],
                       "duration_launches": 5}
    plan["timer_check_sleep_us"] = [0, 1000]
    path = out / "smoke-config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def step(*cmd) -> None:
    print("smoke: " + " ".join(map(str, cmd)), flush=True)
    proc = subprocess.run([sys.executable, *map(str, cmd)], cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"smoke: step failed ({proc.returncode}): {' '.join(map(str, cmd))}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--config", type=Path, default=ROOT / "config" / "config.yaml")
    a = ap.parse_args(argv)
    run = a.out / "run-smoke"
    run.mkdir(parents=True, exist_ok=True)
    cfg = smoke_config(a.config, a.out)
    m = SCRIPTS / "measure"
    step(m / "bench.py", "--config", cfg, "--sets", "headline", "--compile-only", "--out", run / "compile")
    step(m / "bench.py", "--config", cfg, "--sets", "headline", "--out", run / "bench-headline")
    step(m / "timer_check.py", "--config", cfg, "--out", run / "timer_check")
    step(m / "profile.py", "--config", cfg, "--out", run / "profile")
    step("-m", "pipeline.seal", "write", run)
    step(SCRIPTS / "aggregate" / "aggregate.py", "--runs", run, "--out", a.out / "aggregate",
         "--article-timings", ROOT / "data" / "article" / "timings.csv",
         "--article-ncu", ROOT / "data" / "article" / "ncu.csv")
    import pandas as pd
    pd.set_option("display.width", 220)
    for name in ("crosscheck", "timer_check", "launch_cost"):
        df = pd.read_csv(a.out / "aggregate" / f"{name}.csv")
        print(f"\n{name}:\n" + df.round(2).to_string(index=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
