rule tables:
    """The paper's tables (stages, claims, environment, timer cross-check, launch cost) through pandas'
    Styler.to_latex."""
    input:
        rules.aggregate.output,
        rules.claims.output,
        "workflow/scripts/tables.py",
        headline=rules.aggregate.output.headline,
        seals=run_seals(),
    output:
        stages=report("results/tables/stages.tex", category="Tables", caption="../report/table.rst"),
        claims=report("results/tables/claims.tex", category="Tables", caption="../report/table.rst"),
        slips=report("results/tables/slips.tex", category="Tables", caption="../report/table.rst"),
        environment=report("results/tables/environment.tex", category="Tables", caption="../report/table.rst"),
        crosscheck=report("results/tables/crosscheck.tex", category="Tables", caption="../report/table.rst"),
        launch_cost=report("results/tables/launch_cost.tex", category="Tables", caption="../report/table.rst"),
    log:
        "logs/tables.log",
    params:
        py=PY,
        runs=lambda wc, input: " ".join(str(Path(s).parent) for s in input.seals),
    conda:
        ENV
    shell:
        "{params.py} workflow/scripts/tables.py --agg $(dirname {input.headline}) --runs {params.runs} "
        "--out $(dirname {output.stages}) > {log} 2>&1"


rule macros:
    """Every number of the text as a LaTeX macro, and each switch's code cut from the kernel source."""
    input:
        rules.aggregate.output,
        rules.claims.output,
        "kernels/flash_fwd.py",
        "workflow/scripts/macros.py",
        "results/verify/cpu/correctness.csv",
        headline=rules.aggregate.output.headline,
        seals=run_seals(),
    output:
        "results/paper/macros.tex",
    log:
        "logs/macros.log",
    params:
        py=PY,
        runs=lambda wc, input: " ".join(str(Path(s).parent) for s in input.seals),
        logs=lambda wc, input: " ".join(
            str(log) for s in input.seals if (log := ROOT / DATA / "snakemake-logs" / f"{Path(s).parent.name}.log").exists()),
    conda:
        ENV
    shell:
        "{params.py} workflow/scripts/macros.py --agg $(dirname {input.headline}) --runs {params.runs} --logs {params.logs} "
        "--out results/paper > {log} 2>&1"


rule paper:
    """The paper, with latexmk from TeX Live."""
    input:
        tex="paper/main.tex",
        bib="paper/references.bib",
        figures=expand("results/figures/{name}.pdf", name=FIGURES),
        tables=rules.tables.output,
        macros=rules.macros.output,
        verify="results/verify/cpu/correctness.csv",
    output:
        report("results/paper.pdf", category="Paper", caption="../report/paper.rst"),
    log:
        "logs/paper.log",
    conda:
        ENV
    shell:
        "(cd paper && TEXINPUTS=.:../results/paper//:../results/tables//: latexmk -pdf -interaction=nonstopmode "
        "-halt-on-error -outdir=../results/paper-build main.tex) > {log} 2>&1 "
        "&& cp results/paper-build/main.pdf {output}"
