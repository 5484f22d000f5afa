# The GPU tier: only asked for when config measure is true (run_seals() then names the new run's SHA256SUMS).
# Every step writes into a staging folder (STAGING/<run>); the seal moves it into data/ whole, sealed.
# Each GPU job declares gpu=1 and runs under pipeline.gpu_pin, which gives it a GPU of its own: with
# --resources gpu=N the sets spread over N GPUs, and timing and profiling never share one.
# Order: verify_gpu and compile (which compile, but time nothing) finish before any job that times starts, so that
# no compilation ever runs beside a timing on a machine with several GPUs.
# Each step's benchmark: file (Snakemake's wall time, memory and I/O of the job) is written inside the run, under
# benchmarks/, so that it is sealed with the data it timed; the seal lists them among its inputs.
# The Qwen3 end-to-end step is part of a run when the plan has its section (plan.qwen3_e2e); a plan without it (or
# with qwen3_e2e: null) makes and seals a run without it.
QWEN3_E2E = ["qwen3_e2e"] if PLAN.get("qwen3_e2e") else []
if QWEN3_E2E and config["measure"]:
    import importlib.util

    if importlib.util.find_spec("transformers") is None:  # fail in the dry run, not inside the GPU job
        raise ValueError("plan.qwen3_e2e needs Hugging Face transformers in the Python that runs Snakemake: "
                         "pip install -e '.[hf]' (or a plan without the qwen3_e2e section)")
RUN_BENCHMARKS = [f"{STAGING}/{{run}}/{BENCH}/{step}.tsv" for step in
                  ["gpu_check", "plan", "theory", "verify_gpu", "compile", "timer_check", "profile", "ceilings", *QWEN3_E2E]] + [
                  f"{STAGING}/{{run}}/{BENCH}/bench/{s}.tsv" for s in bench_plan.SETS]
BEFORE_TIMING = [f"{STAGING}/{{run}}/verify/correctness.csv", f"{STAGING}/{{run}}/compile/compiled.csv"]
PLAN_FILE = f"{STAGING}/{{run}}/plan.yaml"
GPU_CHECK = f"{STAGING}/{{run}}/gpu.json"  # the GPU detected, checked against config gpu: every GPU step waits for it


localrules:
    plan,


rule gpu_check:
    """The first GPU step: the GPU(s) detected here (torch.cuda.get_device_name, else nvidia-smi), slugged by
    pipeline.gpu_env.gpu_slug, must be config gpu (`make measure GPU=...`), the folder data/<gpu>/ the run goes to;
    another GPU is refused before anything is measured: compile and verify_gpu, which every timing waits for, wait
    for it, and so does the plan, which it tells the GPU's compute capability. Written into the run (gpu.json),
    sealed with it."""
    output:
        GPU_CHECK,
    log:
        "logs/gpu_check/{run}.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/gpu_check.tsv"
    resources:
        gpu=1,
        **job_memory.resources("gpu_check"),  # mem_mb: its committed peak, with a margin
    params:
        py=PY,
        gpu=GPU,
    shell:
        "{params.py} -m pipeline.gpu_pin -- {params.py} -m pipeline.gpu_env check {params.gpu} {output} > {log} 2>&1"


rule plan:
    """The measurement plan as this run sees it (config/config.yaml and any --config override), adapted to the GPU
    gpu_check detected (the variants its compute capability cannot run, the Gluon stages off Hopper, left out and
    recorded in the plan's `arch`), written into the run: the GPU steps read it from there, and it is sealed with the
    data it produced."""
    input:
        gpu=GPU_CHECK,
    output:
        PLAN_FILE,
    log:
        "logs/plan/{run}.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/plan.tsv"
    script:
        "../scripts/measure/write_plan.py"


rule compile:
    """Compile every Triton entry of the plan (all sets and the profiled entries) into Triton's cache."""
    input:
        KERNEL_SOURCES,
        LIBRARY,
        GPU_CHECK,
        plan=PLAN_FILE,
    output:
        f"{STAGING}/{{run}}/compile/compiled.csv",
    log:
        f"{STAGING}/{{run}}/compile/compile.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/compile.tsv"
    threads: 8
    resources:
        gpu=1,
        **job_memory.resources("compile"),  # mem_mb: its committed peak, with a margin
    params:
        py=PY,
    shell:
        "{params.py} -m pipeline.gpu_pin -- {params.py} workflow/scripts/measure/bench.py --compile-only "
        "--config {input.plan} --workers {threads} --out $(dirname {output}) > {log} 2>&1"


rule bench:
    """Time one set of the plan (interleaved repeats, each output checked first); resumes if interrupted."""
    input:
        KERNEL_SOURCES,
        LIBRARY,
        BEFORE_TIMING,
        plan=PLAN_FILE,
    output:
        f"{STAGING}/{{run}}/bench-{{set}}/timings.csv",
    log:
        f"{STAGING}/{{run}}/bench-{{set}}/bench.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/bench/{{set}}.tsv"
    threads: 8
    resources:
        gpu=1,
        **job_memory.resources("bench"),  # mem_mb: its committed peak, with a margin
    params:
        py=PY,
    shell:
        "{params.py} -m pipeline.gpu_pin -- {params.py} workflow/scripts/measure/bench.py --sets {wildcards.set} "
        "--config {input.plan} "
        "--workers {threads} --out $(dirname {output}) > {log} 2>&1"


rule qwen3_e2e:
    """Qwen3 end to end in Hugging Face transformers' own model code (published layouts, random bf16 weights): the
    prefill with our stage against SDPA at each batch size and N of plan.qwen3_e2e, the logits checked first, timed
    eagerly and from CUDA graphs, and attention alone on layer 0's q, k, v; progress in its log. Killed, it resumes
    after its finished points when run again (qwen3_e2e.py's partial files, refused under another origin)."""
    input:
        KERNEL_SOURCES,
        LIBRARY,
        BEFORE_TIMING,
        plan=PLAN_FILE,
    output:
        csv=f"{STAGING}/{{run}}/qwen3_e2e/qwen3_e2e.csv",
        samples=f"{STAGING}/{{run}}/qwen3_e2e/samples.csv",
        env=f"{STAGING}/{{run}}/qwen3_e2e/env.json",
    log:
        f"{STAGING}/{{run}}/qwen3_e2e/qwen3_e2e.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/qwen3_e2e.tsv"
    resources:
        gpu=1,
        **job_memory.resources("qwen3_e2e"),  # mem_mb: its committed peak, with a margin
    params:
        py=PY,
    shell:
        "{params.py} -m pipeline.gpu_pin -- {params.py} workflow/scripts/measure/qwen3_e2e.py "
        "--config {input.plan} --out $(dirname {output.csv}) > {log} 2>&1"


rule profile:
    """Nsight Compute (clocks as found) on the profiled entries: the full metric set, and the duration alone over
    several launches for the cross-check with the kernel timer."""
    input:
        KERNEL_SOURCES,
        LIBRARY,
        BEFORE_TIMING,
        plan=PLAN_FILE,
    output:
        csv=f"{STAGING}/{{run}}/profile/ncu.csv",
        report=f"{STAGING}/{{run}}/profile/profile.ncu-rep.gz",
        duration=f"{STAGING}/{{run}}/profile/ncu_duration.csv",
        premise=f"{STAGING}/{{run}}/profile/ncu_premise.csv",
        large_n=f"{STAGING}/{{run}}/profile/ncu_large_n.csv",
    log:
        f"{STAGING}/{{run}}/profile/profile.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/profile.tsv"
    resources:
        gpu=1,
        **job_memory.resources("profile"),  # mem_mb: its committed peak, with a margin
    params:
        py=PY,
    shell:
        "{params.py} -m pipeline.gpu_pin -- {params.py} workflow/scripts/measure/profile.py "
        "--config {input.plan} --out $(dirname {output.csv}) > {log} 2>&1"


rule timer_check:
    """The kernel timer against a host sleep before each launch: the kernel time must not move, events' does."""
    input:
        KERNEL_SOURCES,
        LIBRARY,
        BEFORE_TIMING,
        plan=PLAN_FILE,
    output:
        f"{STAGING}/{{run}}/timer_check/timer_check.csv",
    log:
        f"{STAGING}/{{run}}/timer_check/timer_check.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/timer_check.tsv"
    resources:
        gpu=1,
        **job_memory.resources("timer_check"),  # mem_mb: its committed peak, with a margin
    params:
        py=PY,
    shell:
        "{params.py} -m pipeline.gpu_pin -- {params.py} workflow/scripts/measure/timer_check.py "
        "--config {input.plan} --out $(dirname {output}) > {log} 2>&1"


rule ceilings:
    """The measured matrix-product rate and copy bandwidth of the GPU: the roofs of the figures."""
    input:
        KERNEL_SOURCES,
        LIBRARY,
        BEFORE_TIMING,
    output:
        f"{STAGING}/{{run}}/ceilings/ceilings.csv",
    log:
        f"{STAGING}/{{run}}/ceilings/ceilings.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/ceilings.tsv"
    resources:
        gpu=1,
        **job_memory.resources("ceilings"),  # mem_mb: its committed peak, with a margin
    params:
        py=PY,
    shell:
        "{params.py} -m pipeline.gpu_pin -- {params.py} workflow/scripts/measure/ceilings.py "
        "--out $(dirname {output}) > {log} 2>&1"


rule theory:
    """The traffic and FLOPs each Triton entry requests, from its loop structure (the article's T1, T2)."""
    input:
        KERNEL_SOURCES,
        LIBRARY,
        plan=PLAN_FILE,
    output:
        f"{STAGING}/{{run}}/theory.csv",
    log:
        "logs/theory/{run}.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/theory.tsv"
    params:
        py=PY,
    shell:
        "{params.py} workflow/scripts/measure/theory_table.py --config {input.plan} --out {output} > {log} 2>&1"


rule seal_run:
    """Checksums of everything the run measured, its steps' benchmark files included, written in the staging folder,
    which then moves into data/ in one rename: a run folder appears in data/ only sealed. The seal is then recorded
    in the manifest (data/SEALS.csv: not an output, which Snakemake would delete first; commit it with the run).
    Verified, against the manifest, whenever the data is read. The seal's own benchmark file is written after the
    run is sealed, so it stays in benchmarks/."""
    input:
        LIBRARY,
        expand(f"{STAGING}/{{{{run}}}}/bench-{{set}}/timings.csv", set=bench_plan.SETS),
        f"{STAGING}/{{run}}/profile/ncu.csv",
        f"{STAGING}/{{run}}/profile/ncu_duration.csv",
        f"{STAGING}/{{run}}/profile/ncu_premise.csv",
        f"{STAGING}/{{run}}/profile/ncu_large_n.csv",
        f"{STAGING}/{{run}}/timer_check/timer_check.csv",
        f"{STAGING}/{{run}}/compile/compiled.csv",
        f"{STAGING}/{{run}}/verify/correctness.csv",
        f"{STAGING}/{{run}}/ceilings/ceilings.csv",
        f"{STAGING}/{{run}}/theory.csv",
        [f"{STAGING}/{{run}}/qwen3_e2e/qwen3_e2e.csv"] if QWEN3_E2E else [],
        RUN_BENCHMARKS,
    output:
        f"{DATA}/{{run}}/SHA256SUMS",
    log:
        "logs/seal/{run}.log",
    benchmark:
        f"{BENCH}/seal_run/{{run}}.tsv"
    params:
        py=PY,
        staging=lambda wc: f"{STAGING}/{wc.run}",
        manifest=SEALS,
    shell:
        "{params.py} -m pipeline.seal publish {params.staging} $(dirname {output}) {params.manifest} > {log} 2>&1"
