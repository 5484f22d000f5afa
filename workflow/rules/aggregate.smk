# Cheap steps that read the committed data: run where Snakemake runs, never queued as cluster jobs.
localrules:
    aggregate,
    claims,
    ours,
    predictions,
    figure,
    step_times,
    tables,
    macros,
    paper,


AGG = "results/aggregate"


rule aggregate:
    """Every run (checksums verified) into tidy tables: timings, per-run medians, the headline table with both
    torch ratios beside the article's, run-to-run variation, Nsight metrics, ceilings, static build, the kernel
    timer's cross-check with Nsight (fails beyond crosscheck_max_pct), the timer check, the launch cost."""
    input:
        "workflow/scripts/aggregate.py",
        "workflow/scripts/selection.py",
        seals=run_seals(),
        data=run_data_files(),
        article="data/article/timings.csv",
        build=expand("results/build/sm_{arch}/build.csv", arch=config["build"]["archs"]),
    output:
        timings=f"{AGG}/timings.csv",
        per_run=f"{AGG}/per_run.csv",
        headline=f"{AGG}/headline.csv",
        variation=f"{AGG}/variation.csv",
        ncu=f"{AGG}/ncu.csv",
        ceilings=f"{AGG}/ceilings.csv",
        build=f"{AGG}/build.csv",
        crosscheck=f"{AGG}/crosscheck.csv",
        timer_check=f"{AGG}/timer_check.csv",
        launch_cost=f"{AGG}/launch_cost.csv",
        runs=f"{AGG}/runs.csv",
        premise=f"{AGG}/premise.csv",
        large_n=f"{AGG}/large_n.csv",
    log:
        "logs/aggregate.log",
    benchmark:
        f"{BENCH}/aggregate.tsv"
    params:
        py=PY,
        runs=lambda wc, input: " ".join(str(Path(s).parent) for s in input.seals),
        max_pct=config["crosscheck_max_pct"],
        waivers=json.dumps(config.get("crosscheck_waivers", [])),
    shell:
        "{params.py} workflow/scripts/aggregate.py --runs {params.runs} --build {input.build} "
        "--crosscheck-max-pct {params.max_pct} --crosscheck-waivers {params.waivers:q} --article data/article "
        "--out $(dirname {output.headline}) > {log} 2>&1"


rule claims:
    """The verdict on each claim C1-C10, computed from the data by the rules stated in the paper."""
    input:
        rules.aggregate.output,
        "workflow/scripts/claims.py",
        headline=rules.aggregate.output.headline,
        article="data/article/claims.csv",
        components="data/article/components.csv",
        article_data=["data/article/timings.csv", "data/article/ncu.csv"],
    output:
        claims=report(f"{AGG}/claims.csv", category="Claims", caption="../report/claims.rst"),
        slips=f"{AGG}/slips.csv",
    log:
        "logs/claims.log",
    benchmark:
        f"{BENCH}/claims.tsv"
    params:
        py=PY,
    shell:
        "{params.py} workflow/scripts/claims.py --agg $(dirname {input.headline}) --article data/article --out {output.claims} > {log} 2>&1"


rule ours:
    """Our stages beyond the article: each at the headline against cuDNN and FlashAttention-2, and every stage and
    backend at each N of the sweep (time, TFLOP/s, percent of the measured matrix roof, ratio to cuDNN)."""
    input:
        "workflow/scripts/ours.py",
        "workflow/scripts/selection.py",
        "kernels/tuned_tiles.csv",
        per_run=rules.aggregate.output.per_run,
        ceilings=rules.aggregate.output.ceilings,
    output:
        stages=f"{AGG}/ours_stages.csv",
        per_n=f"{AGG}/per_n.csv",
        best=f"{AGG}/best_per_n.csv",
        leader=f"{AGG}/leader.csv",
    log:
        "logs/ours.log",
    benchmark:
        f"{BENCH}/ours.tsv"
    params:
        py=PY,
    shell:
        "{params.py} workflow/scripts/ours.py --agg $(dirname {input.per_run}) > {log} 2>&1"


rule predictions:
    """Each prediction written before a stage was measured (data/predictions/stages.csv) beside the measurement."""
    input:
        "workflow/scripts/predictions.py",
        "workflow/scripts/selection.py",
        predictions="data/predictions/stages.csv",
        per_run=rules.aggregate.output.per_run,
        ncu=rules.aggregate.output.ncu,
    output:
        report(f"{AGG}/predictions.csv", category="Claims", caption="../report/claims.rst"),
    log:
        "logs/predictions.log",
    benchmark:
        f"{BENCH}/predictions.tsv"
    params:
        py=PY,
    shell:
        "{params.py} workflow/scripts/predictions.py --predictions {input.predictions} "
        "--agg $(dirname {input.per_run}) --out {output} > {log} 2>&1"
