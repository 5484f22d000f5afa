#!/bin/bash
# steady-goal, the short lengths (session of 2026-12-06): three commands on the same warm machine after
# check_command.sh, each as typed into the device call; CHUNK_MS, SECONDS_, N and ROUNDS as each try had them:
#   try 1: --N 2048 1024 512 --rounds 4 --seconds 1.0 (chunks of 20 ms, the probe's default)   -> steady-short-try1.log
#   try 2: --N 2048 1024 512 --rounds 4 --seconds 1.0 --chunk-ms 100                          -> steady-short-try2.log
#   try 3: --N 2048 1024 --rounds 3 --seconds 2.5 --chunk-ms 40                                -> steady-short.csv/.log
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0; P=$OUT/steady-goal; mkdir -p $P; nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv > $P/nvidia-smi-short.csv; timeout -s KILL 170 python3 .whl/steady_probe.py $P/steady-short.csv --entries torch-cudnn v36 v37 --N 2048 1024 --rounds 3 --seconds 2.5 --chunk-ms 40 > $P/steady-short.log 2>&1; echo rc=$?; tail -3 $P/steady-short.log
