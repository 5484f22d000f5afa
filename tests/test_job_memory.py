"""Each GPU rule asks a scheduler for the memory its step reached in the committed runs, with a margin
(pipeline/job_memory.py; issue 21, item 4): derived in one place from the runs' benchmark files, given to every GPU
rule by its name, and seen by Snakemake (a dry run's resources)."""
import re
import shutil
from pathlib import Path

import pytest

from pipeline import job_memory
from pipeline_run import snakemake

ROOT = Path(__file__).resolve().parents[1]
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def gpu_rules() -> dict:
    """rule -> its resources: block, for the rules that declare gpu=1 in workflow/rules/*.smk."""
    found = {}
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        for name, body in re.findall(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", smk.read_text(), flags=re.M):
            block = re.search(r"^    resources:\n((?:        .*\n)*)", body, flags=re.M)
            if block and re.search(r"^\s+gpu=1,", block.group(1), flags=re.M):
                found[name] = block.group(1)
    return found


def test_every_gpu_rule_takes_its_own_memory_from_job_memory():
    rules = gpu_rules()
    assert set(rules) == set(job_memory.GPU_STEPS), (sorted(rules), sorted(job_memory.GPU_STEPS))
    for name, block in rules.items():
        assert f'**job_memory.resources("{name}")' in block, f"rule {name}: no mem_mb from pipeline.job_memory"
        assert "mem_mb=" not in block, f"rule {name}: a mem_mb of its own beside job_memory's"


def write_bench(run: Path, rel: str, rss) -> None:
    path = run / "benchmarks" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"1.0\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t1\t1\n")


def test_the_request_is_the_largest_sealed_peak_with_the_margin(tmp_path):
    data = tmp_path / "data"
    one, two, open_run = data / "gpu-a" / "run-1", data / "gpu-b" / "run-2", data / "gpu-a" / "run-3"
    write_bench(one, "verify_gpu.tsv", 13079.15)
    write_bench(two, "verify_gpu.tsv", 9000)
    write_bench(one, "bench/headline.tsv", 5000)
    write_bench(two, "bench/tuning.tsv", 6358)             # the largest of the sets: the rule's
    write_bench(one, "profile.tsv", "NA")                  # not read by Snakemake: no peak
    write_bench(open_run, "compile.tsv", 99999)            # an unsealed run: not committed data
    for run in (one, two):
        (run / "SHA256SUMS").write_text("")
    peaks = job_memory.peaks(data)
    assert peaks == {"verify_gpu": (13079.15, "gpu-a/run-1/benchmarks/verify_gpu.tsv"),
                     "bench": (6358.0, "gpu-b/run-2/benchmarks/bench/tuning.tsv")}
    assert job_memory.mem_mb(data) == {"verify_gpu": 20000, "bench": 10000}       # 19619 and 9537, rounded up
    assert job_memory.resources("verify_gpu", data) == {"mem_mb": 20000}
    assert job_memory.resources("profile", data) == {}                            # the profile's default applies
    with pytest.raises(KeyError, match="not a GPU step"):
        job_memory.resources("aggregate", data)


def test_the_committed_runs_give_every_measured_gpu_step_more_than_its_peak():
    peaks = job_memory.peaks()
    assert {"verify_gpu", "compile", "bench", "timer_check", "profile", "ceilings"} <= set(peaks)
    for step, (peak, where) in peaks.items():
        asked = job_memory.mem_mb()[step]
        assert peak * job_memory.MARGIN <= asked < peak * job_memory.MARGIN + job_memory.ROUND_MB, (step, where)
    assert job_memory.mem_mb()["verify_gpu"] > 16000      # the SLURM profile's default, 1.22 times its peak


def test_snakemake_sees_each_gpu_rules_request():
    run = "run-memory-test"
    proc = snakemake("-n", "--cores", "1", "--forceall", "--config", "measure=True", f"run={run}",
                     "crosscheck_waivers=[]", "--", f"results/staging/nvidia-h200/{run}/bench-headline/timings.csv")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    asked = job_memory.mem_mb()
    seen = {}
    for rule, resources in re.findall(r"^rule (\w+):\n(?:    .*\n)*?    resources: (.*)$", proc.stdout, flags=re.M):
        m = re.search(r"\bmem_mb=(\d+)", resources)
        seen[rule] = int(m.group(1)) if m else None
    for rule in ("verify_gpu", "compile", "bench"):
        assert seen.get(rule) == asked[rule], (rule, seen)
    for rule in ("gpu_check", "qwen3_e2e"):
        if rule not in asked:                          # no committed run measured it: no mem_mb of its own
            assert rule == "qwen3_e2e" or seen[rule] is None, (rule, seen)
    shutil.rmtree(ROOT / "results" / "staging" / "nvidia-h200" / run, ignore_errors=True)
