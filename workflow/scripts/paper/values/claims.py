"""The paper's numbers on the article's claims: each component's figures and verdict (\\val{component}{<id>}{...}),
each claim's verdict (\\val{claim}{<claim>}{verdict}), the claims grouped by verdict (so that the abstract's sentence
follows the data), the chain of stages said plainly, the slips, and the rules' constants."""

import sys
from pathlib import Path

import pandas as pd

from pipeline.latex import Values, fixed, listing
from pipeline.selection import ARTICLE_TILE, HEADLINE, STAGES


def values(claims: Path, slips: Path, claim_rules: Path, per_run: Path, article_timings: Path) -> Values:
    v = Values("claims")
    c = pd.read_csv(claims)
    for r in c.itertuples():
        v.put("component", r.id, "ours", fixed(r.ours, 1))
        v.put("component", r.id, "noise", fixed(r.noise, 1))
        v.put("component", r.id, "art", fixed(r.article, 1))
        v.put("component", r.id, "verdict", r.verdict)
        if r.rule in ("change", "change_points"):          # the paired statistic: runs on each side, the sign test
            v.put("component", r.id, "runs", int(r.runs))
            v.put("component", r.id, "below", int(r.runs_below))
            v.put("component", r.id, "signp", f"{r.sign_p:.2g}")
        if not pd.isna(r.article_printed):
            v.put("component", r.id, "printed", f"{r.article_printed:g}")
    verdicts = c.groupby("claim", sort=False).claim_verdict.first()
    for claim, verdict in verdicts.items():
        v.put("claim", claim, "verdict", verdict)

    def claims_that(verdict):
        return list(verdicts[verdicts == verdict].index)

    v.macro("ClaimsHold", listing(claims_that("holds")))
    v.macro("ClaimsHoldCount", len(claims_that("holds")))
    v.macro("ClaimsPartly", listing(claims_that("partly")))
    v.macro("ClaimsPartlyCount", len(claims_that("partly")))
    v.macro("ClaimsNotHold", listing(claims_that("does not hold")))
    v.macro("ClaimsNotHoldCount", len(claims_that("does not hold")))
    pr = pd.read_csv(per_run)
    st = pr[pr.headline & pr.article_tile & pr.article_stage]
    med = st.groupby("variant").time_us.median()
    art_t = pd.read_csv(article_timings)
    art = art_t[(art_t.impl == "triton") & (art_t.block_m == ARTICLE_TILE["block_m"])].set_index("stage").time_us
    first, last = STAGES[0], STAGES[-1]
    v.macro("ArticleChainFactor", fixed(art[first] / art[last], 2))
    v.macro("OursChainFactor", fixed(med[first] / med[last], 2))
    v.macro("FastestStage", med.idxmin())
    rules = pd.read_csv(claim_rules).set_index("name").value
    steps = c[(c.rule == "change") & c.id.str.endswith("-time") & (c.N == HEADLINE["N"])
              & c["from"].isin(STAGES) & c.to.isin(STAGES)]
    steps = steps[[STAGES.index(t) == STAGES.index(f) + 1 for f, t in zip(steps["from"], steps.to)]]
    reversed_ = steps[(steps.ours * steps.article < 0) & steps.moved          # moved: the sign test of claims.py
                      & (steps.article.abs() >= rules["negligible_pct"])]
    v.macro("ReversedSteps", listing(f"{r['from']} to {r.to} ({r.claim}: {r.article:+.1f}\\% in the article, "
                                     f"{r.ours:+.1f}\\% here)" for _, r in reversed_.iterrows()))
    v.macro("SlipCount", len(pd.read_csv(slips).drop_duplicates(["claim", "component", "article_printed"])))
    v.macro("NegligiblePct", f"{rules['negligible_pct']:g}")
    v.macro("RatioSlackPct", f"{rules['ratio_slack_pct']:g}")
    v.macro("FactorBound", f"{rules['factor']:g}")
    # The components whose verdict a range rule would give otherwise: a change the article calls none that has moved
    # by the sign test while within the range over runs (that rule passed it); one of the article's sign, moved, short
    # of the factor and within the range (that rule did not make it partly); one of its sign beyond the range but not
    # moved (that rule made it partly). claims.py keeps no such rule.
    neg = c.article.abs() < rules["negligible_pct"]
    change = c.rule.isin(["change", "change_points"]) & c.verdict.isin(["holds", "partly", "does not hold"])
    same = (c.ours * c.article > 0)
    flips = c[change & ((c.moved & (c.ours.abs() <= c.noise) & (neg | (c.verdict == "partly")))
                        | (~c.moved & ~neg & same & (c.ours.abs() > c.noise) & (c.verdict == "does not hold")))]
    v.macro("RangeRuleFlips", listing([f"{r.claim}'s {r.component}" + (f" at $N={r.N}$" if r.N != HEADLINE["N"] else "")
                                       + f" (now {r.verdict})" for r in flips.itertuples()], none="no component"))
    v.macro("SignAlpha", f"{rules['alpha']:g}")
    v.macro("SignMinRuns", f"{rules['sign_test_min_runs']:g}")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
