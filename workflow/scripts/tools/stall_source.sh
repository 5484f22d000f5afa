#!/bin/bash
# probes/stall-source: where the warps of v36 and of cuDNN wait, instruction by instruction, at the headline layout.
# For each entry (ENTRIES: "entry dtype N" triples), Nsight Compute profiles one launch deep in a stream of calls
# (cap_stream.py; launch SKIP + 1, clocks as found, no cache flush) with the SourceCounters (warp-state samples per
# SASS instruction, executed instructions per instruction), WarpStateStats and SchedulerStats sections; stall_pcs.py
# writes the report's per-instruction counters as a CSV. The reports and CSVs go into one archive.
#   OUT=<folder> END=<seconds> PROJECT_COMMIT=<commit> bash workflow/scripts/tools/stall_source.sh
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
T=workflow/scripts/tools
t0=$(date +%s); left() { echo $(( ${END:-200} - ($(date +%s) - t0) )); }
. $T/probe_records.sh
P=$OUT/stall-source; probe_start "$P"
cp "$0" "$P/check_command.sh"
SKIP=${SKIP:-100}
ENTRIES=${ENTRIES:-"v36 float16 16384;torch-cudnn float16 16384;v36 float16 4096;torch-cudnn float16 4096"}
IFS=';' read -ra SPECS <<< "$ENTRIES"
for spec in "${SPECS[@]}"; do
  read -r e dt n <<< "$spec"
  L=$(left); [ "$L" -gt 30 ] || { echo "stopped before $spec: ${L} s left"; break; }
  name=$e-$dt-$n
  timeout -s KILL $(( L - 10 )) ncu --clock-control none --cache-control none --launch-skip "$SKIP" --launch-count 1 \
    -k 'regex:attn_fwd|cudnn' --import-source no \
    --section SourceCounters --section WarpStateStats --section SchedulerStats --section LaunchStats \
    -o "$P/$name" python3 $T/cap_stream.py "$e" "$dt" "$n" $(( SKIP + 5 )) > "$P/$name.log" 2>&1
  echo "ncu $name rc=$? after $(( $(date +%s) - t0 )) s"
  [ -f "$P/$name.ncu-rep" ] && python3 $T/stall_pcs.py "$P/$name.ncu-rep" "$P/$name.csv" >> "$P/$name.log" 2>&1
  [ -f "$P/$name.ncu-rep" ] && gzip -9 "$P/$name.ncu-rep"
  tail -2 "$P/$name.log"
done
gpu_line "$P"
echo "done after $(( $(date +%s) - t0 )) s"; ls -la "$P"
tar czf "$OUT/stall-source.tgz" -C "$OUT" stall-source && rm -rf "$P"
