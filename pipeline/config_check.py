"""The checks of the pipeline's configuration that its schema (config/schema.yaml) cannot make, run when the pipeline
is parsed (workflow/rules/common.smk) and wherever a config or a run's plan.yaml is read (plan.load_config), so that
a slip fails at once, naming its key and the fix, not inside a GPU job or at the aggregate step:

- duplicate keys: YAML (and Snakemake's loader) keeps the last of a key given twice, silently; load_yaml refuses it,
  naming the file, the key and both lines (keys compared as the dict YAML builds compares them: 16, 0x10 and 16.0
  are one, and 1 and true); and a plain value such as 1:30, a base-60 number to YAML 1.1 (90), or 050, an octal
  one (40);
- numbers that are not finite: NaN passes every bound of a JSON schema (each comparison with it is false), and
  infinity passes a lower bound; check_numbers refuses NaN everywhere and infinity wherever the schema bounds the
  number;
- pairs of bounds: plan.bench's min_samples <= max_samples and host_min_calls <= host_max_calls, and the timer
  check's sleep of 0 that every other sleep is compared with (check_bounds);
- nested --config values: Snakemake reads `--config plan='{bench: {rep_ms: 50}}'` with YAML's base loader, every
  leaf a string; apply_overrides reads them again as YAML (duplicate keys refused), with dotted keys inside them
  (`plan='{bench.rep_ms: 50}'`) taken as paths;
- cross-check waivers: each must name a run the paper is built from and an entry that run's plan profiled
  (check_waivers).

Needs PyYAML; kernels (for the variants' names) only in check_waivers.
"""
from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import yaml

BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


class ConfigError(ValueError):
    """A setting of the pipeline's configuration that is refused, with its key and the fix."""


class DuplicateKeyError(ConfigError):
    """A key given twice in one mapping of a YAML document."""


# ---------------------------------------------------------------------------------------------------- duplicate keys

def _key_path(parent: str, key) -> str:
    return f"{parent}.{key}" if parent else str(key)


def _key_value(key_node) -> tuple:
    """A scalar key as YAML constructs it, compared as the dict it goes into compares keys: 16, 0x10, 16.0 are one
    key, and 1 and true; '16' (a string) another."""
    try:
        value = yaml.constructor.SafeConstructor().construct_object(key_node)
    except yaml.YAMLError:
        return (key_node.tag, key_node.value)
    return value         # as a dict holds it: 1 and true, 16 and 16.0 are one key there (equal, the same hash)


SEXAGESIMAL = re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?")


def _refuse_sexagesimal(node, name: str, path: str) -> None:
    """A plain scalar such as 1:30, which YAML 1.1 (PyYAML) reads as a base-60 number (90): refused, naming it."""
    if (isinstance(node, yaml.ScalarNode) and node.style is None and SEXAGESIMAL.fullmatch(node.value)
            and node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")):
        value = yaml.constructor.SafeConstructor().construct_object(node)
        raise ConfigError(f"{name}, line {node.start_mark.line + 1}: {path}: {node.value} is read by YAML 1.1 as a "
                          f"base-60 number ({value}), not a time: write the number itself (e.g. {value})")


OCTAL = re.compile(r"[-+]?0[0-7_]+")


def _refuse_octal(node, name: str, path: str) -> None:
    """A plain scalar such as 050, which YAML 1.1 (PyYAML) reads as an octal number (40): refused, naming it."""
    if (isinstance(node, yaml.ScalarNode) and node.style is None and OCTAL.fullmatch(node.value)
            and node.tag == "tag:yaml.org,2002:int"):
        value = yaml.constructor.SafeConstructor().construct_object(node)
        decimal = node.value.replace("_", "").lstrip("+-").lstrip("0") or "0"
        raise ConfigError(f"{name}, line {node.start_mark.line + 1}: {path}: {node.value} is read by YAML 1.1 as an "
                          f"octal number ({value}), for its leading zero: write {decimal} (no leading zero) if you "
                          f"mean {decimal}, or {value}")


def _refuse_duplicates(node, name: str, parent: str = "", seen=None) -> None:
    """Walk a composed YAML node tree: a mapping that holds one scalar key twice raises, naming both lines."""
    seen = set() if seen is None else seen
    if id(node) in seen:            # an alias: its anchor's node was walked already
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                ident = _key_value(key_node)          # 16 and 0x10 are one key (the int 16)
                path = _key_path(parent, key_node.value)
                line = key_node.start_mark.line + 1
                if ident in first:
                    raise DuplicateKeyError(
                        f"{name}, line {line}: the key {path} is given twice (first at line {first[ident]}); YAML "
                        f"keeps the last one silently: keep one of them")
                first[ident] = line
                _refuse_octal(key_node, name, path)
                _refuse_sexagesimal(value_node, name, path)
                _refuse_octal(value_node, name, path)
                _refuse_duplicates(value_node, name, path, seen)
            else:
                _refuse_duplicates(value_node, name, parent, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _refuse_octal(item, name, f"{parent}[{i}]")
            _refuse_duplicates(item, name, f"{parent}[{i}]", seen)


def load_yaml_text(text: str, name: str):
    """One YAML document (PyYAML's safe loader) whose mappings hold no key twice; `name` (a file, a --config
    argument) is what an error names."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _refuse_duplicates(node, name)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load_yaml(path) -> object:
    """A YAML file, read as load_yaml_text reads it (a key given twice is refused)."""
    return load_yaml_text(Path(path).read_text(), str(path))


def check_files(paths) -> None:
    """Each config file Snakemake read (its configfile: directive's and every --configfile), read again here: its
    own loader keeps the last of a duplicate key silently."""
    for path in dict.fromkeys(Path(p).resolve() for p in paths):
        if path.exists():
            load_yaml(path)


def load_schema(path) -> dict:
    """The config's JSON schema (config/schema.yaml), read as every config file is."""
    return load_yaml(path)


# ------------------------------------------------------------------------------------------------- schema walking

def _branches(node) -> list:
    """A schema node with its oneOf / anyOf / allOf branches, flattened."""
    if not isinstance(node, dict):
        return []
    out = [node]
    for k in ("oneOf", "anyOf", "allOf"):
        for b in node.get(k, []):
            out += _branches(b)
    return out


def _child(nodes: list, key) -> list:
    """The schema nodes that may describe the value at `key` of a mapping (a str) or at an index of a list (an int)."""
    out = []
    for n in nodes:
        if isinstance(key, int):
            items = n.get("items")
            if isinstance(items, dict):
                out += _branches(items)
        elif key in n.get("properties", {}):
            out += _branches(n["properties"][key])
        elif isinstance(n.get("additionalProperties"), dict):
            out += _branches(n["additionalProperties"])
    return out


def _bounds(nodes: list) -> str:
    return " and ".join(f"{op} {n[k]:g}" for n in nodes for k, op in BOUNDS.items() if k in n)


def check_numbers(value, schema: dict | None = None, path: str = "") -> None:
    """Refuse NaN anywhere in `value` (a config, or a part of one at `path`), and infinity wherever `schema` bounds
    that number (everywhere without a schema). A schema's bounds never refuse NaN: every comparison with it is false."""
    _check_numbers(value, _branches(schema) if schema is not None else None, path)


def _check_numbers(value, nodes, path):
    if isinstance(value, dict):
        for k, v in value.items():
            _check_numbers(v, None if nodes is None else _child(nodes, k), _key_path(path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_numbers(v, None if nodes is None else _child(nodes, i), f"{path}[{i}]")
    elif isinstance(value, float) and not math.isfinite(value):
        bounds = _bounds(nodes or [])
        want = f"a finite number {bounds}" if bounds else "a finite number"
        if math.isnan(value):
            raise ConfigError(f"{path}: NaN is not a number (it passes every bound of config/schema.yaml, and fails "
                              f"only where it is used); give {want}")
        if nodes is None or bounds:
            raise ConfigError(f"{path}: {value} is not a setting this key can take; give {want}")


# ------------------------------------------------------------------------------------------------ pairs of bounds

# (section, lower key, upper key, what the pair bounds)
PAIRS = [
    ("plan.bench", "min_samples", "max_samples", "the kernel timer takes between min_samples and max_samples samples"),
    ("plan.bench", "host_min_calls", "host_max_calls",
     "a host-time loop makes between host_min_calls and host_max_calls calls"),
]


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_bounds(plan: dict) -> None:
    """The bounds that relate two settings of the plan (config `plan`), which the schema checks one at a time."""
    for section, lo, hi, what in PAIRS:
        part = plan
        for k in section.split(".")[1:]:
            part = (part or {}).get(k) if isinstance(part, dict) else None
        if not isinstance(part, dict) or not all(_number(part.get(k)) for k in (lo, hi)):
            continue    # absent, or not numbers: the schema says so
        if part[lo] > part[hi]:
            raise ConfigError(f"{section}.{lo} ({part[lo]}) is above {section}.{hi} ({part[hi]}): {what}; make "
                              f"{lo} <= {hi}")
    sleeps = plan.get("timer_check_sleep_us")
    if isinstance(sleeps, list) and 0 not in sleeps:
        raise ConfigError(f"plan.timer_check_sleep_us ({sleeps}) has no 0: the timer check compares the kernel time "
                          f"after each sleep with the time without one; add 0")


def check_plan_values(plan: dict) -> None:
    """A plan's (config `plan`, or a run's plan.yaml) numbers, NaN and infinity refused everywhere (config/schema.yaml
    bounds every number of the plan: tests/test_config.py), and its pairs of bounds. Reads no schema: a GPU step reads
    only the files its rule names."""
    if isinstance(plan, dict):
        check_numbers(plan, None, "plan")
        check_bounds(plan)


# ------------------------------------------------------------------------------------------ nested --config values

def _expand_dotted(value, nodes: list, where: str):
    """Keys of a mapping given as paths (bench.rep_ms) made into nested mappings, where the first part is a key the
    schema knows here and the whole key is not (a Qwen3 model's name, 0.6B, is kept whole)."""
    if not isinstance(value, dict):
        return value
    out: dict = {}
    for key, v in value.items():
        parts = [key]
        if isinstance(key, str) and "." in key:
            known = {p for n in nodes for p in n.get("properties", {})}
            free = any(isinstance(n.get("additionalProperties"), dict) for n in nodes)
            head = key.split(".", 1)[0]
            if key not in known and not free and head in known:
                parts = key.split(".")
        target, sub = out, nodes
        for p in parts[:-1]:
            sub = _child(sub, p)
            target = target.setdefault(p, {})
            if not isinstance(target, dict):
                raise ConfigError(f"{where}: {key} and {p} are both given; give one")
        leaf = parts[-1]
        v = _expand_dotted(v, _child(sub, leaf), where)
        if leaf in target:
            if isinstance(target[leaf], dict) and isinstance(v, dict):
                _merge_new(target[leaf], v, f"{where}: {key}")
                continue
            raise ConfigError(f"{where}: {key} is given twice (once as a path); give it once")
        target[leaf] = v
    return out


def _merge_new(target: dict, new: dict, where: str) -> None:
    for k, v in new.items():
        if k in target and isinstance(target[k], dict) and isinstance(v, dict):
            _merge_new(target[k], v, where)
        elif k in target:
            raise ConfigError(f"{where}.{k} is given twice; give it once")
        else:
            target[k] = v


def _update(config: dict, new: dict) -> None:
    """As Snakemake merges a --config value: mappings merged key by key, anything else replaced."""
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(config.get(k), dict):
            _update(config[k], v)
        else:
            config[k] = v


def _drop_dotted(config: dict, raw: dict, expanded: dict) -> None:
    """Remove the keys with a dot that Snakemake merged in as they were (bench.rep_ms beside bench) and that
    _expand_dotted made into paths."""
    for k, v in raw.items():
        if not isinstance(config, dict) or k not in config:
            continue
        if k not in expanded:
            del config[k]
        elif isinstance(v, dict) and isinstance(expanded[k], dict):
            _drop_dotted(config[k], v, expanded[k])


def apply_overrides(config: dict, config_args, schema: dict | None = None) -> dict:
    """Snakemake reads a --config value that is a YAML mapping or list with YAML's base loader: every leaf arrives as
    a string (`--config plan='{bench: {rep_ms: 50}}'` gives rep_ms '50', which the schema refuses). Read each such
    value again with the safe loader (a key given twice refused), its dotted keys taken as paths, and merge it into
    `config` (changed in place, and returned) as Snakemake merged the strings. Scalar values are left as Snakemake
    read them (measure=yes stays the string 'yes', which the schema refuses)."""
    nodes = _branches(schema) if schema is not None else []
    for arg in config_args or []:
        key, sep, text = str(arg).partition("=")
        if not sep:
            continue
        try:
            raw = yaml.load(text, Loader=yaml.BaseLoader)
        except yaml.YAMLError:
            continue
        if not isinstance(raw, (dict, list)):
            continue
        where = f"--config {key}={text}"
        value = _expand_dotted(load_yaml_text(text, where), _child(nodes, key), where)
        if isinstance(raw, dict) and isinstance(value, dict) and isinstance(config.get(key), dict):
            _drop_dotted(config[key], raw, value)
        _update(config, {key: value})
    return config


# ----------------------------------------------------------------------------------------------- cross-check waivers

def plan_profiled(plan: dict) -> set:
    """The variants a plan (config `plan`) profiles with Nsight Compute at the headline, the ones the cross-check
    compares: plan.profile's variants, its extra pairs' variants, its PyTorch kernels."""
    p = (plan or {}).get("profile") or {}
    return (set(p.get("variants", [])) | {x.get("variant") for x in p.get("extra", [])}
            | set(p.get("torch_impls", [])))


def run_profiled(run: Path) -> set:
    """What a sealed run profiled: its plan.yaml's profile section, or, for the runs sealed before the plan was
    written into the run (run-6-x2 ... run-9-x2), the variants of its Nsight durations (profile/ncu_duration.csv)."""
    run = Path(run)
    if (run / "plan.yaml").exists():
        return plan_profiled((load_yaml(run / "plan.yaml") or {}).get("plan"))
    durations = run / "profile" / "ncu_duration.csv"
    if durations.exists():
        with open(durations, newline="") as f:
            return {r["variant"] for r in csv.DictReader(f)}
    return set()


def _natural(name: str) -> list:
    """v2 before v10."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name)]


def check_waivers(waivers, profiled: dict, where: str, torch_impls=(), others=None) -> None:
    """Each waiver of the cross-check (config crosscheck_waivers: run, variant, reason, and optionally gpu) must name
    a run in `profiled` (run name -> the variants it profiled; the sealed runs and the new one, of the folder `where`,
    data/<gpu>) and a variant that run profiled, once. A waiver whose gpu names another GPU than `where`'s is checked
    against that GPU's runs instead: `others` maps its slug to (profiled, where) (the runs of data/<slug>/, read
    apart for the appendix); a gpu with no runs is refused. That the entry is beyond the bound, the aggregate step
    checks (it needs the data)."""
    from kernels.stages import resolve_variant

    others = others or {}
    own = Path(where).name
    firsts = {}
    for i, w in enumerate(waivers or []):
        at = f"crosscheck_waivers[{i}]"
        run, variant, gpu = w.get("run"), w.get("variant"), w.get("gpu", own)
        if gpu != own and gpu not in others:
            raise ConfigError(f"{at}.gpu: {gpu!r} is neither the config gpu ({own}) nor another GPU with runs under "
                              f"data/ ({', '.join(sorted(others)) or 'none'}); fix the name, or remove the waiver")
        runs, folder = (profiled, where) if gpu == own else others[gpu]
        if (gpu, run, variant) in firsts:
            raise ConfigError(f"{at}: {run} {variant} is waived twice (also {firsts[(gpu, run, variant)]}): keep one")
        firsts[(gpu, run, variant)] = at
        if run not in runs:
            names = sorted(runs, key=_natural)
            raise ConfigError(f"{at}.run: {run!r} is not a run of {folder} (the runs: {', '.join(names) or 'none'}); "
                              f"fix the run's name, or remove the waiver")
        if variant not in torch_impls:
            try:
                resolve_variant(variant)
            except ValueError:
                raise ConfigError(f"{at}.variant: {variant!r} is neither a PyTorch implementation "
                                  f"({', '.join(torch_impls)}) nor a stage, ablation or switch label of ours "
                                  f"(kernels/stages.py); fix the name, or remove the waiver") from None
        if variant not in runs[run]:
            profiles = ", ".join(sorted(runs[run], key=_natural)) or "nothing"
            raise ConfigError(f"{at}.variant: {variant!r} was not profiled in {run} (its plan profiles {profiles}): "
                              f"the cross-check compares only profiled entries; fix the waiver's run or variant, or "
                              f"remove it")


def check_plan_schema(plan: dict, where: str) -> None:
    """The plan against config/schema.yaml's `plan` (as Snakemake validates the whole config): for a plan file read
    outside Snakemake (bench.py --config, a run's plan.yaml); defaults are not filled in. `arch`, which the rule
    plan adds for the run's GPU (pipeline.plan.adapt), is no setting and is not judged."""
    import jsonschema

    schema = load_schema(Path(__file__).resolve().parents[1] / "config" / "schema.yaml")
    sub = {**schema, "required": ["plan"], "properties": {"plan": schema["properties"]["plan"]}}
    sub.pop("additionalProperties", None)
    try:
        jsonschema.validate({"plan": {k: v for k, v in plan.items() if k != "arch"}}, sub)
    except jsonschema.ValidationError as err:
        at = ".".join(map(str, err.absolute_path))
        raise ConfigError(f"{where}: {at}: {err.message} (config/schema.yaml); fix the value") from None
