#!/bin/bash
# rare-rescale-fix: the Gluon stages verified by verify.py's GPU grid at the fixed source, then the guard tests
# (large scores) of v30, v31 and v32, then the operator's GPU tests, each within what the call's limit leaves.
SITE=/tmp/site; [ -f $SITE/.done ] || { python3 -m pip install -q --no-deps --no-index --target $SITE .whl/*.whl && touch $SITE/.done; }
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s); left() { echo $(( 470 - ($(date +%s) - t0) )); }
P=$OUT/rare-rescale-fix; rm -rf $P; mkdir -p $P
cp .whl/fix_verify.sh $P/check_command.sh
sha256sum kernels/*.py > $P/kernel_sha256.txt; echo "$PROJECT_COMMIT" > $P/commit.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
timeout -s KILL 150 python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k "v30 or v31 or v32" > $P/gpu_tests_guards.log 2>&1
echo "guards rc=$? after $(( $(date +%s) - t0 )) s"; tail -1 $P/gpu_tests_guards.log
timeout -s INT $(( $(left) - 20 )) python3 workflow/scripts/verify/verify.py --workers 8 \
  --stages v19 v20 v21 v22 v23 v24 v25 v26 v27 v28 v29 v30 v31 v32 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -2 $P/verify.log
L=$(left); if [ $L -gt 40 ]; then timeout -s KILL $(( L - 5 )) python3 -m pytest -q -p no:cacheprovider tests/test_op_gpu.py > $P/gpu_tests_op.log 2>&1; echo "op rc=$?"; tail -1 $P/gpu_tests_op.log; fi
echo "done after $(( $(date +%s) - t0 )) s"
tar czf $OUT/rare-rescale-fix.tar.gz -C $OUT rare-rescale-fix && rm -rf $P
