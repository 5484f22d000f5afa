AGG = "results/aggregate"


rule aggregate:
    """Every run (checksums verified) into tidy tables: timings, per-run medians, the headline table with both
    torch ratios beside the article's, run-to-run variation, Nsight metrics, ceilings, static build."""
    input:
        seals=run_seals(),
        article="data/article/timings.csv",
        build=expand("results/build/sm_{arch}/build.csv", arch=config["build"]["archs"]),
    output:
        expand(f"{AGG}/{{name}}.csv", name=["timings", "per_run", "headline", "variation", "ncu", "ceilings",
                                           "build"]),
    log:
        "logs/aggregate.log",
    params:
        runs=lambda wc, input: " ".join(str(Path(s).parent) for s in input.seals),
    shell:
        "{PY} workflow/scripts/aggregate.py --runs {params.runs} --build {input.build} "
        "--article data/article --out {AGG} > {log} 2>&1"


rule claims:
    """The verdict on each claim C1-C10, computed from the data by the rules stated in the paper."""
    input:
        rules.aggregate.output,
        "data/article/claims.csv",
    output:
        f"{AGG}/claims.csv",
    log:
        "logs/claims.log",
    shell:
        "{PY} workflow/scripts/claims.py --agg {AGG} --article data/article --out {output} > {log} 2>&1"
