#!/bin/bash
# v37-check (session 27): v37 (lane_max) before any run. In order, each within what the call's limit leaves: the
# guard tests (large scores, NaN/Inf, near ties) of v35 and v37; the verify grid of v35 and v37 at this source; an
# A/B timing of cuDNN, v35 and v37 in alternating rounds (ab_probe.py, with each sample's time and SM clock); the
# operator's GPU tests.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s); left() { echo $(( 575 - ($(date +%s) - t0) )); }
P=$OUT/v37-check; rm -rf $P; mkdir -p $P
cp .whl/v37_check.sh $P/check_command.sh; cp .whl/ab_probe.py $P/
sha256sum kernels/*.py > $P/kernel_sha256.txt; cp .whl/commit.txt $P/commit.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$P/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
timeout -s KILL 120 python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k "v35 or v37" > $P/gpu_tests_guards.log 2>&1
echo "guards rc=$? after $(( $(date +%s) - t0 )) s"; tail -1 $P/gpu_tests_guards.log
timeout -s INT 150 python3 workflow/scripts/verify/verify.py --workers 8 --stages v35 v37 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -2 $P/verify.log
L=$(left); [ $L -gt 60 ] && { timeout -s KILL $(( L - 50 )) python3 .whl/ab_probe.py $P/ab.csv --entries torch-cudnn v35 v37 --N 1024 4096 8192 16384 --rounds 4 --samples 24 > $P/ab.log 2>&1; echo "ab rc=$? after $(( $(date +%s) - t0 )) s"; tail -8 $P/ab.log; }
L=$(left); [ $L -gt 40 ] && { timeout -s KILL $(( L - 10 )) python3 -m pytest -q -p no:cacheprovider tests/test_op_gpu.py > $P/gpu_tests_op.log 2>&1; echo "op rc=$?"; tail -1 $P/gpu_tests_op.log; }
echo "done after $(( $(date +%s) - t0 )) s"
tar czf $OUT/v37-check.tar.gz -C $OUT v37-check && rm -rf $P; ls -la $OUT
