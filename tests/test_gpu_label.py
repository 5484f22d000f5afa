"""A run measured on another GPU is labelled by what it is and never pooled with the H200's (issue 21, item 1): the
first GPU step (rule gpu_check) refuses a config gpu that is not the GPU detected (the detection faked here); the
seal files a run only under the folder of the GPU its env.json names; the aggregate refuses runs of two GPUs. The
relabelled run is a copy of a committed run in tmp_path, its env.json's gpu changed and sealed again there."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline_run import ENV, one_at_a_time
from steps import step

from pipeline import gpu_env, seal

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
RUN = "run-9-x2"
OTHER_NAME = "NVIDIA A100-SXM4-80GB"
OTHER = gpu_env.gpu_slug(OTHER_NAME)              # nvidia-a100-sxm4-80gb
aggregate = step("aggregate/aggregate")
ARTICLE = ["--article-timings", str(DATA / "article" / "timings.csv"),
           "--article-ncu", str(DATA / "article" / "ncu.csv")]


def relabel(run: Path, name: str) -> None:
    """Every env.json of the run names the GPU `name`."""
    for path in run.rglob("env.json"):
        env = json.loads(path.read_text())
        env["gpu"] = name
        path.write_text(json.dumps(env, indent=2, sort_keys=True) + "\n")


@pytest.fixture
def data(tmp_path) -> Path:
    """tmp_path/data: a copy of RUN (the H200's) and a staging copy of it relabelled as OTHER_NAME."""
    out = tmp_path / "data"
    shutil.copytree(DATA / "nvidia-h200" / RUN, out / "nvidia-h200" / RUN)
    seal.write_manifest(out / seal.MANIFEST, {f"nvidia-h200/{RUN}": seal.read_manifest(DATA / seal.MANIFEST)[
        f"nvidia-h200/{RUN}"]})
    staging = tmp_path / "staging" / RUN
    shutil.copytree(DATA / "nvidia-h200" / RUN, staging)
    (staging / seal.NAME).unlink()
    relabel(staging, OTHER_NAME)
    return out


def test_a_run_of_another_gpu_goes_to_its_own_folder_and_is_never_pooled(data, tmp_path):
    staging = tmp_path / "staging" / RUN
    with pytest.raises(seal.SealError, match=rf"another GPU than its destination data/nvidia-h200/ names: .*"
                                             rf"'{OTHER_NAME}' \(data/{OTHER}/\)"):
        seal.publish(staging, data / "nvidia-h200" / "run-99")
    assert staging.is_dir() and not (data / "nvidia-h200" / "run-99").exists()      # nothing moved
    other = data / OTHER / RUN
    seal.publish(staging, other, data / seal.MANIFEST)                               # resealed in its own folder
    assert f"{OTHER}/{RUN}" in seal.read_manifest(data / seal.MANIFEST)
    h200 = data / "nvidia-h200" / RUN
    runs = aggregate.verified([h200, other])
    aggregate.check_one_gpu([other])                                                 # one GPU: read apart, fine
    aggregate.check_envs([other])
    with pytest.raises(aggregate.DataError, match=rf"more than one GPU .*{OTHER}: {RUN}; nvidia-h200: {RUN}"):
        aggregate.check_one_gpu(runs)
    with pytest.raises(aggregate.DataError, match="more than one GPU"):
        aggregate.main(["--runs", str(h200), str(other), *ARTICLE, "--out", str(tmp_path / "agg")])


def test_an_env_json_of_another_gpu_in_the_h200_folder_is_refused(data):
    """Relabelled but filed (resealed, recorded) under data/nvidia-h200/: its env.json names the other GPU."""
    run = data / "nvidia-h200" / RUN
    relabel(run, OTHER_NAME)
    seal.write(run)
    seal.record(run)
    aggregate.verified([run])
    with pytest.raises(aggregate.DataError, match=rf"'{OTHER_NAME}' \(data/{OTHER}/\) is not its folder's, "
                                                  r"data/nvidia-h200/"):
        aggregate.check_envs([run])


def test_the_gpu_check_refuses_a_gpu_that_is_not_the_one_detected(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_env, "detected_names", lambda: [OTHER_NAME, OTHER_NAME])
    out = tmp_path / "gpu.json"
    assert gpu_env.main(["check", "nvidia-h200", str(out)]) == 1 and not out.exists()
    with pytest.raises(gpu_env.GpuMismatch, match=rf"config gpu .* is 'nvidia-h200' but .*{OTHER_NAME}"):
        gpu_env.check_gpu("nvidia-h200")
    assert gpu_env.main(["check", OTHER, str(out)]) == 0
    assert json.loads(out.read_text())["gpu_slug"] == OTHER
    with pytest.raises(gpu_env.GpuMismatch, match="detected"):                      # two models in one host
        gpu_env.check_gpu("nvidia-h200", ["NVIDIA H200", OTHER_NAME])
    with pytest.raises(gpu_env.GpuMismatch, match="no GPU detected"):
        gpu_env.check_gpu("nvidia-h200", [])


def test_the_pipelines_first_gpu_step_refuses_a_config_gpu_not_detected(tmp_path):
    """Snakemake's rule gpu_check with --config gpu=<another GPU> on a machine whose nvidia-smi (faked, and torch
    shown no GPU) names an H200: the job fails, naming both, and writes nothing of the run."""
    fake = tmp_path / "bin"
    fake.mkdir()
    # `nvidia-smi -L` for gpu_pin (which runs the rule), the name alone for the check's query
    (fake / "nvidia-smi").write_text("#!/bin/sh\nif [ \"$1\" = -L ]; then\n"
                                     "  echo 'GPU 0: NVIDIA H200 (UUID: GPU-00000000-1111-2222-3333-444444444444)'\n"
                                     "else echo 'NVIDIA H200'; fi\n")
    (fake / "nvidia-smi").chmod(0o755)
    env = {**ENV, "PATH": f"{fake}{os.pathsep}{ENV.get('PATH', '')}", "CUDA_VISIBLE_DEVICES": "",
           "PYTHONPATH": str(ROOT)}
    run = "run-gpucheck-test"
    target = f"results/staging/{OTHER}/{run}/gpu.json"
    try:
        with one_at_a_time():
            proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--resources", "gpu=1",
                                   "--config", "measure=True", f"run={run}", f"gpu={OTHER}",
                                   "crosscheck_waivers=[]", "--", target],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        log = ROOT / "logs" / "gpu_check" / f"{run}.log"
        assert proc.returncode != 0, proc.stdout + proc.stderr
        assert "gpu_check" in proc.stderr + proc.stdout
        text = log.read_text()
        assert f"config gpu (make measure GPU=...) is {OTHER!r}" in text and "NVIDIA H200" in text, text
        assert not (ROOT / target).exists() and not (DATA / OTHER).exists()
    finally:
        shutil.rmtree(ROOT / "results" / "staging" / OTHER, ignore_errors=True)
        (ROOT / "logs" / "gpu_check" / f"{run}.log").unlink(missing_ok=True)
