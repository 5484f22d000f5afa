# The CPU steps whose benchmark files the step-time table reads: every job that runs before it (the tables, macros
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
        "workflow/scripts/step_times.py",
        seals=run_seals(),
        data=run_data_files(),
        logs=step_time_logs(),
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
        "{params.py} workflow/scripts/step_times.py --runs {params.runs} --logs {input.logs} --cpu {input.cpu} "
        "--out {output} > {log} 2>&1"


rule tables:
    """The paper's tables (stages, claims, environment, timer cross-check, launch cost) through pandas'
    Styler.to_latex."""
    input:
        rules.aggregate.output,
        rules.claims.output,
        rules.ours.output,
        rules.predictions.output,
        "workflow/scripts/tables.py",
        headline=rules.aggregate.output.headline,
        step_times=rules.step_times.output,
        seals=run_seals(),
    output:
        stages=report("results/tables/stages.tex", category="Tables", caption="../report/table.rst"),
        claims=report("results/tables/claims.tex", category="Tables", caption="../report/table.rst"),
        slips=report("results/tables/slips.tex", category="Tables", caption="../report/table.rst"),
        environment=report("results/tables/environment.tex", category="Tables", caption="../report/table.rst"),
        crosscheck=report("results/tables/crosscheck.tex", category="Tables", caption="../report/table.rst"),
        launch_cost=report("results/tables/launch_cost.tex", category="Tables", caption="../report/table.rst"),
        step_times=report("results/tables/step_times.tex", category="Tables", caption="../report/table.rst"),
        ours=report("results/tables/ours.tex", category="Tables", caption="../report/table.rst"),
        per_n=report("results/tables/per_n.tex", category="Tables", caption="../report/table.rst"),
        predictions=report("results/tables/predictions.tex", category="Tables", caption="../report/table.rst"),
    log:
        "logs/tables.log",
    benchmark:
        f"{BENCH}/tables.tsv"
    params:
        py=PY,
        runs=lambda wc, input: " ".join(str(Path(s).parent) for s in input.seals),
    shell:
        "{params.py} workflow/scripts/tables.py --agg $(dirname {input.headline}) --runs {params.runs} "
        "--out $(dirname {output.stages}) > {log} 2>&1"


rule macros:
    """Every number of the text as a LaTeX macro, and each switch's code cut from the kernel source."""
    input:
        rules.aggregate.output,
        rules.claims.output,
        rules.ours.output,
        rules.predictions.output,
        "kernels/flash_fwd.py",
        "workflow/scripts/macros.py",
        "workflow/scripts/large_n.py",
        "data/nvidia-h200/probes/probe-ws/SHA256SUMS",
        "data/nvidia-h200/probes/probe-ws/probe_ws.csv",
        "results/verify/cpu/correctness.csv",
        rules.step_times.output,
        headline=rules.aggregate.output.headline,
        seals=run_seals(),
    output:
        "results/paper/macros.tex",
    log:
        "logs/macros.log",
    benchmark:
        f"{BENCH}/macros.tsv"
    params:
        py=PY,
        runs=lambda wc, input: " ".join(str(Path(s).parent) for s in input.seals),
    shell:
        "{params.py} workflow/scripts/macros.py --agg $(dirname {input.headline}) --runs {params.runs} "
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
    benchmark:
        f"{BENCH}/paper.tsv"
    shell:
        "(cd paper && TEXINPUTS=.:../results/paper//:../results/tables//: latexmk -pdf -interaction=nonstopmode "
        "-halt-on-error -outdir=../results/paper-build main.tex) > {log} 2>&1 "
        "&& cp results/paper-build/main.pdf {output}"
