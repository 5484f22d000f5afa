"""Our kernel inside transformers' own Qwen3 (kernels/hf.py), on the CPU in Triton's interpreter: a tiny Qwen3 with
random weights, float16 (the interpreter computes bf16 wrongly, see kernels.inputs.check_runnable), prefill of a
batch of 2 at N = 16 and 33. The logits are judged as kernels.accuracy judges attention: against the same model in
float64, ours may be at most PYTORCH_FACTOR (2) times as far off as transformers' own SDPA model in float16 with
the same weights (floored at a quarter of float16's unit roundoff). Both models round every matmul, norm and
residual to float16, so their errors are of the same size (about 8e-4 here, ours within a few percent of SDPA's);
a wrong attention is far outside: non-causal attention gives 0.6, a 10% wrong scale 0.04 (the last is checked
below). And what the kernel cannot compute is refused, naming the fix."""
import pytest
from pathlib import Path
import torch
from transformers import AttentionInterface, AttentionMaskInterface, Qwen3Config, Qwen3ForCausalLM

import kernels.hf as hf
from kernels.accuracy import PYTORCH_FACTOR, UNIT_ROUNDOFF, relative_error

TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, vocab_size=128, max_position_embeddings=128)
DTYPE = torch.float16


def config(**over):
    return Qwen3Config(**{**TINY, **over})


@pytest.fixture(scope="module")
def weights():
    torch.manual_seed(0)
    return Qwen3ForCausalLM(config()).state_dict()


def model(weights, impl, dtype=DTYPE, **over):
    m = Qwen3ForCausalLM._from_config(config(**over), attn_implementation=impl, dtype=dtype)
    m.load_state_dict(weights)
    return m.eval()


def tokens(N, B=2, seed=1):
    return torch.randint(0, TINY["vocab_size"], (B, N), generator=torch.Generator().manual_seed(seed))


def bound(sdpa_err):
    return PYTORCH_FACTOR * max(sdpa_err, UNIT_ROUNDOFF[DTYPE] / 4)


def test_register_names_the_implementation_in_both_interfaces():
    assert hf.register() == "fa2_stages" and hf.register("v13") == "fa2_stages_v13"
    for name, stage in (("fa2_stages", None), ("fa2_stages_v13", "v13")):   # None: each call's device's default
        assert AttentionInterface()[name].stage == stage
        assert name in AttentionMaskInterface._global_mapping     # else transformers would build no mask at all
    with pytest.raises(ValueError, match="unknown stage 'v99'"):
        hf.register("v99")


@pytest.mark.parametrize("N", [16, 33])
@pytest.mark.parametrize("stage", [None, "v13", "v0"])   # FINAL; the measured default; strided q, k, v (no copy)
def test_prefill_logits_as_close_to_float64_as_sdpa(weights, stage, N, monkeypatch):
    name = hf.register(stage)
    calls = []

    def spy(q, k, v, **kw):
        calls.append((tuple(q.shape), tuple(k.shape), kw["causal"]))
        return kernels_op(q, k, v, **kw)

    kernels_op = hf.attention_op
    monkeypatch.setattr(hf, "attention_op", spy)
    ids = tokens(N)
    with torch.no_grad():
        ref = model(weights, "sdpa", torch.float64)(ids).logits
        sdpa = model(weights, "sdpa")(ids).logits
        ours = model(weights, name)(ids).logits
    # every layer's attention went through the kernel, grouped heads unrepeated, with no mask built
    assert calls == [((2, 4, N, 16), (2, 2, N, 16), True)] * TINY["num_hidden_layers"]
    assert ours.dtype == DTYPE and ours.shape == (2, N, TINY["vocab_size"])
    sdpa_err, err = relative_error(sdpa, ref), relative_error(ours, ref)
    assert 0 < sdpa_err < 5e-3          # the float16 model itself is right (a sanity check of the reference)
    assert err <= bound(sdpa_err), f"ours {err:.3g} vs float64, SDPA's {sdpa_err:.3g}: over {bound(sdpa_err):.3g}"


def test_the_bound_catches_a_wrong_attention(weights):
    """The same judge fails an attention whose scale is 10% off (any coarser error: non-causal, wrong heads, is
    further off still)."""
    def wrong(module, q, k, v, mask, dropout=0.0, scaling=None, **kw):
        return hf.attention_forward(module, q, k, v, mask, dropout, scaling * 1.1, stage="v13", **kw)

    AttentionInterface.register("fa2_stages_test_wrong_scale", wrong)
    AttentionMaskInterface.register("fa2_stages_test_wrong_scale", AttentionMaskInterface()["sdpa"])
    ids = tokens(33)
    with torch.no_grad():
        ref = model(weights, "sdpa", torch.float64)(ids).logits
        sdpa_err = relative_error(model(weights, "sdpa")(ids).logits, ref)
        err = relative_error(model(weights, "fa2_stages_test_wrong_scale")(ids).logits, ref)
    assert err > 10 * bound(sdpa_err)


def test_a_mask_of_all_ones_is_no_mask(weights):
    m, ids = model(weights, hf.register("v13")), tokens(16)
    with torch.no_grad():
        assert torch.equal(m(ids, attention_mask=torch.ones_like(ids)).logits, m(ids).logits)


def test_padding_is_refused(weights):
    m, ids = model(weights, hf.register("v13")), tokens(16)
    mask = torch.ones_like(ids)
    mask[0, :3] = 0                               # left padding of the first sequence
    with torch.no_grad(), pytest.raises(ValueError, match=r"attention mask of shape \(2, 1, 16, 16\) \(padding.*"
                                                          r"use attn_implementation='sdpa'"):
        m(ids, attention_mask=mask)


def test_decoding_with_a_kv_cache_is_refused(weights):
    m, ids = model(weights, hf.register("v13")), tokens(16)
    with torch.no_grad():
        past = m(ids, use_cache=True).past_key_values     # the prefill runs ours
        with pytest.raises(ValueError, match=r"1 query tokens attend to 17 keys \(decoding.*use_cache=False.*'sdpa'"):
            m(ids[:, -1:], past_key_values=past)
        with pytest.raises(ValueError, match="decoding"):
            m.generate(ids, max_new_tokens=2, do_sample=False)


def test_dropout_in_training_is_refused(weights):
    m = model(weights, hf.register("v13"), attention_dropout=0.1).train()
    with torch.no_grad(), pytest.raises(ValueError, match=r"dropout p=0.1 .* call model.eval\(\).*'sdpa'"):
        m(tokens(16))


def test_a_backward_pass_is_refused(weights):
    with pytest.raises(ValueError, match=r"require grad and the kernel has no backward pass.*torch.no_grad"):
        model(weights, hf.register("v13"))(tokens(16))


def test_other_dtypes_and_an_active_sliding_window_are_refused(weights):
    with torch.no_grad():
        with pytest.raises(ValueError, match=r"runs in torch.float32 .* dtype=torch.bfloat16"):
            model(weights, hf.register("v13"), torch.float32)(tokens(16))
        slide = dict(use_sliding_window=True, sliding_window=8, max_window_layers=1)   # layer 1 slides
        m = model(weights, hf.register("v13"), **slide)
        with pytest.raises(ValueError, match=r"sliding window of 8 keys and 16 keys.*shorter than 8"):
            m(tokens(16))
        short = tokens(7)                          # within the window the sliding mask is the causal one
        assert relative_error(m(short).logits, model(weights, "sdpa", **slide)(short).logits) < 5e-3


# ---- workflow/scripts/measure/qwen3_e2e.py, the GPU measurement, on the CPU --------------------------------------

def test_the_measured_layouts_have_the_published_parameter_counts():
    from steps import step
    e2e = step("measure/qwen3_e2e")
    assert e2e.main(["--dry-run"]) == 0             # each model built on the meta device, counted as the hub counts
    assert set(e2e.HUB_PARAMETERS) == set(e2e.MODELS) == {"0.6B", "8B", "32B"}


def test_a_plan_gives_the_measurement_its_defaults(tmp_path):
    from steps import step
    e2e = step("measure/qwen3_e2e")
    import yaml
    plan = tmp_path / "plan.yaml"
    whole = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "config.yaml").read_text())["plan"]

    def write(**section):   # the committed plan, its qwen3_e2e section updated (a plan file goes through the schema)
        plan.write_text(yaml.safe_dump({"plan": {**whole, "qwen3_e2e": {**whole["qwen3_e2e"], **section}}}))

    write(models=["8B", "32B"], N=[2048], layers={"32B": 2}, repeats=4)
    got = e2e.plan_defaults(plan)
    assert {k: got[k] for k in ("models", "N", "layers", "repeats")} == {"models": ["8B", "32B"], "N": [2048],
                                                                       "layers": ["32B=2"], "repeats": 4}
    write(models=["7B"])
    with pytest.raises((SystemExit, ValueError)):     # the schema's refusal, or the script's
        e2e.main(["--dry-run", "--config", str(plan)])
    write(model=["8B"])
    with pytest.raises(ValueError, match="unknown key|model"):
        e2e.plan_defaults(plan)


def test_the_float32_reference_is_the_model_in_float32(weights):
    """The measurement's reference (the decoder layers copied to float32 one at a time) is transformers' own
    forward of the whole model in float32, the float16 weights exactly (as the measurement's bf16 weights are)."""
    import copy
    from steps import step
    e2e = step("measure/qwen3_e2e")
    m16, ids = model(weights, "sdpa"), tokens(33)
    with torch.no_grad():
        want = copy.deepcopy(m16).float().model(input_ids=ids).last_hidden_state
        got = e2e.reference_hidden(m16, ids)
        assert relative_error(m16.model(input_ids=ids).last_hidden_state, want) > 1e-4   # float16 is further off
    assert got.dtype == torch.float32 and relative_error(got, want) < 1e-6


def test_the_measurement_runs_end_to_end_on_the_cpu(tmp_path):
    import csv
    from steps import step
    e2e = step("measure/qwen3_e2e")
    assert e2e.main(["--self-check", "--out", str(tmp_path), "--N", "16", "--batch", "2", "--repeats", "2",
                     "--warmup", "0"]) == 0
    rows = list(csv.DictReader(open(tmp_path / "qwen3_e2e.csv")))
    got = {(r["impl"], r["mode"], r["metric"]): r for r in rows}
    assert got["ours", "check", "check_ok"]["value"] == "1"
    assert float(got["ours", "check", "rel_error_vs_fp32"]["value"]) <= float(got["ours", "check", "tolerance"]["value"])
    for impl in ("ours", "sdpa"):
        assert float(got[impl, "eager", "prefill_ms_median"]["value"]) > 0
        assert 0 < float(got[impl, "eager", "attn_share"]["value"])
        for what in ("attn_fn", "attn_op"):
            assert float(got[impl, "bench", f"{what}_ms_median"]["value"]) > 0
    samples = list(csv.DictReader(open(tmp_path / "samples.csv")))
    assert sorted((s["impl"], s["sample"]) for s in samples) == [("ours", "0"), ("ours", "1"), ("sdpa", "0"),
                                                                 ("sdpa", "1")]
