#!/bin/bash
# clamp-vote: v29 with the clamp behind a warp-uniform vote (branch clamp-vote's kernels/gluon_fwd.py, B) against v29
# at commit ec0cbd0 (A: the clamp on every score; both without the lowered maximum), timed A B A B A B by
# check_stages.py at the headline layout, N = 1024 and 16384, float16, cuDNN in each process as the control. The tree
# is at commit $PROJECT_COMMIT; only kernels/gluon_fwd.py is swapped (v29 is a Gluon stage).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0 PROJECT_COMMIT
t0=$(date +%s)
P=$OUT/clamp-vote
mkdir -p $P
cp .whl/vote-check.sh $P/check_command.sh; echo "$PROJECT_COMMIT" > $P/commit.txt
cp .whl/vote_gluon_fwd.py $P/gluon_fwd_vote.py
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi.csv; cat $P/nvidia-smi.csv
for i in 1 2 3; do
  for v in A B; do
    [ $(( 560 - ($(date +%s) - t0) )) -gt 45 ] || { echo "no time for $v$i"; continue; }
    if [ $v = A ]; then cp .whl/old_gluon_fwd.py kernels/gluon_fwd.py; else cp .whl/vote_gluon_fwd.py kernels/gluon_fwd.py; fi
    sha256sum kernels/gluon_fwd.py > $P/timing-$v$i.sha256
    timeout -s INT 80 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v29 \
      --N 1024 16384 --dtypes float16 --out $P/timing-$v$i.csv > $P/timing-$v$i.log 2>&1
    echo "timing $v$i rc=$? after $(( $(date +%s) - t0 )) s"
    python3 -c "
import csv
for r in csv.DictReader(open('$P/timing-$v$i.csv')): print('$v$i', r['variant'], r['N'], r['status'], r['time_us'], r['n_samples'], r['clocks.sm'], r['power.draw'])"
  done
done
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi-after.csv
tar czf $OUT/clamp-vote.tar.gz -C $OUT clamp-vote && ls -la $OUT/clamp-vote.tar.gz
