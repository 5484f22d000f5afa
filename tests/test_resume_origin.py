"""A step's own files found when it starts (an attack's R1, B0, R5-R7, B2): a final file that is not this run's is
refused, naming what differs; rows of a partial file (with this run's origin) that are not this run's, or judged ok
above their bound, or of a status no step writes, are dropped and measured again."""
import csv
import json
from pathlib import Path

import pytest

from steps import step

from pipeline import partial_csv, plan

ROOT = Path(__file__).resolve().parents[1]
verify = step("verify/verify")
bench = step("measure/bench")
ARGS = ["--device", "cpu", "--N", "16", "--stages", "v0"]


def fake_case(case, device="cuda"):
    return {"case": case.key, "variant": case.variant, "status": "ok", "rel_error": 1e-4, "unwritten": 0,
            "tolerance": 1e-3}


def test_verify_refuses_a_final_file_of_another_case_list(tmp_path, monkeypatch):
    """R1: any correctness.csv in the out folder was taken as 'complete'."""
    (tmp_path / "correctness.csv").write_text("case,status,rel_error,tolerance\nforeign|x,WRONG,0.5,0.001\n")
    with pytest.raises(partial_csv.OriginError, match=r"correctness.csv is there but is not this case list's: .*"
                                                      r"status not one|cases this run asks for and the file has no "
                                                      r"row of: v0\|"):
        verify.main([*ARGS, "--out", str(tmp_path)])


def test_verify_takes_its_own_final_file_as_complete(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(verify, "run_case", fake_case)
    assert verify.main([*ARGS, "--out", str(tmp_path)]) == 0
    assert verify.main([*ARGS, "--out", str(tmp_path)]) == 0
    assert "is complete" in capsys.readouterr().out


def test_verify_measures_again_resumed_rows_that_are_not_this_runs(tmp_path, monkeypatch):
    """R5 (ok above its tolerance), R6 (a case outside the grid), R7 (status 'maybe'), in a partial file whose
    origin is this run's: each dropped and measured again; the final file holds the grid's cases only."""
    monkeypatch.setattr(verify, "run_case", fake_case)
    grid = [c for c in verify.cpu_cases([16]) if c.variant == "v0"]
    now = verify.origin.current(verify.SCRIPT, {"device": "cpu", "cases": [c.key for c in grid]},
                                "the case list (--device, --N, --quick, --stages)")
    partial = tmp_path / "correctness.partial.csv"
    rows = [dict(case=grid[0].key, status="ok", rel_error="0.9", tolerance="0.001"),
            dict(case="foreign|case", status="ok", rel_error="0", tolerance="0.001"),
            dict(case=grid[1].key, status="maybe", rel_error="0", tolerance="0.001")]
    with open(partial, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=verify.COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    partial_csv.origin_path(partial).write_text(json.dumps(now))
    assert verify.main([*ARGS, "--out", str(tmp_path)]) == 0
    with open(tmp_path / "correctness.csv") as f:
        final = list(csv.DictReader(f))
    assert sorted(r["case"] for r in final) == sorted(c.key for c in grid)
    assert all(r["status"] == "ok" and float(r["rel_error"]) <= float(r["tolerance"]) for r in final)


@pytest.fixture
def headline(monkeypatch):
    m = plan.load_config(ROOT / "config" / "config.yaml")
    entries = plan.expand(m, ["headline"])
    timed = []
    monkeypatch.setattr(bench, "_time", lambda m_, todo, path, snapshots, bad, workers, log:
                        timed.extend((r, e.key) for r, e in todo))
    return m, entries, timed


def bench_row(e, r, **kw):
    d = {c: "" for c in bench.COLUMNS}
    d.update(key=e.key, repeat=r, **e.row(), seed=1, status="ok", rel_error=1e-4, time_us=10.0, kernels_us=10.0,
             kernels="_attn_fwd", n_kernels=1, timer="cupti-kernel-sum")
    d.update(kw)
    return d


def write(path: Path, rows) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=bench.COLUMNS)
        w.writeheader()
        w.writerows(rows)


def test_bench_refuses_a_final_file_of_another_plan(tmp_path, headline):
    """B0: a timings.csv of another plan was returned as 'complete'."""
    m, entries, _ = headline
    write(tmp_path / "timings.csv", [bench_row(plan.expand(m, ["bf16"])[0], 0)])
    with pytest.raises(partial_csv.OriginError, match=r"timings.csv is there but is not this plan's: .*entries its "
                                                      r"plan .* has no row of"):
        bench.run(m, entries, tmp_path, workers=1, log=lambda s: None, env=None)


def test_bench_measures_again_resumed_rows_outside_the_plan(tmp_path, headline):
    """B2: a partial file (this run's origin) with a row of an entry outside the plan's sets, a repeat 99 and a row
    judged ok far above its dtype's bound: dropped, never promoted; the last is measured again."""
    m, entries, timed = headline
    rows = [bench_row(e, r) for r in range(max(plan.repeats(e, m) for e in entries)) for e in entries
            if r < plan.repeats(e, m)]
    rows[0]["rel_error"] = 0.5
    path = tmp_path / "timings.partial.csv"
    write(path, rows + [bench_row(plan.expand(m, ["bf16"])[0], 0), bench_row(entries[0], 99)])
    partial_csv.origin_path(path).write_text(json.dumps(bench.origin_of(m, entries)))
    final = bench.run(m, entries, tmp_path, workers=1, log=lambda s: None, env=None)
    with open(final) as f:
        got = list(csv.DictReader(f))
    keys = {e.key for e in entries}
    assert all(r["key"] in keys and int(r["repeat"]) < 99 for r in got)
    assert timed == [(0, rows[0]["key"])]


def test_bench_names_a_foreign_final_files_missing_columns(tmp_path, headline):
    """B0: a timings.csv with columns key,repeat only: AttributeError 'DataFrame' object has no attribute 'status'."""
    m, entries, _ = headline
    (tmp_path / "timings.csv").write_text(f"key,repeat\n{entries[0].key},0\n")
    with pytest.raises(partial_csv.OriginError, match=r"timings.csv is there but is not this plan's: .*timings.csv: "
                                                      r"no column status, rel_error, impl, variant, set, dtype"):
        bench.run(m, entries, tmp_path, workers=1, log=lambda s: None, env=None)


def own_final(tmp_path, monkeypatch):
    monkeypatch.setattr(verify, "run_case", fake_case)
    assert verify.main([*ARGS, "--out", str(tmp_path)]) == 0
    path = tmp_path / "correctness.csv"
    with open(path) as f:
        return path, list(csv.DictReader(f))


def rewrite_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize("change, error", [
    (dict(status="WRONG", rel_error="0.5"), r"a status verify never writes to its final file .*line 2 \('WRONG'\)"),
    (dict(rel_error="inf", tolerance="inf"), r"rows judged ok with rel_error above their tolerance \(or none\)"),
    (dict(unwritten="5"), r"left unwritten"),
], ids=["RN10_wrong", "inf", "RN8_unwritten"])
def test_verify_refuses_its_final_file_with_rows_it_never_writes(tmp_path, monkeypatch, change, error):
    """RN10 (a WRONG row: verify writes correctness.csv only when none is), an ok row with inf error and bound, an
    ok row with poison left: each was taken as 'complete', rc 0."""
    path, rows = own_final(tmp_path, monkeypatch)
    rows[0].update(change)
    rewrite_csv(path, rows)
    with pytest.raises(partial_csv.OriginError, match=r"correctness.csv is there but is not this case list's: .*"
                                                      + error):
        verify.main([*ARGS, "--out", str(tmp_path)])


@pytest.mark.parametrize("change", [dict(rel_error="0.9", tolerance=""), dict(rel_error="5", tolerance="inf"),
                                    dict(rel_error="-1", tolerance="0.001"), dict(rel_error="0.5", tolerance="-1"),
                                    dict(rel_error="nan", tolerance="0.001")],
                         ids=["RN3_no_bound", "RN4_inf", "RN5_negative", "negative_bound", "nan"])
def test_verify_measures_again_partial_rows_without_a_finite_bound(tmp_path, monkeypatch, change):
    """RN3/RN4/RN5: an ok row with an empty or infinite tolerance, or a negative rel_error, was kept and written
    out; now dropped and measured again."""
    monkeypatch.setattr(verify, "run_case", fake_case)
    grid = [c for c in verify.cpu_cases([16]) if c.variant == "v0"]
    now = verify.origin.current(verify.SCRIPT, {"device": "cpu", "cases": [c.key for c in grid]},
                                "the case list (--device, --N, --quick, --stages)")
    partial = tmp_path / "correctness.partial.csv"
    with open(partial, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=verify.COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerow(dict(case=grid[0].key, status="ok", **change))
    partial_csv.origin_path(partial).write_text(json.dumps(now))
    assert verify.main([*ARGS, "--out", str(tmp_path)]) == 0
    with open(tmp_path / "correctness.csv") as f:
        final = {r["case"]: r for r in csv.DictReader(f)}
    assert (final[grid[0].key]["rel_error"], final[grid[0].key]["tolerance"]) == ("0.0001", "0.001")


def test_bench_times_again_entries_a_final_file_stopped_at_failed(tmp_path, headline):
    """BN7: a final timings.csv with an entry stopped at repeat 1 by 'failed' was complete; a partial file's failed
    entries are checked again, and so now are a final file's (WRONG and refused stay)."""
    m, entries, timed = headline
    rows = [bench_row(e, r) for r in range(max(plan.repeats(e, m) for e in entries)) for e in entries
            if r < plan.repeats(e, m)]
    stopped = entries[0].key
    rows = [r for r in rows if r["key"] != stopped or r["repeat"] < 1]
    rows.append(bench_row(entries[0], 1, status="failed", rel_error="", note="RuntimeError: out of memory"))
    write(tmp_path / "timings.csv", rows)
    final = bench.run(m, entries, tmp_path, workers=1, log=lambda s: None, env=None)
    assert timed == [(r, stopped) for r in range(1, plan.repeats(entries[0], m))]
    with open(final) as f:
        assert not any(r["status"] == "failed" for r in csv.DictReader(f))
