"""Qwen3 end to end in Hugging Face transformers' own model code: prefill with our kernel against SDPA, on one GPU.

Each model is built from the layout of a published Qwen3 configuration (MODELS; written here, nothing is downloaded)
with random weights in bfloat16 on the GPU, optionally with fewer decoder layers (--layers, e.g. 32B=2: the
per-layer figures are then the ones to read, and every row says how many layers ran). One model, one set of weights:
the attention implementation is switched between transformers' "sdpa" and ours (kernels.hf.register(stage)). For each
batch size and N (prefill of B x N random tokens, no padding):

- check: the final hidden states of both, projected to the logits chunk by chunk (all positions), judged as
  kernels.accuracy judges attention: against the same weights computed in float32 (the model run layer by layer in
  a float32 copy, attention by SDPA's float32 memory-efficient kernel), ours may be at most PYTORCH_FACTOR (2) times
  as far off as SDPA's bfloat16 model, floored at a quarter of bfloat16's unit roundoff. The relative error of ours
  against SDPA's logits is recorded too. A model that fails the check is not timed with our kernel.
- prefill: `model(input_ids, use_cache=False, logits_to_keep=1)` (the logits a generate() prefill keeps), timed with
  CUDA events per sample after warmup, in eager mode and, where capture works, replayed from a CUDA graph
  (attention_mask={"full_attention": None}: the prepared mask that skips transformers' mask building, which would
  otherwise build a 4-D mask while a stream captures); ours and SDPA alternate sample by sample. GPU clocks, power
  and temperature are read after every sample (pynvml when importable, else nvidia-smi; --no-clocks skips).
- attention alone: layer 0's own q, k, v (recorded from a forward pass), through the attention function as the layer
  calls it (ours: kernels.hf.attention_forward, with its copies to contiguous rows; SDPA: transformers'
  sdpa_attention_forward) and through the bare operator (kernels.attention_op on contiguous q, k, v; SDPA's
  scaled_dot_product_attention with enable_gqa), timed by triton.testing.do_bench (CUDA events, L2 flushed).
  attn_share = layers x the function's median / the prefill median: attention's share of the prefill.

Writes into --out: qwen3_e2e.csv (tidy: one row per model, batch, N, impl, mode, metric), samples.csv (every prefill
sample with its clocks and power), env.json (pipeline.gpu_env's facts with the transformers version and the
arguments, nvidia-smi's state at the start and the end). Progress goes to stderr. The run holds qwen3_e2e.lock
(pipeline.folder_lock) throughout, so that a second run on the same folder stops at once.

Resuming (pipeline.partial_csv): the rows go to qwen3_e2e.partial.csv and samples.partial.csv as they are made, each
with its origin file (pipeline.origin: the commit, the SHA-256 of the kernels, the library and this script, and of
the plan: models, layers, batch sizes, N, stage, samples, warmup, graphs, seed, CPU or GPU). A point (model, layers,
B, N) is finished when its marker row (metric point_done, never in qwen3_e2e.csv) is written. Run the same command
again after an interruption and it resumes: the finished points are kept and skipped, the rows and samples of an
unfinished one (cut short, or out of memory: a transient failure) are dropped and the point measured again, and
env.json is kept; a partial file of another origin is refused, naming each difference and the fix. Once every point
is done, qwen3_e2e.csv (without the markers) and samples.csv replace the partial files.

--dry-run checks the layouts (each model built on the meta device: its parameter count against the published
one) and prints the plan, with no GPU. --self-check runs the whole measurement on the CPU in Triton's interpreter
(TRITON_INTERPRET=1) on a tiny Qwen3 in float16, with wall-clock timing and no graphs: the code path, not a figure.
"""
from __future__ import annotations

import argparse
import copy
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

# Run as a script, this folder is first on the import path, and its profile.py (the profile step) would shadow the
# standard library's profile module, which cProfile, and through it torch._dynamo and transformers, import.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

# The layouts of Qwen/Qwen3-0.6B, -8B and -32B, from their config.json on the Hugging Face hub (all three:
# head_dim 128, vocab_size 151936, rope_theta 1e6, rms_norm_eps 1e-6, max_position_embeddings 40960, silu, no
# attention bias, no sliding window). Read through copies found by the search tool:
#   0.6B: huggingface.co/TensorStack/TextEncoder/blob/main/Qwen-3-06B/config.json (a verbatim copy)
#   8B:   huggingface.co/thejaminator/qwen-hook-layer-9, commit 478fb720 "Copy config.json from Qwen/Qwen3-8B"
#   32B:  huggingface.co/ronnywebdevs1/d-m-1/blob/main/config.json (the same file)
# and checked against the hub's published parameter counts (safetensors metadata, which counts a tied lm_head
# apart): 32B 32,762,123,264 (Qwen/Qwen3-32B's model.json, in the repository daniel-p-green/alain-ai-learning-platform,
# out/research-qwen-qwen3-32b/sources/huggingface/model.json), 8B 8,190,735,360 and 0.6B 751,632,384 (quoted from
# the hub's API in several public repositories). --dry-run recounts them from the models transformers builds.
COMMON = dict(head_dim=128, vocab_size=151936, max_position_embeddings=40960, rms_norm_eps=1e-6, hidden_act="silu",
              attention_bias=False, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
MODELS = {
    "0.6B": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, tie_word_embeddings=True),
    "8B": dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
               num_key_value_heads=8, tie_word_embeddings=False),
    "32B": dict(hidden_size=5120, intermediate_size=25600, num_hidden_layers=64, num_attention_heads=64,
                num_key_value_heads=8, tie_word_embeddings=False),
}
HUB_PARAMETERS = {"0.6B": 751_632_384, "8B": 8_190_735_360, "32B": 32_762_123_264}
# --self-check only: the tiny Qwen3 of tests/test_transformers.py (head_dim 16, float16, in the interpreter).
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, vocab_size=128, max_position_embeddings=256, tie_word_embeddings=False)

IMPLS = ("ours", "sdpa")
COLUMNS = ["model", "layers", "layers_full", "batch", "N", "impl", "stage", "mode", "metric", "value", "unit", "n",
           "status", "note"]
SAMPLE_COLUMNS = ["model", "layers", "batch", "N", "impl", "mode", "sample", "ms", "sm_mhz", "mem_mhz", "power_w",
                  "temp_c"]
POINT = ("model", "layers", "batch", "N")   # what a point is: both files' rows name it
POINT_DONE = "point_done"                    # the metric of a point's marker row in the partial file (not in the final)
PLAN_IS = "the plan (models, layers, batch sizes, N, stage, samples, warmup, graphs, seed, CPU or GPU)"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def qwen3_config(name: str, layers: int | None = None):
    from transformers import Qwen3Config

    layout = TINY if name == "tiny" else {**COMMON, **MODELS[name]}
    if layers is not None:
        layout = {**layout, "num_hidden_layers": layers}
    return Qwen3Config(**layout)


def hub_count(model, config) -> int:
    """The parameter count as the hub reports it: a tied lm_head counted apart."""
    n = sum(p.numel() for p in model.parameters())
    return n + (config.vocab_size * config.hidden_size if config.tie_word_embeddings else 0)


def build(name: str, layers: int | None, device, dtype, seed: int):
    """Qwen3ForCausalLM of a layout, random weights (transformers' own init) made on `device` in `dtype`."""
    import torch
    from transformers import Qwen3ForCausalLM

    config = qwen3_config(name, layers)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen3ForCausalLM._from_config(config, attn_implementation="sdpa", dtype=dtype)
    return model.eval()


# ---- the check ---------------------------------------------------------------------------------------------------

def final_hidden(model, ids, impl: str):
    import torch

    model.set_attn_implementation(impl)
    with torch.no_grad():
        return model.model(input_ids=ids, use_cache=False).last_hidden_state


def _ref32_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """The float32 reference attention: the grouped heads repeated, SDPA's memory-efficient kernel on the GPU
    (never the math one, which would hold B x H x N x N scores), causal."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from transformers.integrations.sdpa_attention import repeat_kv

    assert attention_mask is None and dropout == 0.0 and query.shape[-2] == key.shape[-2]
    key, value = repeat_kv(key, module.num_key_value_groups), repeat_kv(value, module.num_key_value_groups)
    backends = [SDPBackend.EFFICIENT_ATTENTION] if query.is_cuda else [SDPBackend.MATH]
    with sdpa_kernel(backends):
        out = torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scaling)
    return out.transpose(1, 2).contiguous(), None


def reference_hidden(model, ids):
    """The final hidden states of the same weights in float32: Qwen3Model's forward (embedding, rotary embedding,
    the decoder layers, the final norm) with each layer copied to float32 in turn, so that only one layer's float32
    copy is ever held."""
    import torch
    from transformers import AttentionInterface

    AttentionInterface.register("fa2_stages_ref32", _ref32_attention)
    base = model.model
    model.set_attn_implementation("sdpa")
    saved = base.config._attn_implementation
    base.config._attn_implementation = "fa2_stages_ref32"
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")      # float32 products, never TF32
    try:
        with torch.no_grad():
            h = base.embed_tokens(ids).float()
            pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
            cos, sin = copy.deepcopy(base.rotary_emb).float()(h, pos)
            for layer in base.layers:
                layer32 = copy.deepcopy(layer).float()
                h = layer32(h, attention_mask=None, position_embeddings=(cos, sin), position_ids=pos,
                            past_key_values=None, use_cache=False)
                del layer32
            return copy.deepcopy(base.norm).float()(h)
    finally:
        base.config._attn_implementation = saved
        torch.set_float32_matmul_precision(precision)


def logit_errors(model, hidden: dict, ref_hidden) -> dict:
    """Relative errors (float64 norms over all logits) of each impl's logits against the float32 reference's, and of
    ours against SDPA's; the logits are made chunk by chunk (bounded memory), ours and SDPA's by the bf16 lm_head."""
    import torch

    W32 = model.lm_head.weight.float()
    B, N, _ = ref_hidden.shape
    chunk = max(1, 2**27 // (B * W32.shape[0]))
    sq = {k: 0.0 for k in ("ours", "sdpa", "ref", "ours_sdpa", "sdpa_norm")}
    finite = True
    with torch.no_grad():
        for s in range(0, N, chunk):
            ref = ref_hidden[:, s:s + chunk] @ W32.T
            lg = {k: model.lm_head(h[:, s:s + chunk]).float() for k, h in hidden.items()}
            finite &= all(bool(torch.isfinite(x).all()) for x in lg.values())
            sq["ref"] += float(ref.double().pow(2).sum())
            for k in hidden:
                sq[k] += float((lg[k] - ref).double().pow(2).sum())
            sq["sdpa_norm"] += float(lg["sdpa"].double().pow(2).sum())
            if "ours" in lg:
                sq["ours_sdpa"] += float((lg["ours"] - lg["sdpa"]).double().pow(2).sum())
    if not finite:
        return {"ours": math.inf, "sdpa": math.inf, "ours_sdpa": math.inf}
    out = {k: math.sqrt(sq[k] / sq["ref"]) for k in hidden}
    if "ours" in hidden:
        out["ours_sdpa"] = math.sqrt(sq["ours_sdpa"] / sq["sdpa_norm"])     # ||ours - sdpa|| / ||sdpa||
    return out


# ---- timing ------------------------------------------------------------------------------------------------------

class Clocks:
    """The GPU's SM and memory clocks, power and temperature now: pynvml when importable, else nvidia-smi; None
    values without a GPU or with --no-clocks."""

    def __init__(self, enabled: bool):
        self.nvml = self.handle = None
        self.enabled = enabled
        if not enabled:
            return
        try:
            import pynvml
            pynvml.nvmlInit()
            index = int((os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0])
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:
            self.nvml = None

    def read(self) -> dict:
        empty = dict(sm_mhz=None, mem_mhz=None, power_w=None, temp_c=None)
        if not self.enabled:
            return empty
        if self.nvml is not None:
            n, h = self.nvml, self.handle
            try:
                return dict(sm_mhz=n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM),
                            mem_mhz=n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM),
                            power_w=n.nvmlDeviceGetPowerUsage(h) / 1000.0,
                            temp_c=n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU))
            except Exception:
                return empty
        index = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
        try:
            out = subprocess.run(["nvidia-smi", f"--id={index}", "--format=csv,noheader,nounits",
                                  "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu"],
                                 capture_output=True, text=True, timeout=10).stdout.strip().split(",")
            return dict(zip(("sm_mhz", "mem_mhz", "power_w", "temp_c"), (float(x) for x in out)))
        except Exception:
            return empty


def sample_ms(fn, cuda: bool) -> float:
    """One timed call: CUDA events around it on the GPU (host time enters where the GPU waits for it), wall clock
    on the CPU."""
    import torch

    if not cuda:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def bench_ms(fn, cuda: bool) -> list:
    """Many timed calls of a short function: triton.testing.do_bench on the GPU (L2 flushed, CUDA events), three
    wall-clock calls on the CPU."""
    if not cuda:
        fn()
        return [sample_ms(fn, False) for _ in range(3)]
    from triton.testing import do_bench
    return list(do_bench(fn, warmup=25, rep=100, return_mode="all"))


def stats(ms: list) -> dict:
    q = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
    return dict(median=statistics.median(ms), q25=q[0], q75=q[2], min=min(ms))


def prefill_calls(model, ids, names: dict, mode: str, warmup: int, cuda: bool) -> dict:
    """impl -> (prepare, call): prepare (untimed) selects the impl, call runs one prefill with it: eager, or a CUDA
    graph's replay (captured after warmup on a side stream; the graphs share one memory pool and are replayed in
    the order captured, ours then SDPA, which alternate sample by sample)."""
    import torch

    kwargs = dict(input_ids=ids, use_cache=False, logits_to_keep=1)
    calls = {}
    if mode == "eager":
        def call():
            with torch.no_grad():
                model(**kwargs)
        for impl, name in names.items():
            prepare = lambda name=name: model.set_attn_implementation(name)      # noqa: E731
            prepare()
            for _ in range(warmup):
                call()
            calls[impl] = (prepare, call)
        return calls
    kwargs["attention_mask"] = {"full_attention": None}
    pool = torch.cuda.graph_pool_handle()
    for impl, name in names.items():
        model.set_attn_implementation(name)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(max(1, warmup)):
                model(**kwargs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool), torch.no_grad():
            model(**kwargs)
        graph.replay()
        calls[impl] = (lambda: None, graph.replay)
    torch.cuda.synchronize()
    return calls


def record_qkv(model, ids):
    """Layer 0's q, k, v as transformers hands them to the attention function (shapes, strides), and the module."""
    import torch
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    got = {}

    class Recorded(Exception):
        pass

    def recorder(module, query, key, value, attention_mask, **kw):
        got.update(module=module, q=query, k=key, v=value, scaling=kw.get("scaling"))
        raise Recorded                      # layer 0's are all we need: the rest of the forward is not run

    AttentionInterface.register("fa2_stages_record", recorder)
    AttentionMaskInterface.register("fa2_stages_record", sdpa_mask)
    model.set_attn_implementation("fa2_stages_record")
    try:
        with torch.no_grad():
            model.model(input_ids=ids, use_cache=False)
    except Recorded:
        pass
    assert got["module"].layer_idx == 0 and got["q"].shape[-2] == ids.shape[1]
    return got


# ---- the run -----------------------------------------------------------------------------------------------------

def point_key(row: dict) -> tuple:
    """The point (model, layers, B, N) a row of either file belongs to, as text (a resumed row is read as text)."""
    return tuple(str(row[k]) for k in POINT)


class Writer:
    """The two partial files, resumed as the module says: `done` holds the points already finished (skip them);
    `resumed` says whether any row was kept (env.json is then kept too)."""

    def __init__(self, out: Path, origin: dict):
        from pipeline import partial_csv

        out.mkdir(parents=True, exist_ok=True)
        self.final, self.path = out / "qwen3_e2e.csv", out / "qwen3_e2e.partial.csv"
        self.samples_final, self.samples_path = out / "samples.csv", out / "samples.partial.csv"
        rows = partial_csv.resume(self.path, COLUMNS, "qwen3_e2e.py", origin)
        samples = partial_csv.resume(self.samples_path, SAMPLE_COLUMNS, "qwen3_e2e.py", origin)
        self.done = {point_key(r) for r in rows if r["metric"] == POINT_DONE}
        for path, columns, kept, what in ((self.path, COLUMNS, rows, "rows"),
                                          (self.samples_path, SAMPLE_COLUMNS, samples, "samples")):
            keep = [r for r in kept if point_key(r) in self.done]
            if len(keep) != len(kept):
                log(f"qwen3_e2e: {path}: dropped {len(kept) - len(keep)} {what} of unfinished points "
                    f"({', '.join(sorted({'/'.join(point_key(r)) for r in kept if point_key(r) not in self.done}))}): "
                    f"measured again")
                partial_csv.rewrite(path, columns, keep)
        self.resumed = bool(self.done)
        if self.done:
            log(f"qwen3_e2e: resuming {self.path}: {len(self.done)} point(s) finished, skipped")
        self.f = open(self.path, "a", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=COLUMNS)
        self.sf = open(self.samples_path, "a", newline="")
        self.sw = csv.DictWriter(self.sf, fieldnames=SAMPLE_COLUMNS)

    def row(self, base: dict, impl: str, mode: str, metric: str, value, unit: str = "", n: int = 1,
            status: str = "ok", note: str = "") -> None:
        self.w.writerow({**base, "impl": impl, "mode": mode, "metric": metric, "value": value, "unit": unit, "n": n,
                         "status": status, "note": note})
        self.f.flush()

    def sample(self, row: dict) -> None:
        self.sw.writerow(row)
        self.sf.flush()

    def point_done(self, base: dict) -> None:
        """The marker of a finished point, written once all its rows and samples are (so a resume keeps it)."""
        self.sf.flush()
        self.row(base, "", "", POINT_DONE, "")
        self.done.add(point_key(base))

    def close(self) -> None:
        """Every point done: qwen3_e2e.csv is the partial file's rows less the markers, samples.csv its samples."""
        from pipeline import partial_csv

        self.f.close()
        self.sf.close()
        rows = partial_csv.read_rows(self.path, COLUMNS, "qwen3_e2e.py")
        partial_csv.rewrite(self.path, COLUMNS, [r for r in rows if r["metric"] != POINT_DONE])
        partial_csv.promote(self.path, self.final)
        partial_csv.promote(self.samples_path, self.samples_final)


def measure_one(model, name, layers, layers_full, B, N, a, w: Writer, clocks: Clocks, ours_name: str) -> None:
    import torch

    from kernels import attention_op
    from kernels.accuracy import PYTORCH_FACTOR, UNIT_ROUNDOFF
    from kernels.hf import attention_forward
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    device = next(model.parameters()).device
    cuda = device.type == "cuda"
    dtype = next(model.parameters()).dtype
    base = dict(model=name, layers=layers, layers_full=layers_full, batch=B, N=N, stage=a.stage)
    g = torch.Generator(device="cpu").manual_seed(a.seed + 1000 * B + N)
    ids = torch.randint(0, model.config.vocab_size, (B, N), generator=g).to(device)

    # the check
    t0 = time.time()
    hidden = {"sdpa": final_hidden(model, ids, "sdpa")}
    status, note = "ok", ""
    try:
        hidden["ours"] = final_hidden(model, ids, ours_name)
    except ValueError as err:              # a refusal names its reason: recorded, never timed
        status, note = "refused", str(err)
    err = logit_errors(model, hidden, reference_hidden(model, ids))
    del hidden
    tol = PYTORCH_FACTOR * max(err["sdpa"], UNIT_ROUNDOFF[dtype] / 4)
    w.row(base, "sdpa", "check", "rel_error_vs_fp32", err["sdpa"])
    if status == "ok":
        ok = err["ours"] <= tol
        status = "ok" if ok else "wrong"
        w.row(base, "ours", "check", "rel_error_vs_fp32", err["ours"], status=status)
        w.row(base, "ours", "check", "rel_error_vs_sdpa", err["ours_sdpa"], status=status)
        w.row(base, "ours", "check", "tolerance", tol, status=status,
              note=f"{PYTORCH_FACTOR} x max(SDPA's error vs float32, u/4)")
    w.row(base, "ours", "check", "check_ok", int(status == "ok"), status=status, note=note[:300])
    log(f"  check {time.time() - t0:.1f}s: ours {err.get('ours', float('nan')):.3g}, SDPA {err['sdpa']:.3g} vs "
        f"float32 (bound {tol:.3g}), ours vs SDPA {err.get('ours_sdpa', float('nan')):.3g}: {status}")
    names = {"ours": ours_name, "sdpa": "sdpa"} if status == "ok" else {"sdpa": "sdpa"}

    # prefill, end to end
    modes = ["eager"] + (["graph"] if cuda and a.graphs != "off" else [])
    prefill_median = {}
    for mode in modes:
        try:
            calls = prefill_calls(model, ids, names, mode, a.warmup, cuda)
        except Exception as exc:           # capture failed: said, and eager stands alone
            if a.graphs == "on":
                raise
            w.row(base, "all", mode, "prefill_ms_median", "", status="not_captured", note=repr(exc)[:300])
            log(f"  {mode}: not captured: {exc!r}"[:300])
            continue
        ms = {impl: [] for impl in calls}
        for r in range(a.repeats):
            order = list(calls) if r % 2 == 0 else list(calls)[::-1]
            for impl in order:
                prepare, call = calls[impl]
                prepare()
                t = sample_ms(call, cuda)
                ms[impl].append(t)
                w.sample(dict(model=name, layers=layers, batch=B, N=N, impl=impl, mode=mode, sample=r, ms=t,
                              **clocks.read()))
        del calls
        for impl, v in ms.items():
            s = stats(v)
            prefill_median[impl, mode] = s["median"]
            for k in ("median", "q25", "q75", "min"):
                w.row(base, impl, mode, f"prefill_ms_{k}", s[k], "ms", len(v))
            w.row(base, impl, mode, "prefill_per_layer_ms", s["median"] / layers, "ms", len(v),
                  note="the prefill median / layers (embedding, final norm and 1 position's logits included)")
            w.row(base, impl, mode, "tokens_per_s", B * N / (s["median"] / 1e3), "1/s", len(v))
        log(f"  prefill {mode}: " + ", ".join(f"{impl} {stats(v)['median']:.3f} ms" for impl, v in ms.items()))
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()

    # attention alone, on layer 0's own q, k, v
    rec = record_qkv(model, ids)
    q, k, v, mod, scaling = rec["q"], rec["k"], rec["v"], rec["module"], rec["scaling"]
    qc, kc, vc = q.contiguous(), k.contiguous(), v.contiguous()
    fns = {("ours", "attn_fn"): lambda: attention_forward(mod, q, k, v, None, 0.0, scaling, stage=a.stage),
           ("sdpa", "attn_fn"): lambda: sdpa_attention_forward(mod, q, k, v, None, dropout=0.0, scaling=scaling),
           ("ours", "attn_op"): lambda: attention_op(qc, kc, vc, causal=True, stage=a.stage, sm_scale=scaling),
           ("sdpa", "attn_op"): lambda: torch.nn.functional.scaled_dot_product_attention(
               qc, kc, vc, is_causal=True, scale=scaling, enable_gqa=True)}
    with torch.no_grad():
        for (impl, what), fn in fns.items():
            if impl not in names:
                continue
            before = clocks.read()
            s = stats(bench_ms(fn, cuda))
            after = clocks.read()
            clock_note = (f"SM clock {before['sm_mhz']} -> {after['sm_mhz']} MHz, power {before['power_w']} -> "
                          f"{after['power_w']} W" if clocks.enabled else "")
            for k_ in ("median", "q25", "q75"):
                w.row(base, impl, "bench", f"{what}_ms_{k_}", s[k_], "ms", note=clock_note if k_ == "median" else "")
            if what == "attn_fn":
                for mode in modes:
                    if (impl, mode) in prefill_median:
                        w.row(base, impl, mode, "attn_share", layers * s["median"] / prefill_median[impl, mode],
                              note="layers x the attention function's median / the prefill median")
            log(f"  {what} {impl}: {s['median']:.3f} ms")


def parse_layers(items: list) -> dict:
    """--layers 2 (every model) or 32B=2 8B=4 (per model) -> {model: layers or None}."""
    out = {}
    for it in items or []:
        if "=" in it:
            m, n = it.split("=", 1)
            out[m] = int(n)
        else:
            out["*"] = int(it)
    return out


LOCK = "qwen3_e2e.lock"


def run(a) -> int:
    """The measurement under a.out/qwen3_e2e.lock (pipeline.folder_lock): a second run on the same folder stops at
    once, before it touches the first one's partial files."""
    from pipeline import folder_lock

    a.out.mkdir(parents=True, exist_ok=True)
    with folder_lock.held(a.out / LOCK, "qwen3_e2e.py"):
        return _run(a)


def plan_origin(a) -> dict:
    """This run's origin (pipeline.origin): its plan is every option that changes what is measured."""
    from pipeline import origin

    plan = {k: getattr(a, k) for k in PLAN_KEYS} | {"seed": a.seed, "self_check": a.self_check}
    return origin.current(origin.script_name(__file__), plan, PLAN_IS)


def _run(a) -> int:
    import torch

    import kernels.hf as hf
    from kernels.stages import get_stage

    get_stage(a.stage)
    cuda = not a.self_check
    if cuda and not torch.cuda.is_available():
        log("qwen3_e2e: no CUDA GPU here; --dry-run checks the layouts, --self-check runs on the CPU")
        return 2
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float16)
    ours_name = hf.register(a.stage)
    layer_opts = parse_layers(a.layers)
    w = Writer(a.out, plan_origin(a))
    clocks = Clocks(cuda and not a.no_clocks)
    env_path = a.out / "env.json"
    if not w.resumed:
        env_path.unlink(missing_ok=True)    # a fresh run: nothing of an earlier one's env.json is kept
    env = {}
    if cuda:
        from pipeline import gpu_env
        import transformers
        env = gpu_env.start(env_path, resume=w.resumed, argv=sys.argv, transformers=transformers.__version__,
                            stage=a.stage,
                            attn_implementation=ours_name, models={m: {**COMMON, **MODELS[m]} for m in a.models},
                            clocks="pynvml" if clocks.nvml else ("nvidia-smi" if clocks.enabled else None))
    t0 = time.time()
    for name in a.models:
        full = (TINY if name == "tiny" else MODELS[name])["num_hidden_layers"]
        layers = layer_opts.get(name, layer_opts.get("*")) or full
        log(f"qwen3_e2e: Qwen3-{name}, {layers} of {full} layers, random weights in {dtype} on {device}")
        model = build(name, layers, device, dtype, a.seed)
        for B in a.batch:
            for N in a.N:
                base = dict(model=name, layers=layers, layers_full=full, batch=B, N=N, stage=a.stage)
                if point_key(base) in w.done:
                    log(f"[{time.time() - t0:6.0f}s] {name} x{layers} B={B} N={N}: finished before the resume, skipped")
                    continue
                log(f"[{time.time() - t0:6.0f}s] {name} x{layers} B={B} N={N}")
                try:
                    measure_one(model, name, layers, full, B, N, a, w, clocks, ours_name)
                    w.point_done(base)
                except torch.OutOfMemoryError as exc:
                    w.row(base, "", "", "status", "", status="oom", note=str(exc)[:300])   # no marker: retried
                    log(f"  out of memory: {str(exc)[:200]}")
                if cuda:
                    torch.cuda.empty_cache()
        del model
        if cuda:
            torch.cuda.empty_cache()
    w.close()
    if cuda:
        from pipeline import gpu_env
        gpu_env.finish(env_path, env)
    else:
        env_path.write_text(json.dumps({"self_check": True, "torch": torch.__version__}, indent=2) + "\n")
    log(f"qwen3_e2e: wrote {w.final} in {time.time() - t0:.0f}s")
    return 0


def dry_run(a) -> int:
    """The layouts against the published parameter counts (models built on the meta device), and the plan."""
    import torch

    bad = 0
    for name in MODELS:
        config = qwen3_config(name)
        with torch.device("meta"):
            from transformers import Qwen3ForCausalLM
            model = Qwen3ForCausalLM._from_config(config, dtype=torch.bfloat16)
        n = hub_count(model, config)
        ok = n == HUB_PARAMETERS[name]
        bad += not ok
        layer = sum(p.numel() for p in model.model.layers[0].parameters())
        log(f"Qwen3-{name}: {n:,} parameters ({'=' if ok else '!='} the hub's {HUB_PARAMETERS[name]:,}); "
            f"{config.num_hidden_layers} layers of {layer:,}; H={config.num_attention_heads}, "
            f"H_kv={config.num_key_value_heads}, D={config.head_dim}; "
            f"{2 * sum(p.numel() for p in model.parameters()) / 2**30:.1f} GiB of weights in bf16")
    layer_opts = parse_layers(a.layers)
    for name in a.models:
        full = MODELS[name]["num_hidden_layers"] if name in MODELS else TINY["num_hidden_layers"]
        layers = layer_opts.get(name, layer_opts.get("*")) or full
        log(f"plan: Qwen3-{name} with {layers} of {full} layers, B in {a.batch}, N in {a.N}, ours = {a.stage} "
            f"against SDPA; {a.repeats} samples each, graphs {a.graphs}")
    return 1 if bad else 0


PLAN_KEYS = ("models", "N", "batch", "layers", "stage", "repeats", "warmup", "graphs")


def plan_defaults(path: Path) -> dict:
    """The plan's qwen3_e2e section as this script's option defaults."""
    from pipeline import plan

    section = plan.load_config(path).get("qwen3_e2e") or {}
    unknown = sorted(set(section) - set(PLAN_KEYS))
    if unknown:
        raise ValueError(f"{path}: plan.qwen3_e2e has unknown key(s) {unknown}; the keys are {list(PLAN_KEYS)}")
    out = dict(section)
    layers = out.get("layers")
    if isinstance(layers, dict):
        out["layers"] = [f"{m}={n}" for m, n in layers.items()]
    elif layers is not None:
        out["layers"] = [str(layers)]
    if isinstance(out.get("graphs"), bool):    # YAML reads an unquoted on / off as true / false
        out["graphs"] = "on" if out["graphs"] else "off"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=[*MODELS, "tiny"])
    ap.add_argument("--N", nargs="+", type=int, default=[1024, 2048, 4096, 8192, 16384])
    ap.add_argument("--batch", nargs="+", type=int, default=[1, 4])
    ap.add_argument("--layers", nargs="*", default=[],
                    help="decoder layers to build: one number for every model, or MODEL=LAYERS (e.g. 32B=2); "
                         "default the published count")
    ap.add_argument("--stage", default="v13", help="our stage (kernels.STAGES), default v13")
    ap.add_argument("--repeats", type=int, default=10, help="timed prefill samples per impl and mode")
    ap.add_argument("--warmup", type=int, default=2, help="untimed prefills per impl and mode first")
    ap.add_argument("--graphs", choices=["auto", "on", "off"], default="auto",
                    help="also time CUDA-graph replays: auto (when capture works), on (fail otherwise), off")
    ap.add_argument("--no-clocks", action="store_true", help="do not read clocks and power per sample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="folder for qwen3_e2e.csv, samples.csv, env.json")
    ap.add_argument("--config", type=Path,
                    help="a plan (config/config.yaml, or a run's plan.yaml): its plan.qwen3_e2e section (models, N, "
                         "batch, layers as {MODEL: LAYERS}, stage, repeats, warmup, graphs) gives the defaults; "
                         "options given here override them")
    ap.add_argument("--dry-run", action="store_true", help="check the layouts and print the plan; no GPU")
    ap.add_argument("--self-check", action="store_true",
                    help="the whole measurement on the CPU (TRITON_INTERPRET=1), tiny Qwen3 in float16")
    a = ap.parse_args(argv)
    if a.config is not None:
        ap.set_defaults(**plan_defaults(a.config))
        a = ap.parse_args(argv)
        bad = sorted(set(a.models) - set(MODELS))
        if bad:
            ap.error(f"{a.config}: plan.qwen3_e2e.models has {bad}; the models are {list(MODELS)}")
    if a.dry_run:
        return dry_run(a)
    if a.out is None:
        ap.error("--out is needed (except with --dry-run)")
    if a.self_check:
        if os.environ.get("TRITON_INTERPRET") != "1":
            ap.error("--self-check runs the kernel in Triton's interpreter: set TRITON_INTERPRET=1")
        a.models, a.graphs = ["tiny"], "off"
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
