# Sourced by the probes' scripts (cap_clock.sh, stall_source.sh): what a probe folder records of where it ran.
#   probe_start DIR   a fresh DIR holding the tree's commit (PROJECT_COMMIT, required: the script stops without it),
#                     this file, the kernels' SHA-256, the environment (pipeline.gpu_env.collect) and nvidia-smi's
#                     first line
#   gpu_line DIR      one more nvidia-smi line (the GPU's clock, power and temperature at the end)
SMI_QUERY=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu
probe_start() {
  : "${PROJECT_COMMIT:?set PROJECT_COMMIT to the commit of the tree}"
  rm -rf "$1"; mkdir -p "$1"
  echo "$PROJECT_COMMIT" > "$1/commit.txt"
  cp "${BASH_SOURCE[0]}" "$1/"      # this file, beside the script's own copy, as it ran
  sha256sum kernels/*.py > "$1/kernel_sha256.txt"
  python3 -c "import json, pipeline.gpu_env as g; json.dump(g.collect(), open('$1/env.json', 'w'), indent=1, default=str)"
  nvidia-smi --query-gpu=$SMI_QUERY --format=csv > "$1/nvidia-smi.csv"
}
gpu_line() { nvidia-smi --query-gpu=$SMI_QUERY --format=csv >> "$1/nvidia-smi.csv"; }
