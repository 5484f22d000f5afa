#!/bin/bash
# First GPU check of v26 (persistent): correctness at small and ragged N (both dtypes), the persistent loop with
# few programs (many tiles each), timing beside v24 and v25, sanitizers.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
t0=$(date +%s)
nvidia-smi --query-gpu=name,uuid,clocks.sm,power.draw,power.limit --format=csv
python3 -c "import hashlib, json; print(json.dumps({'kernels/gluon_fwd.py': hashlib.sha256(open('kernels/gluon_fwd.py', 'rb').read()).hexdigest()}))" > $OUT/kernel_sha256.json
cat > $OUT/few_programs.py <<'PY'
# The persistent kernel launched on a grid of P programs (fewer than the SMs), so that each takes many tiles:
# its output against SDPA in float32 on the same inputs, and SDPA's own error in 16 bits.
import sys, torch
from kernels import gluon_fwd as g
torch.manual_seed(0)
Ps = [int(p) for p in sys.argv[1].split(",")]
quick = len(sys.argv) > 2
shapes = [(2, 6, 3, 1000, 128), (1, 4, 2, 333, 64), (3, 2, 1, 130, 128), (1, 1, 1, 1, 64)]
worst = 0.0
for (B, H, Hkv, N, D) in (shapes[:2] if quick else shapes):
    for dt in ((torch.float16,) if quick else (torch.float16, torch.bfloat16)):
        for causal in (True, False):
            q = torch.randn(B, H, N, D, device="cuda", dtype=dt)
            k = torch.randn(B, Hkv, N, D, device="cuda", dtype=dt)
            v = torch.randn(B, Hkv, N, D, device="cuda", dtype=dt)
            rep = H // Hkv
            ref = torch.nn.functional.scaled_dot_product_attention(
                q.float(), k.float().repeat_interleave(rep, 1), v.float().repeat_interleave(rep, 1), is_causal=causal)
            own = torch.nn.functional.scaled_dot_product_attention(
                q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), is_causal=causal)
            sdpa_err = float((own.float() - ref).abs().max())
            for P in Ps:
                out = torch.full_like(q, float("nan"))
                args = g.kernel_args(q, k, v, out, causal, 128, 128, 2, None, True, True, True, True, True, True, True)
                opts = g.launch_options(128, 128, D, True, True, True, True)
                T = B * H * -(-N // 128)
                g._gluon_attn_fwd[(min(P, T),)](**args, **opts)
                torch.cuda.synchronize()
                err = float((out.float() - ref).abs().max())
                ratio = err / max(sdpa_err, 1e-6)
                worst = max(worst, ratio)
                print(f"B{B} H{H} Hkv{Hkv} N{N} D{D} {str(dt)[6:]} causal={causal} P={min(P, T)} tiles={T} "
                      f"err={err:.3g} sdpa={sdpa_err:.3g} ratio={ratio:.2f} nan={bool(out.isnan().any())}", flush=True)
print("worst ratio", worst)
PY
timeout -s KILL 120 python3 $OUT/few_programs.py 1,2,5,131 > $OUT/few_programs.log 2>&1
echo "few_programs rc=$? after $(( $(date +%s) - t0 )) s"; tail -40 $OUT/few_programs.log
timeout -s KILL 120 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v26 \
  --N 1 130 1000 --dtypes float16 bfloat16 --out $OUT/precheck.csv > $OUT/precheck.log 2>&1
echo "precheck rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os
for r in csv.DictReader(open(os.environ['OUT'] + '/precheck.csv')):
    print(r['key'][:60], r['status'], r['rel_error'], r['neighbour_nan_ok'], r['time_us'], r['note'][:80])
P
grep -q WRONG $OUT/precheck.csv && { echo "v26 WRONG: stopping"; exit 3; }
timeout -s KILL 200 python3 workflow/scripts/tools/check_stages.py --config config/config.yaml --stages v24 v25 v26 \
  --N 1024 4096 16384 --dtypes float16 --out $OUT/timing.csv > $OUT/timing.log 2>&1
echo "timing rc=$? after $(( $(date +%s) - t0 )) s"
python3 - <<'P'
import csv, os
for r in csv.DictReader(open(os.environ['OUT'] + '/timing.csv')):
    print(r['key'][:60], r['status'], r['rel_error'], r['time_us'], r['clocks.sm'], r['power.draw'], r['note'][:60])
P
for tool in memcheck synccheck racecheck; do
  echo "== $tool"; timeout 60 compute-sanitizer --tool $tool --print-limit 20 python3 $OUT/few_programs.py 3 quick > $OUT/san-$tool.log 2>&1; echo "rc=$?"; tail -3 $OUT/san-$tool.log
done
echo "done after $(( $(date +%s) - t0 )) s"
