#!/bin/bash
# q-regs-gate (session 30): v37 (q_registers). The guard tests of v36 and v37, the verify grid of every Gluon stage
# (v19-v37) at this source, an A/B of cuDNN, v36 and v37 (8 rounds), the steady state of the three at N = 16384,
# the operator's GPU tests.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s); left() { echo $(( 585 - ($(date +%s) - t0) )); }
P=$OUT/q-regs-gate; rm -rf $P; mkdir -p $P
cp .whl/q_regs_gate.sh $P/check_command.sh; cp .whl/ab_probe.py .whl/steady_probe.py $P/
sha256sum kernels/*.py > $P/kernel_sha256.txt; cp .whl/commit.txt $P/commit.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$P/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
timeout -s KILL 100 python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k "v36 or v37" > $P/gpu_tests_guards.log 2>&1
echo "guards rc=$? after $(( $(date +%s) - t0 )) s"; tail -1 $P/gpu_tests_guards.log
timeout -s INT 260 python3 workflow/scripts/verify/verify.py --workers 8 --stages v19 v20 v21 v22 v23 v24 v25 v26 v27 v28 v29 v30 v31 v32 v33 v34 v35 v36 v37 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -2 $P/verify.log
L=$(left); [ $L -gt 40 ] && { timeout -s KILL $(( L - 15 )) python3 .whl/ab_probe.py $P/ab.csv --entries torch-cudnn v36 v37 --N 1024 4096 8192 16384 --rounds 8 --samples 24 > $P/ab.log 2>&1; echo "ab rc=$? after $(( $(date +%s) - t0 )) s"; tail -8 $P/ab.log; }
echo "done after $(( $(date +%s) - t0 )) s"
tar czf $OUT/q-regs-gate.tar.gz -C $OUT q-regs-gate && rm -rf $P; ls -la $OUT
