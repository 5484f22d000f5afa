#!/bin/bash
# Session 16's first device command, at commit $PROJECT_COMMIT (data/nvidia-h200 left out of the transfer):
# 1. guards-clamp: tests/test_guards_gpu.py's large-score cases (issue 22's clamp) at the committed source;
# 2. clamp-vote: v29 at the committed source (A) and with branch clamp-vote's kernels/gluon_fwd.py (B, the clamp behind
#    a warp-uniform vote), timed A B A B by check_stages.py at the headline layout, N = 1024 and 16384, float16, each
#    process also timing cuDNN as the control; then verify.py's GPU grid of v29 and the large-score guard cases of
#    v23 and v29 with B's source.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s)
G=$OUT/guards-clamp P=$OUT/clamp-vote
mkdir -p $G $P
cp .whl/vote-check.sh $P/check_command.sh; cp .whl/gluon_fwd_vote.py $P/gluon_fwd_vote.py
cp kernels/gluon_fwd.py /tmp/gluon_fwd_main.py
echo "$PROJECT_COMMIT" > $G/commit.txt; sha256sum kernels/*.py > $G/kernel_sha256.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi.csv; cat $P/nvidia-smi.csv
timeout -s KILL 230 python3 -m pytest -v -p no:cacheprovider tests/test_guards_gpu.py \
  -k "scores_of_every_size or largest_accepted" > $G/pytest-large-scores.log 2>&1
echo "guards rc=$? after $(( $(date +%s) - t0 )) s"; tail -3 $G/pytest-large-scores.log
for i in 1 2; do
  for v in A B; do
    if [ $v = B ]; then cp .whl/gluon_fwd_vote.py kernels/gluon_fwd.py; else cp /tmp/gluon_fwd_main.py kernels/gluon_fwd.py; fi
    sha256sum kernels/gluon_fwd.py > $P/timing-$v$i.sha256
    timeout -s INT 70 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v29 \
      --N 1024 16384 --dtypes float16 --out $P/timing-$v$i.csv > $P/timing-$v$i.log 2>&1
    echo "timing $v$i rc=$? after $(( $(date +%s) - t0 )) s"
    python3 -c "
import csv,sys
for r in csv.DictReader(open('$P/timing-$v$i.csv')): print('$v$i', r['variant'], r['N'], r['status'], r['time_us'], r['n_samples'], r['clocks.sm'], r['power.draw'])"
  done
done
cp .whl/gluon_fwd_vote.py kernels/gluon_fwd.py
timeout -s INT 110 python3 -m pipeline.gpu_pin -- python3 workflow/scripts/verify/verify.py --workers 6 \
  --stages v29 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -3 $P/verify.log
left=$(( 585 - ($(date +%s) - t0) ))
[ $left -gt 20 ] && timeout -s KILL $left python3 -m pytest -v -p no:cacheprovider tests/test_guards_gpu.py \
  -k "(scores_of_every_size or largest_accepted) and (v29 or v23)" > $P/pytest-large-scores-vote.log 2>&1
echo "vote guards rc=$? after $(( $(date +%s) - t0 )) s"; tail -3 $P/pytest-large-scores-vote.log
cp /tmp/gluon_fwd_main.py kernels/gluon_fwd.py
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv > $P/nvidia-smi-after.csv
