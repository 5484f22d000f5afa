# Another GPU's runs (data/<gpu>/run-*/, any folder of data/ but the config gpu's that holds runs: OTHER_GPUS,
# common.smk): aggregated apart, by the aggregate phase's own scripts (those of the rules aggregate, claims and ours,
# as `make compare` runs them on a reviewer's run), formatted by the paper's own tables (the headline stage table,
# the per-N ratios, the claims' verdicts), and put in an appendix of the paper per GPU: results/paper/other_gpus.tex,
# which holds none when no other GPU's runs are committed. Nothing of them reaches the main text: its steps read
# results/aggregate/, the config gpu's runs alone (aggregate.py refuses runs of two GPUs pooled).
GPUS_DIR = "results/gpus/{other}"
GPU_AGG = f"{GPUS_DIR}/aggregate"
# The tables of each GPU's appendix: the rule tables' own (TABLES, paper.smk), from that GPU's aggregate.
GPU_TABLES = ("stages", "per_n", "claims")


wildcard_constraints:
    # Only the other GPUs' folders: with none committed, no rule of this file matches any file.
    other="|".join(re.escape(g) for g in OTHER_GPUS) if OTHER_GPUS else r"(?!)",


localrules:
    gpu_aggregate,
    gpu_claims,
    gpu_ours,
    gpu_tables,
    gpu_sweep_figure,
    gpu_appendix,


rule gpu_aggregate:
    """Another GPU's runs (checksums verified, against data/SEALS.csv as the config gpu's) through the aggregate
    step (aggregate.py), apart from the config gpu's, with that GPU's cross-check waivers (config gpu: <slug>)."""
    input:
        CODE,
        script=f"{SCRIPTS}/aggregate/aggregate.py",
        seals=lambda wc: gpu_run_seals(wc.other),
        manifest=SEALS,
        data=lambda wc: gpu_run_data_files(wc.other),
        article_timings="data/article/timings.csv",
        article_ncu="data/article/ncu.csv",
        build=expand("results/build/sm_{arch}/build.csv", arch=config["build"]["archs"]),
    output:
        **{name: path.replace(AGG, GPU_AGG, 1) for name, path in rules.aggregate.output.items()},
    log:
        "logs/gpus/{other}/aggregate.log",
    benchmark:
        f"{BENCH}/gpus/{{other}}/aggregate.tsv"
    params:
        py=PY,
        runs=lambda wc, input: " ".join(str(Path(s).parent) for s in input.seals),
        max_pct=config["crosscheck_max_pct"],
        waivers=lambda wc: json.dumps(gpu_waivers(wc.other)),
    shell:
        "{params.py} {input.script} --runs {params.runs} --build {input.build} "
        "--crosscheck-max-pct {params.max_pct} --crosscheck-waivers {params.waivers:q} "
        "--article-timings {input.article_timings} --article-ncu {input.article_ncu} "
        "--out $(dirname {output.headline}) > {log} 2>&1"


rule gpu_claims:
    """The verdicts on another GPU's runs, by claims.py (the rule claims' script)."""
    input:
        CODE,
        per_run=rules.gpu_aggregate.output.per_run,
        ncu=rules.gpu_aggregate.output.ncu,
        premise=rules.gpu_aggregate.output.premise,
        build=rules.gpu_aggregate.output.build,
        runs=rules.gpu_aggregate.output.runs,
        article_components="data/article/components.csv",
        article_claims="data/article/claims.csv",
        article_timings="data/article/timings.csv",
        article_ncu="data/article/ncu.csv",
    output:
        claims=f"{GPU_AGG}/claims.csv",
        slips=f"{GPU_AGG}/slips.csv",
        claim_rules=f"{GPU_AGG}/claim_rules.csv",
    log:
        "logs/gpus/{other}/claims.log",
    benchmark:
        f"{BENCH}/gpus/{{other}}/claims.tsv"
    script:
        "../scripts/aggregate/claims.py"


rule gpu_ours:
    """Our stages and the per-N table of another GPU's runs, by ours.py (the rule ours' script)."""
    input:
        CODE,
        per_run=rules.gpu_aggregate.output.per_run,
        ceilings=rules.gpu_aggregate.output.ceilings,
    output:
        stages=f"{GPU_AGG}/ours_stages.csv",
        per_n=f"{GPU_AGG}/per_n.csv",
        best=f"{GPU_AGG}/best_per_n.csv",
        leader=f"{GPU_AGG}/leader.csv",
        gluon_leader=f"{GPU_AGG}/gluon_leader.csv",    # for the default stage of its architecture (choose_default)
        variation_n=f"{GPU_AGG}/variation_n.csv",
    log:
        "logs/gpus/{other}/ours.log",
    benchmark:
        f"{BENCH}/gpus/{{other}}/ours.tsv"
    script:
        "../scripts/aggregate/ours.py"


GPU_TABLE_INPUTS = {
    "stages": lambda wc: dict(stage_table=rules.gpu_aggregate.output.stage_table.format(other=wc.other)),
    "per_n": lambda wc: dict(per_n=rules.gpu_ours.output.per_n.format(other=wc.other),
                             best_per_n=rules.gpu_ours.output.best.format(other=wc.other)),
    "claims": lambda wc: dict(claims=rules.gpu_claims.output.claims.format(other=wc.other)),
}


rule gpu_tables:
    """A table of another GPU's appendix, by tables.py (the rule tables' script), from that GPU's aggregate."""
    input:
        unpack(lambda wc: GPU_TABLE_INPUTS[wc.name](wc)),
        CODE,
    output:
        tex=f"{GPUS_DIR}/tables/{{name}}.tex",
        html=f"{GPUS_DIR}/tables/{{name}}.html",
    log:
        "logs/gpus/{other}/tables/{name}.log",
    benchmark:
        f"{BENCH}/gpus/{{other}}/tables/{{name}}.tsv"
    wildcard_constraints:
        name="|".join(GPU_TABLES),
    script:
        "../scripts/paper/tables.py"


rule gpu_sweep_figure:
    """The N sweep of another GPU's runs, by the main text's own figure script (ours_sweep.py), from that GPU's
    aggregate: our stages' time over cuDNN's in the same run, with the goal's line, and their share of the measured
    roof."""
    input:
        CODE,
        per_n=rules.gpu_ours.output.per_n,
        leader=rules.gpu_ours.output.leader,
    output:
        pdf=f"{GPUS_DIR}/figures/ours_sweep.pdf",
        png=f"{GPUS_DIR}/figures/ours_sweep.png",
    log:
        "logs/gpus/{other}/figures/ours_sweep.log",
    benchmark:
        f"{BENCH}/gpus/{{other}}/figures/ours_sweep.tsv"
    script:
        "../scripts/paper/figures/ours_sweep.py"


rule gpu_appendix:
    """The paper's appendix of the other GPUs: per GPU, its runs and their GPU as env.json names it, the headline
    stage table, the per-N ratios and the claims' verdicts; empty of sections when no other GPU's runs are
    committed."""
    input:
        CODE,
        runs=expand(rules.gpu_aggregate.output.runs, other=OTHER_GPUS),
        environment=expand(rules.gpu_aggregate.output.environment, other=OTHER_GPUS),
        claims=expand(rules.gpu_claims.output.claims, other=OTHER_GPUS),
        stages=expand(f"{GPUS_DIR}/tables/stages.tex", other=OTHER_GPUS),
        per_n=expand(f"{GPUS_DIR}/tables/per_n.tex", other=OTHER_GPUS),
        claims_table=expand(f"{GPUS_DIR}/tables/claims.tex", other=OTHER_GPUS),
        sweep=expand(rules.gpu_sweep_figure.output.pdf, other=OTHER_GPUS),
    output:
        "results/paper/other_gpus.tex",
    log:
        "logs/gpu_appendix.log",
    benchmark:
        f"{BENCH}/gpu_appendix.tsv"
    params:
        gpus=OTHER_GPUS,
        main_gpu=GPU,
    script:
        "../scripts/paper/gpus_appendix.py"
