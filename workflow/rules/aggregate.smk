# The aggregate phase: every sealed run into tidy tables, and what the paper computes from them (claims, our stages,
# predictions, step times). Each table is computed here once; the paper's tables, figures and values only read them.
# Cheap steps that read the committed data: run where Snakemake runs, never queued as cluster jobs.
localrules:
    aggregate,
    claims,
    claims_by_run,
    ours,
    predictions,
    figure,
    step_times,
    tables,
    values,
    listings,
    paper,


AGG = "results/aggregate"
SCRIPTS = "workflow/scripts"


rule aggregate:
    """Every run (checksums verified) into tidy tables: timings, per-run medians with the rows' roles, the headline
    and stage tables, run-to-run variation, Nsight metrics, ceilings, static build, the kernel timer's cross-check with
    Nsight (fails beyond crosscheck_max_pct), the timer check, the launch cost, the runs' checks and environment."""
    input:
        CODE,
        script=f"{SCRIPTS}/aggregate/aggregate.py",
        seals=run_seals(),
        manifest=SEALS,
        data=run_data_files(),
        article_timings="data/article/timings.csv",
        article_ncu="data/article/ncu.csv",
        build=expand("results/build/sm_{arch}/build.csv", arch=config["build"]["archs"]),
    output:
        timings=f"{AGG}/timings.csv",
        per_run=f"{AGG}/per_run.csv",
        headline=f"{AGG}/headline.csv",
        headline_median=f"{AGG}/headline_median.csv",
        stage_table=f"{AGG}/stage_table.csv",
        variation=f"{AGG}/variation.csv",
        ncu=f"{AGG}/ncu.csv",
        ceilings=f"{AGG}/ceilings.csv",
        build=f"{AGG}/build.csv",
        crosscheck=f"{AGG}/crosscheck.csv",
        timer_check=f"{AGG}/timer_check.csv",
        launch_cost=f"{AGG}/launch_cost.csv",
        runs=f"{AGG}/runs.csv",
        environment=f"{AGG}/environment.csv",
        correctness=f"{AGG}/correctness.csv",
        premise=f"{AGG}/premise.csv",
        large_n=f"{AGG}/large_n.csv",
        large_n_table=f"{AGG}/large_n_table.csv",
        sampling=f"{AGG}/sampling.csv",
        snapshots=f"{AGG}/snapshots.csv",
    log:
        "logs/aggregate.log",
    benchmark:
        f"{BENCH}/aggregate.tsv"
    params:
        py=PY,
        runs=lambda wc, input: " ".join(str(Path(s).parent) for s in input.seals),
        max_pct=config["crosscheck_max_pct"],
        waivers=json.dumps(gpu_waivers(GPU)),  # the waivers of the config gpu's runs
    shell:
        "{params.py} {input.script} --runs {params.runs} --build {input.build} "
        "--crosscheck-max-pct {params.max_pct} --crosscheck-waivers {params.waivers:q} "
        "--article-timings {input.article_timings} --article-ncu {input.article_ncu} "
        "--out $(dirname {output.headline}) > {log} 2>&1"


rule claims:
    """The verdict on each claim C1-C10, computed from the data by the rules stated in the paper."""
    input:
        CODE,
        per_run=rules.aggregate.output.per_run,
        ncu=rules.aggregate.output.ncu,
        premise=rules.aggregate.output.premise,
        build=rules.aggregate.output.build,
        runs=rules.aggregate.output.runs,
        article_components="data/article/components.csv",
        article_claims="data/article/claims.csv",
        article_timings="data/article/timings.csv",
        article_ncu="data/article/ncu.csv",
    output:
        claims=report(f"{AGG}/claims.csv", category="Claims", caption="../report/claims.rst"),
        slips=f"{AGG}/slips.csv",
        claim_rules=f"{AGG}/claim_rules.csv",
    log:
        "logs/claims.log",
    benchmark:
        f"{BENCH}/claims.tsv"
    script:
        "../scripts/aggregate/claims.py"


rule claims_by_run:
    """The verdict on each claim as each run alone gives it (the same rules; a run alone has no noise): the spread of
    the committed runs' own verdicts, for `make compare`."""
    input:
        CODE,
        per_run=rules.aggregate.output.per_run,
        ncu=rules.aggregate.output.ncu,
        premise=rules.aggregate.output.premise,
        build=rules.aggregate.output.build,
        runs=rules.aggregate.output.runs,
        article_components="data/article/components.csv",
        article_claims="data/article/claims.csv",
        article_timings="data/article/timings.csv",
        article_ncu="data/article/ncu.csv",
    output:
        f"{AGG}/claims_by_run.csv",
    log:
        "logs/claims_by_run.log",
    benchmark:
        f"{BENCH}/claims_by_run.tsv"
    script:
        "../scripts/aggregate/claims.py"


rule ours:
    """Our stages beyond the article: each at the headline against cuDNN and FlashAttention-2, and every stage and
    backend at each N of the sweep (time, TFLOP/s, percent of the measured matrix roof, ratio to cuDNN), the leading
    stage."""
    input:
        CODE,
        per_run=rules.aggregate.output.per_run,
        ceilings=rules.aggregate.output.ceilings,
    output:
        stages=f"{AGG}/ours_stages.csv",
        per_n=f"{AGG}/per_n.csv",
        best=f"{AGG}/best_per_n.csv",
        leader=f"{AGG}/leader.csv",
        gluon_leader=f"{AGG}/gluon_leader.csv",
        variation_n=f"{AGG}/variation_n.csv",
    log:
        "logs/ours.log",
    benchmark:
        f"{BENCH}/ours.tsv"
    script:
        "../scripts/aggregate/ours.py"


rule predictions:
    """Each prediction written before a stage was measured (data/predictions/stages.csv) beside the measurement."""
    input:
        CODE,
        predictions="data/predictions/stages.csv",
        per_run=rules.aggregate.output.per_run,
        ncu=rules.aggregate.output.ncu,
    output:
        report(f"{AGG}/predictions.csv", category="Claims", caption="../report/predictions.rst"),
    log:
        "logs/predictions.log",
    benchmark:
        f"{BENCH}/predictions.tsv"
    script:
        "../scripts/aggregate/predictions.py"
