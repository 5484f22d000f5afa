#!/bin/bash
# First GPU check of v23: correctness at small and ragged N (both dtypes), timing beside v22 and cuDNN, sanitizers.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv
sha256sum kernels/gluon_fwd.py > $OUT/kernel_sha256.txt
timeout -s KILL 200 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v22 v23 \
  --tiles v23:128x128w8s3 v23:128x64w8s3 --N 1 130 1000 --dtypes float16 bfloat16 --out $OUT/precheck.csv > $OUT/precheck.log 2>&1
echo "precheck rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os
for r in csv.DictReader(open(os.environ['OUT'] + '/precheck.csv')):
    print(r['key'][:60], r['status'], r['rel_error'], r['neighbour_nan_ok'], r['time_us'], r['note'][:80])
P
timeout -s KILL 240 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v13 v22 v23 \
  --tiles v23:128x128w8s3 v23:128x64w8s3 --N 1024 4096 16384 --dtypes float16 bfloat16 --out $OUT/timing.csv > $OUT/timing.log 2>&1
echo "timing rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os
for r in csv.DictReader(open(os.environ['OUT'] + '/timing.csv')):
    print(r['key'][:60], r['status'], r['rel_error'], r['neighbour_nan_ok'], r['time_us'], r['clocks.sm'], r['power.draw'], r['note'][:60])
P
cat > /tmp/san23.py <<'PY'
import torch, kernels
torch.manual_seed(0)
for causal in (True, False):
    for N in (1, 200, 333):
        q = torch.randn(1, 4, N, 128, device="cuda", dtype=torch.float16)
        k = torch.randn(1, 2, N, 128, device="cuda", dtype=torch.float16)
        v = torch.randn(1, 2, N, 128, device="cuda", dtype=torch.float16)
        o = kernels.attention(q, k, v, causal=causal, stage="v23")
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(2, 1), v.float().repeat_interleave(2, 1), is_causal=causal)
        print(causal, N, float((o.float() - ref).abs().max()))
torch.cuda.synchronize()
PY
for tool in memcheck synccheck racecheck; do
  echo "== $tool"; timeout 100 compute-sanitizer --tool $tool --print-limit 20 python3 /tmp/san23.py > $OUT/san-$tool.log 2>&1; echo "rc=$?"; tail -4 $OUT/san-$tool.log
done
echo "done after $(( $(date +%s) - t0 )) s"
