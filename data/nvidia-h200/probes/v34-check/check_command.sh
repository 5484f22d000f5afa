#!/bin/bash
# v34-check: v34 (short_reductions) before any run: the guard tests (large scores) of v33-v34, the Gluon stages'
# verify grid (v19-v34) at this source, the operator's GPU tests, then an A/B timing of v33, v34 and cuDNN
# (ab_probe.py), each within what the call's limit leaves.
SITE=/tmp/site; [ -f $SITE/.done ] || { python3 -m pip install -q --no-deps --no-index --target $SITE .whl/*.whl && touch $SITE/.done; }
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s); left() { echo $(( 575 - ($(date +%s) - t0) )); }
P=$OUT/v34-check; rm -rf $P; mkdir -p $P
cp .whl/v34_check.sh $P/check_command.sh; cp .whl/ab_probe.py $P/
sha256sum kernels/*.py > $P/kernel_sha256.txt; echo "$PROJECT_COMMIT" > $P/commit.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$P/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
timeout -s KILL 120 python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k "v33 or v34" > $P/gpu_tests_guards.log 2>&1
echo "guards rc=$? after $(( $(date +%s) - t0 )) s"; tail -1 $P/gpu_tests_guards.log
timeout -s INT 300 python3 workflow/scripts/verify/verify.py --workers 8 \
  --stages v19 v20 v21 v22 v23 v24 v25 v26 v27 v28 v29 v30 v31 v32 v33 v34 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -2 $P/verify.log
L=$(left); [ $L -gt 100 ] && { timeout -s KILL 90 python3 -m pytest -q -p no:cacheprovider tests/test_op_gpu.py > $P/gpu_tests_op.log 2>&1; echo "op rc=$?"; tail -1 $P/gpu_tests_op.log; }
L=$(left); [ $L -gt 30 ] && { timeout -s KILL $(( L - 10 )) python3 .whl/ab_probe.py $P/ab.csv --entries torch-cudnn v33 v34 --N 1024 4096 8192 16384 --rounds 6 --samples 30 > $P/ab.log 2>&1; echo "ab rc=$?"; tail -9 $P/ab.log; }
echo "done after $(( $(date +%s) - t0 )) s"
tar czf $OUT/v34-check.tar.gz -C $OUT v34-check && rm -rf $P
