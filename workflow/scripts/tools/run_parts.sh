#!/bin/bash
# A lite GPU run in parts, one command each, for a machine lent a command at a time (at most 10 minutes each) that a
# later command may not find again. Part 1: the verify grid, compile, theory, the host-sleep check, the ceilings and
# the headline, tuning and tile benches; part 2: Nsight's profile, the qwen3, bf16 and ablation benches, Qwen3 end to
# end; part 3: the N sweep and the seal. Each part's targets include the earlier parts' (a part cut by its limit is
# finished by the next), and each part ends by packing the run's staging folder and Snakemake's metadata into
# $OUT/staging-$RUN.tar.gz. Where a part finds no staging folder (a fresh machine) and that archive, from the same
# commit, lies in $WHEELS, it unpacks it and marks its files newer than the tree, so that Snakemake resumes there
# instead of measuring again; the bench's partial files refuse any other origin themselves. A run too long for one
# lease (run-36 on an H100): trim_staging.py cuts a lease's archive to the steps that do not depend on the card
# (verify, compile, plan, theory, the GPU check), and a later lease at the same commit resumes from it and times
# every set, the profile, the timer check and the ceilings on its one GPU.
#
#   PROJECT_COMMIT=<40-hex sha> OUT=<folder> WHEELS=.whl bash workflow/scripts/tools/run_parts.sh run-25 1
#
# STEPS (optional, with any part): the steps whose outputs this command makes, beside part 1's, named as their
# staging folders (bench-n_sweep profile qwen3_e2e ...), so that a lease's commands can take the run's long steps in
# the order that matters (run-35: the N sweep, which the goal's tally reads, before Nsight's profile).
# CONFIGS (optional): the config files, merged in order; config/config.yaml config/lite.yaml unless set (the goal's
# run adds config/goal.yaml: the Triton leader and the Gluon stages only, a run that fits a short lease).
# GPU (optional): the data folder's GPU; by default the slug of the GPU nvidia-smi names here (pipeline.gpu_env's
# gpu_slug), passed to Snakemake as config gpu, so that a run on a lent machine of another kind is filed as that GPU's.
#
# $WHEELS holds the wheels the machine lacks (Snakemake's and the lock's others: workflow/scripts/tools/device_wheels.sh makes
# them), installed once into $SITE (/tmp/site).
# GPU_TESTS (optional): pytest files run on the GPU after the part's Snakemake (TRITON_INTERPRET=0, within the
# command's 600 s: killed at GPU_TESTS_END s after the start, 590 unless set), their logs and the kernels' source
# hashes written to $OUT/gpu-tests-$RUN/ (a probe folder: README and seal are added where it is committed).
set -u
RUN=$1 PART=$2
WHEELS=${WHEELS:-.whl} SITE=${SITE:-/tmp/site} LIMIT=${LIMIT:-555}
CONFIGS=${CONFIGS:-config/config.yaml config/lite.yaml}
export PYTHONUNBUFFERED=1
: "${PROJECT_COMMIT:?set PROJECT_COMMIT to the commit of the tree}" "${OUT:?set OUT to the folder the results go to}"
# a whole commit, never a prefix typed by hand (run-19's and run-29's were mistyped: data/COMMIT_CORRECTIONS.csv)
if ! [[ $PROJECT_COMMIT =~ ^[0-9a-f]{40}$ ]]; then
  echo "PROJECT_COMMIT=$PROJECT_COMMIT: give the whole commit, 40 hex digits (git rev-parse HEAD), not a prefix" >&2
  exit 2
fi
t0=$(date +%s)
if [ ! -f "$SITE/.done" ]; then
  python3 -m pip install -q --no-deps --no-index --target "$SITE" "$WHEELS"/*.whl && touch "$SITE/.done" || exit 9
fi
export PYTHONPATH=$SITE:$PWD
GPU=${GPU:-$(PYTHONPATH=$(dirname "$0")/../../.. python3 -c "import subprocess, pipeline.gpu_env as g; print(g.gpu_slug(subprocess.run(['nvidia-smi', '--query-gpu=name', '--format=csv,noheader'], capture_output=True, text=True, check=True).stdout.splitlines()[0]))")} || exit 7
echo "GPU: $GPU"
S=results/staging/$GPU/$RUN
if [ ! -d "$S" ] && [ -f "$WHEELS/staging-$RUN.tar.gz" ]; then
  tar xzf "$WHEELS/staging-$RUN.tar.gz"
  if [ "$(cat "$S.commit" 2>/dev/null)" != "$PROJECT_COMMIT" ]; then
    echo "$WHEELS/staging-$RUN.tar.gz is from commit $(cat "$S.commit" 2>/dev/null), not $PROJECT_COMMIT: not resumed" >&2
    rm -rf "$S" "$S.commit"; exit 8
  fi
  find "$S" .snakemake/metadata -type f -exec touch {} +
  echo "resumed $RUN from $WHEELS/staging-$RUN.tar.gz: $(find "$S" -name '*.csv' | wc -l) CSV files"
fi
T1="$S/verify/correctness.csv $S/compile/compiled.csv $S/theory.csv $S/timer_check/timer_check.csv $S/ceilings/ceilings.csv $S/bench-headline/timings.csv $S/bench-tuning/timings.csv $S/bench-tiles/timings.csv"
T2="$T1 $S/profile/ncu.csv $S/bench-qwen3/timings.csv $S/bench-bf16/timings.csv $S/bench-ablation/timings.csv $S/qwen3_e2e/qwen3_e2e.csv"
case $PART in
  1) T=$T1;;
  2) T=$T2;;
  3) T="$T2 data/$GPU/$RUN/SHA256SUMS";;
  *) echo "part $PART: expected 1, 2 or 3" >&2; exit 2;;
esac
for step in ${STEPS:-}; do
  case $step in
    bench-*) T="$T $S/$step/timings.csv";;
    profile) T="$T $S/profile/ncu.csv";;
    qwen3_e2e) T="$T $S/qwen3_e2e/qwen3_e2e.csv";;
    *) echo "STEPS: $step is not a step of a run (bench-<set>, profile, qwen3_e2e)" >&2; exit 2;;
  esac
done
for f in $CONFIGS; do
  [ -f "$f" ] || { echo "CONFIGS: $f is not a file here; name config files of the tree (config/goal.yaml)" >&2; exit 2; }
done
timeout -s INT "$LIMIT" python3 -m snakemake --profile profiles/gpu --resources gpu=1 --scheduler greedy \
  --configfile $CONFIGS --config measure=True run="$RUN" gpu="$GPU" 'crosscheck_waivers=[]' -- $T \
  > "$OUT/snakemake-part$PART.log" 2>&1
rc=$?
echo "part $PART rc=$rc after $(( $(date +%s) - t0 )) s"
grep -E "^Finished|^Error|Nothing to be done" "$OUT/snakemake-part$PART.log" | tail -20
tail -6 "$OUT/snakemake-part$PART.log"
if [ -d "$S" ]; then
  echo "$PROJECT_COMMIT" > "$S.commit"
  tar czf "$OUT/staging-$RUN.tar.gz" "$S" "$S.commit" .snakemake/metadata && ls -la "$OUT/staging-$RUN.tar.gz"
fi
tar czf "$OUT/logs-part$PART.tar.gz" .snakemake/log/*.log $(ls "$S"/*/*.log 2>/dev/null) 2>/dev/null
if [ -n "${GPU_TESTS:-}" ]; then
  G="$OUT/gpu-tests-$RUN"; mkdir -p "$G"
  sha256sum kernels/*.py > "$G/kernel_sha256.txt"; echo "$PROJECT_COMMIT" > "$G/commit.txt"
  for f in $GPU_TESTS; do
    left=$(( ${GPU_TESTS_END:-590} - ($(date +%s) - t0) ))
    [ "$left" -gt 20 ] || { echo "no time left for $f" | tee -a "$G/skipped.txt"; continue; }
    log="$G/pytest-$(basename "$f" .py).log"
    TRITON_INTERPRET=0 timeout -s KILL "$left" python3 -m pytest -q -p no:cacheprovider "$f" > "$log" 2>&1
    echo "$f rc=$? ($left s allowed)"; tail -2 "$log"
  done
fi
if [ "$PART" = 3 ] && [ -f "data/$GPU/$RUN/SHA256SUMS" ]; then
  tar czf "$OUT/$RUN.tar.gz" "data/$GPU/$RUN" && ls -la "$OUT/$RUN.tar.gz"
fi
exit $rc
