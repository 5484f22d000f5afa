#!/bin/bash
# early-exp-gate (stop 53): v38 (early_exponent), at the branch's commit. The guard tests of v36 and v38, the verify
# grid of every Gluon stage (v19-v38) at this source, an A/B of cuDNN, v36 and v38 (8 rounds, order reversed every
# second round), then (second part) Nsight's cycles deep in a stream and the steady state at the power cap.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s); left() { echo $(( ${END:-585} - ($(date +%s) - t0) )); }
P=$OUT/early-exp-gate; mkdir -p $P
cp .whl/early_gate.sh $P/check_command.sh; cp .whl/ab_probe.py $P/
sha256sum kernels/*.py > $P/kernel_sha256.txt; echo "${PROJECT_COMMIT:?}" > $P/commit.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >> $P/nvidia-smi.csv
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$P/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
if [ "${PART:-1}" = 1 ]; then
  timeout -s KILL 120 python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k "v36 or v38" > $P/gpu_tests_guards.log 2>&1
  echo "guards rc=$? after $(( $(date +%s) - t0 )) s"; tail -1 $P/gpu_tests_guards.log
  timeout -s INT 280 python3 workflow/scripts/verify/verify.py --workers 8 --stages v19 v20 v21 v22 v23 v24 v25 v26 v27 v28 v29 v30 v31 v32 v33 v34 v35 v36 v37 v38 --out $P/verify > $P/verify.log 2>&1
  echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -2 $P/verify.log
  L=$(left); [ $L -gt 40 ] && { timeout -s KILL $(( L - 15 )) python3 .whl/ab_probe.py $P/ab.csv --entries torch-cudnn v36 v38 --N 1024 4096 8192 16384 --rounds 8 --samples 24 > $P/ab.log 2>&1; echo "ab rc=$? after $(( $(date +%s) - t0 )) s"; tail -4 $P/ab.log; }
else
  for dt in float16 bfloat16; do for e in v36 v38 torch-cudnn; do
    L=$(left); [ "$L" -gt 60 ] || break 2
    timeout -s KILL 40 ncu --clock-control none --cache-control none --launch-skip 300 --launch-count 3 \
      -k 'regex:attn_fwd|cudnn' --csv \
      --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second,sm__cycles_active.avg,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
      python3 workflow/scripts/tools/cap_stream.py $e $dt 16384 320 > $P/ncu-$e-$dt.csv 2> $P/ncu-$e-$dt.log
    echo "ncu $e $dt rc=$? after $(( $(date +%s) - t0 )) s"
  done; done
  L=$(left); [ $L -gt 60 ] && { timeout -s KILL $(( L - 10 )) python3 workflow/scripts/tools/steady_probe.py $P/steady.csv \
    --entries torch-cudnn v36 v38 --N 16384 8192 --rounds 4 --seconds 1.5 > $P/steady.log 2>&1; echo "steady rc=$? after $(( $(date +%s) - t0 )) s"; tail -3 $P/steady.log; }
fi
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >> $P/nvidia-smi.csv
echo "done after $(( $(date +%s) - t0 )) s"
