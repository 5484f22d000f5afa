export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
cat > /tmp/san22.py <<'PY'
import torch, kernels
torch.manual_seed(0)
for causal in (True, False):
    for N in (1, 200, 333):
        q = torch.randn(1, 4, N, 128, device="cuda", dtype=torch.float16)
        k = torch.randn(1, 2, N, 128, device="cuda", dtype=torch.float16)
        v = torch.randn(1, 2, N, 128, device="cuda", dtype=torch.float16)
        o = kernels.attention(q, k, v, causal=causal, stage="v22")
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(2, 1), v.float().repeat_interleave(2, 1), is_causal=causal)
        print(causal, N, float((o.float() - ref).abs().max()))
torch.cuda.synchronize()
PY
for tool in memcheck synccheck racecheck; do
  echo "== $tool"; timeout 240 compute-sanitizer --tool $tool --print-limit 20 python3 /tmp/san22.py > $OUT/san-$tool.log 2>&1; echo "rc=$?"; tail -4 $OUT/san-$tool.log
done
