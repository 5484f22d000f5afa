import json
import re
import shlex
import sys
from pathlib import Path

from snakemake.utils import validate

from pipeline import config_check

ROOT = Path(workflow.basedir)
# What the schema cannot check, checked before it (pipeline/config_check.py): a key given twice in a config file
# (Snakemake's loader, having read them, keeps the last one silently); the values of --config that are YAML mappings
# or lists, which Snakemake reads with every leaf a string (plan='{bench: {rep_ms: 50}}'), read again as YAML, with
# dotted keys inside them as paths (plan='{bench.rep_ms: 50}'); NaN anywhere, and infinity where the schema bounds
# a number (NaN passes every bound).
CONFIG_SCHEMA = config_check.load_schema(ROOT / "config" / "schema.yaml")
config_check.check_files(workflow.configfiles)
config_check.apply_overrides(config, workflow.config_settings.config_args, CONFIG_SCHEMA)
config_check.check_numbers(config, CONFIG_SCHEMA)
validate(config, schema="../../config/schema.yaml")

from kernels.stages import ALL_SWITCHES
from pipeline import plan as bench_plan  # the sets of the measurement plan (the library, installed with kernels)
from pipeline import captions, job_memory, seal  # job_memory: the GPU rules' mem_mb, from the committed peaks

# A bad plan fails here, in a dry run, not inside a GPU job: unknown variants, shapes the kernel does not take, pairs
# of bounds the wrong way round (min_samples > max_samples); the cross-check's waivers are checked below.
bench_plan.check_plan(config["plan"])

PY = shlex.quote(sys.executable)  # the interpreter running Snakemake runs every script (quoted: paths with spaces)
GPU = config["gpu"]
DATA = f"data/{GPU}"
SEALS = f"data/{seal.MANIFEST}"  # the manifest of every seal under data/ (pipeline.seal): an input of each reader
STAGING = f"results/staging/{GPU}"  # a run being measured; it moves into DATA when sealed
PLAN = config["plan"]
KERNEL_SOURCES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "kernels").glob("*.py"))  # edit one: rebuild, re-verify
# What a step that imports kernels' registry (not the kernel) and the library reads of the code: inputs of every such
# rule, so that an edit of one reruns the steps that import it.
REGISTRY = ["kernels/__init__.py", "kernels/stages.py", "kernels/gpus.py", "kernels/shapes.py", "kernels/theory.py",
            "kernels/tuned_tiles.csv"]
LIBRARY = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pipeline").glob("*.py"))
CODE = REGISTRY + LIBRARY
# Software. One environment runs every step, the one Snakemake runs in (PY above), with requirements/lock.txt and
# this package installed (by `make` into .venv, or from environment.yml with conda); on a cluster, the same
# environment on a shared file system. So no step declares a conda or container directive (README.md, "Environment").
# Step times. Each step writes Snakemake's benchmark file, BENCH/<step>.tsv or BENCH/<step>/<wildcard>.tsv; a GPU
# run's steps write theirs inside the run (STAGING/<run>/BENCH/...), sealed with its data.
BENCH = "benchmarks"


wildcard_constraints:
    arch=r"\d+",
    set="|".join(bench_plan.SETS),
    # Only the new run is ever made: the committed runs match no rule, so nothing of them is redone or rewritten.
    run=re.escape(config["run"]) if config["measure"] and config["run"] else r"(?!)",


def run_seals():
    """The SHA256SUMS of every run the paper is built from: the committed, sealed runs data/<gpu>/run-*/, plus the
    new run when measuring (runs timed before the kernel timer are archived in data/<gpu>/history/ and never read).
    An unsealed (unfinished) run folder is an error, not silently skipped."""
    runs = sorted(p for p in (ROOT / DATA).glob("run-*") if p.is_dir() and any(p.iterdir()))  # empty: nothing
    if config["measure"]:
        if not config["run"]:
            raise ValueError("measure: true needs the new run's folder name: --config run=run-<name>")
        if (ROOT / DATA / "history" / f"{config['run']}.tar.xz").exists():
            raise ValueError(f"{config['run']} is the name of a history run ({DATA}/history/): choose another")
        new = ROOT / DATA / config["run"]
        if (new / "SHA256SUMS").exists():
            raise ValueError(f"{DATA}/{config['run']} is a finished run and is never overwritten: "
                             f"choose another --config run=... name")
        runs = [r for r in runs if r != new] + [new]
    unsealed = [r.name for r in runs if not (r / "SHA256SUMS").exists() and r.name != config["run"]]
    if unsealed:
        raise ValueError(f"{DATA}: run folder(s) {unsealed} are not sealed (no SHA256SUMS: the run did not "
                         f"finish); finish them with --config measure=true run=<name>, or move them away")
    if not runs:
        raise ValueError(f"no measured runs under {DATA}: measure first (--config measure=true run=run-1)")
    return [f"{DATA}/{r.name}/SHA256SUMS" for r in runs]


def run_data_files():
    """Every data file that the sealed runs list: inputs of the aggregate step, so that an edit to any of them is
    noticed on the next plain run (and then refused by the checksums). Read through seal.listed, which refuses a
    name that is not a plain path inside its run. `make paper` verifies every seal first (seal verify-all)."""
    files = []
    for sums in run_seals():
        if (ROOT / sums).exists():
            files += [f"{Path(sums).parent}/{name}" for name in seal.listed(ROOT / Path(sums).parent)]
    return files


def sealed_files(folder):
    """The files a sealed folder's SHA256SUMS lists (its data), with the SHA256SUMS itself."""
    folder = ROOT / folder
    return [str((folder / name).relative_to(ROOT)) for name in seal.listed(folder)] + [
        str((folder / seal.NAME).relative_to(ROOT))]


def other_gpus():
    """The other GPUs whose runs are committed: every folder data/<gpu>/ but the config gpu's that holds a run folder
    (run-*). Each is aggregated apart, by the aggregate phase's own scripts, for its appendix (workflow/rules/gpus.smk);
    none is pooled with the config gpu's runs."""
    return sorted(p.name for p in (ROOT / "data").iterdir()
                  if p.is_dir() and p.name != GPU and any(r.is_dir() and any(r.iterdir()) for r in p.glob("run-*")))


OTHER_GPUS = other_gpus()


def gpu_run_seals(gpu):
    """The SHA256SUMS of every run of another GPU, data/<gpu>/run-*/ (what run_seals is for the config gpu's, no run
    being measured there). An unsealed run folder is an error, as there."""
    runs = sorted(p for p in (ROOT / "data" / gpu).glob("run-*") if p.is_dir() and any(p.iterdir()))
    unsealed = [r.name for r in runs if not (r / seal.NAME).exists()]
    if unsealed:
        raise ValueError(f"data/{gpu}: run folder(s) {unsealed} are not sealed (no {seal.NAME}: the run did not "
                         f"finish); finish them with --config measure=true gpu={gpu} run=<name>, or move them away")
    return [f"data/{gpu}/{r.name}/{seal.NAME}" for r in runs]


def gpu_run_data_files(gpu):
    """Every data file that another GPU's sealed runs list (as run_data_files for the config gpu's)."""
    return [f"{Path(sums).parent}/{name}" for sums in gpu_run_seals(gpu)
            for name in seal.listed(ROOT / Path(sums).parent)]


def gpu_waivers(gpu):
    """The cross-check waivers of one GPU's runs: those whose `gpu` names it; a waiver without `gpu` names a run of
    the config gpu."""
    return [w for w in config.get("crosscheck_waivers", []) if w.get("gpu", GPU) == gpu]


LOGS = f"{DATA}/snakemake-logs"  # Snakemake's log of each run, sealed (LOGS/SHA256SUMS, recorded in data/SEALS.csv)


def step_time_logs():
    """Snakemake's log of each sealed run that holds no benchmark files (runs sealed before the GPU rules had a
    benchmark:, run-6-x2 ... run-10-x2): step_times.py reads those runs' step times from it, only sealed, and says
    so."""
    logs = []
    for sums in run_seals():
        folder = ROOT / Path(sums).parent
        if (folder / seal.NAME).exists() and not any(n.startswith(f"{BENCH}/") for n in seal.listed(folder)):
            log = ROOT / LOGS / f"{folder.name}.log"
            if log.exists():
                logs.append(str(log.relative_to(ROOT)))
    return logs


def step_time_log_seals():
    """The seal of the logs step_times.py reads (none when it reads none)."""
    return [f"{LOGS}/{seal.NAME}"] if step_time_logs() else []


def compare_files(wc):
    """The reviewer's run: every file its SHA256SUMS lists, and the SHA256SUMS (the aggregate step verifies them)."""
    folder = Path(config["compare"])
    return [str(folder / name) for name in seal.listed(folder)] + [str(folder / seal.NAME)]


def _refuse_placeholders():
    """The SLURM profile ships CHANGE-ME where the cluster's partition and account go: refuse to run until they are
    set, saying where."""
    defaults = getattr(getattr(workflow, "resource_settings", None), "default_resources", None)
    text = " ".join(getattr(defaults, "args", None) or []) if defaults is not None else ""
    if "CHANGE-ME" in text:
        raise ValueError("the SLURM profile still has CHANGE-ME placeholders (slurm_partition, slurm_account): set "
                         "your cluster's partition and account in profiles/slurm/config.yaml, or pass "
                         "--default-resources slurm_partition=<p> slurm_account=<a>")


_refuse_placeholders()


def _check_waivers():
    """Each cross-check waiver names a run the paper is built from (a run folder of DATA, or the new run), or, where
    its `gpu` names another GPU, a run of that GPU's folder, and an entry its plan profiled (the new run's: this
    config's plan): a typo fails here, not at the aggregate step."""
    runs = {p.name: config_check.run_profiled(p) for p in (ROOT / DATA).glob("run-*")
            if p.is_dir() and any(p.iterdir())}
    if config["measure"] and config["run"]:
        runs[config["run"]] = config_check.plan_profiled(PLAN)
    torch_impls = CONFIG_SCHEMA["properties"]["plan"]["properties"]["torch_impls"]["items"]["enum"]
    others = {g: ({p.name: config_check.run_profiled(p) for p in (ROOT / "data" / g).glob("run-*")
                   if p.is_dir() and any(p.iterdir())}, f"data/{g}") for g in OTHER_GPUS}
    config_check.check_waivers(config.get("crosscheck_waivers", []), runs, DATA, torch_impls, others)


_check_waivers()
