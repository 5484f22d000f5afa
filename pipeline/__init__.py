"""What the pipeline's steps share, beside the kernel (kernels/): a step imports `kernels` and `pipeline`, never another
step. Each module has one job:

- plan: the measurement plan, config/config.yaml's sets expanded into entries;
- config_check: what the config's schema cannot check (duplicate keys, numbers that are not finite, pairs of bounds,
  nested --config values, cross-check waivers), checked when the pipeline is parsed;
- keys: entry keys, the only place that formats or parses one;
- selection: which rows of the tidy tables the paper's headline means;
- call: the checked and the timed call of an entry (the only caller of the kernel timer);
- kernel_timer, l2_flush: the GPU's own kernel durations, the L2 flushed before each sample;
- seal: the SHA256SUMS of a run, written once and verified whenever the data is read, against the manifest that
  records every seal (data/SEALS.csv);
- git: what the project's git history witnesses (known commits, the commit of a seal, its files' blobs);
- gpu_env: the GPU, driver, versions, clocks and throttle reasons beside every result;
- gpu_state: the GPU's clock, power, temperature, clock event reasons and energy over each timed sample (NVML);
- settle: the settle step, a long-N entry run until the SM clock stops falling;
- gpu_pin: one GPU of its own per GPU job;
- partial_csv: the partial files an interrupted step resumes from (rows cut short dropped, another origin refused);
- origin: what a partial file was begun under (the commit, each source file's hash, the plan's hash);
- folder_lock: one process at a time in a step's output folder (an exclusive lock held for the step's life);
- nsight: Nsight Compute's reports read with NVIDIA's report interface (run in a process of its own);
- latex: the paper's rounding, signs, escaping, listings, tables and values;
- plotting: the figures' start, style and colours.

Importing the package loads nothing (no torch, Triton or pandas): each module says what it needs.
"""
