"""workflow/scripts/tools/trim_staging.py: a run's staging archive cut to the steps that do not depend on the card (the
verify grid, the compile step, the plan, the model's figures, the GPU check), with their Snakemake metadata, so that a
later lease resumes the run at the same commit and times every set itself; Snakemake's metadata names decoded as it
encodes them, also for a path longer than a file name may be."""
import base64
import io
import tarfile
from pathlib import Path

import pytest

from steps import step

trim_staging = step("tools/trim_staging")
RUN = "results/staging/nvidia-h100-80gb-hbm3/run-9"
CARD_FREE = ["gpu.json", "plan.yaml", "theory.csv", "compile/compiled.csv", "compile/compile.log",
             "verify/correctness.csv", "verify/env.json", "benchmarks/verify_gpu.tsv", "benchmarks/compile.tsv"]
TIMED = ["bench-headline/timings.csv", "bench-headline/env.json", "profile/ncu.csv", "timer_check/timer_check.csv",
         "ceilings/ceilings.csv", "qwen3_e2e/qwen3_e2e.csv", "benchmarks/bench/headline.tsv",
         "benchmarks/qwen3_e2e.tsv"]
OUTPUTS = ["gpu.json", "plan.yaml", "theory.csv", "compile/compiled.csv", "verify/correctness.csv",
           "bench-headline/timings.csv", "profile/ncu.csv"]


def record(path: str, name_max: int = 255) -> str:
    """Snakemake's metadata record path of an output (snakemake.persistence's _record_path)."""
    b64 = base64.urlsafe_b64encode(path.encode()).decode()
    parts = [b64[i:i + name_max - 1] for i in range(0, len(b64), name_max - 1)]
    return "/".join(["@" + p for p in parts[:-1]] + [parts[-1]])


def archive(tmp_path: Path, files: dict) -> Path:
    out = tmp_path / "staging-run-9.tar.gz"
    with tarfile.open(out, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def staging(extra: dict | None = None) -> dict:
    files = {f"{RUN}.commit": "7fe88fbffb818feaf2f08fddd21e688076782132\n"}
    files.update({f"{RUN}/{rel}": rel for rel in CARD_FREE + TIMED})
    files.update({f".snakemake/metadata/{record(f'{RUN}/{rel}')}": "{}" for rel in OUTPUTS})
    files.update(extra or {})
    return files


def names(path: Path) -> set:
    with tarfile.open(path) as tar:
        return {m.name for m in tar.getmembers()}


def test_the_card_free_steps_and_their_metadata_are_kept_and_every_timed_step_left_out(tmp_path):
    src = archive(tmp_path, staging())
    out = tmp_path / "trimmed.tar.gz"
    assert trim_staging.main([str(src), "--out", str(out)]) == 0
    got = names(out)
    assert {f"{RUN}/{rel}" for rel in CARD_FREE} <= got
    assert not {f"{RUN}/{rel}" for rel in TIMED} & got
    kept_records = {trim_staging.metadata_path(n[len(".snakemake/metadata/"):]) for n in got
                    if n.startswith(".snakemake/metadata/")}
    assert kept_records == {f"{RUN}/{rel}" for rel in OUTPUTS[:5]}
    assert f"{RUN}.commit" in got
    with tarfile.open(out) as tar:
        assert tar.extractfile(f"{RUN}.trimmed").read().decode().split() == list(trim_staging.KEPT)


def test_a_metadata_name_cut_into_folders_is_decoded_as_snakemake_wrote_it():
    path = f"{RUN}/verify/" + "x" * 300 + ".csv"
    assert record(path, 64).count("/") > 3 and record(path, 64).startswith("@")
    assert trim_staging.metadata_path(record(path, 64)) == path == trim_staging.metadata_path(record(path))


def test_a_step_the_lease_did_not_finish_or_one_that_depends_on_the_card_is_refused(tmp_path):
    files = {k: v for k, v in staging().items() if "/verify/" not in k}
    with pytest.raises(ValueError, match=r"no output of \['verify_gpu'\]"):
        trim_staging.trim(str(archive(tmp_path, files)), str(tmp_path / "t.tar.gz"), ["verify_gpu"])
    with pytest.raises(SystemExit):                                  # argparse: not a choice
        trim_staging.main([str(archive(tmp_path, staging())), "--out", str(tmp_path / "t.tar.gz"),
                           "--steps", "bench"])
    with pytest.raises(ValueError, match="only .* can be kept"):
        trim_staging.trim(str(archive(tmp_path, staging())), str(tmp_path / "t.tar.gz"), ["profile"])


def test_an_archive_of_two_runs_is_refused(tmp_path):
    other = RUN.replace("run-9", "run-10")
    src = archive(tmp_path, staging({f"{other}.commit": "x\n"}))
    with pytest.raises(ValueError, match="2 run commit files"):
        trim_staging.trim(str(src), str(tmp_path / "t.tar.gz"), ["plan"])
