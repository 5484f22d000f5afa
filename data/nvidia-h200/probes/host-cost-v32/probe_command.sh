#!/bin/bash
# The host cost of every stage (quick) and of the Gluon stages v19-v32 (the plan's loops), at the current source,
# then the kernel-guard GPU tests of v32, within what the call's limit leaves (the operator's GPU tests ran at this
# source in probes/gluon-verify-waves).
SITE=/tmp/site; [ -f $SITE/.done ] || { python3 -m pip install -q --no-deps --no-index --target $SITE .whl/*.whl && touch $SITE/.done; }
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
P=$OUT/host-cost-v32; rm -rf $P; mkdir -p $P
t0=$(date +%s); left() { echo $(( 585 - ($(date +%s) - t0) )); }
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw --format=csv > $P/nvidia-smi.csv; cat $P/nvidia-smi.csv
sha256sum kernels/*.py > $P/kernel_sha256.txt
cp .whl/probe_host32.sh $P/probe_command.sh
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$P/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
timeout -s KILL 200 python3 workflow/scripts/tools/host_cost.py --config config/config.yaml --quick --out $P/host_cost_quick.csv > $P/host_cost_quick.log 2>&1
echo "host_cost quick rc=$? after $(( $(date +%s) - t0 )) s"
timeout -s KILL 210 python3 workflow/scripts/tools/host_cost.py --config config/config.yaml --stages v19 v20 v21 v22 v23 v24 v25 v26 v27 v28 v29 v30 v31 v32 --out $P/host_cost.csv > $P/host_cost.log 2>&1
echo "host_cost gluon rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os, collections
for f in ('host_cost_quick.csv', 'host_cost.csv'):
    p = os.environ['OUT'] + '/host-cost-v32/' + f
    if not os.path.exists(p): print(f, 'missing'); continue
    rows = list(csv.DictReader(open(p)))
    print(f, ' '.join(f"{r['variant']}:{float(r['host_us']):.1f}" for r in rows if r['path'] in ('cache', 'torch')))
P
L=$(left); if [ $L -gt 40 ]; then timeout -s KILL $(( L < 100 ? L - 10 : 90 )) python3 -m pytest -q -p no:cacheprovider tests/test_guards_gpu.py -k v32 > $P/gpu_tests_guards.log 2>&1; echo "guards rc=$?"; tail -2 $P/gpu_tests_guards.log; fi
echo "done after $(( $(date +%s) - t0 )) s"
tar czf $OUT/host-cost-v32.tar.gz -C $OUT host-cost-v32 && rm -rf $P
