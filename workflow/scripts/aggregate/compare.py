"""A reviewer's run against the paper (`make compare RUN=<run folder>`).

The run is aggregated alone by the aggregate phase's own scripts (rules compare_aggregate, compare_claims,
compare_ours: aggregate.py, claims.py and ours.py on that one run); this step only reads the tables they write and
the committed runs' (results/aggregate), and sets them side by side:

- every headline time and ratio of the article's stages (headline.csv: time, percent of each PyTorch backend's
  time in the same run) and the backends' own times; every one of our stages at the headline (ours_stages.csv: time,
  percent of cuDNN's and of FlashAttention-2's); every per-N figure (per_n.csv: time, time over cuDNN's, percent of
  the measured matrix roof, for each stage and backend at each N and dtype); every claim component's value
  (claims.csv, `ours`);
- for each: the paper's value (the median over the committed runs, as the paper gives it), the run's value, the
  allowed variation at that entry and shape: the lowest to the highest per-run value of the committed runs (each
  run's value is its median over its repeats; claims: the value each committed run alone gives, claims_by_run.csv),
  and whether the run's value lies within it;
- every component's and claim's verdict: the paper's, the run's, and the verdicts allowed: the paper's and those
  that the committed runs give one at a time (a single run has no run-to-run noise, so the rules can judge it
  otherwise than the median of twelve; its own verdict is what one more run may give). A verdict flips when the
  run's is testable and none of those. A claim is judged only where the run tested every component that the paper
  did.

Values outside the spread are reported, not fatal (another machine, another driver); a flipped verdict is listed
in flips.txt, and `make compare` fails, naming it.
"""

import html
import sys
from pathlib import Path

import pandas as pd

UNTESTED = ("not measured", "not testable here")
EPS = 1e-9  # relative: a committed run compared with itself is within its own range, whatever the CSV's rounding


def numbers(section: str, paper: pd.DataFrame, run: pd.DataFrame, keys: list, quantities: dict,
            label=None) -> pd.DataFrame:
    """One row per entry (keys) and quantity: the paper's median over the committed runs, their lowest and highest
    per-run value, how many runs hold it, the run's value (median over its runs: one), and the status."""
    frames = []
    for q, what in quantities.items():
        if q not in paper and q not in run:
            continue
        p = (paper.dropna(subset=[q]).groupby(keys)[q].agg(["median", "min", "max", "count"])
             if q in paper else pd.DataFrame(columns=["median", "min", "max", "count"]))
        p.columns = ["paper", "lo", "hi", "runs"]
        r = run.dropna(subset=[q]).groupby(keys)[q].median().rename("run") if q in run else pd.Series(name="run")
        t = p.join(r, how="outer").reset_index()
        t.insert(0, "quantity", what)
        frames.append(t)
    if not frames:
        return pd.DataFrame()
    t = pd.concat(frames, ignore_index=True)
    t.insert(0, "entry", [label(r) if label else " ".join(str(r[k]) for k in keys) for _, r in t.iterrows()])
    t.insert(0, "section", section)
    t["status"] = [status(r.lo, r.hi, r.run) for r in t.itertuples()]
    t["beyond_pct"] = [beyond(r.lo, r.hi, r.run) for r in t.itertuples()]
    return t[["section", "entry", "quantity", "paper", "lo", "hi", "runs", "run", "status", "beyond_pct"]]


def status(lo: float, hi: float, value: float) -> str:
    if pd.isna(value):
        return "not in the run"
    if pd.isna(lo):
        return "not in the paper"
    slack = EPS * max(abs(lo), abs(hi), 1e-30)
    return "within" if lo - slack <= value <= hi + slack else "outside"


def beyond(lo: float, hi: float, value: float) -> float:
    """How far outside the range the value lies, in percent of the nearer end (0 within, NaN where not compared)."""
    if status(lo, hi, value) != "outside":
        return 0.0 if status(lo, hi, value) == "within" else float("nan")
    end = hi if value > hi else lo
    return 100 * (value / end - 1) if end else float("nan")


def headline_rows(head: pd.DataFrame) -> tuple:
    """headline.csv: the article's stages (per run and stage) and the PyTorch backends' times (per run)."""
    torch = [c for c in ("torch-flash", "torch-default", "torch-cudnn") if c in head]
    backends = head.drop_duplicates("run")[["run", *torch]].melt(id_vars="run", value_vars=torch, var_name="backend",
                                                value_name="time_us")
    return head, backends


def verdicts(paper: pd.DataFrame, by_run: pd.DataFrame, run: pd.DataFrame) -> pd.DataFrame:
    """One row per component, then one per claim: the paper's verdict, the verdicts allowed (the paper's and each
    committed run's alone), the run's, the status (same, within, flipped, not compared)."""
    rows = []
    run_c = run.set_index("id")
    for c in paper.itertuples():
        allowed = {c.verdict, *by_run[by_run.id == c.id].verdict} - set(UNTESTED)
        mine = run_c.verdict.get(c.id, "not measured")
        rows.append(dict(section="verdicts: components", entry=f"{c.id} ({c.claim})", quantity=c.component,
                         paper=c.verdict, allowed=", ".join(sorted(allowed)) or "--", run=mine,
                         status=verdict_status(c.verdict, allowed, mine)))
    for claim, g in paper.groupby("claim", sort=False):
        paper_v = g.claim_verdict.iloc[0]
        allowed = {paper_v, *by_run[by_run.claim == claim].claim_verdict} - set(UNTESTED)
        tested = set(g[~g.verdict.isin(UNTESTED)].id)
        mine_g = run[run.claim == claim]
        mine = mine_g.claim_verdict.iloc[0] if len(mine_g) else "not measured"
        missing = sorted(tested - set(mine_g[~mine_g.verdict.isin(UNTESTED)].id))
        st = "not compared" if missing else verdict_status(paper_v, allowed, mine)
        rows.append(dict(section="verdicts: claims", entry=claim,
                         quantity=("the run did not test " + ", ".join(missing)) if missing else "claim verdict",
                         paper=paper_v, allowed=", ".join(sorted(allowed)) or "--", run=mine, status=st))
    return pd.DataFrame(rows)


def verdict_status(paper: str, allowed: set, mine: str) -> str:
    if mine in UNTESTED or (paper in UNTESTED and not allowed):
        return "not compared"
    if mine == paper:
        return "same"
    return "within" if mine in allowed else "flipped"


def fmt(x) -> str:
    if isinstance(x, str):
        return x
    if pd.isna(x):
        return "--"
    if float(x).is_integer() and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.4g}"


COLUMNS = {"entry": "entry", "quantity": "quantity", "paper": "paper", "band": "allowed (committed runs)",
           "runs": "runs", "run": "this run", "status": "status"}


def shown(t: pd.DataFrame) -> pd.DataFrame:
    """The table as printed: the numbers formatted, the range as lo..hi (verdict rows: the verdicts allowed)."""
    out = t.copy()
    if "lo" in out:
        band = [f"{fmt(lo)} .. {fmt(hi)}" if not pd.isna(lo) else "--" for lo, hi in zip(out.lo, out.hi)]
        out["band"] = band if "allowed" not in out else [a if isinstance(a, str) else b
                                                         for a, b in zip(out.allowed, band)]
        beyond_ = out.beyond_pct if "beyond_pct" in out else pd.Series(float("nan"), index=out.index)
        out["status"] = [f"{s} ({b:+.1f}%)" if s == "outside" and not pd.isna(b) else s
                         for s, b in zip(out.status, beyond_)]
    else:
        out["band"] = out.allowed
    if "runs" not in out:
        out["runs"] = ""
    for c in ("paper", "run", "runs"):
        out[c] = out[c].map(fmt)
    return out[list(COLUMNS)].rename(columns=COLUMNS)


def markdown_table(df: pd.DataFrame) -> str:
    cells = lambda row: "| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |"  # noqa: E731
    return "\n".join([cells(df.columns), "|" + "---|" * len(df.columns), *(cells(r) for r in df.itertuples(index=False))])


def summary(t: pd.DataFrame) -> pd.DataFrame:
    counts = t.groupby(["section", "status"], sort=False).size().unstack(fill_value=0)
    order = [s for s in ("within", "outside", "same", "flipped", "not in the run", "not in the paper", "not compared")
             if s in counts]
    return counts[order].reset_index()


def flips(t: pd.DataFrame) -> list:
    f = t[t.status == "flipped"]
    return [f"{r.entry}: {r.quantity}: the paper's verdict is '{r.paper}', this run's '{r.run}' (allowed: {r.allowed})"
            for r in f.itertuples()]


def header(run: str, paper_runs: list) -> list:
    return [f"This run: `{run}`, aggregated alone by the aggregate phase's own steps.",
            f"The paper: the committed runs' aggregate ({len(paper_runs)} runs: {', '.join(paper_runs)}).",
            "Allowed variation: the lowest to the highest per-run value of the committed runs at that entry and "
            "shape; verdicts: the paper's and those the committed runs give one at a time. Numbers outside it are "
            "reported; a verdict outside it (flipped) fails `make compare`."]


def write_markdown(path, t: pd.DataFrame, run: str, paper_runs: list) -> None:
    f = flips(t)
    lines = ["# This run against the paper", "", *header(run, paper_runs), "",
             "## Verdicts that flipped", "", *([f"- {x}" for x in f] or ["None."]), "", "## Summary", "",
             markdown_table(summary(t)), ""]
    for section, g in t.groupby("section", sort=False):
        lines += [f"## {section}", "", markdown_table(shown(g)), ""]
    path.write_text("\n".join(lines))


def html_table(df: pd.DataFrame, status_col=None) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for r in df.itertuples(index=False):
        cls = str(r[list(df.columns).index(status_col)]).split(" ")[0] if status_col else ""
        body.append(f'<tr class="{html.escape(cls)}">' + "".join(f"<td>{html.escape(str(v))}</td>" for v in r)
                    + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


STYLE = """body{font-family:sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;margin-bottom:2em}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}td:nth-child(-n+2),th{text-align:left}
tr.outside td{background:#fff3cd}tr.flipped td{background:#f8d7da;font-weight:bold}tr.within td:last-child,
tr.same td:last-child{color:#1a7f37}"""


def write_html(path, t: pd.DataFrame, run: str, paper_runs: list) -> None:
    f = flips(t)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>This run against the paper</title>"
             f"<style>{STYLE}</style></head><body><h1>This run against the paper</h1>",
             *(f"<p>{html.escape(x)}</p>" for x in header(run, paper_runs)),
             "<h2>Verdicts that flipped</h2>",
             ("<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in f) + "</ul>") if f else "<p>None.</p>",
             "<h2>Summary</h2>", html_table(summary(t))]
    for section, g in t.groupby("section", sort=False):
        parts += [f"<h2>{html.escape(section)}</h2>", html_table(shown(g), status_col="status")]
    path.write_text("".join(parts) + "</body></html>\n")


def compare(input) -> pd.DataFrame:
    paper_head, paper_backends = headline_rows(pd.read_csv(input.headline))
    run_head, run_backends = headline_rows(pd.read_csv(input.run_headline))
    article = {"time_us": "time (us)", "pct_of_torch-flash": "% of torch-flash", "pct_of_torch-default":
               "% of torch-default", "pct_of_torch-cudnn": "% of torch-cudnn"}
    paper_n, run_n = pd.read_csv(input.per_n), pd.read_csv(input.run_per_n)
    paper_n, run_n = (p.assign(x_cudnn=p.x_cudnn.where(p.variant != "torch-cudnn")) for p in (paper_n, run_n))
    claims, run_claims = pd.read_csv(input.claims), pd.read_csv(input.run_claims)
    by_run = pd.read_csv(input.claims_by_run)

    def component(r):
        c = claims.set_index("id").loc[r["id"]]
        return f"{r['id']} ({c.claim}: {c.component}, {c.unit})"

    t = pd.concat([
        numbers("headline: the article's stages (its tile)", paper_head, run_head, ["stage"], article),
        numbers("headline: PyTorch's backends", paper_backends, run_backends, ["backend"], {"time_us": "time (us)"}),
        numbers("headline: our stages (each at its own tile)", pd.read_csv(input.ours_stages),
                pd.read_csv(input.run_ours_stages), ["stage"],
                {"time_us": "time (us)", "pct_cudnn": "% of torch-cudnn", "pct_flash": "% of torch-flash"}),
        numbers("per N (headline layout)", paper_n, run_n, ["variant", "dtype", "N"],
                {"time_us": "time (us)", "x_cudnn": "x torch-cudnn", "pct_roof": "% of the matrix roof"},
                label=lambda r: f"{r['variant']} {r['dtype']} N={int(r['N'])}"),
        numbers("claims: component values", by_run, run_claims, ["id"], {"ours": "value"}, label=component),
        verdicts(claims, by_run, run_claims),
    ], ignore_index=True)
    return t


def main(input, output, params) -> int:
    t = compare(input)
    paper_runs = sorted(set(pd.read_csv(input.claims_by_run).run))
    t.to_csv(output.table, index=False)
    write_markdown(Path(output.markdown), t, params.run, paper_runs)
    write_html(Path(output.html), t, params.run, paper_runs)
    f = flips(t)
    Path(output.flips).write_text("".join(f"{x}\n" for x in f))
    print(summary(t).to_string(index=False))
    return 0


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stdout = sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    main(snakemake.input, snakemake.output, snakemake.params)  # noqa: F821
