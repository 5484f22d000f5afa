"""
Causal, grouped-query FlashAttention-2 forward in Triton, with the article's seven optimizations as switches
==========================================================================================================

One kernel family. Each optimization of the article is one compile-time switch (a ``tl.constexpr``; the grid
order is also a host-side choice), so that Triton compiles each variant with only its own code path, and any
subset of the seven changes can be built: the eight cumulative stages v0 ... v7 of ``kernels.stages`` as well
as the leave-one-out and add-one-in ablations.

The algorithm (FlashAttention-2, forward only). A program owns BLOCK_M rows of Q of one (batch, head). It walks
the keys and values BLOCK_N rows at a time and keeps, per query row, the running maximum ``m_i`` of the scaled
scores, the running sum ``l_i`` of their exponentials and the running output ``acc``, all in float32:

    s     = q @ k^T                          (tensor cores, float32 accumulate)
    m_new = max(m_i, rowmax(s) * scale)
    p     = exp(s * scale - m_new)           (one FFMA and one exponential per score)
    alpha = exp(m_i - m_new)
    l_i   = l_i * alpha + rowsum(p)
    acc   = acc * alpha + p.to(fp16/bf16) @ v
    out   = acc / l_i                        (after the last step)

Grouped-query attention: query head h reads key/value head h // (H / H_kv); K and V are never repeated.

The switches, and what the baseline does instead:

- ``Q_BLOCKS_ON_AXIS0`` (v1): grid (query blocks, batch*head). The baseline's grid is (batch*head, query blocks);
  since the GPU launches programs with axis 0 varying fastest, the baseline runs all heads of one query block
  together, and programs reading the same K/V are far apart in time.
- ``CAUSAL_SKIP`` (v2): with a causal mask, the KV loop ends at ``min(N, (start_m + 1) * BLOCK_M)``. The baseline
  walks all N keys and masks the ones above the diagonal.
- ``TWO_PHASE`` (v3): the KV blocks that need no mask run in a loop without one; the blocks on the diagonal
  (causal) or past the end of the sequence (N not a multiple of BLOCK_N) run in a second, masked loop. Without it,
  every step computes and applies the mask. (The article's STAGE 1 / STAGE 2 / STAGE 3; ours also handles a
  ragged last block and BLOCK_N != BLOCK_M, which the article's code assumes away.)
- ``NO_EXTRA_CASTS`` (v4): the article only names the removal of "redundant conversions". We define the
  baseline's as a round trip of the probability tile: P is rounded to the 16-bit input type for the P @ V product
  (needed) and then converted back to float32 to take the row sum (redundant: the float32 P is there). This
  costs one conversion per score per step and keeps two copies of the tile alive. It changes the result only by
  rounding (the row sum then matches the rounded P that was multiplied), so every stage passes one tolerance.
- ``WARP_SPECIALIZE`` (v5): ``tl.range(..., warp_specialize=True)`` on both KV loops.
- ``USE_EXP2`` (v6): the host folds log2(e) into the scale and the kernel calls ``tl.math.exp2``; the baseline
  calls ``tl.exp``, which Triton lowers to a multiplication by log2(e) followed by the same ``ex2`` instruction.
- ``PRESCALE_Q`` (ours, beyond the article; claim C10): Q is multiplied by the scale once, when it is loaded (and
  rounded back to 16 bits), so the loop computes ``s - m`` instead of ``s * scale - m``. The article reports that
  this saves nothing, because Triton already fuses the multiplication and subtraction into one FFMA: it only turns
  the FFMA into an FADD.
- ``Q_IN_REGISTERS`` (ours, v15): Q is scaled once at load, as with PRESCALE_Q, but for another reason: a computed
  tensor is what Triton keeps in registers as the A operand of the q k^T warpgroup MMA (HGMMA R, R, gdesc), while
  a tile that was only loaded stays in shared memory and is read again by every step (HGMMA R, gdesc, gdesc). At
  64 query rows and BLOCK_N = 64 those reads are half the step's shared-memory traffic, and Q's buffer need not be
  kept: 64x64 tiles with 2 stages fit three programs per SM instead of two.
- ``HEAD_GROUPS`` (ours, v17): a one-dimensional grid ordered by groups of HEAD_GROUP heads (chosen on the host so
  that their keys and values fit in half the L2), and within a group by query block with the heads inner. With
  every head in one group this is heads_inner's order (v13); at long sequences the groups keep the K and V that the
  running programs read in the L2.
- ``LAZY_RESCALE`` (ours, v14): the online softmax rescales acc and l_i by exp(m_old - m_new) at every step, one
  multiplication per accumulator element (HEAD_DIM / BLOCK_N per score). With this switch the block keeps its old
  maxima, and skips the rescale, unless some row's maximum grew by more than RESCALE_THRESHOLD; the probabilities
  are then bounded by 2**8 instead of 1. After the first steps the maxima rarely grow that much, so most steps do
  no rescale (FlashAttention-4's conditional rescaling). The result is the same up to rounding.
- ``CONST_STRIDES`` (v7): the row stride is the compile-time HEAD_DIM and the column stride 1 (the host checks
  that the tensors have such rows). The batch and head strides stay run-time values. Note that Triton's JIT already
  turns an integer argument equal to 1 into a constant, so for contiguous inputs only the row stride changes.
"""
import triton
import triton.language as tl

# LAZY_RESCALE: the growth of a row's running maximum (in the exponent's units: log2 with USE_EXP2, else natural
# log) below which acc and l_i are not rescaled (FlashAttention-4's conditional rescaling; 8 = a factor 256 with exp2).
RESCALE_THRESHOLD = tl.constexpr(8.0)


@triton.jit
def _load_k(k_src, kv_b, kv_h, start_n, stride_kn, stride_kd, N,
            MASKED: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, USE_TMA: tl.constexpr,
            HOST_DESC: tl.constexpr):
    """The K^T tile (HEAD_DIM, BLOCK_N) of keys [start_n, start_n + BLOCK_N); keys past N read as zeros."""
    if USE_TMA and HOST_DESC:
        k = k_src.load([kv_b, kv_h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM).T
    elif USE_TMA:
        k = k_src.load([start_n, 0]).T
    else:
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k_ptrs = k_src + offs_n[None, :] * stride_kn + tl.arange(0, HEAD_DIM)[:, None] * stride_kd
        if MASKED:
            k = tl.load(k_ptrs, mask=offs_n[None, :] < N, other=0.0)
        else:
            k = tl.load(k_ptrs)
    return k


@triton.jit
def _load_v(v_src, kv_b, kv_h, start_n, stride_vn, stride_vd, N,
            MASKED: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, USE_TMA: tl.constexpr,
            HOST_DESC: tl.constexpr):
    """The V tile (BLOCK_N, HEAD_DIM) of keys [start_n, start_n + BLOCK_N); keys past N read as zeros."""
    if USE_TMA and HOST_DESC:
        v = v_src.load([kv_b, kv_h, start_n, 0]).reshape(BLOCK_N, HEAD_DIM)
    elif USE_TMA:
        v = v_src.load([start_n, 0])
    else:
        offs_n = start_n + tl.arange(0, BLOCK_N)
        v_ptrs = v_src + offs_n[:, None] * stride_vn + tl.arange(0, HEAD_DIM)[None, :] * stride_vd
        if MASKED:
            v = tl.load(v_ptrs, mask=offs_n[:, None] < N, other=0.0)
        else:
            v = tl.load(v_ptrs)
    return v


@triton.jit
def _softmax_pv(acc, l_i, m_i, s, v_src, kv_b, kv_h, start_n, stride_vn, stride_vd, offs_m, N, qk_scale,
                MASKED: tl.constexpr, IS_CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
                NO_EXTRA_CASTS: tl.constexpr, USE_EXP2: tl.constexpr, PRESCALE_Q: tl.constexpr,
                USE_TMA: tl.constexpr, HOST_DESC: tl.constexpr, LAZY_RESCALE: tl.constexpr):
    """One step of the online softmax on the scores s = q k^T of keys [start_n, start_n + BLOCK_N), and the
    product of its probabilities with their values, added into acc."""
    if MASKED:
        offs_n = start_n + tl.arange(0, BLOCK_N)
        keep = offs_n[None, :] < N
        if IS_CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, float("-inf"))
    if PRESCALE_Q:  # q was scaled at load
        m_new = tl.maximum(m_i, tl.max(s, 1))
    else:
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
    if LAZY_RESCALE:
        # Keep the old maxima (and skip the rescale of acc) unless some row's maximum grew by more than
        # RESCALE_THRESHOLD in log units: the probabilities are then at most 2**8 (exp2) instead of 1, which float32
        # sums and 16-bit P hold without loss. One decision for the whole block, so the branch is uniform.
        grew = tl.where(m_new > m_i + RESCALE_THRESHOLD, 1, 0)
        if tl.max(grew, 0) > 0:
            if USE_EXP2:
                alpha = tl.math.exp2(m_i - m_new)
            else:
                alpha = tl.exp(m_i - m_new)
            acc = acc * alpha[:, None]
            l_i = l_i * alpha
            m_i = m_new
        m_new = m_i
    if PRESCALE_Q:
        x = s - m_new[:, None]
    else:
        x = s * qk_scale - m_new[:, None]
    if USE_EXP2:
        p = tl.math.exp2(x)
    else:
        p = tl.exp(x)
    if not LAZY_RESCALE:
        if USE_EXP2:
            alpha = tl.math.exp2(m_i - m_new)
        else:
            alpha = tl.exp(m_i - m_new)
    v = _load_v(v_src, kv_b, kv_h, start_n, stride_vn, stride_vd, N, MASKED, BLOCK_N, HEAD_DIM, USE_TMA, HOST_DESC)
    p_lo = p.to(v.dtype)
    if LAZY_RESCALE:
        l_i = l_i + tl.sum(p, 1)     # acc and l_i were rescaled above, or not at all
    elif NO_EXTRA_CASTS:
        l_i = l_i * alpha + tl.sum(p, 1)
    else:
        l_i = l_i * alpha + tl.sum(p_lo.to(tl.float32), 1)
    if not LAZY_RESCALE:
        acc = acc * alpha[:, None]
    acc = tl.dot(p_lo, v, acc)
    return acc, l_i, m_new


@triton.jit
def _kv_steps(acc, l_i, m_i, q, k_src, v_src, kv_b, kv_h, stride_kn, stride_kd, stride_vn, stride_vd,
              offs_m, lo, hi, N, qk_scale,
              MASKED: tl.constexpr, IS_CAUSAL: tl.constexpr,
              BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
              NO_EXTRA_CASTS: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, USE_EXP2: tl.constexpr,
              PRESCALE_Q: tl.constexpr, USE_TMA: tl.constexpr, OVERLAP_QK: tl.constexpr,
              HOST_DESC: tl.constexpr, LAZY_RESCALE: tl.constexpr):
    """Steps over the key/value blocks [lo, hi), updating (acc, l_i, m_i).

    MASKED: mask keys past N and, if causal, keys after the query row. Unmasked steps load without bounds checks.
    k_src, v_src: this head's K and V, as pointers, or with USE_TMA as tensor descriptors of (N, HEAD_DIM) whose
    loads fill rows past N with zeros; with HOST_DESC, descriptors of the whole (B, H_kv, N, HEAD_DIM) tensors,
    read at batch kv_b and head kv_h.
    OVERLAP_QK: the loop is pipelined by hand: the scores of the next block (q @ k^T, an asynchronous warpgroup
    MMA on Hopper) are asked for before the softmax of the current block, so that the tensor cores work while the
    softmax runs (FlashAttention-3's intra-warpgroup overlap).
    """
    if OVERLAP_QK:
        if lo < hi:
            last = lo + (hi - lo - 1) // BLOCK_N * BLOCK_N     # the start of the last block
            s = tl.dot(q, _load_k(k_src, kv_b, kv_h, lo, stride_kn, stride_kd, N, MASKED, BLOCK_N, HEAD_DIM, USE_TMA,
                                    HOST_DESC))
            for start_n in tl.range(lo, last, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
                start_n = tl.multiple_of(start_n, BLOCK_N)
                k = _load_k(k_src, kv_b, kv_h, start_n + BLOCK_N, stride_kn, stride_kd, N, MASKED, BLOCK_N,
                            HEAD_DIM, USE_TMA, HOST_DESC)
                s_next = tl.dot(q, k)
                acc, l_i, m_i = _softmax_pv(acc, l_i, m_i, s, v_src, kv_b, kv_h, start_n, stride_vn, stride_vd, offs_m, N,
                                            qk_scale, MASKED, IS_CAUSAL, BLOCK_N, HEAD_DIM, NO_EXTRA_CASTS,
                                            USE_EXP2, PRESCALE_Q, USE_TMA, HOST_DESC, LAZY_RESCALE)
                s = s_next
            acc, l_i, m_i = _softmax_pv(acc, l_i, m_i, s, v_src, kv_b, kv_h, last, stride_vn, stride_vd, offs_m, N, qk_scale,
                                        MASKED, IS_CAUSAL, BLOCK_N, HEAD_DIM, NO_EXTRA_CASTS, USE_EXP2,
                                        PRESCALE_Q, USE_TMA, HOST_DESC, LAZY_RESCALE)
    else:
        for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
            start_n = tl.multiple_of(start_n, BLOCK_N)
            s = tl.dot(q, _load_k(k_src, kv_b, kv_h, start_n, stride_kn, stride_kd, N, MASKED, BLOCK_N, HEAD_DIM,
                                    USE_TMA, HOST_DESC))
            acc, l_i, m_i = _softmax_pv(acc, l_i, m_i, s, v_src, kv_b, kv_h, start_n, stride_vn, stride_vd, offs_m, N,
                                        qk_scale, MASKED, IS_CAUSAL, BLOCK_N, HEAD_DIM, NO_EXTRA_CASTS, USE_EXP2,
                                        PRESCALE_Q, USE_TMA, HOST_DESC, LAZY_RESCALE)
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
              LAZY_RESCALE: tl.constexpr, Q_IN_REGISTERS: tl.constexpr, HEAD_GROUPS: tl.constexpr):
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
    elif Q_BLOCKS_ON_AXIS0:
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
        q = Q.load([kv_b, off_bh % H, start_m * BLOCK_M, 0]).reshape(BLOCK_M, HEAD_DIM)
        k_src = K
        v_src = V
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
            k_src = tl.make_tensor_descriptor(k_base, shape=[N, HEAD_DIM], strides=[stride_kn, 1],
                                              block_shape=[BLOCK_N, HEAD_DIM])
            v_src = tl.make_tensor_descriptor(v_base, shape=[N, HEAD_DIM], strides=[stride_vn, 1],
                                              block_shape=[BLOCK_N, HEAD_DIM])
            q = tl.make_tensor_descriptor(q_base, shape=[N, HEAD_DIM], strides=[stride_qn, 1],
                                          block_shape=[BLOCK_M, HEAD_DIM]).load([start_m * BLOCK_M, 0])
        else:
            k_src = k_base
            v_src = v_base
            q = tl.load(q_base + offs_m[:, None] * stride_qn + offs_d[None, :] * stride_qd, mask=row_ok, other=0.0)
    if Q_IN_REGISTERS:
        # Scaled here, q is a computed tensor: Triton keeps it in registers as the A operand of the q k^T warpgroup
        # MMA, instead of reading it from shared memory at every step (the same scaling as PRESCALE_Q).
        q = (q * qk_scale).to(q.dtype)
    elif PRESCALE_Q:
        q = (q * qk_scale).to(q.dtype)
    SCALED_Q: tl.constexpr = PRESCALE_Q or Q_IN_REGISTERS

    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)

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
        acc, l_i, m_i = _kv_steps(acc, l_i, m_i, q, k_src, v_src, kv_b, kv_h, stride_kn, stride_kd, stride_vn, stride_vd,
                                  offs_m, 0, split, N, qk_scale, False, IS_CAUSAL, BLOCK_N, HEAD_DIM,
                                  NO_EXTRA_CASTS, WARP_SPECIALIZE, USE_EXP2, SCALED_Q, USE_TMA, OVERLAP_QK,
                                  HOST_DESC, LAZY_RESCALE)
        acc, l_i, m_i = _kv_steps(acc, l_i, m_i, q, k_src, v_src, kv_b, kv_h, stride_kn, stride_kd, stride_vn, stride_vd,
                                  offs_m, split, hi, N, qk_scale, True, IS_CAUSAL, BLOCK_N, HEAD_DIM,
                                  NO_EXTRA_CASTS, WARP_SPECIALIZE, USE_EXP2, SCALED_Q, USE_TMA, OVERLAP_QK,
                                  HOST_DESC, LAZY_RESCALE)
    else:
        acc, l_i, m_i = _kv_steps(acc, l_i, m_i, q, k_src, v_src, kv_b, kv_h, stride_kn, stride_kd, stride_vn, stride_vd,
                                  offs_m, 0, hi, N, qk_scale, True, IS_CAUSAL, BLOCK_N, HEAD_DIM,
                                  NO_EXTRA_CASTS, WARP_SPECIALIZE, USE_EXP2, SCALED_Q, USE_TMA, OVERLAP_QK,
                                  HOST_DESC, LAZY_RESCALE)

    out = (acc / l_i[:, None]).to(q.dtype)   # out has q's dtype (checked on the host)
    if USE_TMA and HOST_DESC:
        Out.store([kv_b, off_bh % H, start_m * BLOCK_M, 0], out.reshape(1, 1, BLOCK_M, HEAD_DIM))
    elif USE_TMA:
        tl.make_tensor_descriptor(o_base, shape=[N, HEAD_DIM], strides=[stride_on, 1],
                                  block_shape=[BLOCK_M, HEAD_DIM]).store([start_m * BLOCK_M, 0], out)
    else:
        tl.store(o_base + offs_m[:, None] * stride_on + offs_d[None, :] * stride_od, out, mask=row_ok)
