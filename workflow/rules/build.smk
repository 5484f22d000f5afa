rule build_variants:
    """Compile every stage and ablation variant for one architecture on the CPU: PTX, cubin, SASS, and the
    static report (registers, shared memory, spills, SASS instruction mix, occupancy)."""
    input:
        KERNEL_SOURCES,
    output:
        csv="results/build/sm_{arch}/build.csv",
    log:
        "logs/build/sm_{arch}.log",
    benchmark:
        f"{BENCH}/build_variants/sm_{{arch}}.tsv"
    params:
        py=PY,
        out=lambda wc: f"results/build/sm_{wc.arch}",
        variants=" ".join(config["build"]["variants"]) if isinstance(config["build"]["variants"], list) else "all",
    shell:
        "env -u TRITON_INTERPRET {params.py} -m kernels.build --variants {params.variants} --archs {wildcards.arch} "
        "--out {params.out} > {log} 2>&1"


rule build_all:
    input:
        expand("results/build/sm_{arch}/build.csv", arch=config["build"]["archs"]),
