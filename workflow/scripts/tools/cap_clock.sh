#!/bin/bash
# probes/cap-clock: at N = 16384, does a kernel run at the SM clock NVML reports? For cuDNN and v36 in both dtypes:
# the steady probe (steady_probe.py: NVML's clock, power and clock event reasons over a stream of calls), then Nsight
# Compute on a stream of calls (cap_stream.py), profiling three launches after SKIP with the clocks as found and no
# cache flush: its duration, elapsed cycles and their rate (the clock the kernel ran at, by Nsight's count).
#   OUT=<folder> END=<seconds> bash workflow/scripts/tools/cap_clock.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
T=workflow/scripts/tools
t0=$(date +%s); left() { echo $(( ${END:-200} - ($(date +%s) - t0) )); }
. $T/probe_records.sh
P=$OUT/cap-clock; probe_start "$P"
for dt in float16 bfloat16; do
  for e in torch-cudnn v36; do
    L=$(left); [ "$L" -gt 25 ] || break 2
    timeout -s KILL $(( L - 5 )) ncu --clock-control none --cache-control none --launch-skip ${SKIP:-300} \
      --launch-count 3 -k 'regex:attn_fwd|cudnn' --csv \
      --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second,sm__cycles_active.avg \
      python3 $T/cap_stream.py $e $dt 16384 $(( ${SKIP:-300} + 20 )) > "$P/ncu-$e-$dt.csv" 2> "$P/ncu-$e-$dt.log"
    echo "ncu $e $dt rc=$? after $(( $(date +%s) - t0 )) s"
  done
done
L=$(left); [ "$L" -gt 40 ] && { timeout -s KILL $(( L - 5 )) python3 $T/steady_probe.py "$P/steady.csv" \
  --entries torch-cudnn v36 --N 16384 --rounds 2 --seconds 1.5 > "$P/steady.log" 2>&1; echo "steady rc=$?"; }
gpu_line "$P"
echo "done after $(( $(date +%s) - t0 )) s"; ls -la "$P"
