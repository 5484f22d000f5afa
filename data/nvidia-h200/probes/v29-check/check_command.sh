#!/bin/bash
# v29-check: a first check of v29 (lean_barriers) on the GPU before its run: verify.py's GPU grid of v28 and v29 at
# the committed source, then v28, v29 and cuDNN timed by check_stages.py (the bench's timer) at the headline layout.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s)
P=$OUT/v29-check
mkdir -p $P
cp .whl/check29.sh $P/check_command.sh
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi.csv
cat $P/nvidia-smi.csv
timeout -s INT 200 python3 -m pipeline.gpu_pin -- python3 workflow/scripts/verify/verify.py --workers 6 \
  --stages v28 v29 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -4 $P/verify.log
timeout -s INT 150 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v28 v29 \
  --N 512 1024 8192 16384 --dtypes float16 --out $P/timing.csv > $P/timing.log 2>&1
echo "timing rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os
for r in csv.DictReader(open(os.environ['OUT'] + '/v29-check/timing.csv')):
    print(r['key'][:62], r['status'], r['time_us'], r['n_samples'], r['clocks.sm'], r['power.draw'], r['note'][:50])
P
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi-after.csv
echo "done after $(( $(date +%s) - t0 )) s"
