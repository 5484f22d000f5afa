# One script per figure, named as the figure (workflow/scripts/figures/<name>.py -> results/figures/<name>.pdf).
FIGURES = ["stage_times", "stage_waterfall", "ncu_panels", "n_sweep", "qwen3", "tile_heatmap", "ablation",
           "timer_check", "launch_cost", "ours_waterfall", "ours_sweep", "large_n"]


rule figure:
    """A seaborn figure from the aggregated data, as PDF (the paper) and PNG (the report)."""
    input:
        script="workflow/scripts/figures/{name}.py",
        common="workflow/scripts/figures/common.py",
        selection="workflow/scripts/selection.py",
        large_n="workflow/scripts/large_n.py",
        data=rules.aggregate.output,
        ours=rules.ours.output,
        article="data/article/timings.csv",
    output:
        pdf="results/figures/{name}.pdf",
        png=report("results/figures/{name}.png", category="Figures", caption="../report/figure.rst"),
    log:
        "logs/figures/{name}.log",
    benchmark:
        f"{BENCH}/figure/{{name}}.tsv"
    wildcard_constraints:
        name="|".join(FIGURES),
    params:
        py=PY,
    shell:
        "{params.py} {input.script} --agg $(dirname {input.data[0]}) --article data/article --out results/figures/{wildcards.name} > {log} 2>&1"
