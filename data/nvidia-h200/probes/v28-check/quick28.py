# A first GPU check of v28 (and v27 beside it) before the run: output against a float64 reference, poisoned out,
# on the folded shapes (one round of tiles) and a few unfolded; prints the worst error ratio to SDPA's.
import sys, time, torch
import torch.nn.functional as F
from kernels import attention
torch.manual_seed(0)
shapes = [(1, 4, 2, 1, 64), (1, 4, 2, 130, 64), (1, 4, 2, 77, 128), (2, 16, 8, 512, 128), (1, 6, 3, 1023, 128),
          (2, 16, 2, 200, 128), (1, 16, 8, 1024, 128), (2, 16, 8, 1024, 128), (3, 12, 4, 1000, 128), (1, 1, 1, 64, 64),
          (1, 2, 1, 65, 128), (1, 8, 8, 8000, 128)]
bad = 0
for stage in ("v28", "v27"):
    for (B, H, Hk, N, D) in shapes:
        for dt in (torch.float16, torch.bfloat16):
            for causal in (True, False):
                q = torch.randn(B, H, N, D, device="cuda", dtype=dt)
                k = torch.randn(B, Hk, N, D, device="cuda", dtype=dt)
                v = torch.randn(B, Hk, N, D, device="cuda", dtype=dt)
                out = torch.full_like(q, float("nan"))
                t = time.time()
                attention(q, k, v, causal=causal, stage=stage, out=out)
                torch.cuda.synchronize()
                g = H // Hk
                ref = F.scaled_dot_product_attention(q.double(), k.double().repeat_interleave(g, 1),
                                                     v.double().repeat_interleave(g, 1), is_causal=causal)
                sd = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                                    is_causal=causal)
                e = (out.double() - ref).abs().max().item()
                es = (sd.double() - ref).abs().max().item()
                ok = e == e and e <= 2 * es + 1e-6
                bad += not ok
                if not ok or (B, H, N) == (2, 16, 512):
                    print(stage, (B, H, Hk, N, D), dt, causal, f"err {e:.3g} sdpa {es:.3g}", "ok" if ok else "WRONG",
                          flush=True)
print("quick check:", "all ok" if not bad else f"{bad} WRONG", flush=True)
sys.exit(1 if bad else 0)
