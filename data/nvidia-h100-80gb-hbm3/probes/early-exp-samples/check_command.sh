#!/bin/bash
# stop 53, after the gate: Nsight's warp samples of v38 (stall_source.sh) and an A/B of cuDNN, v36 and v38 at the
# goal's two other lengths, N = 512 and 2048 (ab_probe.py, 8 rounds).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s)
ENTRIES="v38 float16 16384;v38 float16 4096" END=150 bash workflow/scripts/tools/stall_source.sh 2>&1 | grep -v "^-r\|^total\|^d" | tail -8
P=$OUT/ab-short; mkdir -p $P; cp .whl/extra38.sh $P/check_command.sh; cp .whl/ab_probe.py $P/
sha256sum kernels/*.py > $P/kernel_sha256.txt; echo "${PROJECT_COMMIT:?}" > $P/commit.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$P/env.json','w'), indent=1, default=str)"
timeout -s KILL 200 python3 .whl/ab_probe.py $P/ab.csv --entries torch-cudnn v36 v38 --N 512 2048 --rounds 8 --samples 24 > $P/ab.log 2>&1; echo "ab rc=$? after $(( $(date +%s) - t0 )) s"; tail -4 $P/ab.log
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >> $P/nvidia-smi.csv
tar czf $OUT/ab-short.tgz -C $OUT ab-short && rm -rf $P; ls -la $OUT
