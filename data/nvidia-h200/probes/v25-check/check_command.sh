#!/bin/bash
# First GPU check of v25 (pingpong): correctness at small and ragged N (both dtypes), timing beside v24,
# v13 and cuDNN, sanitizers.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv
python3 -c "import hashlib, json; print(json.dumps({'kernels/gluon_fwd.py': hashlib.sha256(open('kernels/gluon_fwd.py', 'rb').read()).hexdigest()}))" > $OUT/kernel_sha256.json
timeout -s KILL 150 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v25 \
  --tiles v25:128x128w4s3 --N 1 130 1000 --dtypes float16 bfloat16 --out $OUT/precheck.csv > $OUT/precheck.log 2>&1
echo "precheck rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os
for r in csv.DictReader(open(os.environ['OUT'] + '/precheck.csv')):
    print(r['key'][:60], r['status'], r['rel_error'], r['neighbour_nan_ok'], r['time_us'], r['note'][:80])
P
grep -q WRONG $OUT/precheck.csv && { echo "v25 WRONG: stopping"; exit 3; }
timeout -s KILL 260 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v13 v24 v25 \
  --N 512 1024 4096 8192 16384 --dtypes float16 --out $OUT/timing.csv > $OUT/timing.log 2>&1
echo "timing rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os
for r in csv.DictReader(open(os.environ['OUT'] + '/timing.csv')):
    print(r['key'][:60], r['status'], r['rel_error'], r['time_us'], r['clocks.sm'], r['power.draw'], r['note'][:60])
P
cat > /tmp/san25.py <<'PY'
import torch, kernels
torch.manual_seed(0)
for causal in (True, False):
    for N in (1, 200, 333):
        q = torch.randn(1, 4, N, 128, device="cuda", dtype=torch.float16)
        k = torch.randn(1, 2, N, 128, device="cuda", dtype=torch.float16)
        v = torch.randn(1, 2, N, 128, device="cuda", dtype=torch.float16)
        o = kernels.attention(q, k, v, causal=causal, stage="v25")
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(2, 1), v.float().repeat_interleave(2, 1), is_causal=causal)
        print(causal, N, float((o.float() - ref).abs().max()))
torch.cuda.synchronize()
PY
for tool in memcheck synccheck racecheck; do
  echo "== $tool"; timeout 80 compute-sanitizer --tool $tool --print-limit 20 python3 /tmp/san25.py > $OUT/san-$tool.log 2>&1; echo "rc=$?"; tail -4 $OUT/san-$tool.log
done
echo "done after $(( $(date +%s) - t0 )) s"
