"""The exact running maximum (issue 22; kernels.flash_fwd._scaled_max and _exponent, and the same arithmetic in
kernels.gluon_fwd), checked on the GPU's arithmetic emulated exactly on the CPU, since Triton's interpreter rounds
s * qk_scale before subtracting and so never shows what the GPU does.

On the GPU a probability is exp2(fma(s, qk_scale, -m) - r): the FFMA rounds once, after the exact product and the
subtraction; m = m_i * qk_scale is the running maximum's product rounded to float32 and r = fma(m_i, qk_scale, -m)
its rounding error, which float32 holds exactly. So the largest score's exponent is r - r = 0 and every other is at
most 0: no clamp is needed, and near-ties keep their weights.

What came before, and what each test below would catch: a rounded maximum alone puts the largest score's exponent up
to half a unit in the last place of m above or below 0 (from 2^28: 16-bit probabilities overflow above, the largest
underflows below; the guards' GPU test found rows of 0 from 2^31, data/nvidia-h200/probes/guards-underflow); a
clamp at 0 with the maximum lowered one unit fixed both but weighted every score within a unit of the largest alike
(an independent attack, session 16: 0.79 from float64 where SDPA is 0.006 off).

The product of two float32 numbers is exact in float64 (48 significant bits of 53), so fma is emulated by that
exact product, the subtraction in float64 and a rounding to float32.
"""
import math
import os

import numpy as np
import pytest

from kernels import flash_fwd

F32 = np.float32
NO_SCORE = F32(flash_fwd.NO_SCORE.value)


def fma(a, b, c) -> np.ndarray:
    """fma(a, b, c) of float32 arrays as the GPU's FFMA computes it: one rounding of the exact a * b + c (an fma
    whose exact value is beyond float32's range gives +-inf, as the hardware's)."""
    with np.errstate(over="ignore", invalid="ignore"):
        exact = np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)
        return exact.astype(F32)


def scaled_max(m_i, qk_scale):
    """kernels.flash_fwd._scaled_max, step for step in float32."""
    with np.errstate(over="ignore", invalid="ignore"):
        product = (m_i * qk_scale).astype(F32)
    m = np.maximum(product, NO_SCORE).astype(F32)
    r = np.where(np.abs(product) < np.inf, fma(m_i, qk_scale, -m), F32(0)).astype(F32)
    return m, r


def exponent(s, m, r, qk_scale):
    """kernels.flash_fwd._exponent: fma(s, qk_scale, -m) - r, each rounded to float32."""
    with np.errstate(invalid="ignore"):
        return (fma(s, qk_scale, -m) - r).astype(F32)


def rows_of_scores(rng, log2_max: float, sign: int, rows=4000, keys=64):
    """Rows of float32 scores, each row's largest score x qk_scale between 2^log2_max and twice it in magnitude (all
    scores positive, or all negative with sign -1), with a qk_scale not a power of two (so that the product rounds).
    Half of each row's scores lie within a few units in the last place of its largest."""
    qk_scale = F32(rng.uniform(0.05, 200.0))
    top = 2.0**log2_max * rng.uniform(1.0, 2.0, (rows, 1)) / float(qk_scale)
    spread = np.abs(rng.standard_normal((rows, keys))) * 0.01
    spread[:, : keys // 2] = rng.integers(0, 8, (rows, keys // 2)) * 2.0**-23
    scores = top * (1.0 - spread) if sign > 0 else -top * (1.0 + spread)
    return scores.astype(F32), qk_scale


@pytest.mark.parametrize("log2_max", [-20, 0, 10, 24, 28, 31, 60, 100, 127])
def test_every_exponent_is_at_most_zero_and_the_largest_is_zero(log2_max):
    """At every magnitude, every score's exponent is at most 0 (no 16-bit probability above 1) and the largest
    score's is exactly 0 (probability 1). With the rounded maximum alone both fail from 2^28 on in some rows (the
    test's power to fail)."""
    rng = np.random.default_rng(log2_max + 200)
    for sign in (1, -1):
        scores, qk_scale = rows_of_scores(rng, log2_max, sign)
        m_i = scores.max(axis=1)
        m, r = scaled_max(m_i, qk_scale)
        x = exponent(scores, m[:, None], r[:, None], qk_scale)
        assert (x <= 0).all(), f"2^{log2_max}: an exponent above 0"
        assert (exponent(m_i, m, r, qk_scale) == 0).all(), f"2^{log2_max}: the largest score's exponent is not 0"
        rounded_only = fma(scores, qk_scale, -m[:, None])
        if log2_max >= 28:
            assert (rounded_only > 0).any() and (rounded_only.max(axis=1) < -14).any(), "test too weak"


@pytest.mark.parametrize("log2_max", [0, 24, 26, 28, 60, 127])
def test_near_ties_keep_their_weights(log2_max):
    """Each exponent is the exact (s - m_i) * qk_scale to within four units of its own last place, for scores a few
    units in the last place below the largest: their probabilities are 2^-(distance), not 1 (the clamp with a lowered
    maximum gave them all 1 from 2^24 on)."""
    rng = np.random.default_rng(log2_max + 300)
    scores, qk_scale = rows_of_scores(rng, log2_max, 1)
    m_i = scores.max(axis=1)
    m, r = scaled_max(m_i, qk_scale)
    x = exponent(scores, m[:, None], r[:, None], qk_scale).astype(np.float64)
    exact = (scores.astype(np.float64) - m_i[:, None].astype(np.float64)) * np.float64(qk_scale)
    assert (np.abs(x - exact) <= 4 * 2.0**-24 * np.abs(exact)).all()
    if log2_max >= 26:
        assert (exact < -1).any(), "no near-tie that a lowered maximum would have weighted alike: test too weak"


@pytest.mark.parametrize("qk_scale", [F32(0.01), F32(1.0), F32(1.5), F32(300.0)])
def test_the_rescale_factor_and_rows_without_a_finite_score(qk_scale):
    """alpha's exponent, fma(m_old, qk_scale, -m) - r, is at most 0 for a maximum that grew; from NO_SCORE it is
    -inf or very negative (acc and l_i are 0 there), or exactly 0 while the row still sees no finite score; scores
    of -inf get exponent -inf (probability 0), never NaN, whichever way NO_SCORE * qk_scale rounds."""
    rng = np.random.default_rng(7)
    old = rng.standard_normal(1000).astype(F32) * F32(1e6)
    new = np.maximum(old, rng.standard_normal(1000).astype(F32) * F32(1e6))
    m, r = scaled_max(new, qk_scale)
    assert (exponent(old, m, r, qk_scale) <= 0).all()
    start = np.array([NO_SCORE], F32)
    m0, r0 = scaled_max(start, qk_scale)
    assert np.isfinite(m0).all() and np.isfinite(r0).all()
    assert exponent(np.array([-np.inf], F32), m0, r0, qk_scale)[0] == -np.inf
    assert exponent(start, m0, r0, qk_scale)[0] == 0 if qk_scale <= 1 else exponent(start, m0, r0, qk_scale)[0] < -1e30
    m1, r1 = scaled_max(np.array([1.0], F32), qk_scale)
    assert np.exp2(exponent(start, m1, r1, qk_scale)[0]) == 0


def _interpreted(stage, q, k, v, scale):
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("runs the Triton kernel in the interpreter (TRITON_INTERPRET=1)")
    import torch.nn.functional as F

    from kernels import attention, reference_attention
    from kernels.accuracy import judge
    out = attention(q, k, v, causal=False, stage=stage, sm_scale=scale)
    return judge(out, reference_attention(q, k, v, causal=False, sm_scale=scale),
                 F.scaled_dot_product_attention(q, k, v, scale=scale))


@pytest.mark.parametrize("stage", ["v0", "v7", "v13", "v14", "v18"])
def test_scores_within_one_unit_of_the_maximum_keep_their_weights(stage):
    """Keys whose scores differ by 8 and 16 in log-2 units at |m| ~ 2^26 (one unit of m is 8 there): the output is
    within the judge of float64. With the lowered maximum and the clamp, keys 5 and 3 both got probability 1 (the
    output about (v5 + v3) / 2, 0.79 from float64 where SDPA is 0.006 off). Found by an independent attack (session
    16); in Triton's interpreter, which rounds the product where the GPU's FFMA does not, so the GPU's check is the
    guards' GPU test."""
    import torch
    N, D = 16, 64
    q = torch.zeros(1, 1, N, D, dtype=torch.float16)
    k = torch.zeros_like(q)
    q[..., 0], q[..., 1], k[..., 0] = 2048.0, 1.0, 2048.0      # q.k = 2^22 + k[..., 1]
    k[0, 0, 5, 1], k[0, 0, 3, 1], k[0, 0, 7, 1] = 1.0, 0.5, 0.25
    v = torch.randn(1, 1, N, D, generator=torch.Generator().manual_seed(1)).half()
    verdict = _interpreted(stage, q, k, v, 16 / math.log2(math.e))     # x scale x log2(e): about 2^26
    assert verdict["ok"], verdict
