#!/bin/bash
# Which stages fail the guard tests' large-score cases (tests/test_guards_gpu.py) at the current source.
SITE=/tmp/site; [ -f $SITE/.done ] || { python3 -m pip install -q --no-deps --no-index --target $SITE .whl/*.whl && touch $SITE/.done; }
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
P=$OUT/guards-check; mkdir -p $P; cp .whl/guards_check.sh $P/check_command.sh; sha256sum kernels/*.py > $P/kernel_sha256.txt
nvidia-smi --query-gpu=name,uuid --format=csv > $P/nvidia-smi.csv
timeout -s KILL 300 python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k "v19 or v2 or v30 or v31 or v32 or v13" > $P/gpu_tests_guards.log 2>&1
echo "rc=$?"; grep -E "^FAILED" $P/gpu_tests_guards.log | sed 's/ - .*//' | awk -F'[][]' '{print $2}' | cut -d- -f1 | sort | uniq -c; tail -1 $P/gpu_tests_guards.log
tar czf $OUT/guards-check.tar.gz -C $OUT guards-check && rm -rf $P
