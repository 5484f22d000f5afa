# `make compare RUN=<run folder>`: a reviewer's sealed run, aggregated alone by the aggregate phase's own scripts
# (those of the rules aggregate, claims and ours, on that one run), then set against the committed runs' aggregate:
# results/compare/<run>/compare.md, compare.html and compare.csv, and flips.txt, the verdicts that flipped (empty
# when none did; `make compare` fails when it is not). `--config compare=<run folder>` names the run.
COMPARE = str(config.get("compare") or "")
COMPARE_NAME = Path(COMPARE).name if COMPARE else ""
CMP = "results/compare/{reviewer}"
CMP_AGG = f"{CMP}/aggregate"


wildcard_constraints:
    # Only the named run is compared: without --config compare=..., no rule of this file matches any file.
    reviewer=re.escape(COMPARE_NAME) if COMPARE_NAME else r"(?!)",


localrules:
    compare_aggregate,
    compare_claims,
    compare_ours,
    compare,


rule compare_aggregate:
    """The reviewer's run alone through the aggregate step (aggregate.py), as the committed runs go through it."""
    input:
        CODE,
        script=f"{SCRIPTS}/aggregate/aggregate.py",
        data=compare_files,
        article_timings="data/article/timings.csv",
        article_ncu="data/article/ncu.csv",
        build=expand("results/build/sm_{arch}/build.csv", arch=config["build"]["archs"]),
    output:
        **{name: path.replace(AGG, CMP_AGG, 1) for name, path in rules.aggregate.output.items()},
    log:
        "logs/compare/{reviewer}/aggregate.log",
    benchmark:
        f"{BENCH}/compare/{{reviewer}}/aggregate.tsv"
    params:
        py=PY,
        run=lambda wc: shlex.quote(COMPARE),
        max_pct=config["crosscheck_max_pct"],
        # a waiver names a committed run's entry: only the waivers of a run of this name apply to it
        waivers=lambda wc: json.dumps([w for w in gpu_waivers(GPU) if w["run"] == COMPARE_NAME]),
    shell:
        "{params.py} {input.script} --runs {params.run} --unanchored --build {input.build} "
        "--crosscheck-max-pct {params.max_pct} --crosscheck-waivers {params.waivers:q} "
        "--article-timings {input.article_timings} --article-ncu {input.article_ncu} "
        "--out $(dirname {output.headline}) > {log} 2>&1"


rule compare_claims:
    """The verdicts of the reviewer's run alone, by claims.py (the rule claims' script)."""
    input:
        CODE,
        per_run=rules.compare_aggregate.output.per_run,
        ncu=rules.compare_aggregate.output.ncu,
        premise=rules.compare_aggregate.output.premise,
        build=rules.compare_aggregate.output.build,
        runs=rules.compare_aggregate.output.runs,
        article_components="data/article/components.csv",
        article_claims="data/article/claims.csv",
        article_timings="data/article/timings.csv",
        article_ncu="data/article/ncu.csv",
    output:
        claims=f"{CMP_AGG}/claims.csv",
        slips=f"{CMP_AGG}/slips.csv",
        claim_rules=f"{CMP_AGG}/claim_rules.csv",
    log:
        "logs/compare/{reviewer}/claims.log",
    benchmark:
        f"{BENCH}/compare/{{reviewer}}/claims.tsv"
    script:
        "../scripts/aggregate/claims.py"


rule compare_ours:
    """Our stages and the per-N table of the reviewer's run alone, by ours.py (the rule ours' script)."""
    input:
        CODE,
        per_run=rules.compare_aggregate.output.per_run,
        ceilings=rules.compare_aggregate.output.ceilings,
    output:
        stages=f"{CMP_AGG}/ours_stages.csv",
        per_n=f"{CMP_AGG}/per_n.csv",
        best=f"{CMP_AGG}/best_per_n.csv",
        leader=f"{CMP_AGG}/leader.csv",
        variation_n=f"{CMP_AGG}/variation_n.csv",
    log:
        "logs/compare/{reviewer}/ours.log",
    benchmark:
        f"{BENCH}/compare/{{reviewer}}/ours.tsv"
    script:
        "../scripts/aggregate/ours.py"


rule compare:
    """The reviewer's run against the paper: each headline time and ratio, each per-N figure, each claim's value and
    verdict; the paper's value, the run's, the committed runs' own spread, within or outside; the verdicts that
    flipped."""
    input:
        CODE,
        headline=rules.aggregate.output.headline,
        ours_stages=rules.ours.output.stages,
        per_n=rules.ours.output.per_n,
        claims=rules.claims.output.claims,
        claims_by_run=rules.claims_by_run.output[0],
        run_headline=rules.compare_aggregate.output.headline,
        run_ours_stages=rules.compare_ours.output.stages,
        run_per_n=rules.compare_ours.output.per_n,
        run_claims=rules.compare_claims.output.claims,
    output:
        markdown=f"{CMP}/compare.md",
        html=f"{CMP}/compare.html",
        table=f"{CMP}/compare.csv",
        flips=f"{CMP}/flips.txt",
    log:
        "logs/compare/{reviewer}/compare.log",
    benchmark:
        f"{BENCH}/compare/{{reviewer}}/compare.tsv"
    params:
        run=lambda wc: COMPARE,
    script:
        "../scripts/aggregate/compare.py"
