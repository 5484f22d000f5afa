#!/bin/bash
# v37-grid (session 27): the verify grid of every Gluon stage (v19-v37) at this source, then a second A/B of cuDNN,
# v35 and v37 (8 rounds).
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s); left() { echo $(( 585 - ($(date +%s) - t0) )); }
P=$OUT/v37-grid; rm -rf $P; mkdir -p $P
cp .whl/v37_grid.sh $P/check_command.sh; cp .whl/ab_probe.py $P/
sha256sum kernels/*.py > $P/kernel_sha256.txt; cp .whl/commit.txt $P/commit.txt
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi.csv
timeout -s INT 470 python3 workflow/scripts/verify/verify.py --workers 8 --stages v19 v20 v21 v22 v23 v24 v25 v26 v27 v28 v29 v30 v31 v32 v33 v34 v35 v37 --out $P/verify > $P/verify.log 2>&1
echo "verify rc=$? after $(( $(date +%s) - t0 )) s"; tail -2 $P/verify.log
L=$(left); [ $L -gt 40 ] && { timeout -s KILL $(( L - 15 )) python3 .whl/ab_probe.py $P/ab.csv --entries torch-cudnn v35 v37 --N 1024 4096 8192 16384 --rounds 8 --samples 24 > $P/ab.log 2>&1; echo "ab rc=$? after $(( $(date +%s) - t0 )) s"; tail -8 $P/ab.log; }
echo "done after $(( $(date +%s) - t0 )) s"
tar czf $OUT/v37-grid.tar.gz -C $OUT v37-grid && rm -rf $P; ls -la $OUT
