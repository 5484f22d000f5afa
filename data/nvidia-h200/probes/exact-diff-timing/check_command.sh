#!/bin/bash
# exact-diff-timing: issue 22's exact exponent ((s - m) * scale, no clamp, no lowering) on one H200, at commit $PROJECT_COMMIT
# (data/nvidia-h200 left out):
# the timing part of exact-diff-check (whose check_stages.py processes failed: jsonschema, which plan.load_config
# now needs, is not on the device; installed here from the carried wheels): on a quiet GPU, v13, v29 and cuDNN timed by check_stages.py at the headline layout, N = 1024 and 16384,
#    float16, A B A B A B: A with the sources of the lowered maximum and the clamp (commit 3cffc00), B with the
#    commit's.
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 TRITON_INTERPRET=0 PROJECT_COMMIT
pip install -q --no-index --find-links .whl jsonschema > /dev/null 2>&1 || echo "jsonschema install failed"; python3 -c "import jsonschema; print('jsonschema', jsonschema.__version__)"
t0=$(date +%s)
P=$OUT/exact-diff-timing
mkdir -p $P
cp .whl/exact-diff-timing.sh $P/check_command.sh
echo "$PROJECT_COMMIT" > $P/commit.txt; sha256sum kernels/*.py > $P/kernel_sha256.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi.csv; cat $P/nvidia-smi.csv
cp kernels/flash_fwd.py /tmp/new_flash_fwd.py; cp kernels/gluon_fwd.py /tmp/new_gluon_fwd.py
for i in 1 2 3; do
  for v in A B; do
    [ $(( 300 - ($(date +%s) - t0) )) -gt 45 ] || { echo "no time for $v$i"; continue; }
    if [ $v = A ]; then cp .whl/old_flash_fwd.py kernels/flash_fwd.py; cp .whl/old_gluon_fwd.py kernels/gluon_fwd.py
    else cp /tmp/new_flash_fwd.py kernels/flash_fwd.py; cp /tmp/new_gluon_fwd.py kernels/gluon_fwd.py; fi
    sha256sum kernels/flash_fwd.py kernels/gluon_fwd.py > $P/timing-$v$i.sha256
    timeout -s INT 80 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v13 v29 \
      --N 1024 16384 --dtypes float16 --out $P/timing-$v$i.csv > $P/timing-$v$i.log 2>&1
    echo "timing $v$i rc=$? after $(( $(date +%s) - t0 )) s"
    python3 -c "
import csv
for r in csv.DictReader(open('$P/timing-$v$i.csv')): print('$v$i', r['variant'], r['N'], r['status'], r['time_us'], r['n_samples'], r['clocks.sm'], r['power.draw'])"
  done
done
cp /tmp/new_flash_fwd.py kernels/flash_fwd.py; cp /tmp/new_gluon_fwd.py kernels/gluon_fwd.py
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi-after.csv
tar czf $OUT/exact-diff-timing.tar.gz -C $OUT exact-diff-timing && ls -la $OUT/exact-diff-timing.tar.gz
