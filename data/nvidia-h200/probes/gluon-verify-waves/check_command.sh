#!/bin/bash
# gluon-verify: the Gluon stages (v19-v32) verified by verify.py's GPU grid at the tree's source (with its short
# sequences in several waves of 64-row programs), then the operator's GPU tests.
SITE=/tmp/site
[ -f $SITE/.done ] || { python3 -m pip install -q --no-deps --no-index --target $SITE .whl/*.whl && touch $SITE/.done; }
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s)
P=$OUT/gluon-verify
rm -rf $P; mkdir -p $P
cp .whl/gluon_verify.sh $P/check_command.sh
sha256sum kernels/*.py > $P/kernel_sha256.txt; echo "$PROJECT_COMMIT" > $P/commit.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
timeout -s INT 400 python3 workflow/scripts/verify/verify.py --workers 8 \
  --stages v19 v20 v21 v22 v23 v24 v25 v26 v27 v28 v29 v30 v31 v32 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -4 $P/verify.log
left=$(( 560 - ($(date +%s) - t0) ))
timeout -s KILL $left python3 -m pytest -q -p no:cacheprovider tests/test_op_gpu.py > $P/gpu_tests_op.log 2>&1
echo "op tests rc=$? after $(( $(date +%s) - t0 )) s"; tail -2 $P/gpu_tests_op.log
echo "done after $(( $(date +%s) - t0 )) s"
tar czf $OUT/gluon-verify.tar.gz -C $OUT gluon-verify && rm -rf $P
