"""The plan adapts to what the GPU can run (issue 21, item 1): on a GPU that is not Hopper the Gluon stages (compute
capability 9.x only) are left out of every set, the verification included, and the skip is said in the run (its
plan.yaml's `arch`, sealed; the plan step's log), read by the aggregate (runs.csv) and the paper's values. The GPU
is faked: an A100 (compute capability 8.0) answering nvidia-smi, as for rule gpu_check (tests/fake_gpu.py)."""
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fake_gpu import env_with, fake_nvidia_smi
from pipeline_run import ENV, one_at_a_time
from steps import step

from kernels.stages import GLUON_STAGES, STAGES
from pipeline import gpu_arch, gpu_env, plan, seal
from pipeline.latex import listing

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
CONFIG = plan.load_config(ROOT / "config" / "config.yaml")
A100 = "NVIDIA A100-SXM4-80GB"
A100_SLUG = gpu_env.gpu_slug(A100)


def every(m: dict) -> list:
    return plan.expand(m) + plan.profile_entries(m) + plan.premise_entries(m) + plan.large_n_entries(m)


def test_off_hopper_the_gluon_stages_are_left_out_and_recorded():
    adapted = plan.adapt(CONFIG, ["8.0"])
    arch = adapted["arch"]
    assert arch["capability"] == "8.0" and arch["why"] == plan.HOPPER_ONLY
    assert set(GLUON_STAGES) <= set(arch["skipped"]) and GLUON_STAGES               # v19 on
    assert all(plan.needs_hopper(plan.resolve_variant(v)) for v in arch["skipped"])
    full, kept = every(CONFIG), every(adapted)
    assert not [e.key for e in kept if e.impl == "triton" and plan.needs_hopper(e.switches)]
    assert {e.key for e in kept} == {e.key for e in full if e.variant not in arch["skipped"]}
    assert {e.variant for e in kept} >= {s for s in STAGES if s not in GLUON_STAGES}   # every Triton stage stays
    plan.check_plan(adapted)                                  # still a plan: every profiled entry is timed


def test_on_hopper_nothing_is_left_out():
    adapted = plan.adapt(CONFIG, ["9.0", "9.0"])
    assert adapted["arch"] == {"capability": "9.0", "skipped": [], "why": ""}
    assert [e.key for e in every(adapted)] == [e.key for e in every(CONFIG)]


def test_what_the_plan_cannot_say_is_refused():
    with pytest.raises(ValueError, match="compute capability is not known"):
        plan.adapt(CONFIG, [])
    with pytest.raises(ValueError, match=r"not one: \['8.0', '9.0'\]"):
        plan.adapt(CONFIG, ["9.0", "8.0"])
    with pytest.raises(ValueError, match="not a compute capability"):
        plan.adapt(CONFIG, ["NVIDIA H200"])
    e2e = {**CONFIG, "qwen3_e2e": {**CONFIG["qwen3_e2e"], "stage": GLUON_STAGES[0]}}
    with pytest.raises(ValueError, match=rf"plan.qwen3_e2e.stage {GLUON_STAGES[0]} cannot run on this GPU"):
        plan.adapt(e2e, ["8.6"])
    assert plan.adapt(e2e, ["9.0"])["arch"]["skipped"] == []
    assert gpu_arch.sm("8.6") == 86 and gpu_arch.sm("12.0") == 120


def test_the_gpu_verification_leaves_out_what_the_gpu_cannot_run(capsys):
    verify = step("verify/verify")
    grid = verify.cases(quick=True)
    kept = verify.skip_what_this_gpu_cannot_run(grid, "8.0")
    from kernels.stages import is_gluon
    gluon = {c.variant for c in grid if is_gluon(c.switches)}      # the Gluon stages and the Gluon ablations
    assert gluon >= set(GLUON_STAGES)
    assert {c.variant for c in grid} - {c.variant for c in kept} == gluon
    assert f"skipped on this GPU (compute capability 8.0): {len(grid) - len(kept)} cases of" in capsys.readouterr().out
    assert verify.skip_what_this_gpu_cannot_run(grid, "9.0") == grid


def test_a_run_on_a_faked_a100_plans_without_the_gluon_stages(tmp_path):
    """Snakemake's first steps of a run on a faked A100: gpu_check records compute capability 8.0, the plan leaves
    the Gluon stages out and says so (its log, its plan.yaml), and the theory step (a CPU step reading the plan) has
    no row of them."""
    env = env_with(ENV, fake_nvidia_smi(tmp_path / "bin", A100, "8.0"), ROOT, tmp_path)
    run = "run-arch-test"
    staging = ROOT / "results" / "staging" / A100_SLUG / run
    try:
        with one_at_a_time():
            proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--resources", "gpu=1",
                                   "--config", "measure=True", f"run={run}", f"gpu={A100_SLUG}",
                                   "crosscheck_waivers=[]", "--",
                                   str((staging / "plan.yaml").relative_to(ROOT)),
                                   str((staging / "theory.csv").relative_to(ROOT))],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        assert json.loads((staging / "gpu.json").read_text())["capabilities"] == ["8.0"]
        arch = yaml.safe_load((staging / "plan.yaml").read_text())["plan"]["arch"]
        assert arch["capability"] == "8.0" and set(GLUON_STAGES) <= set(arch["skipped"])
        log = (ROOT / "logs" / "plan" / f"{run}.log").read_text()
        assert f"skipped on this GPU ({A100}, compute capability 8.0): {', '.join(arch['skipped'])}" in log, log
        with open(staging / "theory.csv", newline="") as f:
            variants = {r["variant"] for r in csv.DictReader(f)}
        assert variants and not variants & set(GLUON_STAGES) and "v18" in variants
    finally:
        shutil.rmtree(ROOT / "results" / "staging" / A100_SLUG, ignore_errors=True)
        for name in ("gpu_check", "plan", "theory"):
            (ROOT / "logs" / name / f"{run}.log").unlink(missing_ok=True)


def test_the_aggregate_and_the_paper_read_the_skip(tmp_path):
    """A copy of a committed run, its plan.yaml given an A100's record and the run sealed again (in tmp_path, its
    own manifest): the aggregate's runs.csv lists the skipped variants beside the committed run's none, and the
    paper's values name them."""
    src = DATA / "nvidia-h200" / "run-17-x2"
    run = tmp_path / "data" / "nvidia-h200" / "run-17-x2"
    shutil.copytree(src, run)
    m = yaml.safe_load((run / "plan.yaml").read_text())
    m["plan"] = plan.adapt(m["plan"], ["8.0"])
    (run / "plan.yaml").write_text(yaml.safe_dump(m, sort_keys=False))
    seal.write(run)
    seal.record(run, tmp_path / "data" / seal.MANIFEST)
    aggregate = step("aggregate/aggregate")
    info = aggregate.run_info(aggregate.verified([run, src])).set_index("run", drop=False)
    skipped = " ".join(m["plan"]["arch"]["skipped"])
    assert GLUON_STAGES[0] in skipped and sorted(info.skipped) == ["", skipped]    # the committed run: none
    assert set(info.capability) == {"9.0"}                                          # what its env.json files say
    runs_csv = tmp_path / "runs.csv"
    info.to_csv(runs_csv, index=False)
    tex = tmp_path / "gpuarch.tex"
    step("paper/values/gpuarch").values(runs_csv).write(tex)
    text = tex.read_text()
    assert "RunsSkippedList" in text and listing(GLUON_STAGES) in text, text
    info.iloc[:0].to_csv(runs_csv, index=False)
    with pytest.raises(ValueError, match="no run recorded its GPU's compute capability"):
        step("paper/values/gpuarch").values(runs_csv)
