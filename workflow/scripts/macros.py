"""Every number the paper's text quotes, as LaTeX macros (results/paper/macros.tex), computed from the aggregated
data: nothing is typed into the TeX twice. Also the code of each switch, cut from the kernel source, as listings.

    python workflow/scripts/macros.py --agg results/aggregate --runs data/nvidia-h200/run-* --out results/paper
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
import claims as claims_rules  # noqa: E402
import large_n  # noqa: E402
import step_times  # noqa: E402
import selection  # noqa: E402
import tables  # noqa: E402

from kernels.shapes import HEADLINE, attention_flops  # noqa: E402
from kernels.gpus import ARCHS  # noqa: E402
from kernels.stages import ALL_SWITCHES, STAGES as REGISTRY, TUNED_TILES, previous_stage, stage_adding  # noqa: E402
from kernels.theory import traffic  # noqa: E402

DIGITS = "Zero One Two Three Four Five Six Seven Eight Nine".split()
SECTOR_BYTES = 32  # an L2 sector


def name(*parts) -> str:
    """A macro name from parts: letters only (digits spelled out), CamelCase."""
    text = "".join(str(p)[:1].upper() + str(p)[1:] for p in parts)
    text = re.sub(r"\d", lambda m: DIGITS[int(m.group())], text)
    return re.sub(r"[^A-Za-z]", "", text)


def stage_macros(agg: Path, article: Path, runs: list) -> dict:
    """Each stage's row of the stage table, the PyTorch times, the run-to-run variation, the runs and GPUs."""
    m = {}
    for _, r in tables.stage_rows(agg, article).iterrows():
        st = r.stage
        m[name(st, "us")] = f"{r.ours_us:.1f}"
        m[name(st, "ArticleUs")] = f"{r.article_us:.0f}"
        m[name(st, "PctFlash")] = f"{r.pct_flash:.0f}"
        m[name(st, "PctDefault")] = f"{r.pct_default:.0f}"
        m[name(st, "ArticlePct")] = f"{r.article_pct:.1f}"
        m[name(st, "Regs")] = f"{r.ours_regs:.0f}"
        m[name(st, "SmemKB")] = f"{r.ours_smem_kb:.1f}"
    med = _torch_medians(agg)
    for impl in selection.TORCH:
        m[name(impl, "us")] = f"{med[impl]:.1f}"
    var = pd.read_csv(agg / "variation.csv")
    m["MaxTimeVariation"] = f"{var.time_us_run_to_run_pct.max():.1f}"
    m["MaxRatioVariation"] = f"{var[['pct_of_torch-flash_run_to_run_pct', 'pct_of_torch-default_run_to_run_pct']].max().max():.1f}"
    m["NumRuns"] = str(len(runs))
    m["NumGPUsRecorded"] = str(len({u for r in runs for u in _uuids(r)}))
    m["NumRunsNoUuid"] = str(sum(not _uuids(r) for r in runs))
    return m


def _torch_medians(agg: Path) -> pd.Series:
    head = pd.read_csv(agg / "headline.csv")
    return head[head.run == "median of runs"].iloc[0]


def tile_macros(agg: Path) -> dict:
    """The best tile of the final stage with and without warp specialization, the factor from the article's tile
    split in two, the tiles tried and refused."""
    m = {}
    med = _torch_medians(agg)
    pr = pd.read_csv(agg / "per_run.csv")
    hl = pr[selection.at_headline(pr)]
    final_us = hl[(hl.variant == selection.FINAL) & selection.at_article_tile(hl)].groupby("run").time_us.first()
    final_us = final_us.median()
    for variant in (selection.FINAL, selection.FINAL_NO_WS):
        t = hl[hl.variant == variant].groupby(["block_m", "block_n", "num_warps", "num_stages"]).time_us.median()
        (bm, bn, w, st), best = t.idxmin(), t.min()
        key = "Ws" if variant == selection.FINAL else "NoWs"
        m[name("Best", key, "Tile")] = f"{int(bm)}$\\times${int(bn)}, {int(w)} warps, {int(st)} stages"
        m[name("Best", key, "us")] = f"{best:.1f}"
        m[name("Best", key, "PctFlash")] = f"{100 * best / med['torch-flash']:.0f}"
        m[name("Best", key, "PctDefault")] = f"{100 * best / med['torch-default']:.0f}"
        at = hl[(hl.variant == variant) & (hl.block_m == bm) & (hl.block_n == bn) & (hl.num_warps == w)
                & (hl.num_stages == st)]
        m[name("Best", key, "CallUs")] = f"{at.call_us.median():.1f}"
        m[name("Best", key, "SpreadPct")] = f"{100 * (at.hi_us.max() / at.lo_us.min() - 1):.1f}"
    best_no_ws = float(m["BestNoWsUs"])
    m["ArticleTileSlowdown"] = f"{final_us / best_no_ws:.1f}"
    # The same factor split in two: warp specialization off at the article's tile, then the tile alone.
    no_ws_article = hl[(hl.variant == selection.FINAL_NO_WS) & selection.at_article_tile(hl)].time_us.median()
    m["NoWsArticleTileUs"] = f"{no_ws_article:.1f}"
    m["WsOffAtArticleTilePct"] = f"{100 * (no_ws_article / final_us - 1):.1f}"
    m["TileOnlySlowdown"] = f"{no_ws_article / best_no_ws:.1f}"
    tiles = hl[hl.set.fillna("").str.contains("tiles")]
    m["TilesTried"] = str(tiles.groupby(["variant", "block_m", "block_n", "num_warps", "num_stages"]).ngroups)
    timings = pd.read_csv(agg / "timings.csv", usecols=["run", "variant", "status", "block_m", "block_n",
                                                        "num_warps", "num_stages", "set"])
    refused = timings[(timings.status == "refused") & timings.set.fillna("").str.contains("tiles")]
    tile = ["block_m", "block_n", "num_warps", "num_stages"]
    m["TilesRefusedWs"] = str(refused[refused.variant == selection.FINAL].groupby(tile).ngroups)
    m["TilesRefusedNoWs"] = str(refused[refused.variant == selection.FINAL_NO_WS].groupby(tile).ngroups)
    m["TimingsOk"] = str(int((timings.status == "ok").sum()))
    return m


def sweep_macros(agg: Path) -> dict:
    """bfloat16 at the headline, throughput at the longest sequence, the measured ceilings."""
    m = {}
    pr = pd.read_csv(agg / "per_run.csv")
    bf = pr[selection.where(pr, **{**selection.HEADLINE, "dtype": "bfloat16"})]
    bf = bf[(bf.impl != "triton") | selection.at_article_tile(bf)].groupby("variant").time_us.median()
    for v in (selection.BASELINE, selection.FINAL, "torch-flash", "torch-default"):
        m[name("Bf", v, "us")] = f"{bf[v]:.1f}"
    layout = {k: v for k, v in HEADLINE.as_dict().items() if k != "N"}
    sw = pr[pr.set.fillna("").str.contains("n_sweep") & selection.where(pr, **layout)]
    sw = sw[sw.N == sw.N.max()]
    sw = sw[(sw.impl != "triton") | selection.at_article_tile(sw)]
    tf = (attention_flops(sw.B, sw.H, sw.N, sw.D, sw.causal) / (sw.time_us * 1e-6) / 1e12).groupby(sw.variant)
    tf = tf.median()
    m["SweepMaxN"] = str(int(sw.N.max()))
    for v in (selection.BASELINE, selection.CAUSAL_SKIP_STAGE, selection.FINAL, "torch-flash", "torch-default"):
        m[name("Sweep", v, "Tflops")] = f"{tf[v]:.0f}"
    ceil = pd.read_csv(agg / "ceilings.csv")
    if not ceil.empty:
        m["PeakFpSixteen"] = f"{ceil[(ceil.quantity == 'matmul_tflops') & (ceil.dtype == 'float16')].value.median():.0f}"
        m["CopyBandwidth"] = f"{ceil[ceil.quantity == 'copy_gbps'].value.median() / 1000:.2f}"
    return m


def traffic_macros() -> dict:
    """T1, T2, the minimum DRAM traffic and the FLOPs of the headline at the article's tile (kernels.theory)."""
    m = {}
    bm, bn = selection.ARTICLE_TILE["block_m"], selection.ARTICLE_TILE["block_n"]
    t_full = traffic(HEADLINE, bm, bn, causal_skip=False)
    t_skip = traffic(HEADLINE, bm, bn, causal_skip=True)
    m["TOneMiB"] = f"{t_full['requested_read_bytes'] / 2**20:.0f}"
    m["TOneMB"] = f"{t_full['requested_read_bytes'] / 1e6:.2f}"
    m["TTwoMiB"] = f"{t_full['requested_write_bytes'] / 2**20:.0f}"
    m["TTwoMB"] = f"{t_full['requested_write_bytes'] / 1e6:.2f}"
    m["TOneSkipMiB"] = f"{t_skip['requested_read_bytes'] / 2**20:.0f}"
    m["MinDramMiB"] = f"{t_full['min_dram_bytes'] / 2**20:.0f}"
    m["UsefulGflop"] = f"{t_full['matmul_flops_useful'] / 1e9:.2f}"
    m["ExecGflopFull"] = f"{t_full['matmul_flops_executed'] / 1e9:.2f}"
    m["ExecGflopSkip"] = f"{t_skip['matmul_flops_executed'] / 1e9:.2f}"
    return m


def ncu_macros(agg: Path) -> dict:
    """Nsight figures the text quotes: traffic of the baseline, register limits, matrix instructions per kernel,
    instructions, shared-memory wavefronts, registers and occupancy of the final stage and FlashAttention-2, branch
    efficiency around the two-phase loop, and the static SASS growth of that loop."""
    m = {}
    raw = pd.read_csv(agg / "ncu.csv", usecols=["variant", "metric", "instance", "value"])
    ncu = raw[raw.instance.isna()].groupby(["variant", "metric"]).value.median()
    B = selection.BASELINE
    m["DramReadBaselineMB"] = f"{ncu[(B, 'dram__bytes_read.sum')] / 1e6:.1f}"
    m["LTwoReadBaselineMB"] = f"{ncu[(B, 'lts__t_sectors_srcunit_tex_op_read.sum')] * SECTOR_BYTES / 1e6:.1f}"
    ws = selection.stage_adding("warp_specialize")
    for st in (selection.previous_stage(selection.previous_stage(ws)), selection.previous_stage(ws), ws):
        m[name(st, "RegBlocks")] = f"{ncu[(st, 'launch__occupancy_limit_registers')]:.0f}"
    ops = raw[raw.metric == "sass__inst_executed_per_opcode"].groupby(["variant", "instance"]).value.median()

    def op(variant, opcode):
        return f"{ops.get((variant, opcode), 0) / 1e3:.0f}"

    m["HgmmaCudnnK"], m["HmmaCudnnK"] = op("torch-default", "HGMMA"), op("torch-default", "HMMA")
    m["HgmmaFlashK"], m["HmmaFlashK"] = op("torch-flash", "HGMMA"), op("torch-flash", "HMMA")
    m["HgmmaBestTileK"] = op(selection.FINAL_NO_WS, "HGMMA")
    m["HmmaFinalK"] = op(selection.FINAL, "HMMA")
    waves = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")
    for variant, key in ((selection.FINAL, "Final"), ("torch-flash", "Flash")):
        m[name("Inst", key, "M")] = f"{ncu[(variant, 'smsp__inst_executed.sum')] / 1e6:.1f}"
        m[name("SharedWaves", key, "M")] = f"{sum(ncu[(variant, w)] for w in waves) / 1e6:.2f}"
        m[name("Regs", key)] = f"{ncu[(variant, 'launch__registers_per_thread')]:.0f}"
        m[name("Occupancy", key)] = f"{ncu[(variant, 'sm__warps_active.avg.pct_of_peak_sustained_active')]:.1f}"
    eff = "smsp__sass_average_branch_targets_threads_uniform.pct"
    two = selection.stage_adding("two_phase")
    m["BranchEffFinal"] = f"{ncu[(selection.FINAL, eff)]:.1f}"
    m["BranchEffBeforeTwoPhase"] = f"{ncu[(selection.previous_stage(two), eff)]:.1f}"
    b = pd.read_csv(agg / "build.csv")
    sass = b[(b.arch == 90) & (b.metric == "sass_instructions") & selection.at_article_tile(b)].set_index("variant").value
    m["TwoPhaseSassGrowth"] = f"{100 * (sass[two] / sass[selection.previous_stage(two)] - 1):.0f}"
    return m


def article_macros(article: Path, runs: list) -> dict:
    """The article's own figures the text quotes (claims.csv, timings.csv), the C3 formula it states, and the
    limits of the GPU classes."""
    m = {}
    art = pd.read_csv(article / "claims.csv")
    for _, r in art.iterrows():
        base = name(r.claim, *str(r.quantity).split("_"))
        for col in ("predicted", "measured"):
            if not pd.isna(r[col]):
                m[base + col.capitalize()] = f"{r[col]:g}"
    pred = art.set_index(["claim", "quantity"]).predicted
    c3 = pred[("C3", "mask_share_of_instructions")] * (1 - pred[("C3", "formula_numerator")]
                                                         / pred[("C3", "formula_denominator")])
    m["CThreeFormulaGivesPct"] = f"{c3:.2f}"
    m["CThreeStatedSavingPct"] = f"{abs(pred[('C3', 'time_change')]):g}"
    art_t = pd.read_csv(article / "timings.csv")
    m["ArticleTorchUs"] = f"{art_t.loc[art_t.impl == 'torch-default', 'time_us'].iloc[0]:g}"
    big = (art_t.stage == selection.FINAL) & (art_t.block_m > selection.ARTICLE_TILE["block_m"])
    m["ArticleBigTileUs"] = f"{art_t.loc[big, 'time_us'].iloc[0]:g}"
    m["LTwoMiB"] = f"{_env_value(runs, 'l2_bytes') / 2**20:.0f}"
    m["SharedPerSmHopperKB"] = f"{ARCHS[90].shared_per_sm / 1024:.0f}"
    m["SharedPerSmAdaKB"] = f"{ARCHS[89].shared_per_sm / 1024:.0f}"
    return m


def correctness_macros(runs: list) -> dict:
    """The worst relative error per dtype over every check of the runs, and the counts."""
    m = {}
    checks = pd.concat([pd.read_csv(f) for r in runs for f in Path(r).rglob("correctness.csv")], ignore_index=True)
    ok = checks[checks.status == "ok"]
    for dtype, key in (("float16", "Fp"), ("bfloat16", "Bf")):
        mant, exp = f"{ok[ok.dtype == dtype].rel_error.max():.1e}".split("e")
        m[name("WorstErr", key)] = f"${mant}\\times10^{{{int(exp)}}}$"
    m["ChecksOk"] = str(len(ok))
    m["ChecksWrong"] = str(int((checks.status == "WRONG").sum()))
    cpu = ROOT / "results" / "verify" / "cpu" / "correctness.csv"
    if cpu.exists():
        c = pd.read_csv(cpu)
        m["ChecksCpu"] = str(len(c))
        m["ChecksCpuWrong"] = str(int((c.status != "ok").sum()))
    return m


def rule_macros() -> dict:
    return {"NegligiblePct": f"{claims_rules.NEGLIGIBLE_PCT:g}", "RatioSlackPct": f"{100 * claims_rules.RATIO_SLACK:g}",
            "FactorBound": f"{claims_rules.FACTOR:g}"}


def step_macros(agg: Path) -> dict:
    """How long the steps took (results/aggregate/step_times.csv, from Snakemake's benchmark files): a run's GPU steps
    one after another (median over runs and the range), this build's CPU steps, and which runs' times come from
    their Snakemake logs (sealed before the benchmark files) rather than from benchmark files."""
    m = {}
    st = pd.read_csv(agg / "step_times.csv")
    runs = st[st.tier == "run"]
    gpu = runs[runs.rule.isin(step_times.GPU_RULES)].groupby("run").seconds.sum() / 60
    m["StepGpuMin"] = f"{gpu.median():.1f}"
    m["StepGpuMinLo"] = f"{gpu.min():.1f}"
    m["StepGpuMinHi"] = f"{gpu.max():.1f}"
    m["StepBuildMin"] = f"{st[st.tier == 'build'].seconds.sum() / 60:.1f}"
    source = runs.drop_duplicates("run").set_index("run").source
    for key, which in (("Logs", "snakemake log"), ("Benchmarks", "benchmark")):
        these = sorted(source[source == which].index)
        m[name("StepRunsFrom", key)] = str(len(these))
        m[name("StepRunsFrom", key, "List")] = listing(these)
    return m


NUMBER_WORDS = {0: "no", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight",
                9: "nine", 10: "ten"}


def ours_macros(agg: Path) -> dict:
    """Our stages beyond the article: each at the headline against cuDNN and FA2, our last stage at each N, the
    predictions' verdicts, the leave-one-out of our last stage, and the Nsight evidence of what holds it."""
    LAST, OUR_STAGES, FINAL = selection.LAST, selection.OUR_STAGES, selection.FINAL
    m = {"OursLast": LAST, "OursFirst": OUR_STAGES[0], "OursCount": str(len(OUR_STAGES))}
    o = pd.read_csv(agg / "ours_stages.csv").groupby("stage")
    for st, g in o:
        m[name("Stage", st, "Us")] = f"{g.time_us.median():.1f}"
        m[name("Stage", st, "PctCudnn")] = f"{g.pct_cudnn.median():.0f}"
        m[name("Stage", st, "PctFlash")] = f"{g.pct_flash.median():.0f}"
        m[name("Stage", st, "Runs")] = str(g.run.nunique())
        if st == LAST:
            m["LastUs"], m["LastPctCudnn"], m["LastPctFlash"] = (m[name("Stage", st, k)] for k in
                                                                 ("Us", "PctCudnn", "PctFlash"))
    p = pd.read_csv(agg / "per_n.csv")
    lead_table = pd.read_csv(agg / "leader.csv")
    LEAD = selection.leader(agg)                   # our fastest stage across the lengths (ours.py)
    m["OursLead"] = LEAD
    after = OUR_STAGES[OUR_STAGES.index(LEAD) + 1:]
    m["OursAfterLeadCount"] = NUMBER_WORDS.get(len(after), str(len(after)))
    m["OursAfterLeadFirst"], m["OursAfterLeadLast"] = (after[0], after[-1]) if after else ("--", "--")
    m["LeadGeomeanX"] = f"{lead_table.geomean_x_cudnn.iloc[0]:.2f}"
    m["LeadRunnerUp"] = str(lead_table.stage.iloc[1])
    m["LeadRunnerUpGeomeanX"] = f"{lead_table.geomean_x_cudnn.iloc[1]:.2f}"
    m["LastGeomeanX"] = f"{lead_table.set_index('stage').geomean_x_cudnn[LAST]:.2f}"
    last = p[p.variant == LEAD]
    best = pd.read_csv(agg / "best_per_n.csv")
    floor = best.twin_pct.max()            # how far two timings of the same cuDNN kernel differ within a run, at most
    m["TwinFloorPct"] = f"{floor:.1f}"
    x = last.groupby(["dtype", "N"]).x_cudnn.median()
    for dt in ("float16", "bfloat16"):
        xd = x.loc[dt]
        tag = "Fp" if dt == "float16" else "Bf"
        for label, keep in (("Faster", lambda v: v < 1 - floor / 100), ("Level", lambda v: abs(v - 1) <= floor / 100),
                            ("Behind", lambda v: v > 1 + floor / 100)):
            m[name("Lead", tag, label)] = listing([str(n) for n, v in xd.items() if keep(v)]) or "none"
        m[name("Lead", tag, "BestX")] = f"{xd.min():.2f}"
        m[name("Lead", tag, "BestN")] = str(int(xd.idxmin()))
        m[name("Lead", tag, "WorstX")] = f"{xd.max():.2f}"
        m[name("Lead", tag, "WorstN")] = str(int(xd.idxmax()))
        bd = best[best.dtype == dt].set_index("N")
        top = bd.loc[bd.index.max()]
        m[name("Best", tag, "MaxNStage")] = str(top.best)
        m[name("Best", tag, "MaxNX")] = f"{top.x_cudnn:.2f}"
        m[name("Best", tag, "NotLead")] = listing([f"{r.best} at $N={n}$ ({r.x_cudnn:.2f}$\\times$)"
                                                   for n, r in bd.iterrows() if r.best != LEAD]) or "none"
    big = last[(last.dtype == "float16") & (last.N == last.N.max())]
    cud = p[(p.variant == "torch-cudnn") & (p.dtype == "float16") & (p.N == last.N.max()) & p.run.isin(big.run)]
    m["LeadMaxN"] = str(int(last.N.max()))
    m["LeadMaxNTflops"] = f"{big.tflops.median():.0f}"
    m["LeadMaxNPctRoof"] = f"{big.pct_roof.median():.0f}"
    m["CudnnMaxNTflops"] = f"{cud.tflops.median():.0f}"
    m["CudnnMaxNPctRoof"] = f"{cud.pct_roof.median():.0f}"
    m["LeadRuns"] = str(last.run.nunique())
    spread = p[p.variant.isin(OUR_STAGES) & (p.N == p.N.max())].groupby(["variant", "dtype"]).x_cudnn
    spread = (spread.max() / spread.min() - 1).dropna()
    m["MaxNSpreadPct"] = f"{100 * spread.max():.0f}"
    qw = pd.read_csv(agg / "per_run.csv")
    qw = qw[qw.set.fillna("").str.contains("qwen3") & (qw.dtype == HEADLINE.dtype)]
    qw = qw[(qw.variant == LEAD) & selection.at_own_tile(qw) | (qw.variant == "torch-cudnn")]
    qt = qw.pivot_table(index=["run", "N", "H"], columns="variant", values="time_us", aggfunc="median").dropna()
    qpct = (100 * qt[LEAD] / qt["torch-cudnn"]).groupby(["N", "H"]).median()
    for n, g in qpct.groupby(level="N"):
        m[name("QwenLead", "N", n, "Range")] = f"{g.min():.0f}--{g.max():.0f}"
    m["QwenNs"] = listing([str(n) for n in sorted(qpct.index.get_level_values("N").unique())])
    pred = pd.read_csv(agg / "predictions.csv")
    measured = pred[pred.verdict != "not measured"]
    m["PredTotal"] = str(len(pred))
    for v in ("holds", "better", "worse"):
        m[name("Pred", v)] = str(int((measured.verdict == v).sum()))
    quantity = {"time": "time", "time_ratio": "time over cuDNN's", "smsp__inst_executed.sum": "instructions"}
    versus = {"torch-cudnn": ""}   # a ratio to cuDNN says what it is compared to; a change names the stage it is from
    m["PredWorseList"] = listing([f"{r.stage}'s {quantity.get(r.quantity, r.quantity)}"
                                  f"{versus.get(r.compared_to, f' against {r.compared_to}')} at $N={r.N}$ "
                                  f"({r.measured_pct:+.1f}\\% for {r.low_pct:+g}..{r.high_pct:+g})"
                                  for r in measured.itertuples() if r.verdict == "worse"]) or "none"
    for r in measured.itertuples():
        against = "cudnn" if r.compared_to == "torch-cudnn" else r.compared_to
        what = {"time": "time", "time_ratio": "ratio"}.get(r.quantity, "instr")
        m[name("Pred", r.stage, against, what, "N", r.N, r.dtype[:4] if r.dtype != "float16" else "", "Measured")] = \
            f"{r.measured_pct:+.0f}"
    pr = pd.read_csv(agg / "per_run.csv")
    h = pr[selection.at_headline(pr) & (pr.impl == "triton")]
    t = h.pivot_table(index="run", columns="variant", values="time_us", aggfunc="median")
    for sw in [s for s in ALL_SWITCHES if s in REGISTRY[LAST].switches]:
        v = selection.variant_name(selection.resolve_variant(f"{LAST}-{sw}"))
        if v in t:
            both = t[[LAST, v]].dropna()
            m[name("AblLast", sw, "Pct")] = f"{(100 * (both[v] / both[LAST] - 1)).median():+.0f}"
    # The step to heads_inner split in two, by switch sets (the variant names of older runs' ablation rows depend on
    # which stage was last then): the grid order off alone, and the longest-first order on top of it.
    hi = stage_adding("heads_inner")
    by_sw = h[selection.at_own_tile(h)].pivot_table(index="run", columns="switches", values="time_us",
                                                     aggfunc="median")
    label = lambda sw: selection.switches_label(sw)  # noqa: E731
    nohf, prev, full = (label(REGISTRY[hi].switches - {"heavy_first"}), label(REGISTRY[previous_stage(hi)].switches),
                        label(REGISTRY[hi].switches))
    if {nohf, prev, full} <= set(by_sw):
        both = by_sw[[nohf, prev, full]].dropna()
        m["GridOffAlonePct"] = f"{(100 * (both[nohf] / both[prev] - 1)).median():+.1f}"
        m["HeavyOnTopPct"] = f"{(100 * (both[full] / both[nohf] - 1)).median():+.1f}"
        m["GridOffRuns"] = str(len(both))
    for ext in ("overlap_qk", "prescale_q"):
        v = f"{LAST}+{ext}"
        if v in t:
            both = t[[LAST, v]].dropna()
            m[name("AblLastPlus", ext, "Pct")] = f"{(100 * (both[v] / both[LAST] - 1)).median():+.0f}"
    tt = pd.read_csv(TUNED_TILES)
    m["TunedRun"] = str(tt.run.iloc[0])
    m["TunedVariant"] = str(tt.variant.iloc[0])
    m["TunedTilesTried"] = str(int(tt.tiles_tried.max()))
    tiles = tt.assign(tile=lambda d: [f"{r.block_m}$\\times${r.block_n} ({r.num_warps} warps, {r.num_stages} stages)"
                                      for r in d.itertuples()])
    spans = []
    for tile, g in tiles.groupby("tile", sort=False):
        ns = sorted(g.N)
        spans.append(f"{tile} at $N=$ {listing([str(n) for n in ns])}")
    m["TunedTilesText"] = "; ".join(spans)
    tuned = pred[(pred.switch == "tuned_tiles") & (pred.quantity == "time")]
    m["TunedChanges"] = listing([f"{r.measured_pct:+.1f}".replace("+0.0", "0.0").replace("-0.0", "0.0")
                                 + f"\\% at $N={r.N}$" for r in tuned.itertuples()])
    b = pd.read_csv(agg / "build.csv")
    b = b[(b.arch == 90) & (b.metric == "sass_instructions")]
    hd = stage_adding("host_descriptors")
    sass = {v: float(b[(b.variant == v) & (b.block_m == REGISTRY[v].tile.block_m)
                       & (b.block_n == REGISTRY[v].tile.block_n)].value.iloc[0]) for v in (hd, previous_stage(hd))}
    m["HostDescSassPct"] = f"{100 * (sass[hd] / sass[previous_stage(hd)] - 1):.0f}"
    ncu = pd.read_csv(agg / "ncu.csv", usecols=["variant", "metric", "instance", "value"], low_memory=False)
    ncu = ncu[ncu.instance.isna()].groupby(["variant", "metric"]).value.median()
    profiled = [st for st in OUR_STAGES if (st, "gpu__time_duration.sum") in ncu.index]
    lastp = profiled[-1] if profiled else None
    tensor = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
    if lastp:
        m["NcuLastProfiled"] = lastp
        m["NcuLastTensorPct"] = f"{ncu[(lastp, tensor)]:.0f}"
        m["NcuFinalTensorPct"] = f"{ncu[(FINAL, tensor)]:.0f}"
    m["NcuLastRegs"] = f"{ncu.get((lastp, 'launch__registers_per_thread'), float('nan')):.0f}" if lastp else "--"
    m["NcuCudnnTensorPct"] = f"{ncu[('torch-cudnn', tensor)]:.0f}"
    m["NcuCudnnBlockThreads"] = f"{ncu[('torch-cudnn', 'launch__block_size')]:.0f}"
    m["NcuCudnnGrid"] = f"{ncu[('torch-cudnn', 'launch__grid_size')]:.0f}"
    return m


def compute(agg: Path, article: Path, runs: list) -> dict:
    """Every macro, from one function per subject."""
    m = {}
    for part in (stage_macros(agg, article, runs), tile_macros(agg), sweep_macros(agg), traffic_macros(),
                 ncu_macros(agg), claims_macros(agg, article), article_macros(article, runs),
                 correctness_macros(runs), rule_macros(), timing_macros(agg), arch_macros(agg),
                 ablation_macros(agg), step_macros(agg), ours_macros(agg), large_n_macros(agg), probe_macros()):
        clash = set(part) & set(m)
        if clash:
            raise ValueError(f"macros defined twice: {sorted(clash)}")
        m.update(part)
    return m


def large_n_macros(agg: Path) -> dict:
    """The long-sequence Nsight profile: each metric of large_n.METRICS for each variant and N, median over runs
    (Ln<variant>N<N><short>; DRAM in GB), and the runs that profiled the large N."""
    t = large_n.table(agg)
    m = {}
    for r in t.itertuples():
        v = r.value / 1e9 if r.short == "Dram" else r.value
        digits = 2 if r.short.startswith("Stall") else (2 if r.short == "Dram" else 0)
        m[name("Ln", r.variant.replace("torch-", ""), "N", r.N, r.short)] = f"{v:.{digits}f}"
    # Each of our stages against the stage before it, where both were profiled at that N: percent change.
    wide = t.pivot_table(index=["N", "short"], columns="variant", values="value")
    for st in selection.OUR_STAGES:
        prev = previous_stage(st)
        if st in wide and prev in wide:
            for (n, short), r in wide[[prev, st]].dropna().iterrows():
                m[name("LnDelta", st, "N", n, short)] = f"{100 * (r[st] / r[prev] - 1):+.0f}"
    # Each of our stages against cuDNN at the same N: percent more (or fewer) instructions for the same work.
    if "torch-cudnn" in wide:
        for st in [v for v in selection.OUR_STAGES if v in wide]:
            for (n, short), r in wide[[st, "torch-cudnn"]].dropna().iterrows():
                if short == "Instr":
                    m[name("LnVsCudnn", st, "N", n, short)] = f"{100 * (r[st] / r['torch-cudnn'] - 1):+.0f}"
    ours = t[t.variant.isin(selection.OUR_STAGES) & (t.short == "Tensor")]
    if not ours.empty:
        m["LnOursTensorMax"] = f"{ours.value.max():.0f}"
        m["LnOursTensorMaxStage"] = str(ours.loc[ours.value.idxmax(), "variant"])
        m["LnOursTensorMaxN"] = str(int(ours.loc[ours.value.idxmax(), "N"]))
    d = pd.read_csv(agg / "large_n.csv")
    m["LnRuns"] = listing(sorted(set(d.run))) if not d.empty else "none"
    return m


PROBE_WS = ROOT / "data" / "nvidia-h200" / "probes" / "probe-ws"


def probe_macros(probe: Path = PROBE_WS) -> dict:
    """The warp-specialization probe (workflow/scripts/probe_ws.py; sealed): the warp-specialized kernel's time over
    v13's at each N, its tile, and the tiles where its output was wrong."""
    import checksums
    checksums.verify(probe)
    d = pd.read_csv(probe / "probe_ws.csv")
    d["tile"] = d.key.str.split("|").str[-1]
    ws = d[d.variant.str.contains("warp_specialize")]
    m = {}
    for n, g in d.groupby("N"):
        base = g[g.variant == "v13"].time_us.iloc[0]
        for r in ws[(ws.N == n) & (ws.status == "ok")].itertuples():
            m[name("ProbeWs", "N", n, "Pct")] = f"{100 * (r.time_us / base - 1):+.0f}"
            m["ProbeWsTile"] = r.tile
    wrong = ws[ws.status == "WRONG"]
    m["ProbeWsWrongTiles"] = listing(sorted(set(wrong.tile))) or "none"
    m["ProbeWsWrongNs"] = listing([str(n) for n in sorted(set(wrong.N))]) or "none"
    return m


def listing(items) -> str:
    """'A', 'A and B', 'A, B and C'; 'none' for no item."""
    items = list(items)
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def claims_macros(agg: Path, article: Path) -> dict:
    """Each component's figures and verdict by its id, each claim's verdict, the claims grouped by verdict (so that
    the abstract's sentence follows the data), and the chain of stages said plainly."""
    m = {}
    c = pd.read_csv(agg / "claims.csv")
    for _, r in c.iterrows():
        key = r.id.split("-")
        m[name(*key, "Ours")] = f"{r.ours:.1f}"
        m[name(*key, "Noise")] = f"{r.noise:.1f}"
        m[name(*key, "Art")] = "--" if pd.isna(r.article) else f"{r.article:.1f}"
        m[name(*key, "Verdict")] = r.verdict
        if not pd.isna(r.article_printed):
            m[name(*key, "Printed")] = f"{r.article_printed:g}"
    verdicts = c.groupby("claim", sort=False).claim_verdict.first()
    for claim, verdict in verdicts.items():
        m[name(claim, "Verdict")] = verdict
    for verdict, key in (("holds", "Hold"), ("partly", "Partly"), ("does not hold", "NotHold"),
                         ("not testable here", "NotTestable")):
        these = list(verdicts[verdicts == verdict].index)
        m[name("Claims", key)] = listing(these)
        m[name("Claims", key, "Count")] = str(len(these))
    pr = pd.read_csv(agg / "per_run.csv")
    st = pr[selection.at_headline(pr) & selection.at_article_tile(pr) & pr.variant.isin(selection.STAGES)]
    med = st.groupby("variant").time_us.median()
    art_t = pd.read_csv(article / "timings.csv")
    art = art_t[(art_t.impl == "triton") & (art_t.block_m == selection.ARTICLE_TILE["block_m"])]
    art = art.set_index("stage").time_us
    first, last = selection.STAGES[0], selection.STAGES[-1]
    m["ArticleChainFactor"] = f"{art[first] / art[last]:.2f}"
    m["OursChainFactor"] = f"{med[first] / med[last]:.2f}"
    m["FastestStage"] = med.idxmin()
    m["ArticleFastestStage"] = art.idxmin()
    stages = selection.STAGES
    steps = c[(c.rule == "change") & c.id.str.endswith("-time") & (c.N == selection.HEADLINE["N"])
              & c["from"].isin(stages) & c.to.isin(stages)]
    steps = steps[[stages.index(t) == stages.index(f) + 1 for f, t in zip(steps["from"], steps.to)]]
    reversed_ = steps[(steps.ours * steps.article < 0) & (steps.ours.abs() > steps.noise)
                      & (steps.article.abs() >= claims_rules.NEGLIGIBLE_PCT)]
    m["ReversedSteps"] = listing(f"{r['from']} to {r.to} ({r.claim}: {r.article:+.1f}\\% in the article, "
                                 f"{r.ours:+.1f}\\% here)" for _, r in reversed_.iterrows())
    slips = pd.read_csv(agg / "slips.csv").drop_duplicates(["claim", "component", "article_printed"])
    m["SlipCount"] = str(len(slips))
    return m


def arch_macros(agg: Path) -> dict:
    """What the build says of each candidate class of the article's GPU: whether warp specialization (v5) compiles,
    and the shared memory, registers and blocks per SM of v4 and v5 at the article's tile."""
    m = {}
    b = pd.read_csv(agg / "build.csv")
    ws = selection.stage_adding("warp_specialize")
    before = selection.previous_stage(ws)
    b = b[selection.at_article_tile(b) & b.variant.isin([before, ws])]
    val = b.set_index(["arch", "variant", "metric"]).value
    for arch in sorted(b.arch.unique()):
        key = name("Sm", int(arch))
        m[key + "WsCompiles"] = "yes" if val.get((arch, ws, "compiles"), 0) == 1 else "no"
        for v in (before, ws):
            if val.get((arch, v, "compiles"), 0) == 1:
                m[key + name(v, "SmemKB")] = f"{val[(arch, v, 'shared_bytes')] / 1000:.1f}"
                m[key + name(v, "Regs")] = f"{val[(arch, v, 'registers')]:.0f}"
                m[key + name(v, "Blocks")] = f"{val[(arch, v, 'blocks_per_sm')]:.0f}"
    return m


def ablation_macros(agg: Path) -> dict:
    """Per switch: the change of time when it is removed from the final stage and added to the baseline (median
    over runs of the per-run change, and the range over runs); and the switches whose change is beyond that range."""
    m = {}
    pr = pd.read_csv(agg / "per_run.csv")
    h = pr[selection.at_headline(pr) & selection.at_article_tile(pr)].pivot_table(index="run", columns="variant",
                                                                                   values="time_us")
    first, last = selection.STAGES[0], selection.STAGES[-1]
    costly_final, costly_base = [], []
    for sw in selection.SWITCHES:
        for base, variant, key, sink in ((last, f"{last}-{sw}", "Removed", costly_final),
                                         (first, f"{first}+{sw}", "Added", costly_base)):
            if variant not in h:                      # v7-const_strides is v6, v0+grid_order is v1
                variant = selection.variant_name(selection.resolve_variant(variant))
            change = (100 * (h[variant] / h[base] - 1)).dropna()
            m[name("Abl", *sw.split("_"), key, "Pct")] = f"{change.median():.1f}"
            beyond = abs(change.median()) > change.max() - change.min()
            slower = change.median() > 0
            if beyond and ((key == "Removed" and not slower) or (key == "Added" and slower)):
                sink.append(sw.replace("_", r"\_"))
    m["AblCostlyInFinal"] = listing(costly_final)
    m["AblCostlyOnBase"] = listing(costly_base)
    t = pr[selection.at_headline(pr) & (pr.num_warps == 8) & pr.variant.isin([last, f"{last}-warp_specialize"])]
    med = t.groupby(["variant", "block_m", "block_n", "num_stages"]).time_us.median().unstack("variant").dropna()
    m["WsEightWarpMaxDiffPct"] = f"{(100 * (med[last] / med[f'{last}-warp_specialize'] - 1)).abs().max():.1f}"
    m["WsEightWarpTiles"] = str(len(med))
    return m


def timing_macros(agg: Path) -> dict:
    """The kernel timer's cross-check with Nsight, its host-sleep check, and the launch cost."""
    m = {}
    cc = pd.read_csv(agg / "crosscheck.csv")
    m["CrossUntimed"] = str(int((~cc.timed).sum()))
    m["CrossUntimedRuns"] = listing(sorted(set(cc[~cc.timed].run))) or "none"
    cc = cc[cc.timed]
    waived = cc[cc.waiver.fillna("") != ""]
    m["CrossMaxPct"] = f"{cc.diff_pct.abs().max():.1f}"
    m["CrossMaxUnwaivedPct"] = f"{cc[cc.waiver.fillna('') == ''].diff_pct.abs().max():.1f}"
    m["CrossWaivedCount"] = str(len(waived))
    m["CrossWaivedList"] = listing([f"{r.variant} in {r.run} ({r.diff_pct:+.1f}\\%)" for r in waived.itertuples()])
    m["CrossWaivedRuns"] = listing(sorted(set(waived.run)))
    # A waived PyTorch kernel (the same kernel in every run): Nsight's and the timer's time of it in the waived run
    # against their range over the other runs.
    for r in waived[waived.impl != "triton"].itertuples():
        others = cc[(cc.key == r.key) & (cc.run != r.run)]
        for col, tag in (("ncu_us", "Ncu"), ("timer_us", "Timer")):
            lo, hi = others[col].min(), others[col].max()
            m[name("CrossWaived", r.variant, tag, "Us")] = f"{getattr(r, col):.1f}"
            m[name("CrossOthers", r.variant, tag, "Range")] = f"{lo:.1f}--{hi:.1f}"
            m[name("CrossWaived", r.variant, tag, "Place")] = ("below" if getattr(r, col) < lo else
                                                              "above" if getattr(r, col) > hi else "within")
        by_run = cc[cc.key == r.key].sort_values("run", key=lambda runs: runs.map(selection.run_number))
        m[name("CrossNcuByRun", r.variant)] = ", ".join(f"{v:.1f}" for v in by_run.ncu_us)
        m[name("CrossNcuRunsFrom", r.variant)] = by_run.run.iloc[0]
        m[name("CrossNcuRunsTo", r.variant)] = by_run.run.iloc[-1]
    # Our waived stages in the runs where they are not waived.
    ours = waived[waived.impl == "triton"]
    elsewhere = cc[cc.variant.isin(ours.variant) & ~cc.set_index(["run", "variant"]).index.isin(
        ours.set_index(["run", "variant"]).index)]
    m["CrossWaivedOursElsewhereRuns"] = str(elsewhere.run.nunique())
    m["CrossWaivedOursElsewhereMaxPct"] = f"{elsewhere.diff_pct.abs().max():.1f}" if len(elsewhere) else "--"
    m["CrossBoundPct"] = f"{cc.max_pct.iloc[0]:g}"
    m["CrossEntries"] = str(cc.key.nunique())
    m["CrossRuns"] = str(cc.run.nunique())
    m["CrossLaunches"] = str(int(cc.ncu_launches.min()))
    tc = pd.read_csv(agg / "timer_check.csv")
    longest = tc.sleep_us.max()
    m["SleepMaxUs"] = f"{longest:g}"
    m["SleepKernelMaxPct"] = f"{tc.kernel_change_pct.abs().max():.1f}"
    at = tc[tc.sleep_us == longest]
    m["SleepEventMinPct"] = f"{at.event_change_pct.min():.0f}"
    m["SleepEventMaxPct"] = f"{at.event_change_pct.max():.0f}"
    lc = pd.read_csv(agg / "launch_cost.csv")
    is_stage = lc.entry.isin(selection.STAGES)
    best = lc.groupby("entry").host_min_us.min()                  # the best repeat of all runs: the cost itself
    stages = best[[e for e in best.index if e in selection.STAGES]]
    m["HostStageMaxUs"] = f"{stages.max():.1f}"
    m["HostStageMinUs"] = f"{stages.min():.1f}"
    worst = lc[is_stage].sort_values("host_min_us").iloc[-1]        # the slowest best-of-a-run, and where
    m["HostWorstRunBestUs"] = f"{worst.host_min_us:.1f}"
    m["HostWorstRunBestEntry"] = worst.entry
    m["HostWorstRun"] = worst.run
    m["HostStageMedianMaxUs"] = f"{lc[is_stage].groupby('entry').host_us.median().max():.1f}"
    m["HostStageMedianMinUs"] = f"{lc[is_stage].groupby('entry').host_us.median().min():.1f}"
    for impl in selection.TORCH:
        m[name("HostBest", impl, "us")] = f"{best[impl]:.1f}"
        m[name("HostMedian", impl, "us")] = f"{lc[lc.entry == impl].host_us.median():.1f}"
    med = lc.groupby("entry")[["call_us", "time_us"]].median()
    for impl in selection.TORCH:
        m[name("Call", impl, "us")] = f"{med.loc[impl, 'call_us']:.1f}"
        m[name("CallOver", impl, "pct")] = f"{100 * (med.loc[impl, 'call_us'] / med.loc[impl, 'time_us'] - 1):.0f}"
    F = selection.FINAL
    m["CallOverFinalPct"] = f"{100 * (med.loc[F, 'call_us'] / med.loc[F, 'time_us'] - 1):.0f}"
    return m


def _env_value(runs, key: str):
    """The first value of `key` in the runs' env.json files."""
    import json
    for run in runs:
        for env in sorted(Path(run).rglob("env.json")):
            value = json.loads(env.read_text()).get(key)
            if value is not None:
                return value
    raise KeyError(f"no {key} in any env.json of {runs}")


def _uuids(run: Path) -> set:
    import json
    out = set()
    for env in Path(run).rglob("env.json"):
        u = (json.loads(env.read_text()).get("start") or {}).get("uuid")
        if u:
            out.add(u)
    return out


def switch_code(kernel: Path, out: Path) -> None:
    """Each switch's code: every `if <CONSTEXPR>:` block of the kernel source, as a listing file."""
    lines = kernel.read_text().splitlines()
    for sw in ALL_SWITCHES.values():
        blocks = []
        for i, line in enumerate(lines):
            if re.search(rf"\w+={sw.kernel_arg}\b", line):      # a keyword argument: the line says it all
                blocks.append(line.strip())
                continue
            if re.match(rf"\s*if (\w+ and )?{sw.kernel_arg}\b", line):
                indent = len(line) - len(line.lstrip())
                block = [line]
                for nxt in lines[i + 1:]:
                    if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent and not nxt.lstrip().startswith(
                            ("else", "elif")):
                        break
                    block.append(nxt)
                blocks.append("\n".join(b[indent:] if b.strip() else b for b in block).rstrip())
        (out / f"code_{sw.name}.tex").write_text(
            "\\begin{lstlisting}\n" + "\n\n".join(blocks or ["# (host side only)"]) + "\n\\end{lstlisting}\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agg", type=Path, default=Path("results/aggregate"))
    ap.add_argument("--article", type=Path, default=Path("data/article"))
    ap.add_argument("--runs", type=Path, nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    macros = {k: (v[1:] if re.fullmatch(r"-0(\.0+)?", v) else v)        # no "-0.0": a zero has no sign
              for k, v in compute(a.agg, a.article, a.runs).items()}
    (a.out / "macros.tex").write_text("% Generated by workflow/scripts/macros.py from the data: do not edit.\n" +
                                      "".join(f"\\newcommand{{\\{k}}}{{{v}}}\n" for k, v in sorted(macros.items())))
    switch_code(ROOT / "kernels" / "flash_fwd.py", a.out)
    print(f"{len(macros)} macros")
    return 0


if __name__ == "__main__":
    sys.exit(main())
