"""Our kernel inside Hugging Face `transformers`' own models, through its attention-function interface.

    import torch, kernels.hf
    from transformers import AutoModelForCausalLM, Qwen3Config

    name = kernels.hf.register(stage="v13")            # "fa2_stages_v13"; register() alone: "fa2_stages" (the device's default stage)
    model = AutoModelForCausalLM.from_config(Qwen3Config(...), attn_implementation=name, dtype=torch.bfloat16)
    model = model.cuda().eval()
    # or, on a model already built:  model.set_attn_implementation(name)
    with torch.no_grad():
        logits = model(input_ids).logits                # prefill: every layer's attention is our kernel

What transformers hands an attention function (transformers/integrations/sdpa_attention.py is the model for it):
query (B, H, N_q, D), key and value (B, H_kv, N_kv, D) with the module's `num_key_value_groups` = H / H_kv (our
kernel reads grouped heads itself, nothing is repeated), the 4-D mask or None, `dropout`, `scaling`, and the layer's
extras (`sliding_window`, `softcap`, `s_aux`, ...) as keywords; it wants back the output as (B, N_q, H, D) and the
attention weights (None here, as SDPA's).

The mask. A name that is not in transformers' `AttentionMaskInterface` gets no mask at all
(masking_utils._preprocess_mask_arguments returns None for it whatever the padding), which would make a padded
batch silently wrong. So `register` also registers the name there with transformers' own `sdpa_mask`: it returns
None exactly where SDPA itself would rely on `is_causal` (no padding, or a 2-D mask of all ones, and query length
equal to key length, not tracing: masking_utils._ignore_causal_mask_sdpa), and a 4-D mask everywhere else. A prefill
with no padding so takes our causal path with no mask built, and any mask that is built is refused here.

The kernel computes softmax(q k^T * scaling [+ the causal mask]) v over one sequence length, forward only. What it
cannot compute exactly is refused with a ValueError that names the problem and the fix (attn_implementation="sdpa"
computes all of them); nothing falls back silently:
  - attention dropout (dropout > 0: a model in training mode with config.attention_dropout > 0);
  - a backward pass (grad mode on and inputs that require grad: the kernel has no backward);
  - any mask that transformers built: padding, packed sequences, a custom 4-D mask, a mask built while tracing
    or capturing a CUDA graph (pass attention_mask={"full_attention": None} there, see below);
  - query length != key length: decoding or chunked prefill with a KV cache (generate() after its first step);
  - an active sliding window (the layer's window no longer than the keys), logit soft-capping, attention sinks
    (s_aux), a position bias, packed-sequence keywords (cu_seq_lens_q, ...), a bidirectional config
    (config.is_causal False);
  - a dtype other than float16 or bfloat16 (load the model with dtype=torch.bfloat16).
A caller that knows its batch has no padding may pass attention_mask={"full_attention": None} (the prepared-mask
dict that generate() passes) to skip transformers' mask building; that is what a CUDA-graph capture needs, since
transformers materializes the mask while a stream captures.
"""
from __future__ import annotations

import torch

from .op import attention_op
from .defaults import default_stage
from .stages import get_stage

NAME = "fa2_stages"
KERNEL_DTYPES = (torch.float16, torch.bfloat16)
# Keywords a layer passes that change the attention; each is refused when set (not None, not False).
_REFUSED_KWARGS = {
    "softcap": "logit soft-capping",
    "s_aux": "attention sinks (s_aux)",
    "position_bias": "a position bias",
    "cu_seq_lens_q": "packed sequences (cu_seq_lens_q)",
    "cu_seq_lens_k": "packed sequences (cu_seq_lens_k)",
    "max_length_q": "packed sequences (max_length_q)",
    "max_length_k": "packed sequences (max_length_k)",
}


def attention_name(stage: str | None = None) -> str:
    """The attn_implementation name of a stage: "fa2_stages" for the device's default stage (kernels.defaults),
    else "fa2_stages_<stage>"."""
    return NAME if stage is None else f"{NAME}_{get_stage(stage).name}"


def _refuse(name: str, problem: str, fix: str) -> None:
    raise ValueError(f"attn_implementation={name!r}: {problem}; {fix}, or use attn_implementation='sdpa'")


def attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: torch.Tensor | None, dropout: float = 0.0, scaling: float | None = None,
                      is_causal: bool | None = None, *, stage: str | None = None, name: str = NAME,
                      **kwargs) -> tuple[torch.Tensor, None]:
    """A transformers attention function (the signature of sdpa_attention_forward) computed by our kernel; refuses,
    naming the fix, what the kernel cannot compute exactly (see the module). stage None: the default stage of the
    query's device (kernels.defaults). Returns ((B, N, H, D), None)."""
    if dropout and dropout > 0:
        _refuse(name, f"attention dropout p={dropout} was asked for (a model in training mode with "
                      f"config.attention_dropout > 0) and the kernel has no dropout",
                "call model.eval() or set config.attention_dropout = 0")
    if torch.is_grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad):
        _refuse(name, "the inputs require grad and the kernel has no backward pass",
                "run the forward under torch.no_grad() or torch.inference_mode()")
    for kw, what in _REFUSED_KWARGS.items():
        if kwargs.get(kw) is not None and kwargs.get(kw) is not False:
            _refuse(name, f"the layer asks for {what}, which the kernel does not compute", "use a model without it")
    config = getattr(module, "config", None)
    if getattr(config, "is_causal", True) is False:
        _refuse(name, "the config is bidirectional (config.is_causal=False): the mask transformers skips for it is "
                      "not the causal one", "keep config.is_causal=True")
    n_q, n_kv = query.shape[-2], key.shape[-2]
    window = kwargs.get("sliding_window")
    if window is not None and n_kv >= window:
        _refuse(name, f"the layer has a sliding window of {window} keys and {n_kv} keys, so the mask is not the "
                      f"plain causal one", f"keep sequences shorter than {window} tokens")
    if n_q != n_kv:
        _refuse(name, f"{n_q} query tokens attend to {n_kv} keys (decoding, or a chunked prefill, with a KV "
                      f"cache): the kernel computes self-attention over one sequence length",
                "run the whole sequence at once with use_cache=False (prefill)")
    if attention_mask is not None:
        _refuse(name, f"transformers built an attention mask of shape {tuple(attention_mask.shape)} (padding, "
                      f"packed sequences, a custom mask, or a mask built while tracing or capturing a CUDA graph): "
                      f"the kernel computes only the plain causal mask",
                "pass a batch with no padding (attention_mask None or all ones; while capturing, "
                "attention_mask={'full_attention': None})")
    if query.dtype not in KERNEL_DTYPES:
        _refuse(name, f"the model runs in {query.dtype} and the kernel takes float16 or bfloat16",
                "load the model with dtype=torch.bfloat16 (or torch.float16)")
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    if stage is None:
        stage = default_stage(query.device, query)
    if get_stage(stage).switches & {"const_strides", "tma"}:
        # transformers' q, k, v are (B, N, H, D) transposed: these stages need rows of D contiguous elements.
        query, key, value = query.contiguous(), key.contiguous(), value.contiguous()
    out = attention_op(query, key, value, causal=bool(causal), stage=stage,
                       sm_scale=None if scaling is None else float(scaling))
    return out.transpose(1, 2).contiguous(), None


def register(stage: str | None = None) -> str:
    """Register a stage of our kernel with transformers (its AttentionInterface, and its AttentionMaskInterface with
    transformers' sdpa_mask, see the module) and return the attn_implementation name to give a model:

        name = kernels.hf.register("v13")
        model = AutoModelForCausalLM.from_config(config, attn_implementation=name, dtype=torch.bfloat16)
        # or: model = Qwen3ForCausalLM(config); model.set_attn_implementation(name)

    stage: a name of kernels.STAGES; None, the default, is the default stage of each call's device (kernels.defaults:
    on an sm_90 GPU the leading stage of the committed H200 runs, elsewhere kernels.FINAL) under the name
    "fa2_stages". Registering
    again is harmless (the same function under the same name)."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    name = attention_name(stage)
    st = None if stage is None else get_stage(stage).name

    def forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
        return attention_forward(module, query, key, value, attention_mask, dropout, scaling, is_causal,
                                 stage=st, name=name, **kwargs)

    forward.__name__ = forward.__qualname__ = f"{name}_attention_forward"
    forward.stage = st
    AttentionInterface.register(name, forward)
    AttentionMaskInterface.register(name, sdpa_mask)
    return name
