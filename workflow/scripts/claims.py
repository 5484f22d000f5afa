"""Verdicts on the article's claims C1-C10, computed from the data by stated rules.

Each claim is split into components: a figure the article gives (a change from one stage to the next, a ratio, a
threshold) and ours for the same quantity, one value per run. The rules:

- change: the article claims a change of a percent. Ours is the median over runs of the per-run change, with the
  half-range over runs as its spread; the noise is the larger of that spread and NEGLIGIBLE_PCT.
  If |a| < NEGLIGIBLE_PCT the article claims no change: it holds if |ours| <= noise.
  Otherwise it holds if ours has a's sign and at least half its size; partly if ours has a's sign and is above the
  noise but under half of a; it does not hold otherwise (the other sign, or lost in the noise).
- at_least: the article claims a value of at least a (branch efficiency 100%): holds if ours >= a - 1.
- ratio: the article claims the final stage takes a% of PyTorch's time: holds if ours <= a * (1 + RATIO_SLACK);
  partly if ours is below the article's starting ratio (v0, 237.9%); does not hold otherwise.
- static: a count in the compiled code (same for every run): holds if the stated relation is true.

A claim holds if all its components hold, does not hold if none holds even partly, and partly holds otherwise.
PyTorch's time for the ratios is torch-flash (FlashAttention-2, the backend PyTorch picks on the article's class
of GPU); torch-default (cuDNN on the H200) is reported beside it.

    python workflow/scripts/claims.py --agg results/aggregate --article data/article --out results/aggregate/claims.csv
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import selection  # noqa: E402

NEGLIGIBLE_PCT = 1.0
RATIO_SLACK = 0.05
HEADLINE, ARTICLE_TILE = selection.HEADLINE, selection.ARTICLE_TILE


def change_verdict(article: float, ours: list) -> tuple:
    o = statistics.median(ours)
    spread = (max(ours) - min(ours)) / 2
    noise = max(NEGLIGIBLE_PCT, spread)
    if abs(article) < NEGLIGIBLE_PCT:
        return ("holds" if abs(o) <= noise else "does not hold"), o, spread
    same = (o < 0) == (article < 0)
    if same and abs(o) >= abs(article) / 2:
        return "holds", o, spread
    if same and abs(o) > noise:
        return "partly", o, spread
    return "does not hold", o, spread


class Data:
    """Per-run values at the headline shape: times by variant and tile, Nsight metrics by variant."""

    def __init__(self, agg: Path, article: Path):
        pr = pd.read_csv(agg / "per_run.csv")
        self.times = pr[selection.at_headline(pr)]
        ncu = pd.read_csv(agg / "ncu.csv", usecols=["run", "variant", "metric", "instance", "value"])
        self.ncu = ncu[ncu.instance.isna()]
        self.build = pd.read_csv(agg / "build.csv")
        self.article = pd.read_csv(article / "claims.csv")

    def time(self, variant: str, **tile) -> pd.Series:
        t = {**ARTICLE_TILE, **tile} if not variant.startswith("torch") else {}
        sel = selection.where(self.times, variant=variant, **t)
        return self.times[sel].set_index("run").time_us

    def metric(self, variant: str, metric: str) -> pd.Series:
        m = self.ncu[(self.ncu.variant == variant) & (self.ncu.metric == metric)]
        return m.groupby("run").value.first()

    def static(self, variant: str, metric: str, arch: int = 90) -> float:
        b = self.build
        sel = selection.where(b, variant=variant, metric=metric, arch=arch, **ARTICLE_TILE)
        return float(b[sel].value.iloc[0]) if sel.any() else 0.0


def pct_change(new: pd.Series, old: pd.Series) -> list:
    both = pd.concat([new, old], axis=1, keys=["new", "old"]).dropna()
    return list(100 * (both.new / both.old - 1))


def components(d: Data) -> list:
    """(claim, component, quantity, article value, our per-run values or a static value, rule)."""
    T, M = d.time, d.metric
    rows = [
        ("C1", "DRAM bytes read, v0 to v1", "%", -97, pct_change(M("v1", "dram__bytes_read.sum"),
                                                                 M("v0", "dram__bytes_read.sum")), "change"),
        ("C1", "L2 hit rate, v0 to v1", "points", 25.21,
         list((M("v1", "lts__t_sector_hit_rate.pct") - M("v0", "lts__t_sector_hit_rate.pct")).dropna()), "change"),
        ("C1", "time, v0 to v1", "%", 0.0, pct_change(T("v1"), T("v0")), "change"),
        ("C2", "time, v1 to v2", "%", -40.72, pct_change(T("v2"), T("v1")), "change"),
        ("C2", "L2 bytes read, v1 to v2", "%", -47.69,
         pct_change(M("v2", "lts__t_sectors_srcunit_tex_op_read.sum"),
                    M("v1", "lts__t_sectors_srcunit_tex_op_read.sum")), "change"),
        ("C3", "time, v2 to v3", "%", -4.64, pct_change(T("v3"), T("v2")), "change"),
        ("C4", "registers per thread, v3 to v4", "%", -6.62,
         pct_change(M("v4", "launch__registers_per_thread"), M("v3", "launch__registers_per_thread")), "change"),
        ("C4", "blocks per SM allowed by registers, v3 to v4", "%", 100 * (4 / 3 - 1),
         pct_change(M("v4", "launch__occupancy_limit_registers"), M("v3", "launch__occupancy_limit_registers")),
         "change"),
        ("C4", "time, v3 to v4", "%", 1.57, pct_change(T("v4"), T("v3")), "change"),
        ("C5", "shared memory per block, v4 to v5", "%", -57.14,
         pct_change(M("v5", "launch__shared_mem_per_block_dynamic"), M("v4", "launch__shared_mem_per_block_dynamic")),
         "change"),
        ("C5", "theoretical occupancy, v4 to v5", "%", 100.0,
         pct_change(M("v5", "sm__maximum_warps_per_active_cycle_pct"),
                    M("v4", "sm__maximum_warps_per_active_cycle_pct")), "change"),
        ("C5", "time, v4 to v5", "%", -16.23, pct_change(T("v5"), T("v4")), "change"),
        ("C6", "executed instructions, v5 to v6", "%", -11.48,
         pct_change(M("v6", "smsp__inst_executed.sum"), M("v5", "smsp__inst_executed.sum")), "change"),
        ("C6", "time, v5 to v6", "%", -2.46, pct_change(T("v6"), T("v5")), "change"),
        ("C7", "executed instructions, v6 to v7", "%", -10.0,
         pct_change(M("v7", "smsp__inst_executed.sum"), M("v6", "smsp__inst_executed.sum")), "change"),
        ("C7", "branch instructions, v6 to v7", "%", -84.0,
         pct_change(M("v7", "smsp__inst_executed_op_branch.sum"), M("v6", "smsp__inst_executed_op_branch.sum")),
         "change"),
        ("C7", "branch efficiency of v7", "%", 100.0,
         list(M("v7", "smsp__sass_average_branch_targets_threads_uniform.pct")), "at_least"),
        ("C7", "time, v6 to v7", "%", -0.36, pct_change(T("v7"), T("v6")), "change"),
        ("C8", "time of v7 as % of torch-flash", "%", 652 / 580 * 100,
         list((100 * T("v7") / T("torch-flash")).dropna()), "ratio"),
        ("C8", "executed instructions, v7 vs torch-flash", "%", 85.0,
         pct_change(M("v7", "smsp__inst_executed.sum"), M("torch-flash", "smsp__inst_executed.sum")), "change"),
        ("C8", "shared-memory wavefronts (load + store), v7 vs torch-flash", "%", 50.0,
         pct_change(M("v7", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
                    + M("v7", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"),
                    M("torch-flash", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
                    + M("torch-flash", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")), "change"),
        ("C9", "time, final stage without warp specialization, 32x32 to 64x64 (4 warps)", "%", 700 / 652 * 100 - 100,
         pct_change(T("v7-warp_specialize", block_m=64, block_n=64), T("v7-warp_specialize")), "change"),
        ("C10", "time, v7 to v7 with Q prescaled", "%", 0.0, pct_change(T("v7+prescale_q"), T("v7")), "change"),
        ("C10", "FFMAs that become FADDs with Q prescaled (sm_90 SASS)", "instructions", 0.0,
         [d.static("v7", "sass.FFMA") - d.static("v7+prescale_q", "sass.FFMA"),
          d.static("v7+prescale_q", "sass.FADD") - d.static("v7", "sass.FADD")], "static"),
    ]
    return rows


def verdict(rule: str, article: float, ours: list) -> tuple:
    if not ours:
        return "not measured", float("nan"), float("nan")
    if rule == "change":
        return change_verdict(article, ours)
    o, spread = statistics.median(ours), (max(ours) - min(ours)) / 2
    if rule == "at_least":
        return ("holds" if o >= article - 1 else "does not hold"), o, spread
    if rule == "ratio":
        v = "holds" if o <= article * (1 + RATIO_SLACK) else "partly" if o < 1380 / 580 * 100 else "does not hold"
        return v, o, spread
    if rule == "static":  # FFMAs removed == FADDs added, and > 0
        removed, added = ours
        return ("holds" if removed > 0 and removed == added else "does not hold"), removed, 0.0
    raise ValueError(rule)


def claim_verdict(vs: list) -> str:
    vs = [v for v in vs if v != "not measured"]
    if not vs:
        return "not measured"
    if all(v == "holds" for v in vs):
        return "holds"
    if all(v == "does not hold" for v in vs):
        return "does not hold"
    return "partly"


def table(agg: Path, article: Path) -> pd.DataFrame:
    d = Data(agg, article)
    rows = []
    for claim, comp, unit, a, ours, rule in components(d):
        v, o, spread = verdict(rule, a, ours)
        rows.append(dict(claim=claim, component=comp, rule=rule, unit=unit, article=a, ours=o, spread=spread,
                         runs=len(ours) if rule != "static" else 0, verdict=v))
    df = pd.DataFrame(rows)
    claims = df.groupby("claim", sort=False).verdict.agg(claim_verdict).rename("claim_verdict")
    return df.merge(claims, on="claim")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agg", type=Path, required=True)
    ap.add_argument("--article", type=Path, default=Path("data/article"))
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    df = table(a.agg, a.article)
    df.to_csv(a.out, index=False)
    pd.set_option("display.width", 220)
    print(df.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
