#!/bin/bash
# Why Nsight's flush of every cache costs v28 more than v27 at N = 512 (probes/v28-xcheck): the warp state of v27, v28
# and cuDNN at the headline layout, N = 512 fp16, by Nsight Compute with every cache flushed and with none.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw --format=csv > $OUT/nvidia-smi.csv
sha256sum kernels/*.py > $OUT/kernel_sha256.txt; cp .whl/probe_cold.sh $OUT/probe_command.sh
ncu --version | tail -1 > $OUT/ncu_version.txt
for cache in all none; do
  timeout -s KILL 200 ncu --clock-control none --cache-control $cache --profile-from-start off --nvtx -f \
    --section WarpStateStats --section LaunchStats --section InstructionStats \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__cycles_active.avg,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum \
    -o /tmp/cold_$cache python3 workflow/scripts/tools/crosscheck_cause.py --config config/config.yaml \
    --variants v27 v28 torch-cudnn --N 512 --target /tmp/order_$cache.json --launches 3 > $OUT/ncu_$cache.log 2>&1
  echo "ncu $cache rc=$? after $(( $(date +%s) - t0 )) s"; tail -2 $OUT/ncu_$cache.log
  ncu --import /tmp/cold_$cache.ncu-rep --page raw --csv --print-nvtx-rename kernel > $OUT/raw_$cache.csv 2>&1 || \
    ncu --import /tmp/cold_$cache.ncu-rep --page raw --csv > $OUT/raw_$cache.csv 2>&1
  cp /tmp/order_$cache.json $OUT/ 2>/dev/null
  wc -c $OUT/raw_$cache.csv
done
python3 - <<'P'
import csv, os, io
for cache in ("all", "none"):
    p = f"{os.environ['OUT']}/raw_{cache}.csv"
    rows = list(csv.reader(open(p)))
    if len(rows) < 3: print(cache, "no rows"); continue
    h = rows[0]
    want = [c for c in h if c in ("Kernel Name", "gpu__time_duration.sum", "sm__cycles_elapsed.max")
            or "stalled_no_instruction" in c or "stalled_long_scoreboard" in c or "stalled_barrier" in c]
    idx = [h.index(c) for c in want]
    print(cache, [w[-60:] for w in want])
    for r in rows[2:]:
        print(cache, [r[i][:40] for i in idx])
P
echo "done after $(( $(date +%s) - t0 )) s"
