#!/bin/bash
# lane-max-ncu (session 27): Nsight Compute's counters of v35, v36 and cuDNN at the headline layout, N = 16384,
# float16, one launch each (stall_target.py), clocks not locked: the tensor pipe's active cycles, the SM's active
# cycles, the instructions issued and the warp stall reasons per issued instruction.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
P=$OUT/lane-max-ncu; mkdir -p $P; t0=$(date +%s)
M=gpu__time_duration.sum,sm__cycles_active.avg,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__issue_active.avg.pct_of_peak_sustained_elapsed,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,gpc__cycles_elapsed.avg.per_second
timeout -s KILL 150 ncu --clock-control none --profile-from-start off --nvtx -f --metrics $M -o /tmp/p python3 .whl/stall_target.py v35 v36 torch-cudnn > $P/ncu.log 2>&1
echo "ncu rc=$? after $(( $(date +%s) - t0 )) s"; tail -2 $P/ncu.log
timeout 30 ncu --import /tmp/p.ncu-rep --page raw --csv --print-nvtx-rename kernel > $P/raw.csv 2> $P/raw.err; echo "raw rc=$? $(wc -c < $P/raw.csv)"
nvidia-smi --query-gpu=name,uuid --format=csv > $P/nvidia-smi.csv; sha256sum kernels/*.py > $P/kernel_sha256.txt; cp .whl/commit.txt $P/; ncu --version | tail -1 > $P/ncu_version.txt
cp .whl/prof36.sh $P/check_command.sh; cp .whl/stall_target.py $P/; cp /tmp/p.ncu-rep $P/ 2>/dev/null
tar czf $OUT/lane-max-ncu.tar.gz -C $OUT lane-max-ncu && rm -rf $P; ls -la $OUT; echo "done $(( $(date +%s) - t0 )) s"
