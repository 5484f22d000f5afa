"""Config slips an attack found accepted (C1c, C9c, C10): one int key spelt twice, a YAML 1.1 base-60 value, and a
plan file given to bench.py --config outside the schema."""
from pathlib import Path

import pytest
import yaml

from pipeline import config_check, plan

ROOT = Path(__file__).resolve().parents[1]


def test_one_int_key_spelt_twice_is_refused():
    with pytest.raises(config_check.DuplicateKeyError, match=r"line 1: the key plan.qwen3.0x10 is given twice"):
        config_check.load_yaml_text("plan: {qwen3: {16: {H: 1}, 0x10: {H: 2}}}", "x")
    assert config_check.load_yaml_text("a: {'16': 1, 16: 2}", "x") == {"a": {"16": 1, 16: 2}}


def test_a_base_60_value_is_refused():
    with pytest.raises(config_check.ConfigError, match=r"plan.bench.rep_ms: 1:30 is read by YAML 1.1 as a base-60 "
                                                       r"number \(90\)"):
        config_check.load_yaml_text("plan: {bench: {rep_ms: 1:30}}", "x")
    assert config_check.load_yaml_text("plan: {bench: {at: '1:30'}}", "x") == {"plan": {"bench": {"at": "1:30"}}}


@pytest.mark.parametrize("where, value, message", [
    (("repeats", "n_sweep"), 0, r"plan.repeats.n_sweep: 0 is less than the minimum of 1"),
    (("bench", "rep_ms"), "50", r"plan.bench.rep_ms: '50' is not of type 'number'"),
    (("bench", "min_samples"), 0, r"plan.bench.min_samples: 0 is less than the minimum"),
])
def test_a_plan_file_goes_through_the_schema(tmp_path, where, value, message):
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["plan"][where[0]][where[1]] = value
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump({"plan": cfg["plan"]}))
    with pytest.raises(config_check.ConfigError, match=message):
        plan.load_config(path)


def test_the_committed_plans_pass_the_schema():
    for path in [ROOT / "config" / "config.yaml", *sorted((ROOT / "data").glob("*/run-*/plan.yaml"))]:
        plan.load_config(path)


@pytest.mark.parametrize("text, message", [
    ("plan: {bench: {rep_ms: 050}}", r"line 1: plan.bench.rep_ms: 050 is read by YAML 1.1 as an octal number \(40\)"
                                     r".*write 50 \(no leading zero\)"),
    ("plan: {sizes: [1, 007]}", r"plan.sizes\[1\]: 007 is read by YAML 1.1 as an octal number \(7\)"),
], ids=["CN1", "in_a_list"])
def test_an_octal_looking_int_is_refused(text, message):
    """CN1/CN1c/CN7: rep_ms: 050 was read silently as 40 (YAML 1.1 octal)."""
    with pytest.raises(config_check.ConfigError, match=message):
        config_check.load_yaml_text(text, "x")
    assert config_check.load_yaml_text("a: {b: 0, c: 50, d: '050', e: 0.5}", "x") == {"a": {"b": 0, "c": 50,
                                                                                          "d": "050", "e": 0.5}}


def test_an_octal_looking_int_in_a_plan_file_is_refused(tmp_path):
    """CN7: the same in a plan file bench.py --config reads (plan.load_config)."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    path = tmp_path / "plan.yaml"
    cfg["plan"]["bench"]["rep_ms"] = "REP"
    path.write_text(yaml.safe_dump({"plan": cfg["plan"]}).replace("'REP'", "050").replace("REP", "050"))
    with pytest.raises(config_check.ConfigError, match=r"plan.bench.rep_ms: 050 is read by YAML 1.1 as an octal"):
        plan.load_config(path)


@pytest.mark.parametrize("text, key", [("plan: {qwen3: {1: {H: 1}, true: {H: 2}}}", "true"),
                                       ("plan: {qwen3: {16: {H: 1}, 16.0: {H: 2}}}", r"16\.0")], ids=["CN2", "CN2b"])
def test_keys_yaml_constructs_equal_are_refused_as_duplicates(text, key):
    """CN2/CN2b: 1 and true, 16 and 16.0 differ in type, so the check let them by, and the dict kept one silently."""
    with pytest.raises(config_check.DuplicateKeyError, match=rf"the key plan.qwen3.{key} is given twice"):
        config_check.load_yaml_text(text, "x")
