#!/bin/bash
# v28-check: run-24 could not finish in this session's device time (its verify passed, 3402 cases, 0 wrong, but the
# run was cut in its timer check). This probe verifies the Gluon stages v19-v28 at the committed source (verify.py's
# GPU grid of those stages) and times v27, v28 and cuDNN at N = 512 and 1024 (check_stages.py, the bench's timer).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s)
P=$OUT/v28-check
mkdir -p $P
cp .whl/check28.sh $P/check_command.sh
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi.csv
cat $P/nvidia-smi.csv
timeout -s INT 300 python3 -m pipeline.gpu_pin -- python3 workflow/scripts/verify/verify.py --workers 16 \
  --stages v19 v20 v21 v22 v23 v24 v25 v26 v27 v28 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -3 $P/verify.log
timeout -s INT 170 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v27 v28 \
  --N 512 1024 --dtypes float16 bfloat16 --out $P/timing.csv > $P/timing.log 2>&1
echo "timing rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os
for r in csv.DictReader(open(os.environ['OUT'] + '/v28-check/timing.csv')):
    print(r['key'][:62], r['status'], r['time_us'], r['n_samples'], r['clocks.sm'], r['power.draw'], r['note'][:50])
P
tar czf $OUT/v28-check.tar.gz -C $OUT v28-check
echo "done after $(( $(date +%s) - t0 )) s"
