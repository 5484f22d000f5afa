"""Verdicts on the article's claims C1-C10: an evaluator of the components in data/article/components.csv.

Each component is a row of data: the claim, what it compares (a quantity from one variant to another, at the
headline shape or at another sequence length N), the rule, and an optional premise. This program only looks the
figures up and applies the rules; nothing about a particular claim is written here.

The article's figure (one rule for all): recomputed from the article's own absolute figures when it prints both
ends (data/article/timings.csv, ncu.csv); the percentage it prints when it gives only that; its estimate
(claims.csv, `predicted`) where the component is an estimate. Where a printed percentage and the recomputed one
differ by more than the printed rounding, the component is listed in slips.csv.

Ours: one value per run; the component's value is the median over runs, its range (the column `noise`) the
highest run less the lowest (shown, and used by no rule). Whether a change is told from no change is a paired
statistic over the runs that measured both ends (each run's value is already the change within that run, both ends
timed side by side): a two-sided exact sign test (`sign_test_p`). A change has moved (`moved`) when its median is
beyond NEGLIGIBLE_PCT and, over at least SIGN_TEST_MIN_RUNS runs (the fewest with which a sign test can reach
ALPHA), the sign test rejects no change at ALPHA; with fewer runs (a run alone), by its size alone. The test counts
runs on each side of zero, not the spread: runs that all move the same way have moved, however far apart they lie,
and runs that scatter evenly on both sides of zero have not, however large the scatter. The rules:

- change (%), change_points (percentage points): if the article claims no change (|a| < NEGLIGIBLE_PCT) ours holds
  if it has not moved. Otherwise ours holds if it has a's sign and its size is within a factor of FACTOR of a's
  (|a| / FACTOR <= |ours| <= FACTOR |a|); it partly holds if it has a's sign and has moved; it does not hold
  otherwise.
- at_least: the article claims a value of at least a: holds if ours >= a - NEGLIGIBLE_PCT.
- ratio: the article's final stage takes a% of its PyTorch's time: holds if ours <= a (1 + RATIO_SLACK), does not
  hold otherwise.
- static: a count in the compiled code: holds if as many FFMAs leave as FADDs arrive, and more than none.
- premise: if the component's premise is false on this GPU at its shape (working_set_exceeds_l2: Q, K, V and O
  fit in the L2) or in this build (exponent_is_one_ffma: v7's exponentials are not each one fused FFMA), the
  component is "not testable here", whatever was measured.

Times are the column selection.RATIO_TIME of per_run.csv (the kernels alone), as every ratio to a backend is; a
change or ratio of times within a run pairs two entries timed on one GPU (an x2 run whose pair ran on two GPUs is
left out of that component).

A claim holds if all its testable components hold, does not hold if none holds even partly, and partly holds
otherwise.

Run by the rule `claims_by_run`, the same rules give every run alone its own table (claims_by_run.csv: one row per
run and component, a run's value and verdict as the aggregate of that run alone would give them: one run, so a
change is judged by its size alone):
the spread of the committed runs' own verdicts, against which `make compare` sets a reviewer's run.

The rule `claims` (workflow/rules/aggregate.smk) names every file read; `table()` takes them by name.
"""

import copy
import statistics
import sys
from pathlib import Path

import pandas as pd

from kernels.shapes import HEADLINE as _HEADLINE, Shape
from kernels.theory import traffic

from pipeline import selection
from pipeline.noise import ALPHA, NEGLIGIBLE_PCT, SIGN_TEST_MIN_RUNS, moved, sign_test_p  # noqa: F401 (the rule)

FACTOR = 2.0           # a change of the article's sign holds within this factor of its size
RATIO_SLACK = 0.05     # the final ratio holds within 5% of the article's


def parse_variant(spec: str) -> tuple:
    """'<variant>@<BM>x<BN>' -> (variant, BM, BN); a variant alone -> (variant, None, None)."""
    if "@" in spec:
        variant, tile = spec.split("@")
        bm, bn = tile.split("x")
        return variant, int(bm), int(bn)
    return spec, None, None


def pct(new: float, old: float) -> float:
    return 100 * (new / old - 1)


class Article:
    """The article's figures for a component, by the one rule stated in the module's doc."""

    def __init__(self, timings: Path, ncu: Path, claims: Path):
        self.times = pd.read_csv(timings)
        self.ncu = pd.read_csv(ncu)
        self.claims = pd.read_csv(claims)

    def _time(self, spec: str) -> float | None:
        variant, bm, _ = parse_variant(spec)
        t = self.times
        bm = bm or selection.ARTICLE_TILE["block_m"]
        sel = t.impl == variant if variant.startswith("torch") else (t.stage == variant) & (t.block_m == bm)
        return float(t[sel].time_us.iloc[0]) if sel.any() else None

    def _absolute(self, metric: str, stage: str) -> float | None:
        n = self.ncu
        v = n[(n.metric == metric) & (n.stage == stage) & (n.kind == "absolute")].value
        return float(v.iloc[0]) if len(v) else None

    def _printed(self, metric: str, stage: str, kinds):
        n = self.ncu
        v = n[(n.metric == metric) & (n.stage == stage) & n.kind.isin(kinds)].value
        return float(v.iloc[0]) if len(v) else None

    def _printed_time_change(self, claim: str) -> float | None:
        c = self.claims
        v = c[(c.claim == claim) & c.quantity.isin(["time_change", "kv_loop_iterations_change"])].measured.dropna()
        return float(v.iloc[0]) if len(v) else None

    def value(self, comp) -> tuple:
        """(figure the verdict takes, the printed figure or None, basis: recomputed / printed / estimate / none)."""
        q, src, dst, rule = comp.article_quantity, comp.article_from, comp.article_to, comp.rule
        if not isinstance(q, str) or not q:
            return float("nan"), None, "none"
        if q.startswith("estimate:"):
            c = self.claims
            v = c[(c.claim == q.split(":")[1]) & c.predicted.notna()]
            v = v[v.quantity.str.contains("change")].predicted
            return float(v.iloc[0]), float(v.iloc[0]), "estimate"
        if q == "time":
            new, old = self._time(dst), self._time(src)
            if rule == "ratio":
                return 100 * new / old, None, "recomputed"
            stages = selection.STAGES
            consecutive = src in stages and dst in stages and stages.index(dst) == stages.index(src) + 1
            return pct(new, old), (self._printed_time_change(comp.claim) if consecutive else None), "recomputed"
        printed = self._printed(q, dst, ("vs_torch_pct",) if src == "torch" else ("change_pct", "change_points"))
        new = self._absolute(q, dst)
        if rule == "at_least":
            return new, None, "printed"
        old = self._absolute(q, src) if isinstance(src, str) else None
        if new is not None and old is not None:
            return (new - old if rule == "change_points" else pct(new, old)), printed, "recomputed"
        if printed is not None:
            return printed, printed, "printed"
        return float("nan"), None, "none"


class Ours:
    """Our per-run values of a quantity: kernel times, Nsight metrics (at the headline, or at the premise entries'
    N), static counts from the build."""

    def __init__(self, per_run: Path, ncu: Path, premise: Path, build: Path, runs: Path):
        pr = pd.read_csv(per_run)
        self.times = pr[selection.where(pr, **{k: v for k, v in selection.HEADLINE.items() if k != "N"})]
        ncu = pd.read_csv(ncu, usecols=["run", "variant", "metric", "instance", "value"])
        self.ncu = ncu[ncu.instance.isna()]
        premise = pd.read_csv(premise) if Path(premise).stat().st_size > 1 else pd.DataFrame()
        self.premise = premise[premise.instance.isna()] if not premise.empty else premise
        self.build = pd.read_csv(build)
        self.runs = pd.read_csv(runs)

    def _entries(self, spec: str, N: int) -> pd.DataFrame:
        variant, bm, bn = parse_variant(spec)
        t = self.times[(self.times.variant == variant) & (self.times.N == N)]
        if not variant.startswith("torch"):
            tile = {**selection.ARTICLE_TILE, **({"block_m": bm, "block_n": bn} if bm else {})}
            t = t[selection.where(t, **tile)]
        return t.set_index("run")

    def time(self, spec: str, N: int) -> pd.Series:
        return self._entries(spec, N)[selection.RATIO_TIME]

    def gpu(self, spec: str, N: int) -> pd.Series:
        """The GPU each run timed the entry on (an x2 run's sets ran on two)."""
        e = self._entries(spec, N)
        return e.gpu if "gpu" in e else pd.Series(index=e.index, dtype=object)

    def metric(self, variant: str, metric: str, N: int) -> pd.Series:
        if metric == "shared_wavefronts":
            return (self.metric(variant, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", N)
                    + self.metric(variant, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", N))
        if N == selection.HEADLINE["N"]:
            m = self.ncu[(self.ncu.variant == variant) & (self.ncu.metric == metric)]
        elif not self.premise.empty:
            m = self.premise[(self.premise.variant == variant) & (self.premise.metric == metric)
                             & (self.premise.N == N)]
        else:
            return pd.Series(dtype=float)
        return m.groupby("run").value.first()

    def static(self, variant: str, metric: str, arch: int = 90) -> float:
        b = self.build
        sel = selection.where(b, variant=variant, metric=metric, arch=arch, **selection.ARTICLE_TILE)
        return float(b[sel].value.iloc[0]) if sel.any() else 0.0

    def values(self, comp, N: int) -> list:
        q, src, dst = comp.quantity, comp["from"], comp.to
        if comp.rule == "static":
            return [self.static(src, "sass.FFMA") - self.static(dst, "sass.FFMA"),
                    self.static(dst, "sass.FADD") - self.static(src, "sass.FADD")]
        get = (lambda v: self.time(v, N)) if q == "time" else (lambda v: self.metric(v, q, N))
        new = get(dst)
        if comp.rule == "at_least":
            return list(new.dropna())
        both = pd.concat([new, get(src)], axis=1, keys=["new", "old"]).dropna()
        if q == "time":    # a change within a run pairs two entries timed on one GPU (an x2 run's sets ran on two)
            g = pd.concat([self.gpu(dst, N), self.gpu(src, N)], axis=1, keys=["new", "old"]).reindex(both.index)
            both = both[selection.same_gpu(g.new, g.old)]
        if comp.rule == "ratio":
            return list(100 * both.new / both.old)
        if comp.rule == "change_points":
            return list(both.new - both.old)
        return list(100 * (both.new / both.old - 1))

    def runs_measured(self) -> list:
        return sorted(self.runs.run)

    def only(self, run: str) -> "Ours":
        """The same values restricted to one run: what the aggregate of that run alone would give (each of these
        tables is per run; runs.csv's L2 size is that run's)."""
        one = copy.copy(self)
        one.times = self.times[self.times.run == run]
        one.ncu = self.ncu[self.ncu.run == run]
        one.premise = self.premise[self.premise.run == run] if not self.premise.empty else self.premise
        one.runs = self.runs[self.runs.run == run]
        return one

    def premise_holds(self, premise: str, N: int) -> bool:
        if not isinstance(premise, str) or not premise:
            return True
        if premise == "exponent_is_one_ffma":
            # C10's: Triton fuses the article's s * scale - m into one FFMA per exponential (v7's, the article's last
            # stage, in the sm_90 build); false since issue 22's exact exponent, (s - m) * scale
            final = selection.STAGES[-1]
            return self.static(final, "sass.FFMA") >= self.static(final, "sass.MUFU.EX2") > 0
        if premise == "working_set_exceeds_l2":
            shape = Shape(**{**_HEADLINE.as_dict(), "N": N})
            tile = selection.ARTICLE_TILE
            need = traffic(shape, tile["block_m"], tile["block_n"], causal_skip=False)["min_dram_bytes"]
            return need > self.runs.l2_bytes.min()
        raise ValueError(f"unknown premise {premise!r}")


def verdict(rule: str, article: float, ours: list) -> tuple:
    """(verdict, our value, range over runs) by the rules of the module's doc."""
    if not ours:
        return "not measured", float("nan"), float("nan")
    if rule == "static":
        removed, added = ours
        return ("holds" if removed > 0 and removed == added else "does not hold"), removed, 0.0
    o, spread = statistics.median(ours), max(ours) - min(ours)
    if rule in ("change", "change_points"):
        if abs(article) < NEGLIGIBLE_PCT:
            return ("does not hold" if moved(ours) else "holds"), o, spread
        same = (o < 0) == (article < 0) and o != 0
        if same and abs(article) / FACTOR <= abs(o) <= FACTOR * abs(article):
            return "holds", o, spread
        if same and moved(ours):
            return "partly", o, spread
        return "does not hold", o, spread
    if rule == "at_least":
        return ("holds" if o >= article - NEGLIGIBLE_PCT else "does not hold"), o, spread
    if rule == "ratio":
        return ("holds" if o <= article * (1 + RATIO_SLACK) else "does not hold"), o, spread
    raise ValueError(f"unknown rule {rule!r}")


def paired(rule: str, ours: list) -> dict:
    """The paired statistic beside a component's verdict: runs above and below zero, the sign test's p, and whether
    the change has moved (NaN and False where the rule compares no two ends)."""
    if rule not in ("change", "change_points") or not ours:
        return dict(runs_above=0, runs_below=0, sign_p=float("nan"), moved=False)
    return dict(runs_above=sum(d > 0 for d in ours), runs_below=sum(d < 0 for d in ours),
                sign_p=sign_test_p(ours), moved=moved(ours))


def claim_verdict(vs) -> str:
    vs = [v for v in vs if v in ("holds", "partly", "does not hold")]
    if not vs:
        return "not testable here"
    if all(v == "holds" for v in vs):
        return "holds"
    if all(v == "does not hold" for v in vs):
        return "does not hold"
    return "partly"


def is_slip(printed: float | None, recomputed: float) -> bool:
    """A printed percentage that the article's own figures do not give: off by more than one unit of its last
    printed digit (so that rounding and truncation both pass)."""
    if printed is None or pd.isna(recomputed):
        return False
    decimals = len(f"{printed:g}".split(".")[1]) if "." in f"{printed:g}" else 0
    return abs(printed - recomputed) > 10 ** -decimals + 1e-9


def rules() -> pd.DataFrame:
    """The rules' constants, for the paper to state them: name, value, what it is."""
    return pd.DataFrame([
        dict(name="negligible_pct", value=NEGLIGIBLE_PCT, means="a change under this (%) is no change"),
        dict(name="factor", value=FACTOR, means="a change of the article's sign holds within this factor of its size"),
        dict(name="ratio_slack_pct", value=100 * RATIO_SLACK, means="the final ratio holds within this (%) of the "
                                                                     "article's"),
        dict(name="alpha", value=ALPHA, means="a change has moved when the sign test over the runs rejects no change "
                                              "at this level"),
        dict(name="sign_test_min_runs", value=SIGN_TEST_MIN_RUNS, means="the fewest runs with which a sign test can "
                                                                         "reach alpha; fewer: the size alone"),
    ])


def table(article_components: Path, article: Article, ours: Ours) -> pd.DataFrame:
    comps = pd.read_csv(article_components)
    rows = []
    for _, c in comps.iterrows():
        N = int(c.N) if not pd.isna(c.N) else selection.HEADLINE["N"]
        a, printed, basis = article.value(c)
        values = ours.values(c, N)
        v, o, spread = verdict(c.rule, a, values)
        if not ours.premise_holds(c.premise, N):
            v = "not testable here"
        rows.append(dict(id=c.id, claim=c.claim, component=c.component, N=N, rule=c.rule, unit=c.unit,
                         quantity=c.quantity,
                         **{"from": c["from"], "to": c.to}, article=a,
                         article_printed=printed, article_basis=basis, slip=is_slip(printed, a), ours=o,
                         noise=spread, runs=len(values) if c.rule != "static" else 0, **paired(c.rule, values),
                         verdict=v,
                         note=c.note if isinstance(c.note, str) else ""))
    df = pd.DataFrame(rows)
    claims = df.groupby("claim", sort=False).verdict.agg(claim_verdict).rename("claim_verdict")
    return df.merge(claims, on="claim")


def by_run(article_components: Path, article: Article, ours: Ours) -> pd.DataFrame:
    """table() of every run alone, one after the other, with the run's name in a first column."""
    frames = [table(article_components, article, ours.only(run)).assign(run=run) for run in ours.runs_measured()]
    df = pd.concat(frames, ignore_index=True)
    return df[["run"] + [c for c in df.columns if c != "run"]]


def main_by_run(input, output) -> None:
    article = Article(input.article_timings, input.article_ncu, input.article_claims)
    ours = Ours(input.per_run, input.ncu, input.premise, input.build, input.runs)
    by_run(input.article_components, article, ours).to_csv(output[0], index=False)


def main(input, output) -> None:
    article = Article(input.article_timings, input.article_ncu, input.article_claims)
    ours = Ours(input.per_run, input.ncu, input.premise, input.build, input.runs)
    df = table(input.article_components, article, ours)
    df.to_csv(output.claims, index=False)
    df[df.slip].to_csv(output.slips, index=False)
    rules().to_csv(output.claim_rules, index=False)
    pd.set_option("display.width", 220)
    print(df.drop(columns=["note"]).round(2).to_string(index=False))


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stdout = sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    (main_by_run if snakemake.rule.endswith("claims_by_run") else main)(snakemake.input, snakemake.output)  # noqa: F821
