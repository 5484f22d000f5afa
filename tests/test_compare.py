"""`make compare RUN=<run folder>`: a reviewer's run against the paper. A committed run played as the reviewer's is
within the committed runs' spread everywhere and flips no verdict (exit 0); a copy of it with v2's times doubled
(resealed in the copy) flips the causal skip's verdict, and `make compare` fails naming it. The comparison's rules
(ranges, allowed verdicts) one case each, on small tables."""
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipeline_run import ENV, one_at_a_time
from steps import step

from pipeline import seal

ROOT = Path(__file__).resolve().parents[1]
AGG = ROOT / "results" / "aggregate"
RUN = ROOT / "data" / "nvidia-h200" / "run-13-x2"
compare = step("aggregate/compare")


def make_compare(run: Path) -> subprocess.CompletedProcess:
    """`make compare RUN=run` with this interpreter's environment (its bin folder holds snakemake), one Snakemake
    run in the tree at a time."""
    with one_at_a_time():
        return subprocess.run(["make", "-s", "-o", ".venv/.installed", f"BIN={Path(sys.executable).parent}",
                               "compare", f"RUN={run}"], cwd=ROOT, env=ENV, capture_output=True, text=True,
                              timeout=1800)


def test_a_committed_run_played_as_the_reviewers_is_within_and_passes():
    proc = make_compare(RUN)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "no verdict flipped" in out
    t = pd.read_csv(ROOT / "results" / "compare" / RUN.name / "compare.csv")
    numbers = t[~t.section.str.startswith("verdicts")]
    assert set(numbers.status) <= {"within", "not in the run"}, numbers[numbers.status == "outside"].head()
    assert (numbers.status == "within").sum() > 500
    verdicts = t[t.section.str.startswith("verdicts")]
    assert set(verdicts.status) <= {"same", "within", "not compared"}
    assert set(verdicts[verdicts.section == "verdicts: claims"].entry) == {f"C{i}" for i in range(1, 11)}
    # the paper's side is the committed runs' aggregate: the headline medians and the claims as the paper has them
    med = pd.read_csv(AGG / "headline_median.csv").set_index("stage")
    v7 = t[(t.section.str.contains("article's stages")) & (t.entry == "v7") & (t.quantity == "time (us)")].iloc[0]
    assert float(v7.paper) == pytest.approx(med.loc["v7", "time_us"]) and v7.runs == len(list(RUN.parent.glob("run-*")))
    claims = pd.read_csv(AGG / "claims.csv").groupby("claim", sort=False).claim_verdict.first()
    paper = verdicts[verdicts.section == "verdicts: claims"].set_index("entry").paper
    assert dict(paper) == dict(claims)
    page = (ROOT / "results" / "compare" / RUN.name / "compare.html").read_text()
    md = (ROOT / "results" / "compare" / RUN.name / "compare.md").read_text()
    assert "<table>" in page and "## Verdicts that flipped\n\nNone." in md
    assert (ROOT / "results" / "compare" / RUN.name / "flips.txt").read_text() == ""


def slowed(src: Path, dest: Path, variant: str = "v2", factor: float = 2.0) -> Path:
    """A copy of a sealed run with every time of `variant` multiplied by factor: its timings, Nsight's durations
    and the timer check alike (so that the run's own cross-checks still agree), then sealed again in the copy."""
    shutil.copytree(src, dest)
    (dest / seal.NAME).unlink()
    for path in dest.rglob("*.csv"):
        if path.name not in ("timings.csv", "ncu_duration.csv", "timer_check.csv"):
            continue
        df = pd.read_csv(path)
        rows = (df.impl == "triton") & (df.variant == variant)
        cols = [c for c in df.columns if c.endswith("_us") or c == "duration_ns"]
        df.loc[rows, cols] = df.loc[rows, cols] * factor
        df.to_csv(path, index=False)
    seal.write(dest)
    seal.check(dest)
    return dest


def test_a_run_with_v2_twice_as_slow_flips_the_causal_skip_and_fails_naming_it(tmp_path):
    run = slowed(RUN, tmp_path / RUN.parent.name / "run-slow-v2")     # under its GPU's folder, as a run lands
    proc = make_compare(run)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-4000:]
    assert "verdict(s) flipped" in out and "C2: claim verdict" in out, out[-4000:]
    t = pd.read_csv(ROOT / "results" / "compare" / run.name / "compare.csv")
    flipped = t[t.status == "flipped"]
    assert {"C2", "c2-time (C2)"} <= set(flipped.entry)
    c2 = t[(t.section == "verdicts: claims") & (t.entry == "C2")].iloc[0]
    assert c2.paper == "holds" and c2.run != "holds"
    v2 = t[(t.section.str.contains("article's stages")) & (t.entry == "v2") & (t.quantity == "time (us)")].iloc[0]
    assert v2.status == "outside" and float(v2.run) == pytest.approx(2 * float(v2.paper), rel=0.02)
    v1 = t[(t.section.str.contains("article's stages")) & (t.entry == "v1") & (t.quantity == "time (us)")].iloc[0]
    assert v1.status == "within"                                         # what was not slowed stays within
    assert (ROOT / "results" / "compare" / run.name / "flips.txt").read_text().count("\n") == len(flipped)


def test_make_compare_without_a_run_or_with_an_unsealed_one_says_so(tmp_path):
    proc = subprocess.run(["make", "-s", "-o", ".venv/.installed", "compare"], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "make compare RUN=<run folder>" in proc.stdout + proc.stderr
    proc = subprocess.run(["make", "-s", "-o", ".venv/.installed", "compare", f"RUN={tmp_path}"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "not a sealed run folder" in proc.stdout + proc.stderr


def test_a_range_holds_its_own_ends_and_nothing_beyond():
    paper = pd.DataFrame({"run": ["a", "b", "c"], "stage": "v1", "time_us": [10.0, 12.0, 11.0]})
    for value, expected in ((10.0, "within"), (12.0, "within"), (11.5, "within"), (12.5, "outside"),
                            (9.0, "outside")):
        t = compare.numbers("s", paper, pd.DataFrame({"run": ["r"], "stage": "v1", "time_us": [value]}), ["stage"],
                            {"time_us": "time"})
        r = t.iloc[0]
        assert (r.paper, r.lo, r.hi, r.runs, r.status) == (11.0, 10.0, 12.0, 3, expected)
    t = compare.numbers("s", paper, pd.DataFrame({"run": ["r"], "stage": "v1", "time_us": [15.0]}), ["stage"],
                        {"time_us": "time"})
    assert t.beyond_pct.iloc[0] == pytest.approx(25.0)
    t = compare.numbers("s", paper, pd.DataFrame({"run": ["r"], "stage": "v9", "time_us": [1.0]}), ["stage"],
                        {"time_us": "time"})
    assert dict(zip(t.entry, t.status)) == {"v1": "not in the run", "v9": "not in the paper"}


def test_a_verdict_flips_only_outside_the_paper_s_and_the_single_runs_own():
    paper = pd.DataFrame({"id": ["x", "y"], "claim": "C1", "component": ["x", "y"], "verdict": ["holds", "holds"],
                          "claim_verdict": "holds"})
    by_run = pd.DataFrame({"run": ["a", "a", "b", "b"], "id": ["x", "y", "x", "y"], "claim": "C1",
                           "verdict": ["holds", "holds", "partly", "holds"],
                           "claim_verdict": ["holds", "holds", "partly", "partly"]})

    def judged(x, y):
        run = pd.DataFrame({"id": ["x", "y"], "claim": "C1", "verdict": [x, y],
                            "claim_verdict": [step("aggregate/claims").claim_verdict([x, y])] * 2})
        t = compare.verdicts(paper, by_run, run)
        return dict(zip(t.entry, t.status))

    assert judged("holds", "holds") == {"x (C1)": "same", "y (C1)": "same", "C1": "same"}
    assert judged("partly", "holds") == {"x (C1)": "within", "y (C1)": "same", "C1": "within"}   # as run b alone
    assert judged("holds", "does not hold") == {"x (C1)": "same", "y (C1)": "flipped", "C1": "within"}
    assert judged("does not hold", "does not hold")["C1"] == "flipped"
    # a component the run did not test is not compared, and neither is its claim
    assert judged("holds", "not measured") == {"x (C1)": "same", "y (C1)": "not compared", "C1": "not compared"}


def test_the_report_pages_say_what_flipped(tmp_path):
    t = pd.DataFrame([
        dict(section="headline", entry="v1", quantity="time (us)", paper=11.0, lo=10.0, hi=12.0, runs=3, run=15.0,
             status="outside", beyond_pct=25.0),
        dict(section="verdicts: claims", entry="C1", quantity="claim verdict", paper="holds", allowed="holds",
             run="does not hold", status="flipped")])
    compare.write_markdown(tmp_path / "c.md", t, "somewhere/run-x", ["run-a", "run-b"])
    compare.write_html(tmp_path / "c.html", t, "somewhere/run-x", ["run-a", "run-b"])
    md, page = (tmp_path / "c.md").read_text(), (tmp_path / "c.html").read_text()
    assert "- C1: claim verdict: the paper's verdict is 'holds', this run's 'does not hold'" in md
    assert "| v1 | time (us) | 11 | 10 .. 12 | 3 | 15 | outside (+25.0%) |" in md
    assert '<tr class="flipped">' in page and '<tr class="outside">' in page
    assert compare.flips(t) == ["C1: claim verdict: the paper's verdict is 'holds', this run's 'does not hold' "
                                "(allowed: holds)"]
