"""The paper's numbers on our stages beyond the article: each at the headline against cuDNN and FlashAttention-2
(\\val{ours}{<stage>}{...}), the leading stage across lengths and at each N and dtype (\\val{lead}{<dtype>}{...},
\\val{best}{<dtype>}{...}), the Qwen3 layouts (\\val{qwen}{<N>}{range}), the predictions' verdicts
(\\val{pred}{<stage>@<against>@<quantity>@<N>[@<dtype>]}{measured}), the leave-one-out of our last measured stage
(\\val{abl_last}{<switch>}{...}), the tuned tiles, and the build's and Nsight's evidence the text quotes.

Our last stage is the last one measured (per_run.csv's role `last`), so that a stage registered and not yet
measured changes nothing here."""

import statistics
import sys
from pathlib import Path

import pandas as pd

from kernels.stages import ALL_SWITCHES, STAGES as REGISTRY, previous_stage, stage_adding

from pipeline import noise
from pipeline.latex import Values, count_word, fixed, listing, signed
from pipeline.selection import (GLUON_STAGES, HEADLINE, OUR_STAGES, RATIO_TIME, RATIO_TIME_WORDS, TRITON_OURS,
                                resolve_variant, switches_label, variant_name)

QUANTITY_WORDS = {"time": "time", "time_ratio": "time over cuDNN's", "smsp__inst_executed.sum": "instructions"}
QUANTITY_KEYS = {"time": "time", "time_ratio": "ratio", "smsp__inst_executed.sum": "instr"}


def faster_paired(change_pct) -> bool:
    """Whether the per-run changes (percent, one stage against another, each taken within a run) say faster by the
    paper's one rule for a change over runs (pipeline.noise: moved, and below zero)."""
    change = [float(x) for x in change_pct]
    return noise.moved(change) and statistics.median(change) < 0


def values(ours_stages: Path, per_n: Path, leader: Path, best_per_n: Path, per_run: Path, predictions: Path,
           tuned_tiles: Path, build: Path, ncu: Path) -> Values:
    v = Values("ours")
    pr = pd.read_csv(per_run)
    LAST = str(pr[pr["last"]].variant.iloc[0])          # our last measured stage
    v.macro("OursLast", LAST)
    v.macro("OursFirst", OUR_STAGES[0])
    for st, g in pd.read_csv(ours_stages).groupby("stage"):
        v.put("ours", st, "us", fixed(g.time_us.median(), 1))
        v.put("ours", st, "pct_cudnn", fixed(g.pct_cudnn.median()))
        v.put("ours", st, "pct_flash", fixed(g.pct_flash.median()))
    p = pd.read_csv(per_n)
    lead_table = pd.read_csv(leader)
    LEAD = str(lead_table[lead_table.leader].stage.iloc[0])   # our fastest stage across the lengths
    v.macro("OursLead", LEAD)
    measured = [s for s in TRITON_OURS if s in set(p.variant) | set(pr[pr.our_stage].variant)]
    after = measured[measured.index(LEAD) + 1:]
    v.macro("OursAfterLeadCount", count_word(len(after)))
    v.macro("OursAfterLeadFirst", after[0] if after else "--")
    v.macro("OursAfterLeadLast", after[-1] if after else "--")
    v.macro("LeadGeomeanX", fixed(lead_table.geomean_x_cudnn.iloc[0], 2))
    v.macro("LastGeomeanX", fixed(lead_table.set_index("stage").geomean_x_cudnn[LAST], 2))
    lead = p[p.variant == LEAD]
    best = pd.read_csv(best_per_n)
    # The twins (PyTorch's default SDPA and SDPA forced to cuDNN, the same cuDNN kernel) judged against each other by
    # the rule that judges our leading stage against cuDNN (best_per_n.csv: pipeline.noise's paired rule): the
    # median per-run difference at the headline and the largest over the sweep, and where the rule tells them apart
    head = best[(best.dtype == HEADLINE["dtype"]) & (best.N == HEADLINE["N"])].twin_change_pct
    v.macro("TwinHeadPct", signed(head.iloc[0], 1) if len(head) else "--")
    v.macro("TwinMostPct", fixed(best.twin_change_pct.abs().max(), 1))
    told = best[best.twin_standing.fillna("level") != "level"]
    v.macro("TwinLevelSentence", "level at every $N$ of the sweep in both dtypes" if told.empty else
            "level except at " + listing([f"$N={r.N}$ ({r.dtype}, {r.twin_standing})" for r in told.itertuples()]))
    pairs = best.leader_paired_runs
    v.macro("LeadPairedRuns", f"{pairs.min()}" if pairs.min() == pairs.max() else f"{pairs.min()}--{pairs.max()}")
    v.macro("RatioTime", RATIO_TIME_WORDS)
    # What cuDNN's memset (in time_us, not in the kernels alone) does to the ratio: cuDNN's memset per call, and our
    # leading stage's ratio to cuDNN at the shortest N in float16 with the memset counted and without (RATIO_TIME)
    cud_all = p[p.variant == "torch-cudnn"]
    v.macro("CudnnMemsetUs", fixed((cud_all.time_us - cud_all[RATIO_TIME]).median(), 1))
    short = lead[(lead.dtype == "float16") & (lead.N == lead.N.min())].set_index("run")
    with_memset = short.time_us / cud_all[(cud_all.dtype == "float16") & (cud_all.N == lead.N.min())].set_index(
        "run").time_us.reindex(short.index)
    v.macro("MemsetN", int(lead.N.min()))
    v.macro("MemsetLeadXWith", fixed(with_memset.median(), 2))
    v.macro("MemsetLeadXWithout", fixed(short.x_cudnn.median(), 2))
    x = lead.groupby(["dtype", "N"]).x_cudnn.median()
    for dt in ("float16", "bfloat16"):
        xd = x.loc[dt]
        bd = best[best.dtype == dt].set_index("N")
        for word in ("faster", "level", "behind"):       # each N by the paired rule (best_per_n.csv)
            v.put("lead", dt, word, listing([str(n) for n in xd.index if bd.leader_standing.get(n) == word]))
        v.put("lead", dt, "best_x", fixed(xd.min(), 2))
        v.put("lead", dt, "worst_x", fixed(xd.max(), 2))
        v.put("lead", dt, "worst_n", int(xd.idxmax()))
        bd = best[best.dtype == dt].set_index("N")
        v.put("best", dt, "not_lead", listing([f"{r.best} at $N={n}$ ({fixed(r.x_cudnn, 2)}$\\times$)"
                                               for n, r in bd.iterrows() if r.best != LEAD]))
    # Where a Triton stage after the leading one is the fastest of the Triton stages (float16), with its ratio and the
    # leading stage's (the Gluon stages, a second kernel, are set apart in their own paragraph).
    # The medians of two stages rest on different runs (a later stage was measured in fewer), so a stage whose median
    # ratio is the lowest is said to be faster than the leading one only where it is so paired over the runs that hold
    # both (faster_paired); elsewhere the two are level.
    f16 = p[p.variant.isin(TRITON_OURS) & (p.dtype == "float16")]
    tri = f16.groupby(["N", "variant"]).x_cudnn.median()
    fastest = tri.groupby(level="N").idxmin().map(lambda nv: nv[1])
    parts, level = [], []
    for st in [s for s in after if s in set(fastest)]:
        for n in [int(n) for n, b in fastest.items() if b == st]:
            pair = f16[f16.N == n].pivot_table(index="run", columns="variant", values="x_cudnn")[[st, LEAD]].dropna()
            change = 100 * (pair[st] / pair[LEAD] - 1)
            if faster_paired(change):
                parts.append((st, n, change))
            else:
                level.append((st, n, change))
    said = []
    for st in dict.fromkeys(s for s, _, _ in parts):
        mine = [(n, c) for s, n, c in parts if s == st]
        said.append(f"{st}, at $N=$ {listing([str(n) for n, _ in mine])} (float16: "
                    + listing([f"{signed(c.median())}\\% against {LEAD}, faster in {int((c < 0).sum())} of the "
                               f"{len(c)} runs that hold both" for _, c in mine]) + ")")
    v.macro("AfterLeadSentence",
            f"one of them is faster than {LEAD} at another length of the sweep: {listing(said)}" if said
            else f"none is faster than {LEAD} at any length of the sweep")
    # Where a later stage's median ratio is the lowest but, paired over the same runs, it is level with the leader.
    v.macro("AfterLeadLevelSentence", "".join(
        f"; at $N={n}$ {st}'s median ratio is the lowest of the Triton stages, but paired over the runs that hold "
        f"both it is level with {LEAD} ({signed(c.median())}\\%, faster in {int((c < 0).sum())} of {len(c)})"
        for st, n, c in level))
    big = lead[(lead.dtype == "float16") & (lead.N == lead.N.max())]
    cud = p[(p.variant == "torch-cudnn") & (p.dtype == "float16") & (p.N == lead.N.max()) & p.run.isin(big.run)]
    v.macro("LeadMaxN", int(lead.N.max()))
    v.macro("LeadMaxNTflops", fixed(big.tflops.median()))
    v.macro("LeadMaxNTflopsRange", f"{fixed(big.tflops.min())}--{fixed(big.tflops.max())}")
    v.macro("CudnnMaxNTflopsRange", f"{fixed(cud.tflops.min())}--{fixed(cud.tflops.max())}")
    v.macro("LeadMaxNPctRoof", fixed(big.pct_roof.median()))
    v.macro("CudnnMaxNTflops", fixed(cud.tflops.median()))
    v.macro("CudnnMaxNPctRoof", fixed(cud.pct_roof.median()))
    v.macro("LeadRuns", lead.run.nunique())
    spread = p[p.variant.isin(OUR_STAGES) & (p.N == p.N.max())].groupby(["variant", "dtype"]).x_cudnn
    v.macro("MaxNSpreadPct", fixed(100 * (spread.max() / spread.min() - 1).dropna().max()))
    qw = pr[pr.set.fillna("").str.contains("qwen3") & (pr.dtype == "float16")]
    qw = qw[(qw.variant == LEAD) & qw.own_tile | (qw.variant == "torch-cudnn")]
    qt = qw.pivot_table(index=["run", "N", "H"], columns="variant", values=RATIO_TIME, aggfunc="median").dropna()
    qpct = (100 * qt[LEAD] / qt["torch-cudnn"]).groupby(["N", "H"]).median()
    for n, g in qpct.groupby(level="N"):
        v.put("qwen", n, "range", f"{fixed(g.min())}--{fixed(g.max())}")
        # the runs behind the leading stage's ratio (it was measured in fewer runs than the set's other entries)
        v.put("qwen", n, "runs", qt.xs(n, level="N").index.get_level_values("run").nunique())
    v.macro("QwenNs", listing([str(n) for n in sorted(qpct.index.get_level_values("N").unique())]))
    pred = pd.read_csv(predictions)
    judged = pred[pred.verdict != "not measured"]
    v.macro("PredTotal", len(judged))
    unmeasured = pred[pred.verdict == "not measured"]
    v.macro("PredUnmeasuredSentence",
            "Every registered stage's predictions have been measured." if unmeasured.empty else
            f"The {count_word(len(unmeasured))} of "
            f"{listing(sorted(set(unmeasured.stage), key=lambda s: int(s[1:])))} wait for the stage's first run.")
    gl = judged[judged.stage.isin(GLUON_STAGES)]
    v.macro("PredGluonTotal", len(gl))
    v.macro("PredGluonHolds", int((gl.verdict == "holds").sum()))
    v.macro("PredGluonBetter", int((gl.verdict == "better").sum()))
    v.macro("PredGluonWorse", int((gl.verdict == "worse").sum()))
    v.macro("PredHolds", int((judged.verdict == "holds").sum()))
    v.macro("PredBetter", int((judged.verdict == "better").sum()))
    v.macro("PredWorse", int((judged.verdict == "worse").sum()))
    versus = {"torch-cudnn": ""}   # a ratio to cuDNN says what it is compared to; a change names the stage it is from
    v.macro("PredWorseList", listing([f"{r.stage}'s {QUANTITY_WORDS.get(r.quantity, r.quantity)}"
                                      f"{versus.get(r.compared_to, f' against {r.compared_to}')} at $N={r.N}$ "
                                      f"({r.measured_pct:+.1f}\\% for {r.low_pct:+g}..{r.high_pct:+g})"
                                      for r in judged.itertuples() if r.verdict == "worse"]))
    turned = judged[(judged.quantity == "time_ratio") & (judged.verdict_time_us.fillna("") != "")
                    & (judged.verdict_time_us != judged.verdict)]    # verdicts the kernels alone give otherwise
    v.macro("PredMemsetTurned", listing([f"{r.stage}'s at $N={r.N}$ ({r.verdict}; with the memset {r.verdict_time_us})"
                                         for r in turned.itertuples()], none="none"))
    v.macro("PredMemsetTurnedCount", count_word(len(turned)))
    for r in judged.itertuples():
        against = "cudnn" if r.compared_to == "torch-cudnn" else r.compared_to
        row = "@".join([r.stage, against, QUANTITY_KEYS.get(r.quantity, "instr"), str(r.N)]
                       + ([r.dtype] if r.dtype != "float16" else []))
        v.put("pred", row, "measured", f"{r.measured_pct:+.0f}")
    h = pr[pr.headline & (pr.impl == "triton")]
    t = h.pivot_table(index="run", columns="variant", values="time_us", aggfunc="median")
    for sw in [s for s in ALL_SWITCHES if s in REGISTRY[LAST].switches]:
        name = variant_name(resolve_variant(f"{LAST}-{sw}"))
        if name in t:
            both = t[[LAST, name]].dropna()
            v.put("abl_last", sw, "without_pct", f"{(100 * (both[name] / both[LAST] - 1)).median():+.0f}")
    for ext in ("overlap_qk", "prescale_q"):
        name = f"{LAST}+{ext}"
        if name in t:
            both = t[[LAST, name]].dropna()
            v.put("abl_last", ext, "with_pct", f"{(100 * (both[name] / both[LAST] - 1)).median():+.0f}")
    # The step to heads_inner split in two, by switch sets (the variant names of older runs' ablation rows depend on
    # which stage was last then): the grid order off alone, and the longest-first order on top of it.
    hi = stage_adding("heads_inner")
    by_sw = h[h.own_tile].pivot_table(index="run", columns="switches", values="time_us", aggfunc="median")
    nohf = switches_label(REGISTRY[hi].switches - {"heavy_first"})
    prev, full = switches_label(REGISTRY[previous_stage(hi)].switches), switches_label(REGISTRY[hi].switches)
    both = by_sw[[nohf, prev, full]].dropna()
    v.macro("GridOffAlonePct", signed((100 * (both[nohf] / both[prev] - 1)).median()))
    v.macro("HeavyOnTopPct", signed((100 * (both[full] / both[nohf] - 1)).median()))
    v.macro("GridOffRuns", len(both))
    tt = pd.read_csv(tuned_tiles)
    v.macro("TunedRun", tt.run.iloc[0])
    v.macro("TunedVariant", tt.variant.iloc[0])
    v.macro("TunedTilesTried", int(tt.tiles_tried.max()))
    tiles = tt.assign(tile=lambda d: [f"{r.block_m}$\\times${r.block_n} ({r.num_warps} warps, {r.num_stages} stages)"
                                      for r in d.itertuples()])
    v.macro("TunedTilesText", "; ".join(f"{tile} at $N=$ {listing([str(n) for n in sorted(g.N)])}"
                                        for tile, g in tiles.groupby("tile", sort=False)))
    tuned = pred[(pred.switch == "tuned_tiles") & (pred.quantity == "time")]
    v.macro("TunedChanges", listing([f"{signed(r.measured_pct)}\\% at $N={r.N}$" for r in tuned.itertuples()]))
    b = pd.read_csv(build)
    b = b[(b.arch == 90) & (b.metric == "sass_instructions")]
    hd = stage_adding("host_descriptors")
    sass = {s: float(b[(b.variant == s) & (b.block_m == REGISTRY[s].tile.block_m)
                       & (b.block_n == REGISTRY[s].tile.block_n)].value.iloc[0]) for s in (hd, previous_stage(hd))}
    v.macro("HostDescSassPct", fixed(100 * (sass[hd] / sass[previous_stage(hd)] - 1)))
    n = pd.read_csv(ncu, usecols=["variant", "metric", "instance", "value"], low_memory=False)
    n = n[n.instance.isna()].groupby(["variant", "metric"]).value.median()
    v.macro("NcuCudnnBlockThreads", fixed(n[("torch-cudnn", "launch__block_size")]))
    v.macro("NcuCudnnGrid", fixed(n[("torch-cudnn", "launch__grid_size")]))
    # the measured matrix roof (a dense product timed in the same run) is not a bound: the entries of per_n above it
    over = p[p.pct_roof > 100]
    v.macro("RoofOverCount", count_word(len(over)))
    v.macro("RoofOverMaxPct", fixed(over.pct_roof.max(), 1) if len(over) else "--")
    v.macro("RoofOverEntries", listing([f"{r.variant} at $N={r.N}$ ({r.dtype}, {r.run})" for r in
                                        over.sort_values("pct_roof", ascending=False).itertuples()]))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
