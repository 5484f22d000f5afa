#!/bin/bash
# exact-regs-timing: v2, v3, v4 and cuDNN at the headline (N = 1024, float16) timed by check_stages.py on one H200,
# A B A B: A with run-28's kernels/flash_fwd.py (commit e56b76c: v3 and v4 at 130 registers, 3 programs per SM),
# B with the commit's (the exact exponent: 128 registers, 4 programs per SM); the prediction is
# data/predictions/probes.csv, probe exact_regs. At commit $PROJECT_COMMIT, data/nvidia-h200 left out.
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 TRITON_INTERPRET=0 PROJECT_COMMIT
python3 -m pip install -q --no-deps --no-index --target /tmp/site .whl/jsonschema-*.whl .whl/jsonschema_specifications-*.whl .whl/referencing-*.whl .whl/rpds_py-*.whl > /dev/null 2>&1 || echo "install failed"
t0=$(date +%s)
P=$OUT/exact-regs-timing
mkdir -p $P
cp .whl/exact-regs-timing.sh $P/check_command.sh
echo "$PROJECT_COMMIT" > $P/commit.txt; sha256sum kernels/*.py > $P/kernel_sha256.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi.csv; cat $P/nvidia-smi.csv
cp kernels/flash_fwd.py /tmp/new_flash_fwd.py
for i in 1 2; do
  for v in A B; do
    [ $(( ${BUDGET:-200} - ($(date +%s) - t0) )) -gt 35 ] || { echo "no time for $v$i"; continue; }
    if [ $v = A ]; then cp .whl/old_flash_fwd.py kernels/flash_fwd.py; else cp /tmp/new_flash_fwd.py kernels/flash_fwd.py; fi
    sha256sum kernels/flash_fwd.py > $P/timing-$v$i.sha256
    timeout -s INT 60 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v2 v3 v4 \
      --N 1024 --dtypes float16 --out $P/timing-$v$i.csv > $P/timing-$v$i.log 2>&1
    echo "timing $v$i rc=$? after $(( $(date +%s) - t0 )) s"
    python3 -c "
import csv
for r in csv.DictReader(open('$P/timing-$v$i.csv')): print('$v$i', r['variant'], r['status'], r['time_us'], r['n_samples'])" 2>&1 | tail -5
  done
done
cp /tmp/new_flash_fwd.py kernels/flash_fwd.py
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi-after.csv
tar czf $OUT/exact-regs-timing.tar.gz -C $OUT exact-regs-timing && ls -la $OUT/exact-regs-timing.tar.gz
