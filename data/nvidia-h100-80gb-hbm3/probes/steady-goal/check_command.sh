#!/bin/bash
# steady-goal (session of 2026-12-06): the steady state of cuDNN, v36 and v37 at N = 16384 and 8192 (6 rounds of at
# least 1.5 s each, steady_probe.py of ../../nvidia-h100-80gb-hbm3/probes/q-regs-steady), then at 4096 (4 rounds)
# if the command has time left, on whatever card the lease gives.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s); left() { echo $(( ${END:-380} - ($(date +%s) - t0) )); }
P=$OUT/steady-goal; rm -rf $P; mkdir -p $P
sha256sum kernels/*.py > $P/kernel_sha256.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$P/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
timeout -s KILL $(( $(left) - 5 )) python3 .whl/steady_probe.py $P/steady.csv --entries torch-cudnn v36 v37 --N 16384 8192 --rounds 6 --seconds 1.5 > $P/steady.log 2>&1
echo "steady rc=$? after $(( $(date +%s) - t0 )) s"; tail -3 $P/steady.log
L=$(left); [ $L -gt 50 ] && { timeout -s KILL $(( L - 5 )) python3 .whl/steady_probe.py $P/steady-4096.csv --entries torch-cudnn v36 v37 --N 4096 --rounds 4 --seconds 1.0 > $P/steady-4096.log 2>&1; echo "4096 rc=$?"; tail -2 $P/steady-4096.log; }
echo "done after $(( $(date +%s) - t0 )) s"; ls -la $P
