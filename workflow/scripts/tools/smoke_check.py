"""The end of `make smoke`: what its steps made, checked, and one verdict said.

- the kernel in Triton's interpreter: every case of results/smoke/verify/correctness.csv within its tolerance of the
  float64 reference (the verify step already fails on a wrong one; a case not run is a failure here);
- one figure: results/figures/stage_times.pdf (a PDF of a few kB at least) and its PNG for the report;
- one table: results/tables/claims.tex (a tabular with every claim of the verdicts) and its HTML for the report;
- the verdicts: results/aggregate/claims.csv gives every claim C1-C10 one of the verdicts of the rules, and the
  table prints them; the verdict of the causal skip (C2) is said, with its components.

    python workflow/scripts/tools/smoke_check.py [--root .]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

VERDICTS = {"holds", "partly", "does not hold", "not testable here"}
SAID = "C2"


def check(root: Path) -> list:
    lines = []
    verify = pd.read_csv(root / "results/smoke/verify/correctness.csv")
    bad = verify[verify.status != "ok"]
    if verify.empty or not bad.empty:
        raise SystemExit(f"smoke: the kernel check failed: {len(bad)} of {len(verify)} cases not ok: "
                         f"{list(bad.case)[:5]}")
    lines.append(f"kernel: {len(verify)} case(s) of {', '.join(sorted(set(verify.variant)))} in Triton's interpreter "
                 f"within tolerance of float64 (largest relative error {verify.rel_error.max():.2g})")
    pdf, png = root / "results/figures/stage_times.pdf", root / "results/figures/stage_times.png"
    if not pdf.read_bytes().startswith(b"%PDF") or pdf.stat().st_size < 5000 or png.stat().st_size < 5000:
        raise SystemExit(f"smoke: {pdf} (or its PNG) is not a figure")
    lines.append(f"figure: {pdf.relative_to(root)} ({pdf.stat().st_size // 1024} kB) and its PNG")
    claims = pd.read_csv(root / "results/aggregate/claims.csv")
    per_claim = claims.groupby("claim", sort=False).claim_verdict.first()
    if set(per_claim) - VERDICTS or len(per_claim) < 10:
        raise SystemExit(f"smoke: results/aggregate/claims.csv: unexpected verdicts {dict(per_claim)}")
    tex = (root / "results/tables/claims.tex").read_text()
    html = (root / "results/tables/claims.html").read_text()
    missing = [c for c in per_claim.index if c not in tex or c not in html]
    if "\\begin{tabular}" not in tex or "<table>" not in html or missing:
        raise SystemExit(f"smoke: results/tables/claims.tex or .html lacks a table or the claims {missing}")
    lines.append(f"table: results/tables/claims.tex and .html, {len(claims)} components of {len(per_claim)} claims")
    c = claims[claims.claim == SAID]
    lines.append(f"verdict: {SAID} {c.claim_verdict.iloc[0]} (" + "; ".join(
        f"{r.component}: article {r.article:+.1f}, ours {r.ours:+.1f} {r.unit}, {r.verdict}" for r in c.itertuples())
        + ")")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path("."))
    a = ap.parse_args(argv)
    for line in check(a.root):
        print(f"smoke: {line}")
    print("smoke: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
