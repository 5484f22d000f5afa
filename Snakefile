# The pipeline: build -> verify -> (measure on a GPU) -> aggregate -> figures, tables, macros -> paper.
# By default no GPU is needed: everything downstream of the committed data/<gpu>/run-*/.
# `--config measure=true run=run-<name>` (or --profile profiles/gpu) measures on the local GPU(s) first.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"  # the landing page of `make report` (snakemake --report)


include: "workflow/rules/common.smk"
include: "workflow/rules/build.smk"
include: "workflow/rules/verify.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/paper.smk"
include: "workflow/rules/compare.smk"
include: "workflow/rules/gpus.smk"


rule all:
    default_target: True
    input:
        "results/paper.pdf",
