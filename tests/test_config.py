"""What the config's schema cannot check (pipeline/config_check.py): a key given twice, numbers that are not finite,
pairs of bounds, nested --config values, cross-check waivers. Each is refused naming its key and the fix; the
pipeline's own dry runs of the same cases are in tests/test_pipeline.py."""
import copy
import math
from pathlib import Path

import pytest
import yaml

from pipeline import config_check
from pipeline import plan as bench_plan

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = config_check.load_schema(ROOT / "config" / "schema.yaml")
CONFIG = config_check.load_yaml(ROOT / "config" / "config.yaml")
DATA = ROOT / "data" / "nvidia-h200"
TORCH = SCHEMA["properties"]["plan"]["properties"]["torch_impls"]["items"]["enum"]


def test_the_shipped_config_files_and_every_runs_plan_hold_no_key_twice():
    for path in [*sorted((ROOT / "config").glob("*.yaml")), *sorted(DATA.glob("run-*/plan.yaml"))]:
        assert config_check.load_yaml(path) == yaml.safe_load(path.read_text()), path


@pytest.mark.parametrize("text, key, line, first", [
    ("gpu: a\nmeasure: false\ngpu: b\n", "gpu", 3, 1),
    ("plan:\n  bench: {rep_ms: 5, min_samples: 2, rep_ms: 6}\n", "plan.bench.rep_ms", 2, 2),
    ("plan:\n  bench:\n    rep_ms: 5\n  repeats: {}\n  bench:\n    rep_ms: 6\n", "plan.bench", 5, 2),
    ("crosscheck_waivers:\n  - {run: run-1, variant: v1,\n     run: run-2}\n", "crosscheck_waivers[0].run", 3, 2),
])
def test_a_key_given_twice_is_refused_naming_file_key_and_lines(tmp_path, text, key, line, first):
    """YAML keeps the last of a key given twice, silently (and so do PyYAML and Snakemake's loader)."""
    path = tmp_path / "config.yaml"
    path.write_text(text)
    assert isinstance(yaml.safe_load(text), dict)   # what every loader did: the last one wins
    with pytest.raises(config_check.DuplicateKeyError) as err:
        config_check.load_yaml(path)
    assert str(err.value) == (f"{path}, line {line}: the key {key} is given twice (first at line {first}); YAML keeps "
                              f"the last one silently: keep one of them")


def test_anchors_and_merge_keys_are_not_duplicates():
    text = "base: &b {H: 16, D: 128}\nqwen3:\n  one: {<<: *b, H_kv: 8}\n  two: *b\n"
    assert config_check.load_yaml_text(text, "x")["qwen3"]["one"] == {"H": 16, "D": 128, "H_kv": 8}


def test_a_runs_plan_with_a_key_twice_is_refused_where_the_gpu_steps_read_it(tmp_path):
    """plan.load_config reads the plan of every GPU step (a run's plan.yaml) and of the tools."""
    path = tmp_path / "plan.yaml"
    text = (ROOT / "config" / "config.yaml").read_text()
    path.write_text(text.replace("  repeats: {", "  n_sweep: [512]\n  repeats: {", 1))
    with pytest.raises(config_check.DuplicateKeyError, match=r"line \d+: the key plan.n_sweep is given twice"):
        bench_plan.load_config(path)


@pytest.mark.parametrize("path, value, message", [
    (("crosscheck_max_pct",), math.nan, "crosscheck_max_pct: NaN is not a number (it passes every bound of "
                                        "config/schema.yaml, and fails only where it is used); give a finite number > "
                                        "0 and <= 50"),
    (("plan", "bench", "rep_ms"), math.nan, "plan.bench.rep_ms: NaN is not a number"),
    (("plan", "bench", "rep_ms"), math.inf, "plan.bench.rep_ms: inf is not a setting this key can take; give a finite "
                                            "number > 0"),
    (("plan", "bench", "settle_max_s"), math.inf, "plan.bench.settle_max_s: inf is not a setting this key can take; "
                                                  "give a finite number >= 0"),
    (("plan", "timer_check_sleep_us", 1), math.nan, r"plan.timer_check_sleep_us[1]: NaN"),
    (("plan", "bench", "min_samples"), math.nan, "plan.bench.min_samples: NaN is not a number"),
])
def test_a_number_that_is_not_finite_is_refused_naming_its_key(path, value, message):
    """NaN passes every bound of a JSON schema (each comparison with it is false): the config's schema accepts it."""
    import jsonschema
    cfg = copy.deepcopy(CONFIG)
    part = cfg
    for k in path[:-1]:
        part = part[k]
    part[path[-1]] = value
    if path[-1] != "min_samples":       # an integer: the schema's type refuses NaN; the others it lets through
        jsonschema.validate(cfg, SCHEMA)
    with pytest.raises(config_check.ConfigError) as err:
        config_check.check_numbers(cfg, SCHEMA)
    assert str(err.value).startswith(message), str(err.value)


def test_infinity_is_refused_only_where_the_schema_bounds_the_number():
    schema = {"type": "object", "properties": {"free": {"type": "number"}, "low": {"type": "number", "minimum": 0}}}
    config_check.check_numbers({"free": math.inf}, schema)
    with pytest.raises(config_check.ConfigError, match=r"low: inf .* give a finite number >= 0"):
        config_check.check_numbers({"low": math.inf}, schema)
    with pytest.raises(config_check.ConfigError, match="free: NaN"):
        config_check.check_numbers({"free": math.nan}, schema)


def numeric_nodes(node, path="plan"):
    """Every number or integer of the schema below `node`, with its path."""
    if not isinstance(node, dict):
        return
    types = node.get("type", [])
    if {"number", "integer"} & set([types] if isinstance(types, str) else types):
        yield path, node
    for k, sub in node.get("properties", {}).items():
        yield from numeric_nodes(sub, f"{path}.{k}")
    for k in ("items", "additionalProperties"):
        yield from numeric_nodes(node.get(k), f"{path}[]" if k == "items" else f"{path}.*")
    for k in ("oneOf", "anyOf", "allOf"):
        for sub in node.get(k, []):
            yield from numeric_nodes(sub, path)


def test_every_number_of_the_plan_is_bounded_so_a_runs_plan_is_checked_without_the_schema():
    """plan.load_config (a GPU step's plan.yaml) refuses infinity everywhere, reading no schema (a step reads only
    the files its rule names): the same as the parse-time check as long as the schema bounds every number."""
    nodes = list(numeric_nodes(SCHEMA["properties"]["plan"]))
    assert len(nodes) > 30
    unbounded = [p for p, n in nodes if not set(n) & set(config_check.BOUNDS) and "enum" not in n]
    assert not unbounded, f"numbers of the plan without a bound (plan.load_config refuses inf there): {unbounded}"


def test_a_runs_plan_with_nan_is_refused_where_the_gpu_steps_read_it(tmp_path):
    path = tmp_path / "plan.yaml"
    plan = copy.deepcopy(CONFIG["plan"])
    plan["bench"]["rep_ms"] = math.nan
    path.write_text(yaml.safe_dump({"plan": plan}))
    with pytest.raises(config_check.ConfigError, match=f"{path}: plan.bench.rep_ms: NaN is not a number"):
        bench_plan.load_config(path)


@pytest.mark.parametrize("change, message", [
    ({"min_samples": 500}, "plan.bench.min_samples (500) is above plan.bench.max_samples (400): the kernel timer takes "
                           "between min_samples and max_samples samples; make min_samples <= max_samples"),
    ({"host_min_calls": 60}, "plan.bench.host_min_calls (60) is above plan.bench.host_max_calls (50): a host-time loop "
                             "makes between host_min_calls and host_max_calls calls; make host_min_calls <= "
                             "host_max_calls"),
])
def test_a_pair_of_bounds_the_wrong_way_round_is_refused_at_parse_time(change, message):
    """Each bound alone is within the schema; together they failed only inside a GPU job (kernel_timer.samples_for)."""
    plan = copy.deepcopy(CONFIG["plan"])
    plan["bench"].update(change)
    with pytest.raises(config_check.ConfigError) as err:
        bench_plan.check_plan(plan)
    assert str(err.value) == message
    plan["bench"]["max_samples"] = plan["bench"]["min_samples"] = plan["bench"]["host_min_calls"] = 60
    plan["bench"]["host_max_calls"] = 60
    bench_plan.check_plan(plan)         # equal bounds are fine


def test_a_timer_check_without_the_sleep_of_zero_is_refused():
    """The aggregate step compares each sleep's kernel time with the time without one: a plan without 0 failed
    there, after the GPU run."""
    plan = copy.deepcopy(CONFIG["plan"])
    plan["timer_check_sleep_us"] = [200, 1000]
    with pytest.raises(config_check.ConfigError, match=r"plan.timer_check_sleep_us \(\[200, 1000\]\) has no 0: .* "
                                                       r"add 0"):
        bench_plan.check_plan(plan)


def snakemake_reads(config_args, config=None):
    """The config as Snakemake 9 makes it from --config arguments (its own parser, merged as it merges them)."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config
    config = copy.deepcopy(CONFIG if config is None else config)
    update_config(config, parse_config(config_args))
    return config


def test_snakemake_reads_a_nested_config_value_as_strings():
    """What apply_overrides is for: every leaf of a nested --config value arrives as a string."""
    cfg = snakemake_reads(["plan={bench: {rep_ms: 40}}", "build={archs: [90]}"])
    assert cfg["plan"]["bench"]["rep_ms"] == "40" and cfg["build"]["archs"] == ["90"]


@pytest.mark.parametrize("args, expect", [
    (["plan={bench: {rep_ms: 40, settle_tol_pct: .5}}"], {("plan", "bench", "rep_ms"): 40,
                                                          ("plan", "bench", "settle_tol_pct"): 0.5,
                                                          ("plan", "bench", "min_samples"): 25}),
    (["build={archs: [90]}"], {("build", "archs"): [90], ("build", "variants"): "all"}),
    (["plan={bench.rep_ms: 40, bench.min_samples: 30, repeats.tiles: 2}"],
     {("plan", "bench", "rep_ms"): 40, ("plan", "bench", "min_samples"): 30, ("plan", "repeats", "tiles"): 2,
      ("plan", "bench", "max_samples"): 400, ("plan", "repeats", "headline"): 5}),
    (["plan={qwen3_e2e: {layers: {0.6B: 2}, graphs: off}, qwen3: {Qwen3-1.5B: {H: 8, H_kv: 8, D: 64}}}"],
     {("plan", "qwen3_e2e", "layers"): {"0.6B": 2, "32B": 2}, ("plan", "qwen3_e2e", "graphs"): False,
      ("plan", "qwen3", "Qwen3-1.5B"): {"H": 8, "H_kv": 8, "D": 64}}),
    (["plan={qwen3_e2e: null}"], {("plan", "qwen3_e2e"): None}),
    (["measure=True", "run=run-x", "crosscheck_max_pct=7.5"], {("measure",): True, ("run",): "run-x",
                                                               ("crosscheck_max_pct",): 7.5}),
    (["measure=yes"], {("measure",): "yes"}),      # a scalar stays as Snakemake read it: the schema refuses it
    (["plan={bench: {rep_ms: 30}}", "plan={bench: {rep_ms: 40}}"], {("plan", "bench", "rep_ms"): 40}),
])
def test_a_nested_config_value_is_read_as_yaml_with_dotted_keys_as_paths(args, expect):
    import jsonschema
    cfg = config_check.apply_overrides(snakemake_reads(args), args, SCHEMA)
    for path, value in expect.items():
        part = cfg
        for k in path:
            part = part[k]
        assert part == value and type(part) is type(value), (path, part)
    assert not any("." in k for k in cfg["plan"] if k not in cfg["plan"].get("qwen3", {}))
    if args != ["measure=yes"]:
        jsonschema.validate(cfg, SCHEMA)


@pytest.mark.parametrize("arg, message", [
    ("plan={bench: {rep_ms: 40, rep_ms: 50}}", "--config plan={bench: {rep_ms: 40, rep_ms: 50}}, line 1: the key "
                                               "bench.rep_ms is given twice"),
    ("plan={bench.rep_ms: 40, bench: {rep_ms: 50}}", "bench.rep_ms is given twice"),
])
def test_a_key_given_twice_in_a_config_value_is_refused(arg, message):
    with pytest.raises(config_check.ConfigError, match=message.replace("{", r"\{").replace("}", r"\}")):
        config_check.apply_overrides(snakemake_reads([arg]), [arg], SCHEMA)


def profiled_runs():
    return {p.name: config_check.run_profiled(p) for p in DATA.glob("run-*") if p.is_dir()}


def other_gpus_runs() -> dict:
    """The committed runs of every GPU folder but the H200's, as check_waivers takes them: slug -> (run name -> what
    it profiled, folder)."""
    return {g.name: ({p.name: config_check.run_profiled(p) for p in g.glob("run-*") if p.is_dir()}, f"data/{g.name}")
            for g in sorted((ROOT / "data").iterdir()) if g != DATA and g.is_dir() and any(g.glob("run-*"))}


def test_the_shipped_waivers_name_profiled_entries_and_every_run_says_what_it_profiled():
    runs = profiled_runs()
    config_check.check_waivers(CONFIG["crosscheck_waivers"], runs, "data/nvidia-h200", TORCH, other_gpus_runs())
    assert len(runs) >= 12 and all(runs.values()), [r for r, v in runs.items() if not v]
    assert {"v0", "v7", "torch-cudnn"} <= runs["run-6-x2"]      # sealed before plan.yaml: its Nsight durations


@pytest.mark.parametrize("waiver, message", [
    ({"run": "run-15-x3", "variant": "v16"}, "crosscheck_waivers[0].run: 'run-15-x3' is not a run of data/nvidia-h200 "
                                             "(the runs: run-6-x2, run-7-x2"),
    ({"run": "run-15-x2", "variant": "v99"}, "crosscheck_waivers[0].variant: 'v99' is neither a PyTorch "
                                             "implementation"),
    ({"run": "run-15-x2", "variant": "torch-flsh"}, "'torch-flsh' is neither a PyTorch implementation"),
    ({"run": "run-15-x2", "variant": "v12"}, "crosscheck_waivers[0].variant: 'v12' was not profiled in run-15-x2 (its "
                                             "plan profiles torch-cudnn, torch-default, torch-flash, v0, v1, v2,"),
    ({"run": "run-6-x2", "variant": "v16"}, "'v16' was not profiled in run-6-x2"),
])
def test_a_waiver_of_no_profiled_entry_is_refused_when_the_pipeline_is_parsed(waiver, message):
    """A typo in a waiver failed only at the aggregate step, after a GPU run."""
    waiver = {**waiver, "reason": "a reason long enough to say something"}
    with pytest.raises(config_check.ConfigError) as err:
        config_check.check_waivers([waiver], profiled_runs(), "data/nvidia-h200", TORCH)
    assert message in str(err.value) and ("remove the waiver" in str(err.value) or "remove it" in str(err.value))


def test_a_waiver_given_twice_is_refused_and_the_new_runs_plan_is_its_plan():
    w = {"run": "run-new", "variant": "v7", "reason": "a reason long enough to say something"}
    runs = {"run-new": config_check.plan_profiled(CONFIG["plan"])}
    config_check.check_waivers([w], runs, "data/x", TORCH)
    with pytest.raises(config_check.ConfigError, match=r"crosscheck_waivers\[1\]: run-new v7 is waived twice \(also "
                                                       r"crosscheck_waivers\[0\]\): keep one"):
        config_check.check_waivers([w, w], runs, "data/x", TORCH)
    with pytest.raises(config_check.ConfigError, match="'v12' was not profiled in run-new"):
        config_check.check_waivers([{**w, "variant": "v12"}], runs, "data/x", TORCH)


def test_a_waiver_names_its_gpu_and_is_checked_against_that_gpus_runs():
    """A waiver's gpu names the folder of its run: the config gpu's (or no gpu at all), or another GPU's with runs
    (read apart, for the paper's appendix), whose runs it is checked against; a GPU with no runs is refused. The
    shipped waivers each name their GPU (the H200's or another with committed runs), so that they hold also where the
    paper is built from another GPU's runs."""
    assert {w.get("gpu") for w in CONFIG["crosscheck_waivers"]} == {"nvidia-h200", *other_gpus_runs()}
    h200 = profiled_runs()
    other = {"run-1": config_check.plan_profiled(CONFIG["plan"])}
    waiver = {"run": "run-15-x2", "variant": "v16", "reason": "a reason long enough to say something"}
    # the paper built from another GPU's runs: the H200's waiver is checked against the H200's folder
    config_check.check_waivers([{**waiver, "gpu": "nvidia-h200"}], other, "data/nvidia-a100",
                               TORCH, {"nvidia-h200": (h200, "data/nvidia-h200")})
    with pytest.raises(config_check.ConfigError, match=r"crosscheck_waivers\[0\]\.run: 'run-15-x2' is not a run of "
                                                       r"data/nvidia-a100 \(the runs: run-1\)"):
        config_check.check_waivers([waiver], other, "data/nvidia-a100", TORCH,
                                   {"nvidia-h200": (h200, "data/nvidia-h200")})
    with pytest.raises(config_check.ConfigError, match=r"crosscheck_waivers\[0\]\.gpu: 'nvidia-a10' is neither the "
                                                       r"config gpu \(nvidia-h200\) nor another GPU with runs"):
        config_check.check_waivers([{**waiver, "gpu": "nvidia-a10"}], h200, "data/nvidia-h200", TORCH)
    # one run name in two GPUs' folders: a waiver of each is no duplicate, two of one GPU are
    both = [{**waiver, "gpu": "nvidia-h200"}, {**waiver, "run": "run-1", "gpu": "nvidia-a100"}]
    config_check.check_waivers(both, h200, "data/nvidia-h200", TORCH, {"nvidia-a100": (
        {"run-1": {"v16"}}, "data/nvidia-a100")})
    with pytest.raises(config_check.ConfigError, match=r"crosscheck_waivers\[1\]: run-15-x2 v16 is waived twice"):
        config_check.check_waivers([waiver, {**waiver, "gpu": "nvidia-h200"}], h200, "data/nvidia-h200", TORCH)


def test_the_shipped_plan_profiles_every_gluon_stage_at_the_headline_and_at_every_n():
    """Every registered Gluon stage is in both Nsight lists of the shipped plan (the headline profile and the
    long-sequence one at every N of the sweep), so that a run cross-checks each timed Gluon stage against Nsight at
    each N it is quoted at: run-26's plan, written before v29 joined the lists, left v29 unprofiled."""
    from kernels.stages import GLUON_STAGES
    profile = CONFIG["plan"]["profile"]
    for name, variants in (("plan.profile.variants", profile["variants"]),
                           ("plan.profile.large_n.variants", profile["large_n"]["variants"])):
        missing = [s for s in GLUON_STAGES if s not in variants]
        assert not missing, f"config/config.yaml {name} lacks {missing}: add them, or no run will profile them"
