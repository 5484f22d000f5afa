rule verify_cpu:
    """Every stage against the float64 reference in Triton's interpreter (small float16 shapes)."""
    input:
        KERNEL_SOURCES,
        LIBRARY,
        "workflow/scripts/verify/verify.py",
    output:
        "results/verify/cpu/correctness.csv",
    log:
        "logs/verify/cpu.log",
    benchmark:
        f"{BENCH}/verify_cpu.tsv"
    params:
        py=PY,
        N=" ".join(str(n) for n in config["verify_cpu"]["N"]),
    shell:
        "TRITON_INTERPRET=1 {params.py} workflow/scripts/verify/verify.py --device cpu --N {params.N} "
        "--out results/verify/cpu > {log} 2>&1"


rule verify_gpu:
    """The correctness grid on the GPU: every stage and ablation, fp16 and bf16, long sequences, other tiles."""
    input:
        KERNEL_SOURCES,
        LIBRARY,
        "workflow/scripts/verify/verify.py",
        f"{STAGING}/{{run}}/gpu.json",  # the GPU checked first (rule gpu_check)
    output:
        f"{STAGING}/{{run}}/verify/correctness.csv",
    log:
        f"{STAGING}/{{run}}/verify/verify.log",
    benchmark:
        f"{STAGING}/{{run}}/{BENCH}/verify_gpu.tsv"
    threads: 8
    resources:
        gpu=1,
        **job_memory.resources("verify_gpu"),  # mem_mb: its committed peak, with a margin
    params:
        py=PY,
    shell:
        "{params.py} -m pipeline.gpu_pin -- {params.py} workflow/scripts/verify/verify.py --workers {threads} "
        "--out $(dirname {output}) > {log} 2>&1"
