#!/bin/bash
# v31-check: a first check of v30 (paired_cvt) and v31 (rare_rescale) on the GPU before their run: verify.py's GPU
# grid of v30 and v31 at the committed source; exits 1 (and the run's part 1 does not start) unless every case is
# right or refused.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s)
P=$OUT/v31-check
mkdir -p $P
cp .whl/check31.sh $P/check_command.sh
git rev-parse HEAD > $P/commit.txt 2>/dev/null || true
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi.csv
cat $P/nvidia-smi.csv
timeout -s INT 170 python3 -m pipeline.gpu_pin -- python3 workflow/scripts/verify/verify.py --workers 6 \
  --stages v30 v31 --out $P/verify > $P/verify.log 2>&1
rc=$?
echo "verify rc=$rc after $(( $(date +%s) - t0 )) s"; tail -4 $P/verify.log
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi-after.csv
python3 - <<'P'
import csv, os, sys, collections
rows = list(csv.DictReader(open(os.environ['OUT'] + '/v31-check/verify/correctness.csv')))
c = collections.Counter((r['variant'], r['status']) for r in rows)
print(sorted(c.items()))
sys.exit(1 if any(r['status'] not in ('ok', 'refused') for r in rows) or not rows else 0)
P
ok=$?
echo "check done after $(( $(date +%s) - t0 )) s, ok=$ok"
[ $rc -eq 0 ] && [ $ok -eq 0 ]
