"""
Fused attention forward (FlashAttention-2) in Triton, with one compile-time switch per optimization
==================================================================================================

One kernel family for causal, grouped-query attention. Every optimization of the article, and each of ours beyond
it, is one switch: a ``tl.constexpr`` of the kernel, or a choice of the host (a tile, a grid order, a register cap)
where the kernel needs no code of its own. Triton compiles each variant with only its own code path, so that any
subset of the switches can be built: the cumulative stages of ``kernels.STAGES`` (the article's v0 ... v7, then ours
up to v18) as well as the leave-one-out and add-one-in ablations.

The algorithm
-------------

A program owns BLOCK_M rows of Q of one (batch, head). It walks the keys and values BLOCK_N rows at a time and
keeps, per query row, the running maximum ``m_i`` of the scores, the running sum ``l_i`` of the exponentials of the
scaled scores and the running output ``acc``, all in float32. One step of this online softmax, on the scores of one
key block:

    s     = q @ k^T                          (tensor cores, float32 accumulate)
    m_new = max(m_i, rowmax(s))
    p     = exp((s - m_new) * scale)         (one FADD, one FMUL and one exponential per score)
    alpha = exp((m_i - m_new) * scale)
    l_i   = l_i * alpha + rowsum(p)
    acc   = acc * alpha + p.to(fp16/bf16) @ v
    out   = acc / l_i                        (after the last step)

Subtracting the running maximum keeps every exponential at most 1, and ``alpha`` corrects what was summed under an
older, smaller maximum; up to rounding the result is softmax(q k^T * scale) v. The maximum is taken of the scores
as they come, which max does not round, and the difference from it is taken before the scale: both roundings are
monotone, so every exponent is at most 0 and the largest score's exactly 0 with no clamp, and a near-tie's
difference (scores within a factor of 2 of each other) is exact. FlashAttention instead fuses the scale into one FFMA
with a rounded scaled maximum, fma(s, scale, -m): the largest score's exponent is then up to half a unit in the
last place of m above or below 0, which from |m| >= 2^28 (scores that large are accepted,
kernels.launcher.max_scaled_scale) overflows the 16-bit probabilities above and underflows the largest below;
clamping it, or lowering m, weights near-ties alike (issue 22). The count per score is the same (FADD and FMUL
against FFMA and a clamp), and Triton's interpreter computes exactly what the GPU does.

Neither the N x N scores nor the probabilities are ever written to memory: a step's tiles live in registers and
shared memory, and the program reads its Q once, each K and V tile once, and writes its O once. Grouped-query
attention: query head h reads key/value head h // (H / H_kv); K and V are never repeated.

Scores of -inf (keys masked, or -inf in the inputs) are guarded as FlashAttention guards them, at no cost in the
loop: ``m_i`` starts at NO_SCORE, the most negative finite float32, instead of -inf, so that ``m_new`` is finite for
a row whose scores so far are all -inf (a whole key block of them, or every key it sees), and the exponent is then
-inf (probability 0) instead of -inf - (-inf) = NaN; ``alpha`` multiplies acc = 0
and l_i = 0 when a finite score first comes (and is 0 itself unless that score is near NO_SCORE; a difference that
overflows float32 is -inf, whose exponential, 0, is the right limit: m_new is the maximum, so no difference
overflows upwards). A row that sees no finite score at all ends with l_i = 0 and acc = 0, and its output is 0, as
PyTorch's scaled_dot_product_attention gives (a score of +inf or NaN gives a NaN row, as it does there).

The four circuits
-----------------

The switches fall into four independent parts of the kernel. The loads take only the memory path's switch, the
softmax step only its own (and the memory path's, to load its V tile), and the KV loop its own, handing the others
on; ``_attn_fwd`` reads every flag and turns USE_TMA and HOST_DESC into one.

1. The schedule: which program computes which (batch*head, query block). The grid's order decides which programs
   run at the same time, and so which K and V tiles the L2 must hold together (HEAD_GROUPS, Q_BLOCKS_ON_AXIS0,
   HEAVY_FIRST). It opens ``_attn_fwd`` and yields ``off_bh`` and ``start_m``.
2. The memory path: how Q, K and V come in and O goes out. Three forms, fixed once as the constexpr ``MEMORY`` where
   ``_attn_fwd`` opens this head's tensors: tiles of pointers (POINTERS), TMA descriptors made by each program
   (PROGRAM_TMA, from USE_TMA) or TMA descriptors made on the host (HOST_TMA, from USE_TMA and HOST_DESC).
   ``_load_k`` and ``_load_v`` take ``MEMORY`` and a source in the form it names: (pointer, row stride, column
   stride), a descriptor of this head, or (descriptor of the whole tensor, batch, K/V head). CONST_STRIDES makes the
   pointer path's strides compile-time constants.
3. The loop shape: which key blocks are visited, with or without a mask, and how the loop is built (CAUSAL_SKIP and
   TWO_PHASE set the bounds in ``_attn_fwd``; WARP_SPECIALIZE and OVERLAP_QK shape the loop of ``_kv_steps``).
4. The softmax step: ``_softmax_pv``, one step of the online softmax and its product with V. The exponential is
   chosen once (``EXP``: ``tl.math.exp2`` or ``tl.exp`` by USE_EXP2); PRESCALE_Q says that Q was scaled at load;
   LAZY_RESCALE and NO_EXTRA_CASTS change how acc and l_i are updated. (Q_IN_REGISTERS, which only makes Q a
   computed tensor where ``_attn_fwd`` sets up this state, leaves the step as it is.)

The switches, stage by stage
----------------------------

Each switch below, in the order of the stage registry (``kernels.stages``), says what it changes and what the
stage before it does instead; stage v0 (the baseline) has none of them.

- ``grid_order`` (v1, ``Q_BLOCKS_ON_AXIS0``): grid (query blocks, batch*head). The baseline's grid is (batch*head,
  query blocks); since the GPU launches programs with axis 0 varying fastest, the baseline runs all heads of one
  query block together, and programs reading the same K/V are far apart in time.
- ``causal_skip`` (v2, ``CAUSAL_SKIP``): with a causal mask, the KV loop ends at ``min(N, (start_m + 1) *
  BLOCK_M)``. The baseline walks all N keys and masks the ones above the diagonal.
- ``two_phase`` (v3, ``TWO_PHASE``): the KV blocks that need no mask run in a loop without one; the blocks on the
  diagonal (causal) or past the end of the sequence (N not a multiple of BLOCK_N) run in a second, masked loop.
  Without it, every step computes and applies the mask. (The article's STAGE 1 / STAGE 2 / STAGE 3; ours also
  handles a ragged last block and BLOCK_N != BLOCK_M, which the article's code assumes away.)
- ``no_extra_casts`` (v4, ``NO_EXTRA_CASTS``): the article only names the removal of "redundant conversions". We
  define the baseline's as a round trip of the probability tile: P is rounded to the 16-bit input type for the P @ V
  product (needed) and then converted back to float32 to take the row sum (redundant: the float32 P is there). This
  costs one conversion per score per step and keeps two copies of the tile alive. It changes the result only by
  rounding (the row sum then matches the rounded P that was multiplied), so every stage passes one tolerance.
- ``warp_specialize`` (v5, ``WARP_SPECIALIZE``): ``tl.range(..., warp_specialize=True)`` on both KV loops: Triton
  splits the loop into producer warps that load and consumer warps that compute.
- ``exp2`` (v6, ``USE_EXP2``): the host folds log2(e) into the scale and the kernel calls ``tl.math.exp2``; the
  baseline calls ``tl.exp``, which Triton lowers to a multiplication by log2(e) followed by the same ``ex2``
  instruction.
- ``const_strides`` (v7, ``CONST_STRIDES``): the row stride is the compile-time HEAD_DIM and the column stride 1 (the
  host checks that the tensors have such rows). The batch and head strides stay run-time values. Note that Triton's
  JIT already turns an integer argument equal to 1 into a constant, so for contiguous inputs only the row stride
  changes. This is the article's last stage.
- ``hopper_tile`` (v8, host side): 64 query rows per warpgroup (64x64 tiles, 4 warps, 3 stages; 64x32 with 2 stages
  at D = 256), so that ``tl.dot`` becomes Hopper's warpgroup MMA (HGMMA) instead of mma.sync (HMMA), which Triton
  emits for the article's 32-row tiles. Warp specialization, which Triton refuses at this tile, is off again.
- ``tma`` (v9, ``USE_TMA``): Q, K, V and O move through TMA tensor descriptors (``tl.make_tensor_descriptor``) that
  each program makes for its head: the Tensor Memory Accelerator copies whole tiles between global and shared memory,
  fills rows past N with zeros and drops stores past N, so there is no address arithmetic and no bounds mask on the
  loads. The host has checked the 16-byte alignments.
- ``heavy_first`` (v10, ``HEAVY_FIRST``): causal work grows with the query block; the query blocks are launched in
  reverse order, the longest first, so that the short ones fill the gaps at the end instead of a long one running
  alone.
- ``host_descriptors`` (v11, ``HOST_DESC``, with USE_TMA): the TMA descriptors are made once on the host, for the
  whole (B, heads, N, HEAD_DIM) tensors, and passed as kernel parameters: no descriptor is written to global memory
  and fenced at the start of each program. The loads and stores then name the batch and head as coordinates.
- ``tuned_tiles`` (v12, host side): the tile depends on N, the fastest of a recorded tuning run at the nearest tuned
  N below (kernels/tuned_tiles.csv).
- ``heads_inner`` (v13, host side): grid axis 0 is batch*head again (grid_order off): with heavy_first, every head's
  heaviest query block starts before any lighter one, longest first over the whole grid.
- ``lazy_rescale`` (v14, ``LAZY_RESCALE``): the online softmax rescales acc and l_i by ``alpha`` at every step, one
  multiplication per accumulator element (HEAD_DIM / BLOCK_N per score). With this switch the block keeps its old
  maxima, and skips the rescale, unless some row's maximum grew by more than RESCALE_THRESHOLD; the probabilities
  are then bounded by 2**8 instead of 1. After the first steps the maxima rarely grow that much, so most steps do no
  rescale (FlashAttention-4's conditional rescaling). The result is the same up to rounding.
- ``q_in_registers`` (v15, ``Q_IN_REGISTERS``): Q is made a computed tensor at load, by an exact ``q + 0`` in its
  own 16-bit type: a computed tensor is what Triton keeps in registers as the A operand of the q k^T warpgroup MMA
  (HGMMA R, R, gdesc), while a tile that was only loaded stays in shared memory and is read again by every step
  (HGMMA R, gdesc, gdesc). At 64 query rows and BLOCK_N = 64 those reads are half the step's shared-memory traffic,
  and Q's buffer need not be kept. The softmax scale stays in the float32 scores (one FFMA per score, as in every
  other stage): Q is not scaled, and so not rounded again. (``q * 1.0`` would not do: the compiler folds it away and
  Q is read from shared memory again.) An earlier version scaled Q at load instead, prescale_q's code (PRESCALE_Q,
  below), whose 16-bit rounding of q x scale lost accuracy at large scores; the two switches now set two flags.
  lazy_rescale is off again.
- ``three_per_sm`` (v16, host side): 64x64 tiles with 2 stages and at most 168 registers per thread (Triton's
  ``maxnreg``) at every N, so that three programs (12 warps) share each SM instead of two: with Q in registers such
  a program needs 65568 B of shared memory.
- ``head_groups`` (v17, ``HEAD_GROUPS``): a one-dimensional grid ordered by groups of HEAD_GROUP heads (chosen on the
  host so that their keys and values fit in half the L2), and within a group by query block with the heads inner.
  With every head in one group this is heads_inner's order; at long sequences the groups keep the K and V that the
  running programs read in the L2.
- ``two_warpgroups`` (v18, host side): 128x64 tiles of 8 warps (two warpgroups of 64 query rows share each K/V tile
  in shared memory) with 2 stages and at most 128 registers per thread, so that two programs (16 warps) share each
  SM. Q is read from shared memory again (held in registers, this tile spills at 128): q_in_registers and
  three_per_sm are off.

Our two extensions, in no stage but available to every variant:

- ``prescale_q`` (``PRESCALE_Q``; claim C10): Q is multiplied by the scale once, when it is loaded (and rounded back
  to 16 bits), so the loop computes ``s - m`` instead of ``s * scale - m``. The article reports that this saves
  nothing, because Triton already fuses the multiplication and subtraction into one FFMA: it only turns the FFMA
  into an FADD. The 16-bit product loses accuracy as the scores grow (kernels.launcher's note at PRESCALE_SLACK);
  scaled, Q is also a computed tensor, held in registers as q_in_registers holds it.
- ``overlap_qk`` (``OVERLAP_QK``): the KV loop is pipelined by hand: the scores of the next block (q @ k^T, an
  asynchronous warpgroup MMA on Hopper) are asked for before the softmax of the current block, so that the tensor
  cores could work while the softmax runs (FlashAttention-3's intra-warpgroup overlap).

The code
--------

``_attn_fwd`` runs the four circuits in order: the schedule, the memory path's opening of this head, the softmax
step's state (Q scaled, computed or only loaded; m_i, l_i, acc), the loop bounds, the steps (``_kv_steps``, which
loads each K tile with ``_load_k`` and hands the scores to ``_softmax_pv``, which loads the V tile with
``_load_v``), and the store of O. The schedule stays in the body of ``_attn_fwd`` and the exponential is a
constexpr, not a ``@triton.jit`` helper, on purpose. Triton inlines every helper, and since it compiles with line
information, LLVM marks the boundaries of each inlined call with labels in the PTX; ptxas's register allocation and
schedule change with those labels, even where the PTX instructions are the same. The call tree above is the one
every variant's machine code was checked against, byte for byte, when the kernel was split into these circuits: a
new helper (or code moved from one helper to another) is a change of the machine code.
"""
import triton
import triton.language as tl

# The memory path's three forms (MEMORY), from USE_TMA and HOST_DESC.
POINTERS = tl.constexpr(0)      # tiles of pointers: tl.load / tl.store with bounds masks
PROGRAM_TMA = tl.constexpr(1)   # TMA descriptors of this head's (N, HEAD_DIM) matrices, made by each program
HOST_TMA = tl.constexpr(2)      # TMA descriptors of the whole (B, heads, N, HEAD_DIM) tensors, made on the host

# LAZY_RESCALE: the growth of a row's running maximum below which acc and l_i are not rescaled (FlashAttention-4's
# conditional rescaling): a factor of 2^8, 8 in the exponent's units with USE_EXP2 (log2), 8 ln 2 without (natural
# log). It bounds the exponents there, so that a probability is at most 2^8 (to float32's rounding of 8 ln 2),
# exact in 16 bits where it is the largest.
RESCALE_THRESHOLD = tl.constexpr(8.0)
RESCALE_THRESHOLD_LN = tl.constexpr(8.0 * 0.6931471805599453)

# The running maximum's start (see the module's notes on -inf scores): finite, and no finite score is below it.
NO_SCORE = tl.constexpr(-3.4028234663852886e38)     # -FLT_MAX

@triton.jit
def _exponent(s, m, qk_scale, PRESCALE_Q: tl.constexpr):
    """The exponent of s under the running maximum m of the scores: (s - m) * qk_scale, the difference taken before
    the scale (PRESCALE_Q: s - m, the scores already scaled). Both roundings are monotone, so it is at most 0
    wherever s is at most m and exactly 0 for s = m: no clamp is needed at any accepted scale, and near-ties keep
    their weights (a difference of scores within a factor of 2 of each other is exact). See the module's notes."""
    if PRESCALE_Q:
        return s - m
    return (s - m) * qk_scale


@triton.jit
def _load_k(k_src, start_n, N, MASKED: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
            MEMORY: tl.constexpr):
    """The K^T tile (HEAD_DIM, BLOCK_N) of keys [start_n, start_n + BLOCK_N); keys past N read as zeros.

    k_src is this head's K in MEMORY's form: (pointer, row stride, column stride), a descriptor of (N, HEAD_DIM),
    or (descriptor of (B, H_kv, N, HEAD_DIM), batch, K/V head). Only pointers need MASKED: a descriptor's load fills
    rows past N with zeros.
    """
    if MEMORY == HOST_TMA:
        desc, kv_b, kv_h = k_src
        k = desc.load([kv_b, kv_h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM).T
    elif MEMORY == PROGRAM_TMA:
        k = k_src.load([start_n, 0]).T
    else:
        k_base, stride_kn, stride_kd = k_src
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_ptrs = k_base + offs_n[None, :] * stride_kn + tl.arange(0, HEAD_DIM)[:, None] * stride_kd
        if MASKED:
            k = tl.load(k_ptrs, mask=offs_n[None, :] < N, other=0.0)
        else:
            k = tl.load(k_ptrs)
    return k


@triton.jit
def _load_v(v_src, start_n, N, MASKED: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
            MEMORY: tl.constexpr):
    """The V tile (BLOCK_N, HEAD_DIM) of keys [start_n, start_n + BLOCK_N); keys past N read as zeros (v_src as
    k_src of `_load_k`)."""
    if MEMORY == HOST_TMA:
        desc, kv_b, kv_h = v_src
        v = desc.load([kv_b, kv_h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
    elif MEMORY == PROGRAM_TMA:
        v = v_src.load([start_n, 0])
    else:
        v_base, stride_vn, stride_vd = v_src
        offs_n = start_n + tl.arange(0, BLOCK_N)
        v_ptrs = v_base + offs_n[:, None] * stride_vn + tl.arange(0, HEAD_DIM)[None, :] * stride_vd
        if MASKED:
            v = tl.load(v_ptrs, mask=offs_n[:, None] < N, other=0.0)
        else:
            v = tl.load(v_ptrs)
    return v


@triton.jit
def _softmax_pv(acc, l_i, m_i, s, v_src, start_n, offs_m, N, qk_scale,
                MASKED: tl.constexpr, IS_CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                MEMORY: tl.constexpr, USE_EXP2: tl.constexpr, PRESCALE_Q: tl.constexpr,
                LAZY_RESCALE: tl.constexpr, NO_EXTRA_CASTS: tl.constexpr):
    """One step of the online softmax on the scores s = q k^T of keys [start_n, start_n + BLOCK_N), and the
    product of its probabilities with their values, added into acc.

    MASKED: keys past N and, if causal, keys after the query row get probability 0. The V tile is loaded here, by
    the memory path's `_load_v`, between the probabilities and their product (this order and this call tree are the
    ones the machine code was checked against; see the module's notes on the code).
    """
    if USE_EXP2:
        # The host folded log2(e) into qk_scale: the scores are in base-2 units and ex2 is one instruction.
        EXP: tl.constexpr = tl.math.exp2
        GROWTH: tl.constexpr = RESCALE_THRESHOLD
    else:
        EXP: tl.constexpr = tl.exp
        GROWTH: tl.constexpr = RESCALE_THRESHOLD_LN
    if MASKED:
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keep = offs_n[None, :] < N
        if IS_CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, float("-inf"))
    # The running maximum is kept on the scores as they come (max does not round); `_exponent` scales the
    # difference from it (the module's notes on the exponent).
    m_new = tl.maximum(m_i, tl.max(s, 1))
    if LAZY_RESCALE:
        # Keep the old maxima (and skip the rescale of acc) unless some row's maximum grew by more than
        # RESCALE_THRESHOLD in log units: the probabilities are then at most 2**8 (exp2) instead of 1, which float32
        # sums and 16-bit P hold without loss. One decision for the whole block, so the branch is uniform.
        grew = tl.where(_exponent(m_new, m_i, qk_scale, PRESCALE_Q) > GROWTH, 1, 0)
        if tl.max(grew, 0) > 0:
            alpha = EXP(_exponent(m_i, m_new, qk_scale, PRESCALE_Q))
            acc = acc * alpha[:, None]
            l_i = l_i * alpha
            m_i = m_new
        m_new = m_i
    # At most 0 (RESCALE_THRESHOLD under LAZY_RESCALE), 0 for the row's largest score: no 16-bit probability
    # overflows at any accepted scale, the largest never underflows, and near-ties keep their weights. NaN
    # propagates (a NaN score keeps its row NaN, as in SDPA); -inf stays -inf (probability 0).
    p = EXP(_exponent(s, m_new[:, None], qk_scale, PRESCALE_Q))
    if not LAZY_RESCALE:
        alpha = EXP(_exponent(m_i, m_new, qk_scale, PRESCALE_Q))
    v = _load_v(v_src, start_n, N, MASKED, BLOCK_N, HEAD_DIM, MEMORY)
    p_lo = p.to(v.dtype)
    if LAZY_RESCALE:
        l_i = l_i + tl.sum(p, 1)     # acc and l_i were rescaled above, or not at all
    else:
        if NO_EXTRA_CASTS:
            l_i = l_i * alpha + tl.sum(p, 1)
        else:
            l_i = l_i * alpha + tl.sum(p_lo.to(tl.float32), 1)   # the row sum of P rounded to 16 bits and back
        acc = acc * alpha[:, None]
    acc = tl.dot(p_lo, v, acc)
    return acc, l_i, m_new


@triton.jit
def _kv_steps(acc, l_i, m_i, q, k_src, v_src, offs_m, lo, hi, N, qk_scale,
              MASKED: tl.constexpr, IS_CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
              MEMORY: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, OVERLAP_QK: tl.constexpr,
              USE_EXP2: tl.constexpr, PRESCALE_Q: tl.constexpr, LAZY_RESCALE: tl.constexpr,
              NO_EXTRA_CASTS: tl.constexpr):
    """Steps over the key/value blocks [lo, hi), updating (acc, l_i, m_i).

    The loop is the loop shape's (WARP_SPECIALIZE, OVERLAP_QK); MEMORY goes to the loads and the softmax step's
    switches (USE_EXP2, PRESCALE_Q, LAZY_RESCALE, NO_EXTRA_CASTS) to `_softmax_pv`. MASKED: mask keys past N and, if
    causal, keys after the query row; unmasked steps load without bounds checks.
    """
    if OVERLAP_QK:
        # Pipelined by hand: the scores of the next block are asked of the tensor cores before the softmax of the
        # current one, so that the two could overlap (FlashAttention-3's intra-warpgroup overlap).
        if lo < hi:
            last = lo + (hi - lo - 1) // BLOCK_N * BLOCK_N     # the start of the last block
            s = tl.dot(q, _load_k(k_src, lo, N, MASKED, BLOCK_N, HEAD_DIM, MEMORY))
            for start_n in tl.range(lo, last, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
                start_n = tl.multiple_of(start_n, BLOCK_N)
                k = _load_k(k_src, start_n + BLOCK_N, N, MASKED, BLOCK_N, HEAD_DIM, MEMORY)
                s_next = tl.dot(q, k)
                acc, l_i, m_i = _softmax_pv(acc, l_i, m_i, s, v_src, start_n, offs_m, N, qk_scale,
                                            MASKED, IS_CAUSAL, BLOCK_N, HEAD_DIM, MEMORY,
                                            USE_EXP2, PRESCALE_Q, LAZY_RESCALE, NO_EXTRA_CASTS)
                s = s_next
            acc, l_i, m_i = _softmax_pv(acc, l_i, m_i, s, v_src, last, offs_m, N, qk_scale,
                                        MASKED, IS_CAUSAL, BLOCK_N, HEAD_DIM, MEMORY,
                                        USE_EXP2, PRESCALE_Q, LAZY_RESCALE, NO_EXTRA_CASTS)
    else:
        for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
            start_n = tl.multiple_of(start_n, BLOCK_N)
            s = tl.dot(q, _load_k(k_src, start_n, N, MASKED, BLOCK_N, HEAD_DIM, MEMORY))
            acc, l_i, m_i = _softmax_pv(acc, l_i, m_i, s, v_src, start_n, offs_m, N, qk_scale,
                                        MASKED, IS_CAUSAL, BLOCK_N, HEAD_DIM, MEMORY,
                                        USE_EXP2, PRESCALE_Q, LAZY_RESCALE, NO_EXTRA_CASTS)
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(Q, K, V, Out, qk_scale,
              stride_qb, stride_qh, stride_qn, stride_qd,
              stride_kb, stride_kh, stride_kn, stride_kd,
              stride_vb, stride_vh, stride_vn, stride_vd,
              stride_ob, stride_oh, stride_on, stride_od,
              H, GROUP, N, HEAD_GROUP,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, IS_CAUSAL: tl.constexpr,
              Q_BLOCKS_ON_AXIS0: tl.constexpr, CAUSAL_SKIP: tl.constexpr, TWO_PHASE: tl.constexpr,
              NO_EXTRA_CASTS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, USE_EXP2: tl.constexpr,
              CONST_STRIDES: tl.constexpr, PRESCALE_Q: tl.constexpr, USE_TMA: tl.constexpr,
              HEAVY_FIRST: tl.constexpr, OVERLAP_QK: tl.constexpr, HOST_DESC: tl.constexpr,
              LAZY_RESCALE: tl.constexpr, HEAD_GROUPS: tl.constexpr, Q_IN_REGISTERS: tl.constexpr):
    # The schedule: this program's batch*head (off_bh) and query block (start_m).
    if HEAD_GROUPS:
        # One grid axis, in groups of HEAD_GROUP heads (the last group may be smaller); within a group by query
        # block, every head of the group at one block before the next block.
        n_blocks = tl.cdiv(N, BLOCK_M)
        pid = tl.program_id(0)
        per_group = HEAD_GROUP * n_blocks
        first = pid // per_group * HEAD_GROUP
        size = tl.minimum(HEAD_GROUP, tl.num_programs(0) // n_blocks - first)
        rank = pid % per_group
        start_m = rank // size
        off_bh = first + rank % size
    else:
        # Two grid axes, query blocks and batch*head; the GPU launches axis 0 fastest.
        if Q_BLOCKS_ON_AXIS0:
            start_m = tl.program_id(0)
            off_bh = tl.program_id(1)
            n_blocks = tl.num_programs(0)
        else:
            off_bh = tl.program_id(0)
            start_m = tl.program_id(1)
            n_blocks = tl.num_programs(1)
    if HEAVY_FIRST:
        # Causal work grows with the query block: launch the last (longest) blocks first, so that the short ones
        # fill the gaps at the end instead of a long one running alone.
        start_m = n_blocks - 1 - start_m

    # The memory path: this head's Q tile, its K and V sources for the loads, and where O goes; MEMORY names the
    # form for the rest of the kernel.
    if CONST_STRIDES:
        stride_qn = HEAD_DIM
        stride_kn = HEAD_DIM
        stride_vn = HEAD_DIM
        stride_on = HEAD_DIM
        stride_qd = 1
        stride_kd = 1
        stride_vd = 1
        stride_od = 1
    kv_b = off_bh // H                 # batch and K/V head, as descriptor coordinates (32 bits)
    kv_h = off_bh % H // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m[:, None] < N
    if USE_TMA and HOST_DESC:
        # Q, K, V and Out are descriptors of the whole (B, heads, N, HEAD_DIM) tensors, made on the host and passed
        # as kernel parameters: no descriptor is written to memory or fenced at the start of each program.
        MEMORY: tl.constexpr = HOST_TMA
        q = Q.load([kv_b, off_bh % H, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
        k_src = (K, kv_b, kv_h)
        v_src = (V, kv_b, kv_h)
    else:
        off_b = (off_bh // H).to(tl.int64)
        off_h = off_bh % H
        off_hkv = (off_h // GROUP).to(tl.int64)
        off_h = off_h.to(tl.int64)
        q_base = Q + off_b * stride_qb + off_h * stride_qh
        k_base = K + off_b * stride_kb + off_hkv * stride_kh
        v_base = V + off_b * stride_vb + off_hkv * stride_vh
        o_base = Out + off_b * stride_ob + off_h * stride_oh
        if USE_TMA:
            # Tensor descriptors of this head's (N, HEAD_DIM) matrices, made by each program: the loads are TMA
            # copies into shared memory, rows past N read as zeros, and stores past N are dropped. The host has
            # checked the 16-byte alignments.
            MEMORY: tl.constexpr = PROGRAM_TMA
            k_src = tl.make_tensor_descriptor(k_base, shape=[N, HEAD_DIM], strides=[stride_kn, 1],
                                              block_shape=[BLOCK_N, HEAD_DIM])
            v_src = tl.make_tensor_descriptor(v_base, shape=[N, HEAD_DIM], strides=[stride_vn, 1],
                                              block_shape=[BLOCK_N, HEAD_DIM])
            q = tl.make_tensor_descriptor(q_base, shape=[N, HEAD_DIM], strides=[stride_qn, 1],
                                          block_shape=[BLOCK_M, HEAD_DIM]).load([start_m * BLOCK_M, 0])
        else:
            MEMORY: tl.constexpr = POINTERS
            k_src = (k_base, stride_kn, stride_kd)
            v_src = (v_base, stride_vn, stride_vd)
            q = tl.load(q_base + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd, mask=row_ok, other=0.0)

    # The softmax step's state: Q scaled at load (prescale_q) or computed (q_in_registers), and the running
    # statistics. qk_scale is float32 on a GPU; Triton's interpreter takes a Python float below float32's smallest
    # normal number as float64, which would make the statistics float64 (on a GPU this cast is no instruction).
    qk_scale = tl.cast(qk_scale, tl.float32)
    if PRESCALE_Q:
        # The loop then subtracts the maximum from s instead of scaling s first. Scaled here, q is also a computed
        # tensor, which Triton keeps in registers as the A operand of the q k^T warpgroup MMA instead of reading it
        # from shared memory at every step.
        q = (q * qk_scale).to(q.dtype)
    if Q_IN_REGISTERS and not PRESCALE_Q:
        # A computed tensor, which Triton keeps in registers as the A operand of the q k^T warpgroup MMA, without
        # the scale (it stays in the float32 scores): q + 0 is exact in q's 16-bit type (-0 becomes +0, which no
        # product can tell apart), and the compiler keeps it (q * 1.0 it folds away: q is read from shared memory).
        q = q + 0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    m_i = tl.full([BLOCK_M], NO_SCORE, dtype=tl.float32)    # not -inf: the guard of rows without a finite score

    # The loop shape: the key blocks [0, hi), masked where they must be.
    if IS_CAUSAL and CAUSAL_SKIP:
        hi = tl.minimum(N, (start_m + 1) * BLOCK_M)
    else:
        hi = N
    if TWO_PHASE:
        if IS_CAUSAL:
            # Blocks wholly below the diagonal need no mask; the rest (the diagonal, and above it without the skip)
            # are masked.
            split = (start_m * BLOCK_M) // BLOCK_N * BLOCK_N
        else:
            # Only a ragged last block needs the mask (keys past N).
            split = N // BLOCK_N * BLOCK_N
        acc, l_i, m_i = _kv_steps(acc, l_i, m_i, q, k_src, v_src, offs_m, 0, split, N, qk_scale, False, IS_CAUSAL,
                                  BLOCK_N, HEAD_DIM, MEMORY, WARP_SPECIALIZE, OVERLAP_QK,
                                  USE_EXP2, PRESCALE_Q, LAZY_RESCALE, NO_EXTRA_CASTS)
        acc, l_i, m_i = _kv_steps(acc, l_i, m_i, q, k_src, v_src, offs_m, split, hi, N, qk_scale, True, IS_CAUSAL,
                                  BLOCK_N, HEAD_DIM, MEMORY, WARP_SPECIALIZE, OVERLAP_QK,
                                  USE_EXP2, PRESCALE_Q, LAZY_RESCALE, NO_EXTRA_CASTS)
    else:
        acc, l_i, m_i = _kv_steps(acc, l_i, m_i, q, k_src, v_src, offs_m, 0, hi, N, qk_scale, True, IS_CAUSAL,
                                  BLOCK_N, HEAD_DIM, MEMORY, WARP_SPECIALIZE, OVERLAP_QK,
                                  USE_EXP2, PRESCALE_Q, LAZY_RESCALE, NO_EXTRA_CASTS)

    # The memory path again: O goes out the way Q came in.
    # out has q's dtype (checked on the host); a row without a finite score has acc = 0 and l_i = 0: its output is 0
    out = (acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]).to(q.dtype)
    if MEMORY == HOST_TMA:
        Out.store([kv_b, off_bh % H, start_m * BLOCK_M, 0], out.reshape(1, 1, BLOCK_M, HEAD_DIM))
    elif MEMORY == PROGRAM_TMA:
        tl.make_tensor_descriptor(o_base, shape=[N, HEAD_DIM], strides=[stride_on, 1],
                                  block_shape=[BLOCK_M, HEAD_DIM]).store([start_m * BLOCK_M, 0], out)
    else:
        tl.store(o_base + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od, out, mask=row_ok)
