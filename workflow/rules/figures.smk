# One script per figure, named as the figure (workflow/scripts/paper/figures/<name>.py -> results/figures/<name>.pdf),
# each reading the aggregated files named here.
# run-36 on one H100 (v36's first run: every timed set and Nsight's profile on one GPU, its verify grid from an earlier
# lease at the same commit): its values step, and the figure of its samples at the power cap
RUN36 = "data/nvidia-h100-80gb-hbm3/run-36"
FIGURES = {
    "stage_times": dict(per_run=f"{AGG}/per_run.csv", article_timings="data/article/timings.csv"),
    "stage_waterfall": dict(per_run=f"{AGG}/per_run.csv", article_timings="data/article/timings.csv"),
    "ncu_panels": dict(ncu=f"{AGG}/ncu.csv", article_ncu="data/article/ncu.csv"),
    "n_sweep": dict(per_run=f"{AGG}/per_run.csv", leader=f"{AGG}/leader.csv"),
    "qwen3": dict(per_run=f"{AGG}/per_run.csv", leader=f"{AGG}/leader.csv", gluon_leader=f"{AGG}/gluon_leader.csv"),
    "tile_heatmap": dict(per_run=f"{AGG}/per_run.csv"),
    "ablation": dict(per_run=f"{AGG}/per_run.csv"),
    "timer_check": dict(crosscheck=f"{AGG}/crosscheck.csv", timer_check=f"{AGG}/timer_check.csv"),
    "launch_cost": dict(timings=f"{AGG}/timings.csv"),
    "ours_waterfall": dict(per_run=f"{AGG}/per_run.csv"),
    "ours_sweep": dict(per_n=f"{AGG}/per_n.csv", leader=f"{AGG}/leader.csv"),
    "large_n": dict(large_n_table=f"{AGG}/large_n_table.csv"),
    "power_cap_samples": dict(seal_file=f"{RUN36}/SHA256SUMS", n_sweep=f"{RUN36}/bench-n_sweep/timings.csv"),
}


# The report's caption of each figure: its script's docstring (pipeline.captions).
FIGURE_CAPTIONS = {name: captions.figure_caption(ROOT / SCRIPTS / "paper" / "figures" / f"{name}.py") for name in FIGURES}


rule figure:
    """A seaborn figure from the aggregated data, as PDF (the paper) and PNG (the report)."""
    input:
        unpack(lambda wc: FIGURES[wc.name]),
        CODE,
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
        caption=lambda wc: FIGURE_CAPTIONS[wc.name],
    script:
        "../scripts/paper/figures/{wildcards.name}.py"
