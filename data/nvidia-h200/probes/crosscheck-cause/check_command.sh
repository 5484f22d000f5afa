#!/bin/bash
# Before run-23: the GPU tests of the guards (issue 22's prescale fix), the operator and the launch path, then the
# probe of why Nsight and the kernel timer disagree (workflow/scripts/tools/crosscheck_cause.py).
export PYTHONUNBUFFERED=1
t0=$(date +%s)
if [ ! -f /tmp/site/.done ]; then
  python3 -m pip install -q --no-deps --no-index --target /tmp/site .whl/*.whl && touch /tmp/site/.done || exit 9
fi
export PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/crosscheck-cause $OUT/gpu-tests
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv | tee $OUT/gpu-tests/nvidia-smi.txt
sha256sum kernels/*.py > $OUT/gpu-tests/kernel_sha256.txt
cp $OUT/gpu-tests/kernel_sha256.txt $OUT/crosscheck-cause/
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$OUT/gpu-tests/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
cp $OUT/gpu-tests/env.json $OUT/crosscheck-cause/env.json; cp .whl/check23.sh $OUT/gpu-tests/check_command.sh; cp .whl/check23.sh $OUT/crosscheck-cause/check_command.sh
timeout -s KILL 120 python3 -m pytest -q -p no:cacheprovider tests/test_op_gpu.py > $OUT/gpu-tests/pytest-op.log 2>&1
echo "op tests rc=$? after $(( $(date +%s) - t0 )) s"; tail -3 $OUT/gpu-tests/pytest-op.log
timeout -s KILL 120 python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k 'v14 or v15 or v16 or v17 or v27' > $OUT/gpu-tests/pytest.log 2>&1
echo "gpu tests rc=$? after $(( $(date +%s) - t0 )) s"; tail -15 $OUT/gpu-tests/pytest.log
mkdir -p $OUT/v27-check; cp .whl/few_programs.py $OUT/v27-check/; cp $OUT/gpu-tests/env.json $OUT/gpu-tests/kernel_sha256.txt $OUT/v27-check/
timeout -s KILL 90 python3 .whl/few_programs.py 1,2,5,131 quick > $OUT/v27-check/few_programs.log 2>&1
echo "few_programs rc=$? after $(( $(date +%s) - t0 )) s"; grep -c "nan=False" $OUT/v27-check/few_programs.log; grep "nan=True\|worst\|Error" $OUT/v27-check/few_programs.log | tail -5
timeout -s KILL 150 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v27 \
  --N 1 130 4000 --dtypes float16 bfloat16 --out $OUT/v27-check/precheck.csv > $OUT/v27-check/precheck.log 2>&1
echo "precheck rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os
for r in csv.DictReader(open(os.environ['OUT'] + '/v27-check/precheck.csv')):
    print(r['key'][:60], r['status'], r['rel_error'], r['time_us'], r['note'][:60])
P
grep -q WRONG $OUT/v27-check/precheck.csv && echo "v27 WRONG"
timeout -s KILL 200 python3 workflow/scripts/tools/crosscheck_cause.py --config config/config.yaml \
  --variants v24 v26 torch-cudnn --N 512 1024 16384 --samples 30 --long-samples 10 --out $OUT/crosscheck-cause > $OUT/crosscheck-cause/crosscheck_cause.log 2>&1
echo "crosscheck rc=$? after $(( $(date +%s) - t0 )) s"; tail -20 $OUT/crosscheck-cause/crosscheck_cause.log
rm -f $OUT/crosscheck-cause/*.ncu-rep
