# The paper phase: the aggregated tables formatted (tables), every number of the text (values, one file per
# subject), each switch's code (listings), the figures (figures.smk), and latexmk. Nothing here computes what another
# step needs: each step reads only the files its rule names.

# The CPU steps whose benchmark files the step-time table reads: every job that runs before it (the tables, values
# and LaTeX steps come after it; their files are in benchmarks/ too).
CPU_BENCHMARKS = (
    expand(f"{BENCH}/build_variants/sm_{{arch}}.tsv", arch=config["build"]["archs"])
    + [f"{BENCH}/verify_cpu.tsv", f"{BENCH}/aggregate.tsv", f"{BENCH}/claims.tsv"]
    + expand(f"{BENCH}/figure/{{name}}.tsv", name=FIGURES)
)


rule step_times:
    """How long each step took, from Snakemake's benchmark files: a run's GPU steps from the files sealed in it (from
    its Snakemake log for the runs sealed before those files existed, said so in the output), this build's CPU
    steps from benchmarks/."""
    input:
        CODE,
        script=f"{SCRIPTS}/aggregate/step_times.py",
        seals=run_seals(),
        manifest=SEALS,
        data=run_data_files(),
        logs=step_time_logs(),
        log_seals=step_time_log_seals(),
        cpu=CPU_BENCHMARKS,
    output:
        f"{AGG}/step_times.csv",
    log:
        "logs/step_times.log",
    benchmark:
        f"{BENCH}/step_times.tsv"
    params:
        py=PY,
        runs=lambda wc, input: " ".join(str(Path(s).parent) for s in input.seals),
    shell:
        "{params.py} {input.script} --runs {params.runs} --logs {input.logs} --cpu {input.cpu} "
        "--out {output} > {log} 2>&1"


# One job per table (workflow/scripts/paper/tables.py -> results/tables/<name>.tex for the paper, and <name>.html,
# the same cells as text, for the report), each from the aggregated files named here.
TABLES = {
    "stages": dict(stage_table=rules.aggregate.output.stage_table),
    "claims": dict(claims=rules.claims.output.claims),
    "slips": dict(slips=rules.claims.output.slips),
    "environment": dict(environment=rules.aggregate.output.environment),
    "crosscheck": dict(crosscheck=rules.aggregate.output.crosscheck, timer_check=rules.aggregate.output.timer_check),
    "crosscheck_n": dict(crosscheck=rules.aggregate.output.crosscheck, timer_check=rules.aggregate.output.timer_check),
    "launch_cost": dict(launch_cost=rules.aggregate.output.launch_cost),
    "host_stages": dict(per_run=rules.aggregate.output.per_run),
    "step_times": dict(step_times=rules.step_times.output[0]),
    "ours": dict(ours_stages=rules.ours.output.stages, predictions=rules.predictions.output[0],
                 build=rules.aggregate.output.build),
    "per_n": dict(per_n=rules.ours.output.per_n, best_per_n=rules.ours.output.best),
    "predictions": dict(predictions=rules.predictions.output[0]),
    "variation": dict(variation_n=rules.ours.output.variation_n, sampling=rules.aggregate.output.sampling),
    "sampling": dict(sampling=rules.aggregate.output.sampling),
}
TABLE_CAPTIONS = captions.table_captions(ROOT / SCRIPTS / "paper" / "tables.py")  # the report's, from its docstring
if set(TABLES) - set(TABLE_CAPTIONS):
    raise ValueError(f"{SCRIPTS}/paper/tables.py: its docstring has no line '- <name>.tex: ...' for "
                     f"{sorted(set(TABLES) - set(TABLE_CAPTIONS))} (the report's caption of the table)")


rule tables:
    """A table of the paper through pandas' Styler.to_latex, from the aggregated files it names, and the same
    table as HTML for the report."""
    input:
        unpack(lambda wc: TABLES[wc.name]),
        CODE,
    output:
        tex="results/tables/{name}.tex",
        html=report("results/tables/{name}.html", category="Tables", caption="../report/table.rst"),
    log:
        "logs/tables/{name}.log",
    benchmark:
        f"{BENCH}/tables/{{name}}.tsv"
    wildcard_constraints:
        name="|".join(TABLES),
    params:
        caption=lambda wc: TABLE_CAPTIONS[wc.name],
    script:
        "../scripts/paper/tables.py"


# Every number of the text, one file per subject (workflow/scripts/paper/values/<subject>.py ->
# results/paper/values/<subject>.tex), each from the files named here: a macro whose name is written where it is made,
# or \val{table}{row}{column} (pipeline.latex).
PROBE_WS = f"{DATA}/probes/probe-ws"
PROBE_GLUON = f"{DATA}/probes/guards-v21"   # compute-sanitizer's runs of the Gluon stages (at an earlier source)
PROBE_GATE36 = "data/nvidia-h100-80gb-hbm3/probes/lane-max-gate"   # v36's gate, on an H100 (no H200 was lent): the same against v35
PROBE_GATE37 = "data/nvidia-h100-80gb-hbm3/probes/q-regs-gate"     # v37's gate, on an H100: the same against v36
PROBE_STEADY37 = "data/nvidia-h100-80gb-hbm3/probes/q-regs-steady"   # its steady state at the power cap, same GPU
PROBE_CAPCLOCK = "data/nvidia-h100-80gb-hbm3/probes/cap-clock"   # v36's and cuDNN's cycles and clock at 16384
PROBE_STALL = "data/nvidia-h100-80gb-hbm3/probes/stall-source"   # Nsight's warp samples per SASS instruction
PROBE_STEADYGOAL = "data/nvidia-h100-80gb-hbm3/probes/steady-goal"    # the same at the goal's lengths, a second H100
PROBE_RUN37 = "data/nvidia-h100-80gb-hbm3/probes/run-37-unfinished"   # run-37, cut before three sets: a probe
# RUN36 (figures.smk, which a figure reads too): run-36 on one H100
RUN37 = "data/nvidia-h100-80gb-hbm3/run-37"   # run-37: the goal's plan (config/goal.yaml) on one H100 in one lease
RUN38 = "data/nvidia-h100-80gb-hbm3/run-38"   # run-38: the same plan with v38, on another H100 in one lease
PROBE_EARLY = "data/nvidia-h100-80gb-hbm3/probes/early-exp-gate"   # v38's gate: guards, the Gluon grid, A/B, cycles, steady
PROBE_EARLYS = "data/nvidia-h100-80gb-hbm3/probes/early-exp-samples"   # v38's warp samples, A/B at 512 and 2048
GLUON_GRID = PROBE_EARLY   # the newest GPU verification of the Gluon kernel's current source (a verify step's grid)
CLAMP_BEFORE = f"{DATA}/run-27"   # the newest run before issue 22's clamp (e56b76c), and the first with it
CLAMP_AFTER = f"{DATA}/run-28"
EXACT_FIRST = f"{DATA}/run-29"   # the first run of the exact exponent (1c7a071), which replaced the clamp
PROBE_QWEN3 = f"{DATA}/probes/qwen3-e2e"
PROBE_HOST = f"{DATA}/probes/host-cost"
PROBE_V23 = f"{DATA}/probes/v23-check"      # v23's first GPU check: its own tile and v22's, beside v22
PROBE_STATE = f"{DATA}/probes/gpu-state"   # NVML read while the kernels ran: the clocks and the power cap
PROBE_XCAUSE = f"{DATA}/probes/crosscheck-cause"   # why Nsight and the timer disagree at short N
PROBE_V28 = f"{DATA}/probes/v28-check"     # v28's verify grid (v19-v28) and timing beside v27 and cuDNN
PROBE_V28X = f"{DATA}/probes/v28-xcheck"   # the same entries four ways (timer and Nsight, flushed or not)
PROBE_HOST28 = f"{DATA}/probes/host-cost-v28"   # the host cost of every stage, v28 included, at v28's source
PROBE_REP28 = f"{DATA}/probes/v28-repeats"     # six passes of v27, v28 and cuDNN, one after another
PROBE_SETTLE = f"{DATA}/probes/settle-cause"    # the timer cooled and settled against Nsight at N = 8192, 16384
PROBE_V29 = f"{DATA}/probes/v29-check"       # v29 verified and timed before its run (run-26)
PROBE_COLD28 = f"{DATA}/probes/v28-cold"       # Nsight's warp states at N = 512, every cache flushed or none
PROBE_LOWERED = f"{DATA}/probes/lowered-check"  # the lowered maximum: guards' GPU test, verify grid, cost A/B
PROBE_VOTE = f"{DATA}/probes/clamp-vote"        # the clamp behind a warp vote against v29's clamp, A/B
PROBE_UNDERFLOW = f"{DATA}/probes/guards-underflow"   # the clamp alone: large-score cases that failed
PROBE_EXACT = f"{DATA}/probes/exact-diff-check"      # the exact exponent: guards' GPU test, verify grid
PROBE_EXACT_TIMING = f"{DATA}/probes/exact-diff-timing"   # the exact exponent's cost against the clamp, A/B
PROBE_REGS_TIMING = f"{DATA}/probes/exact-regs-timing"   # v2-v4 at run-28's and the exact exponent's source, A/B
PROBE_REGISTERS = f"{DATA}/probes/exact-registers"   # v2-v5's sm_90 build at run-27's, run-28's and run-29's source
RUN30 = f"{DATA}/run-30"   # v30's and v31's first measurement (every set but tuning and the ceilings on one GPU)
RUN31 = f"{DATA}/run-31"   # v32's first measurement in a run (the N sweep on another GPU than the other sets)
RUN35 = f"{DATA}/run-35"   # v33's, v34's and v35's first measurement in a run (every set on one GPU)
PROBE_RAREBUG = f"{DATA}/probes/guards-rare-rescale"   # the guard tests that found rare_rescale's bug
PROBE_RAREFIX = f"{DATA}/probes/rare-rescale-fix"   # its fix checked: guards, the Gluon grid, the operator's tests
PROBE_SMALLN = f"{DATA}/probes/small-n"   # v32's first check: verified and timed beside v19, v31 and cuDNN
PROBE_ORDER = f"{DATA}/probes/order-16384"   # v31 and v32 at N = 16384 in alternating orders beside cuDNN
PROBE_GATE33 = f"{DATA}/probes/v33-check"   # v33's gate: verify grid, guards, A/B against v32 and cuDNN
PROBE_GATE34 = f"{DATA}/probes/v34-check"   # v34's gate: the same against v33
VALUES = {
    "stages": dict(stage_table=rules.aggregate.output.stage_table, headline_median=rules.aggregate.output.headline_median,
                   variation=rules.aggregate.output.variation, runs=rules.aggregate.output.runs,
                   per_run=rules.aggregate.output.per_run, registers_seal=f"{PROBE_REGISTERS}/SHA256SUMS"),
    "tiles": dict(per_run=rules.aggregate.output.per_run, headline_median=rules.aggregate.output.headline_median,
                  timings=rules.aggregate.output.timings),
    "sweep": dict(per_run=rules.aggregate.output.per_run, ceilings=rules.aggregate.output.ceilings),
    "traffic": dict(),
    "ncu": dict(ncu=rules.aggregate.output.ncu, build=rules.aggregate.output.build),
    "claims": dict(claims=rules.claims.output.claims, slips=rules.claims.output.slips,
                   claim_rules=rules.claims.output.claim_rules, per_run=rules.aggregate.output.per_run,
                   article_timings="data/article/timings.csv"),
    "article": dict(article_claims="data/article/claims.csv", article_timings="data/article/timings.csv",
                    runs=rules.aggregate.output.runs),
    "correctness": dict(correctness=rules.aggregate.output.correctness, cpu="results/verify/cpu/correctness.csv",
                        timings=rules.aggregate.output.timings),
    "timing": dict(crosscheck=rules.aggregate.output.crosscheck, timer_check=rules.aggregate.output.timer_check,
                   launch_cost=rules.aggregate.output.launch_cost),
    "arch": dict(build=rules.aggregate.output.build),
    "ablation": dict(per_run=rules.aggregate.output.per_run),
    "steps": dict(step_times=rules.step_times.output[0]),
    "gpuarch": dict(runs=rules.aggregate.output.runs),
    "ours": dict(ours_stages=rules.ours.output.stages, per_n=rules.ours.output.per_n, leader=rules.ours.output.leader,
                 best_per_n=rules.ours.output.best, per_run=rules.aggregate.output.per_run,
                 predictions=rules.predictions.output[0], tuned_tiles="kernels/tuned_tiles.csv",
                 build=rules.aggregate.output.build, ncu=rules.aggregate.output.ncu),
    "large_n": dict(large_n_table=rules.aggregate.output.large_n_table, large_n=rules.aggregate.output.large_n),
    "gluon_run": dict(per_n=rules.ours.output.per_n, gluon_leader=rules.ours.output.gluon_leader,
                      best_per_n=rules.ours.output.best, timings=rules.aggregate.output.timings,
                      per_run=rules.aggregate.output.per_run),
    "state": dict(per_run=rules.aggregate.output.per_run, timings=rules.aggregate.output.timings),
    "steady": dict(timings=rules.aggregate.output.timings),
    "clamp": dict(per_run=rules.aggregate.output.per_run, large_n=rules.aggregate.output.large_n,
                  predictions="data/predictions/probes.csv", plan_before=f"{CLAMP_BEFORE}/plan.yaml",
                  plan_after=f"{CLAMP_AFTER}/plan.yaml", plan_exact=f"{EXACT_FIRST}/plan.yaml"),
    "xcause": dict(seal_file=f"{PROBE_XCAUSE}/SHA256SUMS", cause=f"{PROBE_XCAUSE}/crosscheck_cause.csv"),
    "lowered": dict(lowered_seal=f"{PROBE_LOWERED}/SHA256SUMS", vote_seal=f"{PROBE_VOTE}/SHA256SUMS",
                    underflow_seal=f"{PROBE_UNDERFLOW}/SHA256SUMS",
                    exact_seal=f"{PROBE_EXACT}/SHA256SUMS", exact_timing_seal=f"{PROBE_EXACT_TIMING}/SHA256SUMS",
                    exact_regs_seal=f"{PROBE_REGS_TIMING}/SHA256SUMS",
                    predictions="data/predictions/probes.csv"),
    "settle": dict(seal_file=f"{PROBE_SETTLE}/SHA256SUMS", cause=f"{PROBE_SETTLE}/crosscheck_cause.csv"),
    "run30": dict(seal_file=f"{RUN30}/SHA256SUMS", n_sweep=f"{RUN30}/bench-n_sweep/timings.csv",
                  ncu_large_n=f"{RUN30}/profile/ncu_large_n.csv",
                  correctness=f"{RUN30}/verify/correctness.csv", verify_env=f"{RUN30}/verify/env.json",
                  predictions="data/predictions/stages.csv"),
    "run31": dict(seal_file=f"{RUN31}/SHA256SUMS", n_sweep=f"{RUN31}/bench-n_sweep/timings.csv",
                  ncu_large_n=f"{RUN31}/profile/ncu_large_n.csv", verify_env=f"{RUN31}/verify/env.json",
                  predictions="data/predictions/stages.csv"),
    "run35": dict(seal_file=f"{RUN35}/SHA256SUMS", n_sweep=f"{RUN35}/bench-n_sweep/timings.csv",
                  ncu_large_n=f"{RUN35}/profile/ncu_large_n.csv", verify_env=f"{RUN35}/verify/env.json",
                  predictions="data/predictions/stages.csv", runs=rules.aggregate.output.runs),
    "run36": dict(seal_file=f"{RUN36}/SHA256SUMS", n_sweep=f"{RUN36}/bench-n_sweep/timings.csv",
                  qwen3=f"{RUN36}/bench-qwen3/timings.csv", ncu_large_n=f"{RUN36}/profile/ncu_large_n.csv",
                  correctness=f"{RUN36}/verify/correctness.csv", verify_env=f"{RUN36}/verify/env.json",
                  predictions="data/predictions/stages.csv"),
    "run37": dict(seal_file=f"{RUN37}/SHA256SUMS", n_sweep=f"{RUN37}/bench-n_sweep/timings.csv",
                  qwen3=f"{RUN37}/bench-qwen3/timings.csv", headline=f"{RUN37}/bench-headline/timings.csv",
                  ncu_large_n=f"{RUN37}/profile/ncu_large_n.csv", correctness=f"{RUN37}/verify/correctness.csv",
                  verify_env=f"{RUN37}/verify/env.json", plan_file=f"{RUN37}/plan.yaml",
                  predictions="data/predictions/stages.csv",
                  crosscheck=f"results/gpus/{Path(RUN37).parent.name}/aggregate/crosscheck.csv"),   # gpus.smk's
    "run38": dict(seal_file=f"{RUN38}/SHA256SUMS", n_sweep=f"{RUN38}/bench-n_sweep/timings.csv",
                  qwen3=f"{RUN38}/bench-qwen3/timings.csv", headline=f"{RUN38}/bench-headline/timings.csv",
                  ablation=f"{RUN38}/bench-ablation/timings.csv",
                  ncu_large_n=f"{RUN38}/profile/ncu_large_n.csv", correctness=f"{RUN38}/verify/correctness.csv",
                  verify_env=f"{RUN38}/verify/env.json", plan_file=f"{RUN38}/plan.yaml",
                  predictions="data/predictions/stages.csv",
                  crosscheck=f"results/gpus/{Path(RUN38).parent.name}/aggregate/crosscheck.csv"),   # gpus.smk's
    "capclock": dict(seal_file=f"{PROBE_CAPCLOCK}/SHA256SUMS", steady=f"{PROBE_CAPCLOCK}/steady.csv",
                     ncu=[f"{PROBE_CAPCLOCK}/ncu-{e}-{d}.csv" for e in ("v36", "torch-cudnn")
                          for d in ("float16", "bfloat16")]),
    "stallsource": dict(seal_file=f"{PROBE_STALL}/SHA256SUMS", env=f"{PROBE_STALL}/env.json",
                        sources=[f"{PROBE_STALL}/{e}-float16-{n}.csv.gz" for e, n in
                                 (("v36", 16384), ("v37", 16384), ("torch-cudnn", 16384), ("v36", 4096),
                                  ("torch-cudnn", 4096))]),
    "gate38": dict(gate_seal=f"{PROBE_EARLY}/SHA256SUMS", samples_seal=f"{PROBE_EARLYS}/SHA256SUMS",
                   ncu=[f"{PROBE_EARLY}/ncu-{e}-{d}.csv" for e in ("v36", "v38", "torch-cudnn")
                        for d in ("float16", "bfloat16")],
                   steady=f"{PROBE_EARLY}/steady.csv", gate_ab=f"{PROBE_EARLY}/ab.csv",
                   short_ab=f"{PROBE_EARLYS}/ab.csv",
                   stall=[f"{PROBE_EARLYS}/v38-float16-{n}.csv.gz" for n in (16384, 4096)]),
    "order": dict(seal_file=f"{PROBE_ORDER}/SHA256SUMS", order=f"{PROBE_ORDER}/order.csv",
                  kernels=f"{PROBE_ORDER}/kernel_sha256.txt", fixed_kernels=f"{PROBE_RAREFIX}/kernel_sha256.txt"),
    "gates": dict(v33_seal=f"{PROBE_GATE33}/SHA256SUMS", v33_ab=f"{PROBE_GATE33}/ab.csv",
                  v34_seal=f"{PROBE_GATE34}/SHA256SUMS", v34_ab=f"{PROBE_GATE34}/ab.csv",
                  v36_seal=f"{PROBE_GATE36}/SHA256SUMS", v36_ab=f"{PROBE_GATE36}/ab.csv",
                  v37_seal=f"{PROBE_GATE37}/SHA256SUMS", v37_ab=f"{PROBE_GATE37}/ab.csv",
                  v38_seal=f"{PROBE_EARLY}/SHA256SUMS", v38_ab=f"{PROBE_EARLY}/ab.csv",
                  v37_steady_seal=f"{PROBE_STEADY37}/SHA256SUMS", v37_steady=f"{PROBE_STEADY37}/steady.csv",
                  goal_steady_seal=f"{PROBE_STEADYGOAL}/SHA256SUMS",
                  goal_steady=[f"{PROBE_STEADYGOAL}/{f}.csv" for f in ("steady", "steady-4096", "steady-short")],
                  predictions="data/predictions/stages.csv"),
    "unfinished37": dict(seal_file=f"{PROBE_RUN37}/SHA256SUMS", n_sweep=f"{PROBE_RUN37}/bench-n_sweep/timings.csv",
                         qwen3=f"{PROBE_RUN37}/bench-qwen3/timings.csv",
                         ncu_large_n=f"{PROBE_RUN37}/profile/ncu_large_n.csv",
                         correctness=f"{PROBE_RUN37}/verify/correctness.csv",
                         verify_env=f"{PROBE_RUN37}/verify/env.json"),
    "rarefix": dict(bug_seal=f"{PROBE_RAREBUG}/SHA256SUMS", bug_guards=f"{PROBE_RAREBUG}/gpu_tests_guards.log",
                    fix_seal=f"{PROBE_RAREFIX}/SHA256SUMS", fix_guards=f"{PROBE_RAREFIX}/gpu_tests_guards.log",
                    fix_correctness=f"{PROBE_RAREFIX}/verify/correctness.csv",
                    fix_op=f"{PROBE_RAREFIX}/gpu_tests_op.log"),
    "smalln": dict(seal_file=f"{PROBE_SMALLN}/SHA256SUMS", correctness=f"{PROBE_SMALLN}/verify/correctness.csv",
                   passes=[f"{PROBE_SMALLN}/timing-{i}.csv" for i in (1, 2)], nvidia_smi=f"{PROBE_SMALLN}/nvidia-smi.csv",
                   kernel_sums=f"{PROBE_SMALLN}/kernel_sha256.txt", kernel="kernels/gluon_fwd.py",
                   stage_predictions="data/predictions/stages.csv", probe_predictions="data/predictions/probes.csv"),
    "v29check": dict(seal_file=f"{PROBE_V29}/SHA256SUMS", correctness=f"{PROBE_V29}/verify/correctness.csv",
                     timing=f"{PROBE_V29}/timing.csv"),
    "v28check": dict(seal_file=f"{PROBE_V28}/SHA256SUMS", xseal_file=f"{PROBE_V28X}/SHA256SUMS",
                     correctness=f"{PROBE_V28}/verify/correctness.csv", timing=f"{PROBE_V28}/timing.csv",
                     cause=f"{PROBE_V28X}/crosscheck_cause.csv"),
    "host28": dict(seal_file=f"{PROBE_HOST28}/SHA256SUMS", quick=f"{PROBE_HOST28}/host_cost_quick.csv",
                   gluon=f"{PROBE_HOST28}/host_cost.csv", env=f"{PROBE_HOST28}/env.json",
                   guards=f"{PROBE_HOST28}/gpu_tests_guards.log", op=f"{PROBE_HOST28}/gpu_tests_op.log"),
    "repeats28": dict(seal_file=f"{PROBE_REP28}/SHA256SUMS",
                      passes=[f"{PROBE_REP28}/timing_rep{i}.csv" for i in range(1, 7)]),
    "cold28": dict(seal_file=f"{PROBE_COLD28}/SHA256SUMS", raw_all=f"{PROBE_COLD28}/raw_all.csv",
                   raw_none=f"{PROBE_COLD28}/raw_none.csv"),
    "v23check": dict(seal_file=f"{PROBE_V23}/SHA256SUMS", timing=f"{PROBE_V23}/timing.csv",
                     precheck=f"{PROBE_V23}/precheck.csv"),
    "probe": dict(seal_file=f"{PROBE_WS}/SHA256SUMS", probe=f"{PROBE_WS}/probe_ws.csv"),
    "gluon": dict(seal_file=f"{PROBE_GLUON}/SHA256SUMS", grid_seal=f"{GLUON_GRID}/SHA256SUMS",
                  correctness=f"{GLUON_GRID}/verify/correctness.csv", grid_env=f"{GLUON_GRID}/verify/env.json",
                  kernel="kernels/gluon_fwd.py",
                  racecheck=f"{PROBE_GLUON}/sanitizer_racecheck.log", synccheck=f"{PROBE_GLUON}/sanitizer_synccheck.log",
                  memcheck=f"{PROBE_GLUON}/sanitizer_memcheck.log"),
    "hostcost": dict(seal_file=f"{PROBE_HOST}/SHA256SUMS", host_cost=f"{PROBE_HOST}/host_cost.csv",
                     env=f"{PROBE_HOST}/env.json"),
    # the guards' probe is the Gluon one: one call verified every stage at the guarded source
    "guards": dict(seal_file=f"{PROBE_GLUON}/SHA256SUMS", correctness=f"{PROBE_GLUON}/correctness.csv",
                   tests=f"{PROBE_GLUON}/gpu_tests.log", tests_before=f"{PROBE_GLUON}/gpu_tests_at_e7668df.log"),
    "qwen3": dict(seal_file=f"{PROBE_QWEN3}/SHA256SUMS", qwen3=f"{PROBE_QWEN3}/qwen3_e2e.csv",
                  env=f"{PROBE_QWEN3}/env.json"),
    "scope": dict(variation_n=rules.ours.output.variation_n, sampling=rules.aggregate.output.sampling,
                  snapshots=rules.aggregate.output.snapshots, per_run=rules.aggregate.output.per_run,
                  claims=rules.claims.output.claims, seal_file=f"{PROBE_STATE}/SHA256SUMS",
                  gpu_state=f"{PROBE_STATE}/gpu_state.json", timings=rules.aggregate.output.timings),
}
PROBES = {"probe": PROBE_WS, "gluon": PROBE_GLUON, "hostcost": PROBE_HOST, "guards": PROBE_GLUON,
          "qwen3": PROBE_QWEN3, "scope": PROBE_STATE, "v23check": PROBE_V23, "xcause": PROBE_XCAUSE,
          "v28check": PROBE_V28, "host28": PROBE_HOST28, "repeats28": PROBE_REP28,
          "cold28": PROBE_COLD28, "settle": PROBE_SETTLE,
          "v29check": PROBE_V29, "lowered": PROBE_LOWERED, "run30": RUN30,
          "run31": RUN31, "run35": RUN35, "smalln": PROBE_SMALLN, "rarefix": PROBE_RAREBUG, "order": PROBE_ORDER,
          "run36": RUN36, "unfinished37": PROBE_RUN37, "run37": RUN37, "run38": RUN38, "capclock": PROBE_CAPCLOCK,
          "stallsource": PROBE_STALL, "gate38": PROBE_EARLY}


rule values:
    """The numbers of the text on one subject, as LaTeX macros and keyed values."""
    input:
        unpack(lambda wc: VALUES[wc.subject]),
        CODE,
        lambda wc: sealed_files(PROBES[wc.subject]) + [SEALS] if wc.subject in PROBES else [],
    output:
        "results/paper/values/{subject}.tex",
    log:
        "logs/values/{subject}.log",
    benchmark:
        f"{BENCH}/values/{{subject}}.tsv"
    wildcard_constraints:
        subject="|".join(VALUES),
    script:
        "../scripts/paper/values/{wildcards.subject}.py"


rule listings:
    """Each switch's code, cut from the kernel source, as a listing."""
    input:
        CODE,
        kernel="kernels/flash_fwd.py",
        gluon="kernels/gluon_fwd.py",
    output:
        [f"results/paper/code_{switch}.tex" for switch in ALL_SWITCHES],
    log:
        "logs/listings.log",
    benchmark:
        f"{BENCH}/listings.tsv"
    script:
        "../scripts/paper/listings.py"


rule paper:
    """The paper, with latexmk from TeX Live."""
    input:
        tex="paper/main.tex",
        bib="paper/references.bib",
        figures=expand("results/figures/{name}.pdf", name=FIGURES),
        tables=expand("results/tables/{name}.tex", name=TABLES),
        values=expand("results/paper/values/{subject}.tex", subject=VALUES),
        listings=rules.listings.output,
        other_gpus="results/paper/other_gpus.tex",  # the appendix of the other GPUs' runs (gpus.smk)
    output:
        report("results/paper.pdf", category="Paper", caption="../report/paper.rst"),
    log:
        "logs/paper.log",
    benchmark:
        f"{BENCH}/paper.tsv"
    shell:
        # -g: the rule runs only when an input changed, and latexmk must then run; without it, after a failed build
        # (an input missing, since made) latexmk found "nothing to do" and repeated the old error
        "(cd paper && TEXINPUTS=.:../results/paper/:../results/tables/: latexmk -g -pdf -interaction=nonstopmode "
        "-halt-on-error -outdir=../results/paper-build main.tex) > {log} 2>&1 "
        "&& cp results/paper-build/main.pdf {output}"
