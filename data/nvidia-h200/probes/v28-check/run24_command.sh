#!/bin/bash
# run-24 in parts (one device command each): 1 verify, compile, ceilings, theory, timer check, profile;
# 2 the bench sets but n_sweep, and qwen3_e2e; 3 n_sweep and the seal, then the run and the logs to $OUT.
PART=$1
RUN=run-24
export PYTHONUNBUFFERED=1 LIMIT=${LIMIT:-560}
t0=$(date +%s)
if [ ! -f /tmp/site/.done ]; then
  python3 -m pip install -q --no-deps --no-index --target /tmp/site .whl/*.whl && touch /tmp/site/.done || exit 9
fi
export PYTHONPATH=/tmp/site:$PWD
S=results/staging/nvidia-h200/$RUN
case $PART in
  0) TRITON_INTERPRET=0 timeout -s KILL 120 python3 .whl/quick28.py; echo "quick rc=$?"
     mkdir -p /tmp/gt
     TRITON_INTERPRET=0 timeout -s KILL 150 python3 -m pytest -q -p no:cacheprovider tests/test_op_gpu.py > /tmp/gt/pytest-op.log 2>&1
     echo "op tests rc=$?"; tail -3 /tmp/gt/pytest-op.log; cp /tmp/gt/pytest-op.log $OUT/; exit 0;;
  1) T="$S/verify/correctness.csv $S/compile/compiled.csv $S/ceilings/ceilings.csv $S/theory.csv $S/timer_check/timer_check.csv $S/profile/ncu.csv";;
  2) T="$S/bench-headline/timings.csv $S/bench-ablation/timings.csv $S/bench-bf16/timings.csv $S/bench-qwen3/timings.csv $S/bench-tiles/timings.csv $S/bench-tuning/timings.csv $S/qwen3_e2e/qwen3_e2e.csv";;
  3) T="data/nvidia-h200/$RUN/SHA256SUMS";;
esac
timeout -s INT $LIMIT python3 -m snakemake --profile profiles/gpu --resources gpu=1 --scheduler greedy \
  --configfile config/config.yaml config/lite.yaml --config measure=True run=$RUN 'crosscheck_waivers=[]' -- $T \
  > $OUT/snakemake-part$PART.log 2>&1
rc=$?
echo "part $PART rc=$rc after $(( $(date +%s) - t0 )) s"
tail -25 $OUT/snakemake-part$PART.log
tar czf $OUT/logs-part$PART.tar.gz .snakemake/log/*.log $(ls $S/*/*.log 2>/dev/null) 2>/dev/null
if [ "$PART" = 2 ]; then
  mkdir -p /tmp/gt && cp .whl/run24.sh /tmp/gt/run_command.sh
  sha256sum kernels/*.py > /tmp/gt/kernel_sha256.txt
  TRITON_INTERPRET=0 timeout -s KILL 60 python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k 'v27 or v28' > /tmp/gt/pytest-guards.log 2>&1
  echo "guards tests rc=$?"; tail -4 /tmp/gt/pytest-guards.log
  tar czf $OUT/gpu-tests.tar.gz -C /tmp gt
fi
if [ "$PART" = 3 ] && [ -f data/nvidia-h200/$RUN/SHA256SUMS ]; then
  tar czf $OUT/$RUN.tar.gz data/nvidia-h200/$RUN && ls -la $OUT/$RUN.tar.gz
else
  for f in $S/*/*.log; do echo "== $f"; tail -3 $f; done 2>/dev/null | tail -40
fi
