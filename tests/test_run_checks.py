"""The aggregate's content checks of what a reseal cannot make right (pipeline.run_checks, aggregate.check_contents,
check_envs' code check, the seal's links), each against an attack on a copy of a real sealed run, edited, sealed again
and recorded in the manifest (as a reviewed reseal would be): rows not the plan's, unknown statuses, rows judged ok
above their bound, a correctness case twice, a missing env.json, a source_sha256 that is not its commit's code,
negative ceilings, a linked folder, a torn snapshot line."""
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from steps import step

from pipeline import git, seal

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
RUN = "run-9-x2"
aggregate = step("aggregate/aggregate")
ARTICLE = ["--article-timings", str(DATA / "article" / "timings.csv"),
           "--article-ncu", str(DATA / "article" / "ncu.csv")]


@pytest.fixture
def run(tmp_path) -> Path:
    """A copy of RUN in tmp_path/data, with its row of the committed manifest."""
    rows = seal.read_manifest(DATA / seal.MANIFEST)
    name = f"nvidia-h200/{RUN}"
    shutil.copytree(DATA / name, tmp_path / "data" / name)
    seal.write_manifest(tmp_path / "data" / seal.MANIFEST, {name: rows[name]})
    return tmp_path / "data" / name


def resealed(run: Path) -> Path:
    seal.write(run)
    seal.record(run)
    return run


def contents(run: Path, error: str) -> None:
    aggregate.verified([resealed(run)])
    with pytest.raises(aggregate.DataError, match=error):
        aggregate.check_contents([run])


def edit(path: Path, change) -> None:
    t = pd.read_csv(path)
    change(t)
    t.to_csv(path, index=False)


def timings(run, set_="headline") -> Path:
    return run / f"bench-{set_}" / "timings.csv"


def test_the_committed_runs_pass_the_content_checks():
    runs = sorted((DATA / "nvidia-h200").glob("run-*"))
    aggregate.verified(runs)
    aggregate.check_contents(runs)
    aggregate.check_envs(runs)


def test_an_entry_deleted_is_named_before_any_other_refusal(run, tmp_path):
    """Every torch-cudnn row of the headline deleted (D35b): the aggregate named another GPU than cuDNN's, or
    nothing; now the missing entry, first."""
    edit(timings(run), lambda t: t.drop(t[t.impl == "torch-cudnn"].index, inplace=True))
    resealed(run)
    with pytest.raises(aggregate.DataError, match=r"bench-headline/timings.csv: entries its plan \(env.json's plan "
                                                  r"and sets\) times and the file has no row of: torch-cudnn\|"):
        aggregate.main(["--runs", str(run), *ARTICLE, "--out", str(tmp_path / "agg")])


def made_up_repeat(t):
    row = t[(t.variant == "v7") & (t.status == "ok")].iloc[[0]].copy()
    row["repeat"] = t.repeat.max() + 1
    row["seed"] = 12345
    row[[c for c in t.columns if c.endswith("_us")]] *= 0.7
    t.loc[len(t)] = row.iloc[0]


def minus_one(t):
    t.loc[3, "repeat"] = -1


def one_repeat_deleted(t):
    t.drop(t[(t.variant == "v3") & (t.repeat == 1)].index, inplace=True)


@pytest.mark.parametrize("change", [made_up_repeat, minus_one, one_repeat_deleted], ids=lambda f: f.__name__)
def test_repeats_not_the_plans_are_refused(run, change):
    edit(timings(run), change)
    contents(run, r"bench-headline/timings.csv: repeats that are not the plan's: triton\|v\d\|.* has repeats "
                  r"\[.*\], the plan \d")


@pytest.mark.parametrize("status", ["OK", "ok ", "garbage"])
def test_a_status_no_step_writes_is_refused(run, status):
    def change(t):
        t.loc[t.N == t.N.max(), "status"] = status
    edit(timings(run), change)
    contents(run, r"bench-headline/timings.csv: status not one a step writes \(ok, WRONG, refused, failed\): "
                  rf"line 2 \('{status}'\)")


def test_a_timed_row_judged_ok_above_its_bound_is_refused(run):
    edit(timings(run), lambda t: t.__setitem__("rel_error", t.rel_error.where(t.index != 0, 0.5)))
    contents(run, r"bench-headline/timings.csv: rows judged ok with rel_error above their tolerance \(or none\): "
                  r"line 2 \(0.5 > 0.001\)")


@pytest.mark.parametrize("change, error", [
    (lambda t: t.__setitem__("rel_error", t.rel_error.where(t.index != 4, 10 * t.tolerance)),
     r"rows judged ok with rel_error above their tolerance \(or none\): line 6"),
    (lambda t: t.__setitem__("status", t.status.where(t.index != 4, "garbage")),
     r"status not one a step writes .*: line 6 \('garbage'\)"),
    (lambda t: t.loc.__setitem__(len(t), t.iloc[4]),
     r"verify/correctness.csv: cases listed twice"),
], ids=["above_tolerance", "garbage", "twice"])
def test_correctness_rows_no_verify_writes_are_refused(run, change, error):
    edit(run / "verify" / "correctness.csv", change)
    contents(run, error)


def test_a_measurement_without_its_env_json_is_refused(run):
    (run / "bench-n_sweep" / "env.json").unlink()
    contents(run, r"bench-n_sweep/timings.csv: no sealed env.json beside it")


def test_a_source_sha256_that_is_not_a_sha256_is_refused(run):
    path = run / "bench-headline" / "env.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "source_sha256": "0"}))
    contents(run, r"bench-headline/env.json: source_sha256 '0' is not a SHA-256")


@pytest.mark.skipif(not git.history(ROOT), reason="git's history is the witness of each commit's code")
@pytest.mark.parametrize("field", ["source_sha256", "project_commit"])
def test_a_source_sha256_that_is_not_its_commits_code_is_refused(run, field):
    """D15b: source_sha256 set to '0' x 64; D15: project_commit set to another commit git knows."""
    path = run / "bench-headline" / "env.json"
    env = json.loads(path.read_text())
    env[field] = "0" * 64 if field == "source_sha256" else git._out(ROOT, "rev-parse", "HEAD~40").strip()
    path.write_text(json.dumps(env))
    aggregate.verified([resealed(run)])
    with pytest.raises(aggregate.DataError, match=r"bench-headline/env.json: source_sha256 \w+\.\.\. is not the code "
                                                  r"of its project commit"):
        aggregate.check_envs([run])


@pytest.mark.parametrize("value", [-1.0, float("inf")])
def test_a_negative_or_infinite_ceiling_is_refused(run, value):
    edit(run / "ceilings" / "ceilings.csv", lambda t: t.__setitem__("value", t.value.where(t.index != 1, value)))
    contents(run, r"ceilings/ceilings.csv: ceilings not finite or negative: line 3")


def test_a_folder_linked_into_a_sealed_run_is_refused(run, tmp_path):
    """D26b: bench-n_sweep moved out of the run, a link in its place, its files listed through the link."""
    outside = tmp_path / "elsewhere"
    shutil.move(run / "bench-n_sweep", outside)
    os.symlink(outside, run / "bench-n_sweep")
    with pytest.raises(seal.SealError, match=r"bench-n_sweep/timings.csv: under bench-n_sweep, a link to a folder"):
        seal.check(run)
    seal.write(run)                       # rglob does not follow the link: the seal lists none of its files
    with pytest.raises(seal.SealError, match=r"bench-n_sweep: a link \(a sealed run holds only plain files"):
        seal.check(run)


def test_a_torn_snapshot_line_names_the_file_and_line(run, tmp_path):
    path = run / "bench-headline" / "snapshots.jsonl"
    path.write_text(path.read_text() + '{"repeat": 0, "clocks.sm": "garb\n')
    n = len(path.read_text().splitlines())
    with pytest.raises(aggregate.DataError, match=rf"bench-headline/snapshots.jsonl: line {n} is not a JSON object "
                                                  r"\(Unterminated string.*re-run|measure the run again"):
        aggregate.verified([resealed(run)])        # refused before any reader takes a field of it
        aggregate.snapshots([run])


@pytest.mark.parametrize("file, text, error", [
    ("bench-headline/snapshots.jsonl", None, r"bench-headline/snapshots.jsonl: line \d+ is not a JSON object "
                                             r"\(a list\)"),
    ("ceilings/env.json", "[]", r"ceilings/env.json: not a JSON object \(a list\)"),
    ("bench-bf16/env.json", '"just a string"', r"bench-bf16/env.json: not a JSON object \(a str\)"),
], ids=["DN7", "DN8", "DN8b"])
def test_json_that_is_not_an_object_is_named(run, tmp_path, file, text, error):
    """DN7/DN8/DN8b: a snapshots line [1, 2], an env.json [] or a string: the aggregate failed with
    AttributeError: 'list' object has no attribute 'get'."""
    path = run / file
    path.write_text(path.read_text() + "[1, 2]\n" if text is None else text)
    resealed(run)
    with pytest.raises(aggregate.DataError, match=error + r".*measure the run again"):
        aggregate.main(["--runs", str(run), *ARTICLE, "--out", str(tmp_path / "agg")])


def test_ceilings_without_a_value_column_are_named(run):
    """DN9: the value column renamed: AttributeError 'numpy.float64' object has no attribute 'map'."""
    edit(run / "ceilings" / "ceilings.csv", lambda t: t.rename(columns={"value": "valeur"}, inplace=True))
    contents(run, r"ceilings/ceilings.csv: no value column")


@pytest.mark.parametrize("change, error", [
    (lambda t: t.loc.__setitem__((t.index[t.status == "ok"][0], ["rel_error", "tolerance"]), [float("inf")] * 2),
     r"verify/correctness.csv: rows judged ok with rel_error above their tolerance \(or none\): line \d+ \(inf, "
     r"bound inf"),
    (lambda t: t.loc.__setitem__((t.index[t.status == "ok"][0], "rel_error"), -1.0),
     r"rows judged ok with rel_error above their tolerance \(or none\): line \d+ \(-1, bound"),
    (lambda t: t.loc.__setitem__((t.index[t.status == "ok"][0], "unwritten"), 5),
     r"verify/correctness.csv: rows judged ok with output elements left unwritten \(unwritten not 0\): line \d+ "
     r"\(5(\.0)?\)"),
], ids=["DN5b_inf", "negative", "DN23_unwritten"])
def test_correctness_rows_the_judge_never_gives_are_refused(run, change, error):
    edit(run / "verify" / "correctness.csv", change)
    contents(run, error)


def test_a_run_copied_with_its_seeds_redrawn_is_refused(run, tmp_path):
    """D30: run-9-x2 copied to run-19 with every seed redrawn, sealed and recorded: no (key, seed, time) repeats,
    but every row's median and mean do."""
    copy = run.with_name("run-19")
    shutil.copytree(run, copy)
    for path in copy.glob("bench-*/timings.csv"):
        edit(path, lambda t: t.__setitem__("seed", t.seed + 1))
    resealed(copy)
    aggregate.verified([run, copy])
    recorded = aggregate.load([run, copy], "timings.csv")
    with pytest.raises(aggregate.DataError, match=r"rows with one key, median and mean time \(a row copied"):
        aggregate.check_timings(recorded)


def loose(t, tolerance, rel_error):
    i = t.index[(t.status == "ok") & (t.dtype == "float16")][0]
    t.loc[i, ["tolerance", "rel_error"]] = [tolerance, rel_error]


@pytest.mark.parametrize("tolerance, rel_error", [(1.0, 0.5), (0.05, 0.02)], ids=["DN5", "DN5c"])
def test_a_correctness_row_whose_tolerance_is_not_the_judges_bound_is_refused(run, tolerance, rel_error):
    """DN5/DN5c: an ok row with rel_error 0.5 under a recorded tolerance of 1.0, or 0.02 under 0.05: the recorded
    tolerance was trusted; now recomputed from the row's dtype and torch_default_rel_error (kernels.accuracy)."""
    edit(run / "verify" / "correctness.csv", lambda t: loose(t, tolerance, rel_error))
    contents(run, r"verify/correctness.csv: rows whose tolerance is not the judge's bound for their dtype and "
                  rf"torch_default_rel_error .*: line \d+ \({tolerance}, the judge's 0.001\)")
