#!/bin/bash
# q-regs-steady (session 30): the steady state of cuDNN, v36 and v37 at N = 16384 (6 rounds of at least 1.5 s each),
# then the operator's GPU tests.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s); left() { echo $(( 585 - ($(date +%s) - t0) )); }
P=$OUT/q-regs-steady; rm -rf $P; mkdir -p $P
cp .whl/q_regs_steady.sh $P/check_command.sh; cp .whl/steady_probe.py $P/
sha256sum kernels/*.py > $P/kernel_sha256.txt; cp .whl/commit.txt $P/commit.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$P/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
timeout -s KILL 200 python3 .whl/steady_probe.py $P/steady.csv --entries torch-cudnn v36 v37 --N 16384 8192 --rounds 6 --seconds 1.5 > $P/steady.log 2>&1
echo "steady rc=$? after $(( $(date +%s) - t0 )) s"; tail -4 $P/steady.log
L=$(left); [ $L -gt 40 ] && { timeout -s KILL $(( L - 10 )) python3 -m pytest -q -p no:cacheprovider tests/test_op_gpu.py > $P/gpu_tests_op.log 2>&1; echo "op rc=$?"; tail -1 $P/gpu_tests_op.log; }
echo "done after $(( $(date +%s) - t0 )) s"
tar czf $OUT/q-regs-steady.tar.gz -C $OUT q-regs-steady && rm -rf $P; ls -la $OUT
