#!/bin/bash
# The host cost of every stage (quick), v24 included, with v24 the default on sm_90, and the GPU tests of the operator and the default stage.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw --format=csv
sha256sum kernels/*.py > $OUT/kernel_sha256.txt
python3 -c "import pipeline.gpu_env as g, json; json.dump(g.collect(), open('$OUT/env.json','w'), indent=1, default=str)" 2>&1 | tail -2
timeout -s KILL 170 python3 workflow/scripts/tools/host_cost.py --config config/config.yaml --quick --out $OUT/host_cost.csv > $OUT/host_cost.log 2>&1
echo "host_cost rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os, collections
rows = list(csv.DictReader(open(os.environ['OUT'] + '/host_cost.csv')))
by = collections.defaultdict(dict)
for r in rows: by[r['variant']][r['path']] = r['host_us']
paths = sorted({r['path'] for r in rows})
print('variant', *paths)
for v, d in by.items(): print(v, *[(d.get(p) or '-')[:6] for p in paths])
P
which pytest >/dev/null 2>&1 || python3 -c "import pytest" 2>/dev/null && echo "pytest ok"
timeout -s KILL 150 python3 -m pytest -q -p no:cacheprovider tests/test_op_gpu.py -x > $OUT/gpu_tests.log 2>&1
echo "gpu tests rc=$? after $(( $(date +%s) - t0 )) s"; tail -4 $OUT/gpu_tests.log
