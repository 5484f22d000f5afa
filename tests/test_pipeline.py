"""The Snakemake pipeline on the CPU: lint, dry runs of both tiers, config errors, the default pipeline end to end
(results/paper.pdf from the committed data), the PDF's stage table against the tidy data, and claims' verdicts
that follow the data."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from pipeline_run import ENV, snakemake
from steps import step

from kernels.stages import STAGES as STAGES_NOW

from pipeline import seal as checksums
from pipeline.latex import listing

ROOT = Path(__file__).resolve().parents[1]
AGG = ROOT / "results" / "aggregate"
ARTICLE = ROOT / "data" / "article"
claims = step("aggregate/claims")
step_times = step("aggregate/step_times")

def jobs(dry_run_output: str) -> dict:
    """Job counts from a dry run's 'Job stats' table."""
    lines = dry_run_output.split("Job stats:")[1].splitlines()[3:]
    out = {}
    for line in lines:
        parts = line.split()
        if len(parts) != 2 or parts[0] == "total":
            break
        out[parts[0]] = int(parts[1])
    return out


def job_blocks(dry_run_output: str) -> dict:
    """rule -> the text of each of its jobs in a dry run's listing."""
    blocks = {}
    for m in re.finditer(r"^(?:local)?rule (\w+):\n((?:    .*\n?)*)", dry_run_output, re.M):
        blocks.setdefault(m.group(1), []).append(m.group(2))
    return blocks


# The one lint finding this workflow keeps, on purpose: no step declares a conda environment or a container, since
# one environment (requirements/lock.txt, or environment.yml; README, "Environment") runs every step. Any other
# finding fails this test, and so does this one missing from a step or found on anything but a step.
NO_SOFTWARE_DIRECTIVE = "Specify a conda environment or container for each rule."
TARGET_RULES = {"all", "build_all"}  # they only name files: no job, nothing to lint


def test_lint_finds_only_the_documented_missing_software_directive():
    proc = snakemake("--lint")         # text: `--lint json` prints text too in Snakemake 9.27 (the CLI drops the flag)
    text = proc.stdout + proc.stderr
    linted = re.findall(r"^Lints for (rule|snakefile) (\S+)", text, re.M)
    findings = re.findall(r"^    \* (.+?):$", text, re.M)
    rules = set(re.findall(r"^(\w+)", snakemake("--list-rules").stdout, re.M))
    assert proc.returncode == 1 and linted and rules > TARGET_RULES, text[-3000:]
    assert {kind for kind, _ in linted} == {"rule"}, f"a snakefile has lints: {text[-3000:]}"
    assert set(findings) == {NO_SOFTWARE_DIRECTIVE}, f"lints other than the documented one: {text[-3000:]}"
    assert len(findings) == len(linted) and sorted(r for _, r in linted) == sorted(rules - TARGET_RULES)


def test_dry_run_default_tier_needs_no_gpu():
    proc = snakemake("-n", "--forceall", "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    j = jobs(proc.stdout)
    figures = {f.stem for f in (ROOT / "workflow" / "scripts" / "paper" / "figures").glob("*.py")}
    values = {f.stem for f in (ROOT / "workflow" / "scripts" / "paper" / "values").glob("*.py")}
    assert j["paper"] == 1 and j["figure"] == len(figures) and j["build_variants"] == 4 and j["verify_cpu"] == 1
    assert j["values"] == len(values) and j["tables"] == len(step("paper/tables").TABLES) and j["listings"] == 1
    assert not {"bench", "profile", "verify_gpu", "ceilings", "seal_run", "compile", "timer_check", "qwen3_e2e"} & set(j)


def test_smoke_runs_the_aggregate_the_verdicts_one_figure_and_one_table_on_the_sm_90_build_alone():
    """`make smoke`'s Snakemake targets (read from the Makefile) with config/smoke.yaml: only these jobs, not the
    paper (the whole `make paper` is what smoke used to be)."""
    targets = re.search(r"^SMOKE_TARGETS = (.+)$", (ROOT / "Makefile").read_text(), re.M).group(1).split()
    proc = snakemake("-n", "--forceall", "--cores", "2", "--configfile", "config/config.yaml", "config/smoke.yaml",
                     "--", *targets)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert jobs(proc.stdout) == {"build_variants": 1, "aggregate": 1, "claims": 1, "figure": 1, "tables": 1}
    assert "wildcards: arch=90" in proc.stdout


def test_dry_run_measure_tier():
    proc = snakemake("-n", "--cores", "16", "--resources", "gpu=2", "--config", "measure=True", "run=run-dryrun")
    assert proc.returncode == 0, proc.stderr[-2000:]
    j = jobs(proc.stdout)
    from pipeline import plan
    assert j["bench"] == len(plan.SETS) and j["profile"] == j["verify_gpu"] == j["ceilings"] == j["seal_run"] == 1
    assert j["compile"] == j["timer_check"] == j["qwen3_e2e"] == 1
    assert "results/staging/nvidia-h200/run-dryrun/bench-tiles/timings.csv" in proc.stdout
    assert "data/nvidia-h200/run-dryrun/SHA256SUMS" in proc.stdout       # data/ gets the run only when sealed
    # every job has a benchmark file; a run's steps write theirs inside the run, and the seal waits for them
    blocks = job_blocks(proc.stdout)
    assert set(blocks) - {"all"} >= set(step_times.RUN_RULES) | {"seal_run", "paper"}
    staged = "results/staging/nvidia-h200/run-dryrun/benchmarks/"
    for rule, texts in blocks.items():
        for t in texts:
            bench = re.search(r"^    benchmark: (\S+)", t, re.M)
            assert rule == "all" or bench, f"job of {rule} has no benchmark file: {t}"
            if rule in step_times.RUN_RULES:
                assert bench.group(1).startswith(staged), bench.group(1)
                assert bench.group(1) in blocks["seal_run"][0].split("output:")[0]
    # the Qwen3 end-to-end step (plan.qwen3_e2e): one GPU job in the run, its table among the seal's inputs
    (e2e,) = blocks["qwen3_e2e"]
    assert re.search(r"^    resources: .*\bgpu=1\b", e2e, re.M), e2e
    assert "results/staging/nvidia-h200/run-dryrun/qwen3_e2e/qwen3_e2e.csv" in blocks["seal_run"][0].split("output:")[0]


def test_a_plan_without_the_qwen3_section_makes_and_seals_a_run_without_it(tmp_path):
    """plan.qwen3_e2e null (as absent): no qwen3_e2e job, and the seal waits for neither its table nor its
    benchmark file."""
    extra = tmp_path / "no-e2e.yaml"
    extra.write_text("plan:\n  qwen3_e2e: null\n")
    proc = snakemake("-n", "--cores", "16", "--resources", "gpu=2", "--configfile", "config/config.yaml", str(extra),
                     "--config", "measure=True", "run=run-dryrun")
    assert proc.returncode == 0, proc.stderr[-2000:]
    j = jobs(proc.stdout)
    from pipeline import plan
    assert "qwen3_e2e" not in j and j["seal_run"] == 1 and j["bench"] == len(plan.SETS)
    assert "qwen3_e2e" not in job_blocks(proc.stdout)["seal_run"][0]


@pytest.mark.parametrize("config, message", [
    (["measure=True"], "measure: true needs the new run's folder name: --config run=run-<name>"),
    (["measure=True", "run=run-6-x2"], "data/nvidia-h200/run-6-x2 is a finished run and is never overwritten"),
    (["measure=True", "run=run-3"], "run-3 is the name of a history run (data/nvidia-h200/history/)"),
    (["measure=yes"], "'yes' is not of type 'boolean'"),
    (["run=latest"], "'latest' does not match"),
    (["gpu=Bad GPU"], "'Bad GPU' does not match"),
    # Snakemake reads nan and inf as floats, which pass the schema's bounds (every comparison with NaN is false)
    (["crosscheck_max_pct=nan"], "crosscheck_max_pct: NaN is not a number (it passes every bound of "
                                 "config/schema.yaml, and fails only where it is used); give a finite number > 0 and "
                                 "<= 50"),
    (["crosscheck_max_pct=inf"], "crosscheck_max_pct: inf is not a setting this key can take"),
    # nested values are read as YAML (Snakemake's own reading makes every leaf a string)
    (["plan={bench: {rep_ms: .nan}}"], "plan.bench.rep_ms: NaN is not a number"),
    (["plan={bench: {min_samples: 500}}"], "plan.bench.min_samples (500) is above plan.bench.max_samples (400): the "
                                           "kernel timer takes between min_samples and max_samples samples; make "
                                           "min_samples <= max_samples"),
    (["plan={bench.host_min_calls: 60}"], "plan.bench.host_min_calls (60) is above plan.bench.host_max_calls (50)"),
    (["plan={bench: {rep_ms: 40, rep_ms: 50}}"], "--config plan={bench: {rep_ms: 40, rep_ms: 50}}, line 1: the key "
                                                 "bench.rep_ms is given twice (first at line 1)"),
    (["crosscheck_waivers=[{run: run-15-x3, variant: v16, reason: a reason long enough to count}]"],
     "crosscheck_waivers[0].run: 'run-15-x3' is not a run of data/nvidia-h200"),
    (["crosscheck_waivers=[{run: run-15-x2, variant: v12, reason: a reason long enough to count}]"],
     "crosscheck_waivers[0].variant: 'v12' was not profiled in run-15-x2"),
    (["measure=True", "run=run-dryrun",
      "crosscheck_waivers=[{run: run-dryrun, variant: v12, reason: a reason long enough to count}]"],
     "crosscheck_waivers[0].variant: 'v12' was not profiled in run-dryrun"),     # the new run: this config's plan
])
def test_bad_config_is_refused(config, message):
    proc = snakemake("-n", "--cores", "1", "--config", *config)
    assert proc.returncode != 0 and message in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-1500:]


@pytest.mark.parametrize("config, archs, rep_ms", [
    (["build={archs: [90]}"], 1, 50),
    (["plan={bench: {rep_ms: 40}}"], 4, 40),
    (["plan={bench.rep_ms: 40, bench.max_samples: 300}", "build={archs: [90, 86]}"], 2, 40),
])
def test_a_nested_config_value_is_taken_as_yaml(config, archs, rep_ms):
    """`--config plan='{bench: {rep_ms: 40}}'` (or with dotted keys, plan='{bench.rep_ms: 40}'): Snakemake reads the
    leaves of a nested value as strings ('40', which the schema refused); the pipeline reads them again as YAML."""
    proc = snakemake("-n", "--cores", "1", "--forceall", "--config", *config)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-1500:]
    assert jobs(proc.stdout)["build_variants"] == archs


def test_a_nested_config_value_reaches_a_runs_plan_with_its_types(tmp_path):
    """The plan a GPU run's steps read (the rule plan writes it from the config Snakemake holds) has the nested
    --config values as numbers, merged into the config's plan as Snakemake merges them. The plan waits for the first
    GPU step (gpu_check), whose GPU is faked here (an H200: tests/fake_gpu.py)."""
    import yaml
    from fake_gpu import env_with, fake_nvidia_smi
    from pipeline_run import one_at_a_time
    run = "run-config-test"
    plan_file = ROOT / "results" / "staging" / "nvidia-h200" / run / "plan.yaml"
    env = env_with(ENV, fake_nvidia_smi(tmp_path / "bin", "NVIDIA H200", "9.0"), ROOT, tmp_path)
    try:
        with one_at_a_time():
            proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--resources", "gpu=1",
                                   "--config", "measure=True", f"run={run}",
                                   "plan={bench.rep_ms: 40, bench: {settle_tol_pct: .5}, qwen3_e2e: {layers: {0.6B: 2}}}",
                                   "--", str(plan_file.relative_to(ROOT))],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-1500:]
        plan = yaml.safe_load(plan_file.read_text())["plan"]
    finally:
        shutil.rmtree(plan_file.parent, ignore_errors=True)
        for step_name in ("plan", "gpu_check"):
            (ROOT / "logs" / step_name / f"{run}.log").unlink(missing_ok=True)
    assert plan["bench"]["rep_ms"] == 40 and plan["bench"]["settle_tol_pct"] == 0.5 and plan["bench"]["min_samples"] == 25
    assert plan["qwen3_e2e"]["layers"] == {"0.6B": 2, "32B": 2} and "bench.rep_ms" not in plan
    assert plan["arch"] == {"capability": "9.0", "skipped": [], "why": ""}          # an H200 runs every stage


def test_a_key_given_twice_in_a_config_file_is_refused(tmp_path):
    """Snakemake's loader keeps the last of a key given twice, silently: the pipeline reads each config file again,
    the Snakefile's own (config/config.yaml) and every --configfile."""
    extra = tmp_path / "extra.yaml"
    extra.write_text("plan:\n  bench: {rep_ms: 40}\n  repeats: {headline: 1}\n  bench: {rep_ms: 30}\n")
    proc = snakemake("-n", "--cores", "1", "--configfile", "config/config.yaml", str(extra))
    assert proc.returncode != 0 and (f"{extra}, line 4: the key plan.bench is given twice (first at line 2); YAML "
                                     f"keeps the last one silently: keep one of them") in proc.stdout + proc.stderr
    own = tmp_path / "workdir" / "config" / "config.yaml"           # the configfile: directive's, in a work dir
    own.parent.mkdir(parents=True)
    text = (ROOT / "config" / "config.yaml").read_text()
    own.write_text(text.replace("crosscheck_max_pct: 5\n", "crosscheck_max_pct: 5\ncrosscheck_max_pct: 50\n", 1))
    line = text.splitlines().index("crosscheck_max_pct: 5") + 2
    proc = snakemake("-n", "--cores", "1", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(own.parents[1]))
    assert proc.returncode != 0 and (f"{own}, line {line}: the key crosscheck_max_pct is given twice (first at line "
                                     f"{line - 1})") in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-1500:]


@pytest.fixture(scope="module")
def built():
    proc = snakemake("--cores", "2")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    pdf = ROOT / "results" / "paper.pdf"
    assert pdf.stat().st_size > 100_000
    return pdf


def test_paper_stage_table_matches_the_data(built):
    """Every row of the stage table in the PDF carries the numbers of the tidy data, formatted as the table does."""
    text = subprocess.run(["pdftotext", "-layout", str(built), "-"], capture_output=True, text=True,
                          check=True).stdout
    rows = pd.read_csv(AGG / "stage_table.csv")
    for _, r in rows.iterrows():
        expected = [r.stage, f"{r.article_us:.0f}", f"{r.ours_us:.1f}", f"[{r.ours_lo:.1f}",
                    f"{r.pct_flash:.0f}", f"{r.pct_default:.0f}", f"{r.ours_inst_m:.1f}"]
        line = next((ln for ln in text.splitlines() if ln.split()[:3] == expected[:3]), None)
        assert line is not None, f"no row for {r.stage} with {expected[:3]} in the PDF"
        for value in expected:
            assert value in line, f"{r.stage}: {value} not in the PDF's row: {line!r}"
    # each switch's listing is its whole block: the two-phase loop keeps its else branch
    code = (ROOT / "results" / "paper" / "code_two_phase.tex").read_text()
    assert "split = N // BLOCK_N * BLOCK_N" in code and code.count("_kv_steps(") == 3
    # a Gluon switch's listing is cut from the Gluon kernel, with its `if not` blocks
    code = (ROOT / "results" / "paper" / "code_producer_warp.tex").read_text()
    assert "if not PRODUCER_WARP:" in code and "_kv_producer" in code
    code = (ROOT / "results" / "paper" / "code_two_consumers.tex").read_text()
    assert "_consumer_pair(" in code and "count=2" in code
    # the abstract's verdict sentence lists the claims as the claims table does
    verdicts = pd.read_csv(AGG / "claims.csv").groupby("claim", sort=False).claim_verdict.first()
    flat = " ".join(text.split())
    for verdict in ("holds", "partly", "does not hold"):
        these = listing(list(verdicts[verdicts == verdict].index))
        assert f"({these})" in flat, f"the abstract does not list {these} as '{verdict}'"


def test_every_table_of_the_paper_is_set_at_8pt_at_least(built):
    """No table is shrunk below 8pt: the paper sets each table of the tables step through \\fittable (never
    \\resizebox), which shrinks a table only where it is wider than the line and stops the build below 8pt; the
    sizes it logged in this build are read back here (the longtables of predictions and of the cross-check at the
    other lengths break across pages at footnotesize, 8pt, and are not boxed)."""
    tex = re.sub(r"(?<!\\)%.*", "", (ROOT / "paper" / "main.tex").read_text())
    assert not re.search(r"\\resizebox\{[^}]*\}\{[^}]*\}\{\\input", tex), "a table shrunk by \\resizebox"
    tables = set(step("paper/tables").TABLES)
    inputs = set(re.findall(r"\\input\{(\w+)\}", tex)) & tables
    boxed = dict(re.findall(r"\\fittable\{(\w+)\}\{\\input\{(\w+)\}\}", tex))
    long = {"predictions", "crosscheck_n"}
    assert all(k == v for k, v in boxed.items()) and inputs - set(boxed) == long, (inputs, boxed)
    for name in long:
        assert re.search(r"\{\\footnotesize[^{}]*\\input\{" + name + r"\}\}", tex), name
    log = (ROOT / "results" / "paper-build" / "main.log").read_text(errors="replace")
    sizes = {name: float(pt) for name, pt in re.findall(r"^fittable: (\w+) ([\d.]+)pt", log, re.M)}
    assert set(sizes) == set(boxed), (sorted(sizes), sorted(boxed))
    small = {name: pt for name, pt in sizes.items() if pt < 7.95}
    assert not small, f"tables set below 8pt: {small}"


def test_report_holds_every_figure_and_table(built, tmp_path):
    """Snakemake's report holds every figure and every table the rules make (read from the dry run's jobs, not typed
    here), the claims and the paper; its landing page describes the workflow; each figure's caption is its script's
    docstring and each table's its line in the tables script's docstring; the tables are HTML, no raw TeX."""
    import html as html_lib

    from pipeline import captions
    blocks = job_blocks(snakemake("-n", "--forceall", "--cores", "1").stdout)
    figures = [re.search(r"wildcards: name=(\w+)", b).group(1) for b in blocks["figure"]]
    tables = [re.search(r"wildcards: name=(\w+)", b).group(1) for b in blocks["tables"]]
    assert len(figures) >= 12 and len(tables) >= 10
    out = tmp_path / "report.html"
    proc = snakemake("--report", str(out), "--cores", "1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = out.read_text(errors="ignore")
    for name in figures:
        assert f"{name}.png" in html, f"the report lacks the figure {name}"
    for name in [f"{t}.html" for t in tables] + ["claims.csv", "paper.pdf"]:
        assert name in html, f"the report lacks {name}"
    # the report keeps its rendered captions as JSON strings in its script: read them as text, tags dropped
    flat = " ".join(html_lib.unescape(re.sub(r"<[^>]+>", "", html.replace('\\"', '"').replace("\\n", " "))).split())
    assert "The pipeline (Snakefile" in flat and "What is here" in flat, "the landing page lacks the workflow"
    scripts = ROOT / "workflow" / "scripts" / "paper"
    for name in figures:
        first = " ".join(captions.docstring(scripts / "figures" / f"{name}.py").split())[:60]
        assert first in flat, f"the report lacks {name}'s caption (its docstring): {first!r}"
    for name, caption in captions.table_captions(scripts / "tables.py").items():
        assert caption.replace("\\", "")[:50] in flat, f"the report lacks the caption of the table {name}"
    for name in tables:
        page = (ROOT / "results" / "tables" / f"{name}.html").read_text()
        assert "<table>" in page and not re.search(r"\\[A-Za-z]+|\$", page), f"{name}.html holds TeX"


def test_step_times_reach_the_paper_from_the_benchmark_files(built):
    """Every CPU step of the build wrote its benchmark file; step_times.csv carries each file's seconds, the old runs'
    GPU steps come from their logs (they hold no benchmark files, and are named as such), and the paper quotes the
    numbers step_times.csv gives."""
    st = pd.read_csv(ROOT / "results" / "aggregate" / "step_times.csv")
    build = st[st.tier == "build"]
    assert set(build.rule) == {"build_variants", "verify_cpu", "aggregate", "claims", "figure"}
    for r in build.itertuples():
        tsv = pd.read_csv(ROOT / r.file, sep="\t")
        assert list(tsv.columns[:3]) == ["s", "h:m:s", "max_rss"] and r.seconds == tsv.s.median()
    for later in ("step_times", "listings", "paper"):
        assert (ROOT / "benchmarks" / f"{later}.tsv").exists(), f"{later} wrote no benchmark file"
    tables = set(step("paper/tables").TABLES)
    assert {p.stem for p in (ROOT / "benchmarks" / "tables").glob("*.tsv")} == tables
    values = {p.stem for p in (ROOT / "workflow" / "scripts" / "paper" / "values").glob("*.py")}
    assert {p.stem for p in (ROOT / "benchmarks" / "values").glob("*.tsv")} == values
    runs = st[st.tier == "run"]
    sealed_files = {r: (ROOT / "data" / "nvidia-h200" / r / "SHA256SUMS").read_text() for r in set(runs.run)}
    from_logs = {r for r, text in sealed_files.items() if "  benchmarks/" not in text}
    assert from_logs >= {"run-6-x2", "run-7-x2", "run-8-x2", "run-9-x2"}          # sealed before benchmark files
    assert set(runs[runs.source == "snakemake log"].run) == from_logs
    assert set(runs[runs.source == "benchmark"].run) == set(runs.run) - from_logs
    assert (runs.groupby("run").rule.apply(lambda r: (r == "bench").sum()) >= 6).all()
    m = step("paper/values/steps").values(AGG / "step_times.csv").macros
    gpu = runs[runs.rule.isin(step_times.GPU_RULES)].groupby("run").seconds.sum() / 60
    assert m["StepGpuMin"] == f"{gpu.median():.1f}" and m["StepRunsFromLogsList"] == listing(sorted(from_logs))
    pages = subprocess.run(["pdftotext", str(built), "-"], capture_output=True, text=True, check=True).stdout
    text = " ".join(re.sub(r"\n\d+\n*\f", "\n", pages).split())     # a page's number where a sentence crosses it
    assert f"the GPU steps of a run took {m['StepGpuMin']} min" in text
    assert f"The runs {m['StepRunsFromLogsList']} were sealed before" in text
    assert f"on its machine: {m['StepBuildMin']} min in all" in text


def test_a_runs_step_benchmark_files_are_sealed_with_it_and_read(tmp_path):
    """The measure tier's CPU steps (plan, theory) run for real: Snakemake writes their benchmark files inside the
    run's staging folder; the seal takes them in; step_times reads them from the sealed run, checksums verified. The
    plan waits for the first GPU step, gpu_check, whose GPU is faked (an H200: tests/fake_gpu.py)."""
    from fake_gpu import env_with, fake_nvidia_smi
    from pipeline_run import one_at_a_time
    run = "run-pytest-steps"
    staging = ROOT / "results" / "staging" / "nvidia-h200" / run
    env = env_with(ENV, fake_nvidia_smi(tmp_path / "bin", "NVIDIA H200", "9.0"), ROOT, tmp_path)
    try:
        with one_at_a_time():
            proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--resources", "gpu=1",
                                   "--config", "measure=True", f"run={run}", "--",
                                   f"results/staging/nvidia-h200/{run}/theory.csv"],
                                  cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        files = sorted(p.relative_to(staging).as_posix() for p in (staging / "benchmarks").rglob("*"))
        assert files == ["benchmarks/gpu_check.tsv", "benchmarks/plan.tsv", "benchmarks/theory.tsv"]
        shutil.copytree(staging, tmp_path / "staging")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        for log in (f"logs/plan/{run}.log", f"logs/theory/{run}.log", f"logs/gpu_check/{run}.log"):
            (ROOT / log).unlink(missing_ok=True)
    if (ROOT / ".git").exists():                         # a sealed run's benchmark files can be committed
        ignored = subprocess.run(["git", "check-ignore", "-q", f"data/nvidia-h200/{run}/benchmarks/theory.tsv"],
                                 cwd=ROOT).returncode
        assert ignored == 1, ".gitignore ignores the benchmark files of a run in data/"
    sealed = tmp_path / "data" / "nvidia-h200" / run           # the folder of the GPU its gpu.json names
    checksums.publish(tmp_path / "staging", sealed, tmp_path / "data" / "SEALS.csv")
    assert "benchmarks/theory.tsv" in checksums.listed(sealed)
    t = step_times.table([sealed], logs=[], cpu=[])
    assert list(t.rule) == ["gpu_check", "plan", "theory"] and set(t.source) == {"benchmark"} and set(t.run) == {run}
    assert t.set_index("rule").seconds["theory"] == pd.read_csv(sealed / "benchmarks" / "theory.tsv", sep="\t").s[0]
    (sealed / "benchmarks" / "theory.tsv").write_text("s\th:m:s\n0.01\t0:00:00\n")
    with pytest.raises(ValueError, match="theory.tsv: changed since the run"):
        step_times.table([sealed], logs=[], cpu=[])


def test_runs_sealed_before_benchmark_files_take_their_step_times_from_their_log_or_fail(tmp_path):
    """run-9-x2 holds no benchmark files: its jobs come from its Snakemake log (the run's steps only, each bench set a
    job); a sealed run with neither benchmark files nor a log is refused, naming it."""
    run9 = ROOT / "data" / "nvidia-h200" / "run-9-x2"
    log = ROOT / "data" / "nvidia-h200" / "snakemake-logs" / "run-9-x2.log"
    t = step_times.table([run9], logs=[log], cpu=[])
    assert set(t.source) == {"snakemake log"} and t.max_rss_mb.isna().all()
    assert sorted(t[t.rule == "bench"].job) == sorted(["headline", "ablation", "bf16", "n_sweep", "qwen3", "tiles"])
    assert set(t.rule) == set(step_times.RUN_RULES) - {"gpu_check", "plan", "qwen3_e2e"}   # all after run-9-x2
    assert t.set_index("rule").seconds["profile"] == 78                 # 10:19:17 to 10:20:35 in the log
    bare = tmp_path / "run-x"
    (bare / "verify").mkdir(parents=True)
    (bare / "verify" / "correctness.csv").write_text("status\nok\n")
    checksums.write(bare)
    checksums.record(bare, tmp_path / "SEALS.csv")
    with pytest.raises(FileNotFoundError, match="run-x: no benchmark files sealed in it"):
        step_times.table([bare], logs=[], cpu=[])


def test_verdicts_follow_the_data(built, tmp_path):
    """C3 partly holds on the H200 (v3 is slower than v2, though it executes fewer instructions). Make v3 5% faster
    than v2 in a copy of the aggregated data: the same rules find that C3 holds, every component that does not read
    v3's time keeps its verdict, and the abstract's list of the claims that hold gains C3."""
    article = claims.Article(ARTICLE / "timings.csv", ARTICLE / "ncu.csv", ARTICLE / "claims.csv")

    def verdicts(agg):
        ours = claims.Ours(agg / "per_run.csv", agg / "ncu.csv", agg / "premise.csv", agg / "build.csv",
                           agg / "runs.csv")
        return claims.table(ARTICLE / "components.csv", article, ours)

    def said(agg):
        return step("paper/values/claims").values(agg / "claims.csv", agg / "slips.csv", agg / "claim_rules.csv",
                                                  agg / "per_run.csv", ARTICLE / "timings.csv").macros

    before = verdicts(AGG)
    assert set(before[before.claim == "C3"].claim_verdict) == {"partly"}
    copy = tmp_path / "aggregate"
    copy.mkdir()
    for name in ("per_run", "ncu", "premise", "build", "runs", "slips", "claim_rules"):
        shutil.copy(AGG / f"{name}.csv", copy)
    pr = pd.read_csv(copy / "per_run.csv")
    at = pr.headline & pr.article_tile
    for run in pr.run.unique():
        here = at & (pr.run == run)
        for col in ("time_us", "kernels_us"):                # v3's call is one kernel: both times move together
            pr.loc[here & (pr.variant == "v3"), col] = 0.95 * pr.loc[here & (pr.variant == "v2"), col].iloc[0]
    pr.to_csv(copy / "per_run.csv", index=False)
    after = verdicts(copy)
    assert set(after[after.claim == "C3"].claim_verdict) == {"holds"}
    untouched = ~(((before["from"] == "v3") | (before.to == "v3")) & (before.quantity == "time"))
    assert list(after[untouched].verdict) == list(before[untouched].verdict)
    after.to_csv(copy / "claims.csv", index=False)
    old, new = said(AGG), said(copy)
    assert "C3" not in old["ClaimsHold"] and "C3" in new["ClaimsHold"] and "C3" not in new["ClaimsPartly"]
    abstract = (ROOT / "paper" / "main.tex").read_text().split("\\end{abstract}")[0]
    assert "\\ClaimsHold" in abstract and "\\ClaimsPartly" in abstract and "\\ClaimsNotHold" in abstract


def test_c1_time_where_the_premise_holds_moves_in_every_run(built):
    """On the committed runs v1 beats v0 at N=16384 in every run, by less than the range over runs: the sign test
    finds it moved, so the article's "time does not move" does not hold there; the paper's list of the verdicts a
    range rule would have given otherwise names it, and C1 keeps its verdict from its other components."""
    c = pd.read_csv(AGG / "claims.csv").set_index("id")
    r = c.loc["c1-time-n16384"]
    assert r.runs >= claims.SIGN_TEST_MIN_RUNS and r.runs_below == r.runs and r.runs_above == 0
    assert r.noise > abs(r.ours) and bool(r.moved) and r.verdict == "does not hold"
    assert r.sign_p == pytest.approx(2 / 2 ** r.runs)
    said = step("paper/values/claims").values(AGG / "claims.csv", AGG / "slips.csv", AGG / "claim_rules.csv",
                                              AGG / "per_run.csv", ARTICLE / "timings.csv").macros
    assert "C1's time, v0 to v1 at $N=16384$ (now does not hold)" in said["RangeRuleFlips"]
    assert c.loc["c1-time"].verdict == "holds" and c.loc["c1-time", "claim_verdict"] == "partly"


@pytest.mark.parametrize("override, message", [
    ({"plan": {"tiles": {"variants": ["v7", "v9x"]}}}, "unknown variant 'v9x'"),
    ({"plan": {"qwen3": {"bad": {"H": 10, "H_kv": 4, "D": 128}}}}, "H=10 is not a multiple of H_kv=4"),
    ({"plan": {"qwen3": {"odd": {"H": 16, "H_kv": 8, "D": 96}}}}, "96"),
    ({"build": {"archs": [90], "arch": 89}}, "Additional properties are not allowed"),
    ({"plan": {"bench": {"rep_mss": 5}}}, "Additional properties are not allowed"),
    ({"plan": {"qwen3_e2e": {"stage": "v9x"}}}, "plan.qwen3_e2e.stage: unknown stage 'v9x'"),
    ({"plan": {"qwen3_e2e": {"models": ["7B"]}}}, "'7B' is not one of"),
    ({"plan": {"qwen3_e2e": {"layers": {"8B": 37}}}}, "is not valid under any of the given schemas"),
    ({"crosscheck_max_pct": float("nan")}, "crosscheck_max_pct: NaN is not a number"),
    ({"plan": {"bench": {"rep_ms": float("nan")}}}, "plan.bench.rep_ms: NaN is not a number"),
    ({"plan": {"timer_check_sleep_us": [0, float("inf")]}}, "plan.timer_check_sleep_us[1]: inf is not a setting"),
    ({"plan": {"bench": {"min_samples": 500}}}, "plan.bench.min_samples (500) is above plan.bench.max_samples (400)"),
    ({"plan": {"bench": {"host_min_calls": 60}}}, "plan.bench.host_min_calls (60) is above"),
    ({"plan": {"timer_check_sleep_us": [200, 1000]}}, "plan.timer_check_sleep_us ([200, 1000]) has no 0"),
    ({"crosscheck_waivers": [{"run": "run-15-x2", "variant": "v16x", "reason": "a reason long enough to count"}]},
     "crosscheck_waivers[0].variant: 'v16x' is neither a PyTorch implementation"),
    ({"crosscheck_waivers": [{"run": "run-15-x2", "variant": "v16", "reason": "a reason long enough to count"},
                             {"run": "run-15-x2", "variant": "v16", "reason": "a reason long enough to count"}]},
     "crosscheck_waivers[1]: run-15-x2 v16 is waived twice"),
])
def test_a_bad_plan_fails_in_the_dry_run(tmp_path, override, message):
    """Typos anywhere in the configuration, unknown variants and shapes the kernel cannot take fail when the
    pipeline is parsed, not inside a GPU job."""
    import yaml
    extra = tmp_path / "override.yaml"
    extra.write_text(yaml.safe_dump(override))
    proc = snakemake("-n", "--cores", "1", "--configfile", "config/config.yaml", str(extra))
    assert proc.returncode != 0 and message in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-1500:]


def test_the_slurm_profile_refuses_its_placeholders():
    proc = snakemake("-n", "--profile", "profiles/slurm")
    assert proc.returncode != 0 and "CHANGE-ME placeholders" in proc.stdout + proc.stderr
    proc = snakemake("-n", "--profile", "profiles/slurm", "--default-resources", "slurm_partition=p",
                     "slurm_account=a", "runtime=30", "mem_mb=2000", "cpus_per_task=1")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-1500:]


NEW_SWITCH = ('        Switch("registered_only", "v99", "a switch that changes nothing: a stage registered and not yet '
              'measured", ""),\n')


def with_a_new_stage(copy: Path) -> Path:
    """A copy of the tree with one more stage registered (one more switch at the end of kernels.stages.BEYOND, which
    changes no kernel) and its prediction committed, and nothing measured of it; this build's results beside it, so
    that only what reads the data runs again. The committed runs are read where they are, through a link."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        if not f.startswith("data/nvidia-h200/"):
            (copy / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, copy / f)
    (copy / "data" / "nvidia-h200").symlink_to(ROOT / "data" / "nvidia-h200")
    (copy / ".git").symlink_to(ROOT / ".git")                    # the history the provenance test reads
    stages = copy / "kernels" / "stages.py"
    text = stages.read_text()
    end = text.index("    )\n}", text.index("GLUON: Mapping"))         # the registry's last mapping of stages
    stages.write_text(text[:end] + NEW_SWITCH.replace("v99", f"v{len(STAGES_NOW)}") + text[end:])
    pred = copy / "data" / "predictions" / "stages.csv"
    pred.write_text(pred.read_text() + f"v{len(STAGES_NOW)},registered_only,{list(STAGES_NOW)[-1]},time,1024,float16,"
                                       f"-5,5,a test of the pipeline,the switch changes nothing\n")
    for f in (stages, pred):                                     # older than this build's results
        os.utime(f, ns=(os.stat(ROOT / f.relative_to(copy)).st_atime_ns, os.stat(ROOT / f.relative_to(copy)).st_mtime_ns))
    for built in [*(ROOT / "results" / "build").glob("sm_*/build.csv"), ROOT / "results" / "verify" / "cpu" /
                  "correctness.csv", *(ROOT / "benchmarks").glob("build_variants/*.tsv"),
                  ROOT / "benchmarks" / "verify_cpu.tsv"]:
        (copy / built.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(built, copy / built.relative_to(ROOT))         # newer than every source: nothing to rebuild
    return copy


def test_a_registered_stage_that_is_not_measured_leaves_the_tree_green(built, tmp_path):
    """Register a stage, commit its prediction, measure nothing: the paper still builds from the data (everything
    downstream of the data is made again; the new stage is in no table of measurements, and its prediction is 'not
    measured'), and the tests that hold the registry against the committed data still pass."""
    copy = with_a_new_stage(tmp_path / "tree")
    new = f"v{len(STAGES_NOW)}"
    env = {**ENV, "PYTHONPATH": str(copy)}
    check = subprocess.run([sys.executable, "-c", "from kernels.stages import LAST; print(LAST)"], cwd=copy, env=env,
                           capture_output=True, text=True)
    assert check.stdout.strip() == new, check.stderr
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--rerun-triggers", "mtime",
                           "--forcerun", "aggregate"], cwd=copy, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "rule build_variants" not in proc.stdout + proc.stderr        # only what reads the data ran again
    pred = pd.read_csv(copy / "results" / "aggregate" / "predictions.csv")
    assert list(pred[pred.stage == new].verdict) == ["not measured"]
    assert new not in set(pd.read_csv(copy / "results" / "aggregate" / "ours_stages.csv").stage)
    text = subprocess.run(["pdftotext", "-layout", str(copy / "results" / "paper.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert re.search(rf"^ *{new} +{list(STAGES_NOW)[-1]} +time +1024 .*not measured", text, re.M)
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_ours.py",
                            "tests/test_stages.py", "tests/test_measure.py", "tests/test_claims.py"], cwd=copy,
                           env={**env, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=1800)
    assert tests.returncode == 0, tests.stdout[-4000:]


VALUES = ROOT / "workflow" / "scripts" / "paper" / "values"


def made_values() -> tuple:
    """(literal macros, keyed values) the values steps wrote: name -> file, (table, row, column) -> file."""
    literal, keyed = {}, {}
    for f in (ROOT / "results" / "paper" / "values").glob("*.tex"):
        text = f.read_text()
        literal.update({n: f.stem for n in re.findall(r"^\\newcommand\{\\(\w+)\}", text, re.M)})
        keyed.update({k: f.stem for k in re.findall(r"^\\defval\{([^}]*)\}\{([^}]*)\}\{([^}]*)\}", text, re.M)})
    return literal, keyed


def test_every_number_of_the_text_is_found_where_it_is_made_and_every_one_made_is_quoted(built):
    """Each macro the paper quotes is written literally in the values step that makes it; each \\val{table}{row}{column}
    names a table and a column written literally in the step that makes it (the row is the data's: a stage, an N);
    nothing is made that the text does not quote."""
    tex = re.sub(r"(?<!\\)%.*", "", (ROOT / "paper" / "main.tex").read_text())     # the text, not its comments
    literal, keyed = made_values()
    assert len(literal) > 100 and len(keyed) > 100
    quoted = set(re.findall(r"\\([A-Za-z]+)", tex)) & set(literal)
    for name in quoted:
        source = (VALUES / f"{literal[name]}.py").read_text()
        assert f'"{name}"' in source, f"\\{name} is not written as a literal in values/{literal[name]}.py"
    uses = set(re.findall(r"\\val\{([^}]*)\}\{([^}]*)\}\{([^}]*)\}", tex))
    assert uses and uses <= set(keyed), f"quoted but never made: {sorted(uses - set(keyed))}"
    for table, _, column in uses:
        source = (VALUES / f"{keyed[(table, _, column)]}.py").read_text()
        assert re.search(rf'put\("{table}",', source) and f'"{column}"' in source, (table, column)
    assert set(literal) == quoted, f"macros made that the text never quotes: {sorted(set(literal) - quoted)}"
    unquoted = {(t, c) for t, _, c in keyed} - {(t, c) for t, _, c in uses}
    assert not unquoted, f"keyed values made that the text never quotes: {sorted(unquoted)}"


def test_the_verify_step_ran_every_stage_at_every_length(built):
    """The pipeline's verify_cpu step (the build's own correctness check in the interpreter) holds every registered
    Triton stage at each length of config verify_cpu.N, causal and not, and none is wrong (the Gluon stages do not run
    in the interpreter: the GPU verify step checks them)."""
    import yaml
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    c = pd.read_csv(ROOT / "results" / "verify" / "cpu" / "correctness.csv")
    assert set(c.status) == {"ok"}, c[c.status != "ok"].to_string()
    held = set(zip(c.variant, c.N, c.causal))
    from kernels.stages import TRITON_STAGES
    assert held == {(s, n, causal) for s in TRITON_STAGES for n in config["verify_cpu"]["N"] for causal in (True, False)}
    from kernels.accuracy import PYTORCH_FACTOR, UNIT_ROUNDOFF
    floor = UNIT_ROUNDOFF[torch.float16] / 4                  # the bound: twice PyTorch's own error on the inputs
    assert (c.tolerance - PYTORCH_FACTOR * c.torch_default_rel_error.clip(lower=floor)).abs().max() < 1e-12


STEPS = ROOT / "workflow" / "scripts"


def test_no_step_imports_another_step_and_none_reads_a_path_of_its_own():
    """The house rule: a step imports kernels, the library and third-party packages, never another step; and a step
    reads what its rule gives it (snakemake.input, or the command line the rule writes), naming no path of the tree
    itself, so that every file it reads is an input of its rule."""
    import ast
    scripts = sorted(STEPS.rglob("*.py"))
    names = {p.stem for p in scripts}
    assert len(scripts) > 30
    for script in scripts:
        tree = ast.parse(script.read_text())
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not imported & names, f"{script.relative_to(ROOT)} imports the step(s) {sorted(imported & names)}"
        literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        own = [x for x in literals if x.startswith(("results/", "data/", "kernels/", "paper/", "config/"))]
        assert not own or script.parent.name == "tools", f"{script.relative_to(ROOT)} names paths itself: {own}"


def test_the_default_stage_per_gpu_is_what_the_data_chooses(built, tmp_path):
    """kernels/default_stages.csv is what choose_default.py derives from the committed runs' aggregates of the sm_90
    GPUs (each GPU's leading stage, its Gluon leader where it leads; between GPUs, the one faster on every GPU that
    timed both; verified in the runs' GPU grids), so the default a user gets cannot drift from the data."""
    from steps import step
    choose = step("tools/choose_default")
    out = tmp_path / "default_stages.csv"
    h100 = ROOT / "results" / "gpus" / "nvidia-h100-80gb-hbm3" / "aggregate"     # built with the paper's appendix
    gpus = [["--gpu", name, str(a / "leader.csv"), str(a / "correctness.csv"), str(a / "gluon_leader.csv")]
            for name, a in (("nvidia-h200", AGG), ("nvidia-h100-80gb-hbm3", h100))]
    choose.main([*gpus[0], *gpus[1], "--arch", "90", "--out", str(out)])
    assert out.read_text() == (ROOT / "kernels" / "default_stages.csv").read_text()


def test_the_default_is_refused_between_stages_no_gpu_timed_together(tmp_path):
    """Two GPUs whose Gluon leaders never ran on one GPU: no default is chosen, rather than one from ratios of two
    GPUs; once one GPU has timed both, the faster there is chosen."""
    from steps import step
    choose = step("tools/choose_default")
    header = "stage,geomean_x_cudnn,points,runs,leader\n"

    def gpu(name: str, gluon_rows: str):
        (tmp_path / f"{name}-leader.csv").write_text(header + "v13,1.09,12,1,True\n")
        (tmp_path / f"{name}-gluon.csv").write_text(header + gluon_rows)
        (tmp_path / f"{name}-correctness.csv").write_text("run,variant,status\nrun-1,v35,ok\nrun-2,v38,ok\n")
        return choose.Gpu(name, *(tmp_path / f"{name}-{f}.csv" for f in ("leader", "correctness", "gluon")))

    a = gpu("gpu-a", "v35,0.84,12,1,True\n")
    with pytest.raises(ValueError, match="never ran at every point on one GPU"):
        choose.choose([a, gpu("gpu-b", "v38,0.82,12,1,True\n")], 90)
    picked = choose.choose([a, gpu("gpu-b", "v38,0.82,12,1,True\nv35,0.85,12,1,False\n")], 90)
    assert picked.stage.iloc[0] == "v38" and "faster than v35" in picked.basis.iloc[0]
    with pytest.raises(ValueError, match="no single stage faster"):   # each faster on its own GPU: no choice
        choose.choose([gpu("gpu-a", "v35,0.84,12,1,True\nv38,0.86,12,1,False\n"),
                       gpu("gpu-b", "v38,0.82,12,1,True\nv35,0.85,12,1,False\n")], 90)
