"""A run measured on another GPU is labelled by what it is and never pooled with the H200's (issue 21, item 1): the
first GPU step (rule gpu_check) refuses a config gpu that is not the GPU detected (the detection faked here); the
seal files a run only under the folder of the GPU its env.json names; the aggregate refuses runs of two GPUs. The
relabelled run is a copy of a committed run in tmp_path, its env.json's gpu changed and sealed again there."""
import json
import re
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


# -------------------------------------------------------------------------------------------- the other GPU's appendix
APPENDIX_RUN = "run-17-x2"   # a run of every Triton stage up to v18: each table of the appendix has rows

def tree_with_another_gpu(copy: Path) -> Path:
    """A copy of the tree (its files, committed or not but not ignored) whose data/ holds, beside the H200's runs
    (read where they are, through a link), APPENDIX_RUN relabelled as OTHER_NAME and sealed into
    data/OTHER/APPENDIX_RUN, recorded in the copy's data/SEALS.csv; this build's build and CPU verify beside it, so
    that only what reads the data runs."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        if not f.startswith("data/nvidia-h200/") and (ROOT / f).is_file():
            (copy / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, copy / f)
    (copy / "data" / "nvidia-h200").symlink_to(ROOT / "data" / "nvidia-h200")
    (copy / ".git").symlink_to(ROOT / ".git")                    # the history check_envs reads the commits from
    for made in [*(ROOT / "results" / "build").glob("sm_*/build.csv"), ROOT / "results" / "verify" / "cpu" /
                 "correctness.csv", *(ROOT / "benchmarks").glob("build_variants/*.tsv"),
                 ROOT / "benchmarks" / "verify_cpu.tsv"]:
        if not made.exists():                                      # not built (a dry run needs none of them)
            continue
        (copy / made.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(made, copy / made.relative_to(ROOT))          # newer than every source: nothing to rebuild
    # the run's cross-check waivers, copied to the other GPU's folder (a waiver's gpu: where its run is)
    config = copy / "config" / "config.yaml"
    lines = config.read_text().splitlines(keepends=True)
    waived = [ln for ln in lines if f"gpu: nvidia-h200, run: {APPENDIX_RUN}," in ln]
    assert waived, f"config/config.yaml waives no entry of {APPENDIX_RUN}: pick the run's waivers here anew"
    at = lines.index(waived[-1]) + 1
    config.write_text("".join(lines[:at] + [ln.replace("gpu: nvidia-h200", f"gpu: {OTHER}") for ln in waived]
                              + lines[at:]))
    staging = copy / "staging" / APPENDIX_RUN
    shutil.copytree(DATA / "nvidia-h200" / APPENDIX_RUN, staging)
    (staging / seal.NAME).unlink()
    relabel(staging, OTHER_NAME)
    seal.publish(staging, copy / "data" / OTHER / APPENDIX_RUN, copy / "data" / seal.MANIFEST)
    return copy


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def built():
    """The paper of this tree (the H200's runs alone: no other GPU's are committed)."""
    from pipeline_run import snakemake
    proc = snakemake("--cores", "2")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return ROOT / "results" / "paper.pdf"


def test_a_run_of_another_gpu_gets_its_appendix_and_changes_nothing_of_the_main_text(built, tmp_path):
    """APPENDIX_RUN relabelled as another GPU's and filed in data/OTHER/: the pipeline aggregates it apart (its own
    results/gpus/OTHER/, by the aggregate phase's scripts), the paper gets an appendix for that GPU with its headline
    table, per-N ratios and verdicts, and every number of the main text is as without it."""
    appendix = (ROOT / "results" / "paper" / "other_gpus.tex").read_text()
    committed = sorted(g.name for g in (ROOT / "data").iterdir()      # this tree's other GPUs: their own appendices
                       if g.is_dir() and g.name != "nvidia-h200" and any(g.glob("run-*")))
    assert OTHER not in committed
    assert appendix.count("\\section") == len(committed) and all(f"sec:gpu-{g}" in appendix for g in committed)
    assert pdf_text(built).count("Runs on ") == len(committed)
    copy = tree_with_another_gpu(tmp_path / "tree")
    env = {**ENV, "PYTHONPATH": str(copy)}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--rerun-triggers", "mtime"],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "rule build_variants" not in proc.stdout + proc.stderr                  # only what reads the data ran
    import pandas as pd
    other = copy / "results" / "gpus" / OTHER / "aggregate"
    main = copy / "results" / "aggregate"
    assert list(pd.read_csv(other / "runs.csv").run) == [APPENDIX_RUN]             # its own aggregate: that run
    assert set(pd.read_csv(other / "environment.csv").gpu) == {OTHER_NAME}
    assert list(pd.read_csv(main / "runs.csv").run) == list(pd.read_csv(ROOT / "results" / "aggregate" /
                                                                          "runs.csv").run)   # never pooled
    assert set(pd.read_csv(main / "environment.csv").gpu) == {"NVIDIA H200"}
    # the waivers that name that GPU reached its cross-check, and those of the H200 the H200's alone
    def waived(agg):
        return {(r.run, r.variant) for r in pd.read_csv(agg / "crosscheck.csv").fillna("").itertuples() if r.waiver}
    assert waived(other) and {run for run, _ in waived(other)} == {APPENDIX_RUN}
    assert waived(main) == waived(ROOT / "results" / "aggregate") and waived(other) <= waived(main)
    # the main text's numbers: every value and table made as in this tree's build (the step times excepted: they
    # are this build's CPU steps' times)
    for made in sorted((ROOT / "results" / "paper" / "values").glob("*.tex")):
        if made.stem != "steps":
            assert (copy / made.relative_to(ROOT)).read_text() == made.read_text(), made.name
    for made in sorted((ROOT / "results" / "tables").glob("*.tex")):
        if made.stem != "step_times":
            assert (copy / made.relative_to(ROOT)).read_text() == made.read_text(), made.name
    text, before = pdf_text(copy / "results" / "paper.pdf"), pdf_text(built)
    # the text up to the appendix, figures' and tables' numbers included, is this tree's own, word for word
    # the appendix's heading, "A Artifact" (on one line, or split where the heading begins a page)
    artifact = re.compile(r"^\f?A\s+Artifact$", re.M)
    assert artifact.search(text) and text[:artifact.search(text).start()] == before[:artifact.search(before).start()]
    # the appendix: the GPU's name, its runs, and its tables' numbers from APPENDIX_RUN alone
    flat = " ".join(text.split())
    assert f"Runs on {OTHER_NAME}" in flat and f"data/{OTHER}/ ({APPENDIX_RUN})" in flat, flat[-3000:]
    tail = text[text.index(f"Runs on {OTHER_NAME}"):]
    tail = tail[:tail.find("Runs on ", 1)] if tail.find("Runs on ", 1) > 0 else tail   # its own section alone
    stages = pd.read_csv(other / "stage_table.csv")
    pooled = pd.read_csv(main / "stage_table.csv").set_index("stage")
    moved = 0
    for r in stages.itertuples():
        line = next((ln for ln in tail.splitlines() if ln.split()[:1] == [r.stage] and f"{r.ours_us:.1f}" in ln),
                    None)
        assert line is not None, f"{r.stage} {r.ours_us:.1f} ({APPENDIX_RUN} alone) is not in the appendix's table"
        moved += f"{r.ours_us:.1f}" != f"{pooled.loc[r.stage, 'ours_us']:.1f}"
    assert moved, "the appendix's stage times are the pooled H200 medians, not APPENDIX_RUN's alone"
    claims = pd.read_csv(copy / "results" / "gpus" / OTHER / "aggregate" / "claims.csv")
    verdicts = claims.groupby("claim", sort=False).claim_verdict.first()
    for verdict in ("holds", "partly", "does not hold"):
        if (verdicts == verdict).any():
            from pipeline.latex import listing
            assert listing(list(verdicts[verdicts == verdict].index)) in flat[flat.index(f"Runs on {OTHER_NAME}"):]
    per_n = pd.read_csv(other / "per_n.csv")
    lead = per_n[per_n.variant == str(per_n[per_n.leader].variant.iloc[0])]
    for (dtype, n), g in lead.groupby(["dtype", "N"]):
        short = dtype.replace("float", "fp").replace("bfp", "bf")
        assert re.search(rf"^ *{short} +{n} +{g.time_us.median():.1f} ", tail, re.M), (dtype, n, tail[:3000])


def test_an_unsealed_run_of_another_gpu_stops_the_pipeline_naming_it(tmp_path):
    """A run folder of another GPU without its seal (an unfinished run) is refused when the pipeline is parsed, as
    an unsealed H200 run is, not skipped: its appendix would silently lack it."""
    copy = tree_with_another_gpu(tmp_path / "tree")
    unsealed = copy / "data" / OTHER / "run-unfinished"
    shutil.copytree(copy / "data" / OTHER / APPENDIX_RUN / "ceilings", unsealed / "ceilings")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=copy,
                          env={**ENV, "PYTHONPATH": str(copy)}, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"data/{OTHER}: run folder(s) ['run-unfinished'] are not sealed" in out, out[-2000:]
    shutil.rmtree(unsealed)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=copy,
                          env={**ENV, "PYTHONPATH": str(copy)}, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "gpu_appendix" in proc.stdout, (proc.stdout + proc.stderr)[-2000:]
