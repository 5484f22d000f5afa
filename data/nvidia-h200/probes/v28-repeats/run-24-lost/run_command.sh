#!/bin/bash
# run-24 in three parts (one device command each), each part's targets including the earlier parts' (a part cut by
# its limit is finished by the next): 1 verify, compile, theory, timer check, ceilings, the headline, tuning and
# tile benches; 2 Nsight's profile, the qwen3, bf16 and ablation benches, qwen3_e2e; 3 n_sweep and the seal, then
# the run and the logs to $OUT.
PART=$1
RUN=run-24
export PYTHONUNBUFFERED=1 LIMIT=${LIMIT:-555}
t0=$(date +%s)
if [ ! -f /tmp/site/.done ]; then
  python3 -m pip install -q --no-deps --no-index --target /tmp/site .whl/*.whl && touch /tmp/site/.done || exit 9
fi
export PYTHONPATH=/tmp/site:$PWD
S=results/staging/nvidia-h200/$RUN
T1="$S/verify/correctness.csv $S/compile/compiled.csv $S/theory.csv $S/timer_check/timer_check.csv $S/ceilings/ceilings.csv $S/bench-headline/timings.csv $S/bench-tuning/timings.csv $S/bench-tiles/timings.csv"
T2="$T1 $S/profile/ncu.csv $S/bench-qwen3/timings.csv $S/bench-bf16/timings.csv $S/bench-ablation/timings.csv $S/qwen3_e2e/qwen3_e2e.csv"
case $PART in
  1) T=$T1;;
  2) T=$T2;;
  3) T="$T2 data/nvidia-h200/$RUN/SHA256SUMS";;
esac
timeout -s INT $LIMIT python3 -m snakemake --profile profiles/gpu --resources gpu=1 --scheduler greedy \
  --configfile config/config.yaml config/lite.yaml --config measure=True run=$RUN 'crosscheck_waivers=[]' -- $T \
  > $OUT/snakemake-part$PART.log 2>&1
rc=$?
echo "part $PART rc=$rc after $(( $(date +%s) - t0 )) s"
grep -E "^Finished|^Error|Nothing to be done" $OUT/snakemake-part$PART.log | tail -20
tail -8 $OUT/snakemake-part$PART.log
tar czf $OUT/logs-part$PART.tar.gz .snakemake/log/*.log $(ls $S/*/*.log 2>/dev/null) 2>/dev/null
if [ "$PART" = 3 ]; then
  mkdir -p /tmp/gt && cp .whl/run24.sh /tmp/gt/run_command.sh
  sha256sum kernels/*.py > /tmp/gt/kernel_sha256.txt
  if [ -f data/nvidia-h200/$RUN/SHA256SUMS ]; then
    tar czf $OUT/$RUN.tar.gz data/nvidia-h200/$RUN && ls -la $OUT/$RUN.tar.gz
  fi
  left=$(( 590 - ($(date +%s) - t0) ))
  if [ $left -gt 40 ]; then
    TRITON_INTERPRET=0 timeout -s KILL $(( left - 15 )) python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k 'v28' > /tmp/gt/pytest-guards.log 2>&1
    echo "guards tests rc=$?"; tail -4 /tmp/gt/pytest-guards.log
  fi
  tar czf $OUT/gpu-tests.tar.gz -C /tmp gt
else
  for f in $S/*/*.log; do echo "== $f"; tail -2 $f; done 2>/dev/null | tail -30
fi
