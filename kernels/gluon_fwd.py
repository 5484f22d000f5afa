"""
Fused attention forward (FlashAttention-2) in Gluon, with v13's schedule
=========================================================================

The same algorithm and the same schedule as stage v13 of ``kernels.flash_fwd`` (heads_inner, heavy_first,
host_descriptors, tuned_tiles), written in Triton's Gluon dialect (``triton.experimental.gluon``) instead of Triton:
the language change alone. Triton decides the layouts, the shared buffers, the software pipeline and the waits for
the kernel; Gluon leaves every one of them to the program, which says what the hardware does and in which order.
There is no warp specialization: one warpgroup (4 warps, 128 threads) does everything, as in v13 (stage v19).
The constexpr PRODUCER_WARP (stage v20, off by default) adds FlashAttention-3's first feature, a TMA producer warp
with register reallocation: see "A TMA producer warp" below. TWO_CONSUMERS (on top of PRODUCER_WARP, off by default)
adds its second, two consumer warpgroups sharing one K/V ring: see "Two consumer warpgroups". SOFTMAX_OVERLAP (on
top of TWO_CONSUMERS, off by default) adds its third, the intra-warpgroup overlap: see "The softmax under the P V
product". REGISTER_REALLOC (on SOFTMAX_OVERLAP, stage v23) gives the consumers 240 registers by putting them into one
partition, and SPLIT_CONSUMERS (on REGISTER_REALLOC, stage v24) gives them back their own partitions, keeping the
registers: see "The consumers in their own partitions, with 240 registers". PINGPONG (on SPLIT_CONSUMERS, stage v25)
makes the two consumers take turns at issuing their products: see "Ping-pong". PERSISTENT (on SPLIT_CONSUMERS,
stage v26, built with PINGPONG) gives each SM one program that loops over the tiles: see "A persistent grid".
SECTIONS (on PERSISTENT, stage v27) takes its tiles in sections of a few K/V heads: see "Sections of K/V heads".
PAIRED_CVT (on PERSISTENT, stage v30, built with v29's switches) converts the probabilities into the P V product's
16-bit operand two at a time, at the start of the step that multiplies them (``_operand``). RARE_RESCALE (stage v31)
rescales only where a row's maximum grew by more than 2^8, FUSED_EXPONENT (stage v33) computes the exponents
by one FFMA each where a warp's maxima are small (``_overlap_softmax``), and SHORT_REDUCTIONS (stage v34) reduces
each row's maximum and sum in short chains (``_row_reduce``), LANE_SUMS (stage v35) keeps each thread's
partial row sums across the steps (``_lane_sums``), and LANE_MAX (stage v36) keeps each lane's copy of its rows'
maxima, exchanged across a row's four lanes only in a step that rescales (``_quad_max``).

The algorithm
-------------

A program owns BLOCK_M rows of Q of one (batch, head) and walks the keys and values BLOCK_N rows at a time, keeping
per query row the running maximum ``m_i`` of the scores, the running sum ``l_i`` of the exponentials of the scaled
scores and the running output ``acc``, all in float32 (``kernels.flash_fwd`` gives the derivation):

    s     = q @ k^T                          (warpgroup MMA, float32 accumulate)
    m_new = max(m_i, rowmax(s))
    p     = exp2((s - m_new) * qk_scale)     (one FADD, one FMUL and one MUFU.EX2 per score)
    alpha = exp2((m_i - m_new) * qk_scale)
    l_i   = l_i * alpha + rowsum(p)
    acc   = acc * alpha + p.to(fp16/bf16) @ v
    out   = acc / l_i                        (after the last step)

``m_i`` starts at NO_SCORE, the most negative finite float32, not -inf: a row whose scores so far are all -inf
(keys of -inf in the inputs) then has a finite ``m_new``, and its probabilities are exp2(-inf) = 0 rather than
exp2(-inf - (-inf)) = NaN; a row that sees no finite score ends with l_i = 0 and acc = 0, and its output
is 0, as PyTorch's scaled_dot_product_attention gives (``kernels.flash_fwd`` guards its running maximum the same way).
The difference from the maximum is taken before the scale, so every exponent is at most 0 and the largest score's
exactly 0, with no clamp: FlashAttention's fma(s, qk_scale, -m) against a rounded scaled maximum m puts the largest
score's exponent up to half a unit in the last place of m above or below 0, which from |m| >= 2^28 overflows the
16-bit probabilities or underflows the largest (issue 22; ``kernels.flash_fwd``'s notes say more). A NaN score
keeps its row NaN, as in PyTorch.

FUSED_EXPONENT (stage v33, in the persistent kernel's consumers) takes FlashAttention's fma back where it is
harmless: in a step where every row of a warp has |m x qk_scale| < FUSED_LIMIT (2^12), the half ulp of the rounded
scaled maximum is at most 2^-13 in the exponent, and the warp takes one FFMA per score; otherwise the exponent above
(``_fused_exponent``).

The host folds log2(e) into ``qk_scale`` (softmax scale x log2(e)), so the exponential is the hardware's base-2
one and the scale costs one FMUL per score. Query head h reads key/value head
h // GROUP (grouped-query attention; K and V are never repeated).

The schedule (v13's)
--------------------

Grid (B*H, cdiv(N, BLOCK_M)). Axis 0, which the GPU launches fastest, is batch*head; axis 1 is the query block,
reversed: program_id(1) = 0 is the last query block, which under a causal mask has the most keys to visit. Every
head's heaviest block starts before any lighter one, and the short blocks fill the gaps at the end.

With a causal mask the KV loop stops at the diagonal: keys [0, min(N, (start_m + 1) * BLOCK_M)). It runs in two
loops: the blocks wholly below the diagonal without a mask, then the blocks that touch it (and a ragged last block,
N % BLOCK_N != 0) with one: keys after their query row, and keys past N, get probability 0 (with a causal mask the
first condition implies the second for every row below N). Without a causal mask the first loop takes every full
block and the second only a ragged last one.

What the hardware does
----------------------

- TMA (the Tensor Memory Accelerator) copies a whole tile between global and shared memory on its own, from a
  descriptor: the tensor's base, shape and strides, made once on the host for the whole 4-D (B, H, N, D) tensor (or
  (B, H_kv, N, D) for K and V). A tile is named by its coordinates (batch, head, row, 0) and its block is [1, 1,
  rows, D], so a tile never leaves its (batch, head): rows past N read as zeros, and a store drops them. A
  flattened (B*H*N, D) descriptor would instead read the next head's rows into the last, ragged tile, where a NaN
  or Inf would leak through 0 * Inf into this head's output. The tiles are stored in shared memory with 128-byte
  swizzling (the NVMMA layout the warpgroup MMA reads), which caps one TMA message at 128 bytes of a row: at D =
  128 Gluon splits each copy into two 64-column messages, issued by one thread of each of the first two warps.
- An mbarrier is a 64-bit counter in shared memory. ``mbarrier.expect`` tells it how many bytes a TMA load will
  bring; the copy engine counts them in, and when all have arrived the barrier completes its phase (its parity bit
  flips). ``mbarrier.wait(bar, phase)`` spins until the phase with that parity has completed. A barrier that is
  reused for every NUM_STAGES-th block therefore waits on parity (j // NUM_STAGES) & 1 for block j.
- The K and V tiles go into a ring of NUM_STAGES shared buffers each, with one barrier per buffer (K and V apart, so
  that q k^T can start before V has arrived). Step j of the KV loop issues the loads of block j + NUM_STAGES - 1
  into the buffers that block j - 1 used, as soon as the products that read them have completed: K's at the start
  of the step, before its q k^T product; V's at the same place, or, while block j - 1's P V product may still run
  (PV_IN_FLIGHT, below), right after the step's one wait. The loads run NUM_STAGES - 1 blocks ahead of the tensor
  cores. Gluon puts a CTA barrier (bar.sync) before each load, so that no warp still reads the buffer: a
  warpgroup MMA's wait tells a warp that its own part is done, not the other warps'.
- Hopper's warpgroup MMA (wgmma, HGMMA in the machine code) is issued by all 128 threads of a warpgroup together and
  runs asynchronously: ``warpgroup_mma(..., is_async=True)`` returns at once and ``warpgroup_mma_wait(n)`` waits
  (WARPGROUP.DEPBAR) until at most n of the warpgroup's products, the latest ones, are still running. The B
  operand is read from shared memory, through a descriptor of its NVMMA-swizzled layout (K^T is a transposed view
  of the K tile: no data moves); the A operand comes from shared memory (Q, for q k^T) or from registers (P, for
  P V). The accumulator lives in registers, in the MMA's own layout (NVMMADistributedLayout version 3: each warp
  owns 16 rows of every 64, each thread pairs of columns). A 128-row tile is two 64-row instructions per k-step.
- PV_IN_FLIGHT: a step's P V product is left running into the next step and waited for together with the next
  scores, so that the tensor cores go from one product to the next without waiting for the warps' loop overhead
  in between: one wait per step, as Triton's own pipeliner builds v13's loop. P and the accumulator stay in
  registers meanwhile, which a 128x64 tile at D = 128 cannot afford (it would spill): there each product is waited
  for in its own step, two waits per step.
- P goes to the P V product from registers. The scores' accumulator layout (instruction 16 x BLOCK_N x 16) and the
  A-operand layout of the P V product (DotOperandLayout of the output's accumulator, instruction 16 x HEAD_DIM x
  16, k_width 2) put the same rows and columns in the same thread, so after rounding to 16 bits the conversion is a
  renaming of registers, not a trip through shared memory. The row statistics (m_i, l_i, alpha) live in the slice
  of that layout along the columns: a row's values are held by the four threads that share it, and the row
  reductions (max, sum) are two warp shuffles.
- O leaves through shared memory (Q's buffer, free after the last q k^T product) and a TMA store; rows past N are
  dropped by the copy engine.

A TMA producer warp (PRODUCER_WARP, stage v20)
-----------------------------------------------

FlashAttention-3's first step: the loads leave the warpgroup that computes. With the constexpr PRODUCER_WARP the
kernel forks (``gl.warp_specialize``) into two partitions after issuing Q's load:

- the default partition, the consumer: the same warpgroup (4 warps) doing the same steps, products and softmax,
  and O's store, but no K or V loads. Each step hands the buffers it is done with back to the producer, by an
  arrive on a second barrier per buffer, "empty" (one arrive from one thread, after the CTA barrier that Gluon puts
  before it; the barrier's count is 1): K's buffer of block j once the scores of block j have been waited for, V's
  once its P V product has (with PV_IN_FLIGHT in step j + 1, so step j hands back V's buffer of block j - 1);
- a worker partition of one warp, the producer (``_kv_producer``): for each key block j of the program, in order,
  it waits for K's buffer j % NUM_STAGES to be empty (parity ((j // NUM_STAGES) & 1) ^ 1, which a fresh barrier
  passes at once: the first NUM_STAGES blocks need no release), tells K's "ready" barrier how many bytes to
  expect and starts the TMA copy; then the same for V. The consumer waits on the ready barriers as before.

So the loads run NUM_STAGES blocks ahead (every buffer of the ring in flight) instead of NUM_STAGES - 1, are issued
as soon as a buffer is free rather than at the next step's start, and cost the consumer no CTA barrier or TMA
issue; it pays instead one CTA barrier and one arrive per buffer released. Q's load stays with the warpgroup,
issued before the fork (it is the first thing in flight), and O's store too: both are once per program.

Registers are reallocated between the partitions (``setmaxnreg``). Hopper reallocates per warpgroup, so Triton pads
the producer warp with three idle warps into a warpgroup of its own: 8 warps, 256 threads per program. The kernel is
compiled with maxnreg = M registers per thread at launch; the producer's warpgroup gives all but 24 back
(``setmaxnreg.dec 24``) and the consumer takes them (``setmaxnreg.inc 2 M - 24``). M = 128 where the consumer's
tiles fit in 232 registers: two programs per SM, as without the producer; M = 140 (the consumer gets 256) for a
128x64 tile at D = 128, which spills below 256, and then one program runs per SM (``producer_registers``). A launch
passes the tile's maxnreg (``launch_options``); num_warps stays 4, the default partition's warps.

Without PRODUCER_WARP none of this is compiled: the kernel is v19's, instruction for instruction.

Two consumer warpgroups (TWO_CONSUMERS, on PRODUCER_WARP)
---------------------------------------------------------

FlashAttention-3's pairing: a program owns a 128-row Q tile (BLOCK_M = 128) and two consumer warpgroups share it, 64
rows each, behind one producer warp that loads each K and V block once for both. The kernel forks into three
partitions (``_consumer_pair``): consumer 0, the default partition (warps 0-3); consumer 1, a 4-warp worker; the
producer warp, a 1-warp worker, which Triton pads with three idle warps into a warpgroup: 12 warps, 384 threads.

- Each consumer is v20's consumer (``_consumer``, ``_attn_step``: the same steps, products, softmax and releases)
  of a 64-row program whose query block is m_c = 2 start_m + c: its rows, its causal diagonal, its loop bounds
  [0, n_free_c) unmasked and [n_free_c, n_total_c) masked, and its O store (64 rows, from its own half of Q's buffer,
  through a 64-row o_desc) are those of that block. Q arrives as two 64-row TMA copies on one barrier, issued before
  the fork. With a causal mask consumer 1 has the program's key range and consumer 0 the same or one 64-row block
  less (the block wholly after its rows, which it skips); without one both have the program's.
- The ring: NUM_STAGES K and V buffers as in v20, their "empty" barriers now counting 2: the producer refills a
  buffer once both consumers have released it (one arrive each, after each consumer's own 128-thread CTA barrier).
  ``_consumer_pair`` gives the parities and why the two consumers' arrives never fall into the wrong phase.
- The grid: (B*H, cdiv(N, 128)), query blocks reversed as before: half as many programs along axis 1 as with
  64-row tiles, each with two 64-row consumers, consumer 1 the heavier under a causal mask.
- Registers: none are reallocated; every warp has the 168 registers that 384 threads can have (ptxas takes 154 at
  D = 128), one program per SM. setmaxnreg would give the producer's warpgroup 24 and each consumer 240 (maxnreg
  168), but Triton's warp-specialization lowering (3.6) then holds the worker warps at 120 registers in the loop that
  dispatches them to their partitions, and ptxas, for the warpgroup MMAs of a worker partition inside that loop,
  goes by those 120 rather than the partition's 240: it serializes every warpgroup MMA of the kernel (``Potential
  Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources``, a wait
  after each HGMMA, in both consumers), with 128x64 and 128x128 tiles alike: this is v21's schedule, whose P V
  product stays in flight into the next step (with v22's overlap it does not happen: see SPLIT_CONSUMERS). (In the PTX
  edited by hand, the
  serialization goes when that loop's count is raised to 144, or when no setmaxnreg is left in the loop but the
  consumer's own.) Without reallocation ptxas keeps the MMAs asynchronous, and the tiles must fit 168 registers:
  64-row K/V blocks (a 64x64 tile per consumer, 112 registers of tiles, P V in flight as in v20's 64x64); a 64x128
  tile per consumer spills at D = 64 (8 bytes) and is serialized at D = 128.
  (One 8-warp consumer partition, the default, would keep setmaxnreg's 240 since no MMA is then in a worker, but
  Gluon's CTA barrier before each release and wait would then be a 256-thread one, stepping both warpgroups in lock.)
- Each consumer pays, per step, v20's CTA barriers (128 threads, its own barrier id) before its waits and arrives;
  the two consumers never wait for each other except through the ring (the producer refills a buffer when the slower
  one has released it), so one's softmax can run while the other's products do.

What the sm_90 build on the CPU shows (tests/test_gluon_build.py, Triton 3.6's ptxas): at D = 64 and 128, fp16 and
bf16, causal or not, with two or three stages, the kernel compiles without spills and without the serialization
warning, in 116-154 registers (D = 128: 146 non-causal, 154 causal; D = 64: 116, 120) and no setmaxnreg; each
consumer's two KV loops hold one WARPGROUP.DEPBAR per step after eight q k^T and four P V HGMMAs issued back to
back; the producer warp holds every K and V load; every "empty" barrier is initialized with a count of 2. Without
TWO_CONSUMERS the SASS is that of the source that the GPU verified as v19 and v20, instruction for instruction.
What only the GPU shows: that the kernel's output is right, that the ring's phases are as ``_consumer_pair`` argues
(no race, no deadlock), that a TMA copy of a Q half wholly past N fills zeros and counts its bytes on Q's barrier,
and that the TMA store of a half wholly past N writes nothing (the case of consumer 1 of the last program when N %
128 is in [1, 64], such as N = 130): the pipeline's verify step runs every Gluon stage on the GPU and records this
file's SHA-256 with its grid, and tests/test_stages.py fails when the file differs from the newest verified one.

The softmax under the P V product (SOFTMAX_OVERLAP, on TWO_CONSUMERS, stage v22)
----------------------------------------------------------------------------------

FlashAttention-3's intra-warpgroup overlap, in each consumer warpgroup (``_consumer``'s SOFTMAX_OVERLAP branch,
``_overlap_step``). With P V in flight (v21) a step issues q k^T of block j behind the P V product of block j - 1
and waits for both at once: the tensor cores then sit idle in this warpgroup while it computes the softmax, unless
the other consumer fills them. With the overlap, block j - 1's P V product is issued after block j's q k^T:

    step j:  issue S_j = q k_j^T;  acc *= alpha_{j-1};  issue acc += P_{j-1} v_{j-1}
             wait(1)     -> S_j  (warpgroup MMAs complete in order: the older q k^T first)
             release K_j;  softmax of S_j -> P_j, alpha_j, l_i, m_i   (while P_{j-1} v_{j-1} runs)
             wait(0)     -> acc;  release V_{j-1}

Block 0's scores and softmax come before the loop (masked: a block wholly below the diagonal loses no key to the
mask), and the last block's P V product after it. Registers: P_{j-1} (16 bits) stays live beside S_j, P_j and acc,
154 registers at D = 128, within the 168 of 384 threads. The ring's releases are those of v21 (K's of block j in step
j, V's of block j - 1 in step j, the last V's never), so ``_consumer_pair``'s argument holds as it is.

ptxas may move a warpgroup MMA wait up: here it put the wait for P V above the exponentials, so that the softmax no
longer ran under the product (as the throwaway probe of FlashAttention-3's schedule also found). Each step therefore
stores its row sums into a scratch buffer of shared memory that nothing reads (``l_buf``, 64 floats per consumer),
just before that wait: a store that needs every exponential of the step and that ptxas does not move the wait
above. It costs two shared stores and one 128-thread CTA barrier per step (Gluon's, before the store). The sm_90
build then has all 34 MUFU.EX2 of a 64x64 step between the wait for the scores (WARPGROUP.DEPBAR.LE 1) and the wait
for P V (WARPGROUP.DEPBAR.LE 0) (tests/test_gluon_build.py).

The consumers in their own partitions, with 240 registers (SPLIT_CONSUMERS, on REGISTER_REALLOC, stage v24)
---------------------------------------------------------------------------------------------------------

REGISTER_REALLOC (v23) put both consumer warpgroups into one 8-warp partition, on the premise that ptxas serializes
the warpgroup MMAs of a worker partition under setmaxnreg. That premise was checked with v21's schedule only (P V in
flight across the step's end). With v22's overlap every step waits for its own P V product (``_overlap_step``'s
wait for 0), and then ptxas keeps a worker's MMAs asynchronous at 240 registers: the sm_90 build of the three
partitions of ``_consumer_pair`` with setmaxnreg (240 for each consumer, 24 for the producer warp's warpgroup:
3 x 168 = 240 + 240 + 24, maxnreg 168 at launch) has no serialization warning, no spills, and per step of each
consumer eight q k^T and eight P V HGMMA 64x128x16 issued back to back with every MUFU.EX2 of the step between
WARPGROUP.DEPBAR.LE 1 and LE 0 (tests/test_gluon_build.py). So SPLIT_CONSUMERS is v22's three partitions with v23's
registers and 128-row K/V blocks: each consumer's scores are a 64x128 tile (64 + 64 + 32 registers of tiles with
acc at D = 128), its CTA barriers are 128-thread ones again, and the two warpgroups no longer step together.
Triton's lowering gives the default partition 256 registers at the kernel's start and the workers 120 in their
dispatch loop (``ConvertWarpSpecializeToLLVM``: (256 - 168) x 4 / 8 = 44 registers per worker thread given up,
168 - 44 = 124, rounded down to the allocation unit of 8),
then 240, 240 and 24 in the partitions; every ``setmaxnreg.inc`` it emits can be served by the decreases before it,
so none waits forever. The loop bounds are ``_consumer_pair``'s with CONSUMER_M = 64 and BLOCK_N = 128: both
consumers have the program's n_total = start_m + 1 blocks (causal), the last, the diagonal, masked; consumer 0
skips no block (cdiv(min(N, 128 start_m + 64), 128) = cdiv(min(N, 128 start_m + 128), 128)), so both wait for and
release every block, and the ring's argument holds with two or three stages.

Ping-pong (PINGPONG, on SPLIT_CONSUMERS, stage v25)
---------------------------------------------------

FlashAttention-3's warp scheduling of its two consumer warpgroups: each issues its products in its turn, so that the
tensor cores run one consumer's products while the other computes its softmax, rather than the two warpgroups'
products interleaving on the tensor cores and their softmaxes coinciding. FlashAttention-3 hands the turn over with
named barriers (bar.sync and bar.arrive on a barrier id per warpgroup); Gluon 3.6 has no named-barrier API, so the
turn goes through a pair of mbarriers in shared memory, ``turns``, one per consumer, each of count 1. A consumer's
rounds are the groups of products it issues: block 0's q k^T (round 0), step j's q k^T of block j and P V of block
j - 1 (round j), the last block's P V (round n_total): n_total + 1 rounds. In round t a consumer first does what
needs no tensor core (in a step: rescales acc by alpha, waits for K's tile of block j and V's of block j - 1), then
takes its turn (``_take_turn``: a wait on its own turn barrier), issues the round's products back to back and
passes the turn (``_pass_turn``: an arrive on the other consumer's turn barrier), before it waits for its scores.
Consumer 0 goes first. ``_consumer_pair``'s "The turns" gives the parities and why they cannot deadlock.

The cost per step and consumer: one mbarrier wait, one arrive and the 128-thread CTA barrier that Gluon puts before
the arrive; and the step's order changes: the rescale of acc and the wait for V's tile move before the q k^T
product (v24 issues q k^T first and rescales and waits for V under it), so that the turn is held only while the
products are issued. The sm_90 build (tests/test_gluon_build.py) keeps v24's registers (168 at launch, 240/240/24
after setmaxnreg), no spills, no serialized MMA, the same products and exponentials, all 66 MUFU.EX2 of a step
between DEPBAR.LE 1 and LE 0; in each of the four KV loops the turn's wait follows K's and V's and precedes the
step's D/16 + 8 HGMMA (8 + 8 at D = 128), and the pass follows them before DEPBAR.LE 1.

A persistent grid (PERSISTENT, on SPLIT_CONSUMERS, stage v26)
-------------------------------------------------------------

FlashAttention-3's tile scheduling. Without it a program owns one 128-row tile, and each tile starts cold: the
program's CTA is launched once the one before it on the SM has exited (one program per SM fits), initializes its
barriers, loads Q and waits for it and for the first K/V blocks, and at its end waits for its O store. With
PERSISTENT the grid has one program per SM (at most one per tile: ``grid(..., persistent=True, n_sms)``) and each
program loops over tiles (``_persistent_consumer``, ``_persistent_producer``):

- The order (``_tile_of``): the T = B H cdiv(N, 128) tiles heaviest first, tile t being query block n_m - 1 - t //
  (B H) of batch*head t % (B H), as v13's grid launches them; dealt out in rounds of one tile per program, a round
  in program order when even and in reverse when odd (a snake), so that with a causal mask no program takes the
  heaviest tile of every round. (The hardware, launching a program per tile, deals them dynamically, to whichever SM
  frees first; a static deal needs no atomic counter and no memset per call.)
- Q: the producer warp loads each tile's two Q halves on Q's barrier (a phase per tile: consumers wait with parity
  i & 1 for their i-th tile) once both consumers have handed Q's buffer back for the tile before (a second barrier,
  "q_empty", count 2, one arrive per consumer after its last q k^T product, i.e. before the tile's last P V product;
  the producer waits with parity (i & 1) ^ 1, which a fresh barrier passes for the first tile). The argument is the
  ring's (``_consumer_pair``) with one slot.
- The ring goes on from tile to tile: the program's key blocks are numbered across its tiles (a tile's block j is
  the ring's block base + j, base the blocks of its earlier tiles), and every buffer is now released (each consumer
  also releases the last block's V, which no load waited for without PERSISTENT). The producer issues the next
  tile's Q, then its first blocks, once Q's buffer is back: its first K/V loads wait for both consumers' last q k^T
  product of the tile before, though their ring buffers may have been free earlier, and the consumers then wait
  for the new Q's latency (one Q buffer: a second, 32 KiB more at D = 128, would let it load under the tile
  before). The turns go on likewise: a tile has n_total + 1 rounds, the same for both consumers (128-row K/V
  blocks), so round 0 of tile i is round base + i.
- O has its own buffer (a 64-row half per consumer, 32 KiB at D = 128: 192 KiB of shared memory with two stages,
  which is why PERSISTENT takes two only): a consumer stores O without waiting for the copy, and before filling the
  buffer for its next tile waits for the previous store to have read it (``store_wait(0)`` by the issuing thread,
  then the consumer's CTA barrier); its last store is waited for before the partition ends.

No deadlock: a consumer's waits are for tiles, blocks and turns in the order the producer and the other consumer
make them, and each wait follows only releases and passes that come earlier in the waiter's own sequence or in
the other partitions' (the Q release of tile i comes before the last P V round of tile i, which the next tile's Q
load does not need).

What the sm_90 build shows (tests/test_gluon_build.py): v25's registers, products and exponentials; one more mbarrier
(Q's "empty", count 2); every TMA load in the producer warp (Q's too) and O's two stores; four waits for a store to
have read shared memory (two per consumer); 32 KiB more shared memory than v25 at D = 128 (O's buffer). What only the
GPU shows: that the tiles are each computed once and right, with several tiles per program and a partial last round
(the verify grid has shapes of 288 and 336 tiles).

Sections of K/V heads (SECTIONS, on PERSISTENT, stage v27)
----------------------------------------------------------

v26's order takes a query block of every head at a time: the 132 programs running at once read the K/V of every
head, 4 N D bytes per K/V head, all B H_kv of them (128 MB at the headline layout and N = 16384, D = 128), which
the L2 (60 MB on an H200) cannot hold, so each program's K/V blocks come from DRAM (Nsight, run-22: v26 read 2.83 GB
from DRAM per call at N = 16384, cuDNN the inputs' 0.27 GB). SECTIONS takes the tiles in sections of SH query heads
(``_section_heads``: the GROUP query heads of the fewest K/V heads, a power of two dividing B H_kv, whose tiles fill
one and a half rounds of the programs; all heads where none does, which is v26's order), each section in v26's
order over its own heads (``_tile_of``). The programs running at once then read one or two sections' K/V: at the
headline layout one K/V head per section at N = 16384, two at 8192, four at 4096 and eight at 2048 (8 MB of K/V
each), and at N <= 1024 one section, v26's order. The sections go alternately lightest and heaviest first (the
last heaviest first), so that the work of a round falls and rises smoothly and the snake deal still balances it:
a section that began heavy again after the last one's light end would give some programs two heavy tiles in a row
(a Python copy of the order, tests/test_gluon_build.py, checks that every tile is dealt once and the programs'
work stays within a heaviest tile of each other). SH divides B H, so a tile's section, round and head are two
divisions of t (one more than v26's): with a third, through a partial last section, ptxas spilled one register in
the consumers at 240.

Short sequences: v19's kernel in a snake (SNAKE_SMS, stage v32's small_n_tile)
------------------------------------------------------------------------------

At N = 512 (the headline layout) the persistent kernel has one round of 128-row tiles, 128 on 132 SMs, and the
consumer whose rows are last walks four 128-key blocks alone: v19's kernel, 64-row programs, two per SM, was 8.5%
faster there in run-30. With a grid of two waves the order of the programs matters. Assuming that the hardware
starts them in launch order, axis 0 fastest, one per SM per wave (an assumption: NVIDIA does not document the
order, and only v32's timing tests it), in v13's order an SM's two programs are the i-th and the (132 + i)-th
heaviest block, up to 8 + 4 key blocks of 64 on the first SMs. SNAKE_SMS (the GPU's SMs, a
constexpr) deals every second wave in reverse (``_snake_block``; ``snake_block`` is its Python copy for the tests),
so that an SM's two programs are a heavy and a light block, 8 + 1 = 9 on every SM of the headline's two waves.
v32 (small_n_tile, kernels.stages) runs v19's kernel with it at N <= 512 (its tile there, kernels.stages'
default_tile and small_n_route) and v31's persistent kernel above. The build is v19's but for the program's block
(tests/test_gluon_build.py: the KV loops hold v19's products, exponentials, barriers and mbarrier operations in
order, within 4 instructions of v19's length).

The code
--------

``_gluon_attn_fwd`` sets the schedule, the layouts and the shared buffers, issues Q's load and the first K/V
loads, and calls ``_consumer``, which runs the unmasked then the masked steps (``_attn_step``, which issues the
look-ahead loads with ``_issue_load``) and stores O. The step counter j runs on from the first loop into the second,
so the ring and its barrier phases are shared by both. Gluon inlines every ``@gluon.jit`` helper. With
PRODUCER_WARP, ``_consumer`` is the default partition and ``_kv_producer`` the worker; with TWO_CONSUMERS
``_consumer_pair`` forks into ``_consumer`` twice (the default partition and a worker) and ``_kv_producer``, with
SPLIT_CONSUMERS reallocating registers among them. With PERSISTENT the kernel forks at once into
``_persistent_consumer`` twice, each running ``_consumer`` per tile, and ``_persistent_producer``, which loads each
tile's Q and runs ``_kv_producer`` per tile; ``_tile_count`` and ``_tile_of`` deal the tiles.

The host side: ``descriptors`` makes the four TMA descriptors with the shared layouts the kernel expects, ``grid``
the launch grid (with PERSISTENT, from the GPU's number of SMs), ``kernel_args`` every parameter of a call,
``launch_options`` its options (num_warps, and with PRODUCER_WARP alone maxnreg); ``two_consumers_tile`` the tile TWO_CONSUMERS runs at; ``compile_for`` compiles the
kernel for sm_90 without a GPU, specialized as the JIT would specialize it, for the build step to read its machine
code; ``forward`` launches it (for a first check on the GPU; the project's launcher checks the inputs).
"""
from __future__ import annotations

import hashlib
import inspect
import math
import re
import struct

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_init, warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton import knobs


LOG2E = math.log2(math.e)
NUM_WARPS = 4               # one warpgroup: the kernel's layouts assume it
SUPPORTED_BLOCK_M = (64, 128)
SUPPORTED_BLOCK_N = (64, 128)
SUPPORTED_STAGES = (2, 3)
SUPPORTED_HEAD_DIMS = (64, 128)
# PRODUCER_WARP's registers per thread. The producer warp keeps 24, the least setmaxnreg takes (it holds a few
# scalars); Triton pads it with three idle warps into a warpgroup of its own (8 warps, 256 threads in all) and gives
# the consumer warpgroup what that warpgroup frees: 2 * maxnreg - 24. The kernel's maxnreg at launch is therefore
#  - 128 where the consumer's three tiles take at most 192 registers (the tiles with PV_IN_FLIGHT): the consumer gets
#    232, and two programs share an SM (2 x 256 x 128 = 65536 registers), as without the producer;
#  - 140 for a 128x64 tile at D = 128, whose consumer needs more than 232 (v19 takes 255; at 232 ptxas spills, 13
#    stores and 56 bytes of stack, at 248 still 8 bytes): the consumer gets 256 (2 x 140 - 24), and one program
#    runs per SM (256 threads x 144, the allocation unit's multiple, > 32768), where v19 runs two.
PRODUCER_WARP_NUM_REGS = 24
PRODUCER_WARP_MAXNREG = 128
PRODUCER_WARP_MAXNREG_WIDE = 140
_PRODUCER_REGS = gl.constexpr(PRODUCER_WARP_NUM_REGS)      # the same, as the kernel reads it
# The running maximum's start (see "The algorithm"): finite, and no finite score is below it.
NO_SCORE = gl.constexpr(-3.4028234663852886e38)     # -FLT_MAX
# RARE_RESCALE: the growth of a row's maximum, in exp2 units (a factor 2^8), past which a step rescales
# (FlashAttention-4's threshold; kernels.flash_fwd.RESCALE_THRESHOLD)
RESCALE_GROWTH = gl.constexpr(8.0)


def _f32_literal(x: float) -> str:
    """A float32 as PTX writes it: 0f and its eight hexadecimal digits (8.0 -> 0f41000000)."""
    return "0f" + struct.pack(">f", x).hex().upper()


# RARE_RESCALE: _warp_grew's vote over both of a thread's rows ($2, $3), its threshold RESCALE_GROWTH; the decision
# ($0, $1) is the same for both
_GREW_LIMIT = _f32_literal(RESCALE_GROWTH.value)
WARP_GREW_ASM = gl.constexpr("{ .reg .pred g, h, a; setp.gt.f32 g, $2, " + _GREW_LIMIT + "; setp.gt.f32 h, $3, "
                             + _GREW_LIMIT + "; or.pred g, g, h; vote.sync.any.pred a, g, 0xffffffff; "
                             "selp.f32 $0, 0f3F800000, 0f00000000, a; mov.b32 $1, $0; }")

# FUSED_EXPONENT (stage v33): the largest |m x qk_scale| (in exp2 units) at which a warp takes FlashAttention's fused
# exponent fma(s, qk_scale, -m x qk_scale): its error is at most half an ulp of the rounded product, 2^-13 here, a
# relative error of at most about 2^-13 ln 2 (8.5e-5) in a probability (with the fma's own rounding, at most 2^-24
# of the exponent), about a sixth of float16's rounding of P (2^-11) and a fortieth of bfloat16's (2^-8); above it (scores of 2^12 and more in log-2 units, the guard tests' large
# scores, NO_SCORE, inf, NaN) the warp takes the exact exponent ("The exact exponent" in kernels.launcher)
FUSED_LIMIT = gl.constexpr(4096.0)
# FUSED_EXPONENT's build spills, where v31's does not: ptxas keeps a few of a consumer's scalars (thread-index
# values set before the KV loops and read after them) on the stack, stored once and loaded after the loops, at most
# this many bytes (24 at D = 128, 8 at D = 64), none inside a KV loop (tests/test_gluon_build.py, tests/test_build.py).
# It is not register pressure (the build's live registers peak at 206 of the consumers' 240, and D = 64 spills too)
# but the asm's branch: neither a merged vote, the exponentials inside the asm, two branches instead of one, nor the
# first block's exponent left exact removed it.
FUSED_STACK_BYTES = 24
# EARLY_EXP (stage v38): the scores kept beside the early probabilities until the step's vote (64 more live registers
# per consumer thread in the KV loops) leave ptxas a few more of those scalars to store once before the loops and load
# after them: at most this many bytes of stack (32 at D = 128 in the sm_90 build), still none inside a KV loop.
EARLY_STACK_BYTES = 40
_FUSED_LIMIT = _f32_literal(FUSED_LIMIT.value)
# _warp_small's vote over both of a thread's rows ($2, $3: m x qk_scale): 1.0 where every row of the warp is below
# FUSED_LIMIT in magnitude (a NaN is not), the same for both
WARP_SMALL_ASM = gl.constexpr("{ .reg .pred g, h, a; .reg .f32 t, u; abs.f32 t, $2; abs.f32 u, $3; "
                              "setp.lt.f32 g, t, " + _FUSED_LIMIT + "; setp.lt.f32 h, u, " + _FUSED_LIMIT + "; "
                              "and.pred g, g, h; vote.sync.all.pred a, g, 0xffffffff; "
                              "selp.f32 $0, 0f3F800000, 0f00000000, a; mov.b32 $1, $0; }")
# LANE_MAX (stage v36): _quad_max's asm. Outputs $0, $1 tied to a thread's two maxima m ($2, $3: rows r and r + 8 at
# its lane); where the warp's decision ($6, the same as $7) is not 0, each becomes the maximum over the row's four
# lanes (butterfly shuffles over lanes xor 2 and xor 1, Triton's own order for a row's reduction) of the lanes'
# values $4, $5; max.f32 is the max of Triton's reductions (a NaN operand gives the other one)
_QUAD_MAX_ONE = ("shfl.sync.bfly.b32 t, {x}, 2, 31, -1; max.f32 {o}, {x}, t; "
                 "shfl.sync.bfly.b32 t, {o}, 1, 31, -1; max.f32 {o}, {o}, t; ")
QUAD_MAX_ASM = gl.constexpr("{ .reg .pred p; .reg .f32 t; setp.ne.f32 p, $6, 0f00000000; @!p bra.uni SKIP${:uid}; "
                            + _QUAD_MAX_ONE.format(x="$4", o="$0") + _QUAD_MAX_ONE.format(x="$5", o="$1")
                            + "SKIP${:uid}: }")


@gluon.constexpr_function
def _rescale_code(n):
    """RARE_RESCALE: the inline asm of acc's rescale for a thread's n entries (its share of a 64-row warpgroup's
    acc: 64 at D = 128, 32 at D = 64): outputs $0..$n-1 tied to the entries of acc ($n..), the rows' alphas and the
    warp's decision after them (``_rescale_constraints``); a uniform branch skips the n multiplications where the
    warp's decision (the first entry's: the same in all of a thread's) is 0."""
    body = "".join(f"mul.f32 ${i}, ${n + i}, ${2 * n + i}; " for i in range(n))
    return ("{ .reg .pred p; setp.ne.f32 p, $" + str(3 * n) + ", 0f00000000; @!p bra.uni SKIP${:uid}; " + body
            + "SKIP${:uid}: }")


@gluon.constexpr_function
def _rescale_constraints(n):
    """RARE_RESCALE: ``_rescale_code``'s constraints: n outputs, each tied to its entry of acc, then acc's n
    entries, the n alphas and the n decisions as inputs."""
    return ",".join(["=r"] * n + [str(i) for i in range(n)] + ["r"] * (2 * n))


@gluon.constexpr_function
def _exponent_bodies(n):
    """FUSED_EXPONENT: the two bodies of ``_exponent_code`` and ``_lane_exponent_code`` for a thread's n exponents in
    place ($0..$n-1), with the maxima at $2n.., the negated scaled maxima at $3n.. and the scales at $4n..: the fused
    one fma per score, and the exact sub then mul, each rounded."""
    fused = "".join(f"fma.rn.f32 ${i}, ${i}, ${4 * n + i}, ${3 * n + i}; " for i in range(n))
    exact = "".join(f"sub.rn.f32 ${i}, ${i}, ${2 * n + i}; mul.rn.f32 ${i}, ${i}, ${4 * n + i}; " for i in range(n))
    return fused, exact


@gluon.constexpr_function
def _exponent_code(n):
    """FUSED_EXPONENT: the inline asm of a thread's n exponents (its share of a 64-row warpgroup's scores: 64 at a
    128-key block), computed in place: outputs $0..$n-1 tied to the n scores ($n..), then their rows' maxima m,
    -m x qk_scale, qk_scale and the warp's decision (``_exponent_constraints``). A uniform branch on the decision
    (the first entry's: the same in every entry of the warp) takes either one fma per score, FlashAttention's
    (s x qk_scale - m x qk_scale, the product not rounded), or ``_exponent``'s sub then mul, each rounded (.rn,
    which ptxas does not contract)."""
    fused, exact = _exponent_bodies(n)
    return ("{ .reg .pred p; setp.ne.f32 p, $" + str(5 * n) + ", 0f00000000; @!p bra.uni EXACT${:uid}; " + fused
            + "bra.uni DONE${:uid}; EXACT${:uid}: " + exact + "DONE${:uid}: }")


@gluon.constexpr_function
def _exponent_constraints(n):
    """FUSED_EXPONENT: ``_exponent_code``'s constraints: n outputs, each tied to its score, then the n scores, and
    the maxima, negated scaled maxima, scales and decisions, n each, as inputs."""
    return ",".join(["=r"] * n + [str(i) for i in range(n)] + ["r"] * (4 * n))


@gluon.constexpr_function
def _lane_exponent_code(n):
    """LANE_MAX: ``_exponent_code`` with one more input after the decision, the warp's growth vote ($6n): where it
    is not 0 (a step that rescales, whose maxima are new), the exact exponent, whatever the decision on the maxima
    before the step says."""
    fused, exact = _exponent_bodies(n)
    return ("{ .reg .pred p, g; setp.ne.f32 g, $" + str(6 * n) + ", 0f00000000; @g bra.uni EXACT${:uid}; "
            "setp.ne.f32 p, $" + str(5 * n) + ", 0f00000000; @!p bra.uni EXACT${:uid}; " + fused
            + "bra.uni DONE${:uid}; EXACT${:uid}: " + exact + "DONE${:uid}: }")


@gluon.constexpr_function
def _lane_exponent_constraints(n):
    """LANE_MAX: ``_lane_exponent_code``'s constraints: ``_exponent_constraints``' and the n growth votes."""
    return ",".join(["=r"] * n + [str(i) for i in range(n)] + ["r"] * (5 * n))


@gluon.constexpr_function
def _early_exponent_code(n):
    """EARLY_EXP: ``_exponent_code``'s exponents of a thread's n scores against the maxima before the step, into n
    outputs of their own ($0..$n-1; the scores $n.., kept for a step that rescales, then the maxima, -m x qk_scale,
    qk_scale and the fused exponent's decision): the same fma, or sub then mul, as ``_exponent_bodies``."""
    fused = "".join(f"fma.rn.f32 ${i}, ${n + i}, ${4 * n + i}, ${3 * n + i}; " for i in range(n))
    exact = "".join(f"sub.rn.f32 ${i}, ${n + i}, ${2 * n + i}; mul.rn.f32 ${i}, ${i}, ${4 * n + i}; "
                    for i in range(n))
    return ("{ .reg .pred p; setp.ne.f32 p, $" + str(5 * n) + ", 0f00000000; @!p bra.uni EXACT${:uid}; " + fused
            + "bra.uni DONE${:uid}; EXACT${:uid}: " + exact + "DONE${:uid}: }")


@gluon.constexpr_function
def _early_exponent_constraints(n):
    """EARLY_EXP: ``_early_exponent_code``'s constraints: n outputs, then the scores, maxima, negated scaled maxima,
    scales and decisions, n each."""
    return ",".join(["=r"] * n + ["r"] * (5 * n))


@gluon.constexpr_function
def _redo_code(n):
    """EARLY_EXP: where the warp's growth vote ($5n) is not 0 (a step that rescales, whose maxima are new), a
    thread's n probabilities again ($0..$n-1, tied to the early ones $n..): the exact exponent of each score ($2n..)
    against the new maxima ($3n..), times qk_scale ($4n..), and its exp2 by the instruction gl.exp2 compiles to
    (ex2.approx.ftz.f32), so that the step's probabilities are ``_lane_exponent``'s; else the early ones unchanged."""
    body = "".join(f"sub.rn.f32 ${i}, ${2 * n + i}, ${3 * n + i}; mul.rn.f32 ${i}, ${i}, ${4 * n + i}; "
                   f"ex2.approx.ftz.f32 ${i}, ${i}; " for i in range(n))
    return ("{ .reg .pred g; setp.ne.f32 g, $" + str(5 * n) + ", 0f00000000; @!g bra.uni SKIP${:uid}; " + body
            + "SKIP${:uid}: }")


@gluon.constexpr_function
def _redo_constraints(n):
    """EARLY_EXP: ``_redo_code``'s constraints: n outputs tied to the early probabilities, then the scores, new
    maxima, scales and growth votes, n each."""
    return ",".join(["=r"] * n + [str(i) for i in range(n)] + ["r"] * (4 * n))


# TWO_CONSUMERS (stage v21): the tiles it takes, (block_m, block_n, num_stages): a 128-row Q tile, 64 rows per
# consumer warpgroup, and 64-row K/V blocks in a ring of 2 or 3 (see "Two consumer warpgroups" in the module's
# docstring for why not 128-row K/V blocks, and two_consumers_tile for the choice).
TWO_CONSUMERS_TILES = ((128, 64, 2), (128, 64, 3))
# Its registers: none are reallocated. Three warpgroups (consumer 0, the default partition; consumer 1; the producer
# warp and its three idle warps), 12 warps, 384 threads, each with what ptxas may give 384 threads: 65536 / 384
# rounded down to 8 = 168 (one program per SM). The workers ask for 256 registers each, more than three warpgroups of
# 168 can give (256 + 256 > 3 x 168): Triton's register allocation (the AllocateWarpGroups pass) then finds no budget
# and emits no setmaxnreg, and without a maxnreg at launch neither does its warp-specialization lowering.
TWO_CONSUMERS_REGISTERS = 168
_NO_REALLOCATION = gl.constexpr(256)
# SPLIT_CONSUMERS (stage v24, on REGISTER_REALLOC): the three partitions of TWO_CONSUMERS with setmaxnreg, launched
# with maxnreg 168: each consumer warpgroup gets 240 registers per thread, the producer's 24 (3 x 168 = 240 + 240 +
# 24); its tiles: 128-row K/V blocks in a ring of two or three (160 or 224 KiB of shared memory at D = 128).
SPLIT_CONSUMERS_TILES = ((128, 128, 2), (128, 128, 3))
SPLIT_CONSUMERS_MAXNREG = 168
# PERSISTENT (stage v26, on SPLIT_CONSUMERS): SPLIT_CONSUMERS' tile with two stages only, since O has its own buffer
# (32 KiB at D = 128: 32 + 32 + 2 x 64 = 192 KiB of shared memory; three stages would need 256)
PERSISTENT_TILES = ((128, 128, 2), )
SPLIT_CONSUMERS_REGISTERS = (3 * SPLIT_CONSUMERS_MAXNREG - PRODUCER_WARP_NUM_REGS) // 2 // 8 * 8      # 240
_SPLIT_REGS = gl.constexpr(SPLIT_CONSUMERS_REGISTERS)
# REGISTER_REALLOC (stage v23, on SOFTMAX_OVERLAP): the two consumer warpgroups as one 8-warp default partition, the
# producer warp a 1-warp worker (padded to a warpgroup): 12 warps, launched with maxnreg 168 (384 threads x 168 fit
# the SM's 65536). Triton's lowering then gives the default partition (168 - 24) x 4 / 8 more registers per thread,
# 240, and the producer's warpgroup 24 (240 x 256 + 24 x 128 = 64512); the warpgroup MMAs are all in the default
# partition, outside the workers' dispatch loop, and ptxas keeps them asynchronous at 240 registers. The tiles it
# takes: 128-row K/V blocks (each warpgroup's scores a 64x128 tile), two or three stages (160 or 224 KiB of shared
# memory at D = 128), and 64-row blocks with three.
REGISTER_REALLOC_TILES = ((128, 128, 2), (128, 128, 3), (128, 64, 3))
REGISTER_REALLOC_MAXNREG = 168
REGISTER_REALLOC_WARPS = 8


def drop_membar_barriers(ptx: str, keep_lines=()) -> tuple[str, int]:
    """LEAN_BARRIERS (stage v29): the PTX of a kernel without the 128-thread CTA barriers (``bar.sync id, 128``,
    one consumer warpgroup's) that Gluon's shared-memory barrier pass (membar) puts before an mbarrier's wait or
    arrive, and before the scratch store of the row sums that precedes the wait for the P V product (see
    ``_overlap_step``); the number dropped. Gluon 3.6 has no way to leave them out (named barriers and
    membar-free mbarrier operations are not in its API). None is needed here:
    - a wait (``mbarrier.try_wait``) is each thread's own: a barrier before it orders nothing the wait needs;
    - an arrive is issued by one thread of the warpgroup (count 1 per consumer, as CUTLASS's consumer release and
      FlashAttention-3's issue it): a release follows that thread's wait for the warpgroup MMA that read the buffer,
      and a warpgroup MMA completes for all four warps at once; a turn's pass orders only which consumer issues its
      products first; and no arrive of this kernel publishes data that threads wrote to shared memory (the one
      such buffer, O's, is read by a TMA store behind its own barrier, which stays);
    - the row sums' scratch store is never read: it is there for ptxas's order of the P V wait (``_overlap_step``);
      with LANE_SUMS it is one ``stmatrix`` of a thread's two partial sums, where it is one ``st.shared.b32`` per
      row otherwise.
    Only a barrier directly before such an operation goes (register arithmetic between them, which touches no
    memory, aside); every other (before O's store and its TMA copy, around the partitions' fork and the barriers'
    init) stays. keep_lines: lines of this file whose barriers stay, by the source position (``.loc``, any frame of
    its inlining stack) that the barrier's PTX carries: ``_drain``'s, where no warpgroup MMA keeps the consumer's
    four warps within a phase of each other, and the barriers do (without them a warp two phases behind the one
    that arrives would wait for a phase that never comes). Applied, by ``_stages_hook``, to a kernel whose PTX has
    LEAN_MARK only, i.e. built with LEAN_BARRIERS: the ``// ... dropped`` line it adds says how many went."""
    barrier = re.compile(r"\s*bar\.sync\s+\d+,\s*128;\s*$")
    no_instruction = re.compile(r"\s*($|//|\.loc\s|\{|\.reg\s|waitLoop:|\$L__tmp\d+:)")
    arithmetic = re.compile(r"\s*(add|sub|mad|mul|shl|shr|bfe|and|or|xor|not|mov)\.[a-z0-9.]+\s+%r\d+, ")
    mbarrier_op = re.compile(r"\s*(@%p\d+\s+)?mbarrier\.(try_wait|arrive)\.")
    scratch_store = re.compile(r"\s*(st\.shared\.b32|stmatrix\.sync\.aligned\.m8n8\.x2\.shared\.b16)\s")
    mma_wait = re.compile(r"\s*wgmma\.wait_group\.")
    loc = re.compile(r"\s*\.loc\s")
    here = re.compile(r"gluon_fwd\.py:(\d+):")
    keep = set(keep_lines)

    def kept_by_source(lines, i):
        for line in reversed(lines[max(0, i - 4):i]):
            if loc.match(line):
                return any(int(n) in keep for n in here.findall(line))
        return False

    def droppable(lines, i):
        stores = 0
        for line in lines[i + 1:]:
            if no_instruction.match(line) or (not stores and arithmetic.match(line)):
                continue
            if not stores and mbarrier_op.match(line):
                return True
            if scratch_store.match(line):
                stores += 1
                continue
            return stores > 0 and bool(mma_wait.match(line))
        return False

    lines = ptx.split("\n")
    drop = {i for i, line in enumerate(lines)
            if barrier.match(line) and droppable(lines, i) and not kept_by_source(lines, i)}
    kept = [line for i, line in enumerate(lines) if i not in drop]
    kept.append(f"// gluon_fwd.drop_membar_barriers: {len(drop)} bar.sync dropped")
    return "\n".join(kept), len(drop)


# The mark of a LEAN_BARRIERS kernel in its PTX (an empty inline asm of the kernel's), and the kernel's constexpr
# LEAN_BARRIERS itself: the pass's own source hashed in, so that a changed pass is a new kernel to Triton's cache
# (whose key does not cover a stages hook).
LEAN_MARK = ("// gluon_fwd LEAN_BARRIERS "
             + hashlib.sha256(inspect.getsource(drop_membar_barriers).encode()).hexdigest()[:16])


def _stages_hook(backend, stages, options, language, capability):
    """Triton's compile-stages hook (knobs.runtime.add_stages_inspection_hook): the "ptx" stage of every kernel
    then runs ``drop_membar_barriers`` on a PTX that has LEAN_MARK (a LEAN_BARRIERS build of `_gluon_attn_fwd`)
    and leaves any other as it was; a hook installed before this module's runs first."""
    if _stages_hook.previous is not None:
        _stages_hook.previous(backend, stages, options, language, capability)
    make_ptx = stages.get("ptx")
    if make_ptx is None:
        return

    def ptx_stage(src, metadata):
        ptx = make_ptx(src, metadata)
        return drop_membar_barriers(ptx, _drain_lines())[0] if LEAN_MARK in ptx else ptx

    stages["ptx"] = ptx_stage


def _drain_lines() -> range:
    """The lines of this file that ``_drain`` spans (its barriers stay: ``drop_membar_barriers``)."""
    source, first = inspect.getsourcelines(_drain.fn)
    return range(first, first + len(source))


def _install_stages_hook() -> None:
    """Install ``_stages_hook`` once (a reload of this module replaces its own, not another's)."""
    current = knobs.runtime.add_stages_inspection_hook
    if getattr(current, "gluon_fwd_lean_barriers", False):
        current = current.previous
    _stages_hook.previous = current
    _stages_hook.gluon_fwd_lean_barriers = True
    knobs.runtime.add_stages_inspection_hook = _stages_hook


_install_stages_hook()


@gluon.jit
def _issue_load(desc, smem, bars, j, n_total, kv_b, kv_h, BLOCK_N: gl.constexpr, NUM_STAGES: gl.constexpr):
    """Ask the TMA for the tile of key block j (K or V, as desc says), if j < n_total, into ring buffer
    j % NUM_STAGES; that buffer's barrier expects the tile's bytes."""
    slot = j % NUM_STAGES
    pred = j < n_total
    bar = bars.index(slot)
    mbarrier.expect(bar, desc.block_type.nbytes, pred=pred)
    tma.async_copy_global_to_shared(desc, [kv_b, kv_h, j * BLOCK_N, 0], bar, smem.index(slot), pred=pred)


@gluon.jit
def _exponent(s, m, qk_scale):
    """(s - m) * qk_scale: at most 0 wherever s is at most m, 0 for s = m (kernels.flash_fwd's `_exponent`)."""
    return (s - m) * qk_scale


@gluon.jit
def _operand(p, dtype: gl.constexpr, p_layout: gl.constexpr, PAIRED_CVT: gl.constexpr = False):
    """The probabilities p (float32, the scores' layout) as the 16-bit A operand of the P V product. PAIRED_CVT
    (stage v30): two neighbouring probabilities of a row by one ``cvt.rn.f16x2.f32`` (``bf16x2``), the low half
    the first (the operand's order), where ``p.to(dtype)`` gives one conversion per probability, which ptxas packs
    in the opposite order and swaps back with one PRMT per pair (32 per thread and step at 64x128); same rounding,
    same values."""
    if PAIRED_CVT:
        if dtype == gl.float16:
            h = gl.inline_asm_elementwise("cvt.rn.f16x2.f32 $0, $2, $1;", "=r,r,r", [p], dtype=gl.float16,
                                          is_pure=True, pack=2)
        else:
            h = gl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $2, $1;", "=r,r,r", [p], dtype=gl.bfloat16,
                                          is_pure=True, pack=2)
    else:
        h = p.to(dtype)
    return gl.convert_layout(h, p_layout)


@gluon.jit
def _attn_step(acc, l_i, m_i, q_tile, k_desc, v_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, j, n_total,
               kv_b, kv_h, offs_m, N, qk_scale,
               MASKED: gl.constexpr, IS_CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
               HEAD_DIM: gl.constexpr, NUM_STAGES: gl.constexpr, PV_IN_FLIGHT: gl.constexpr,
               PRODUCER_WARP: gl.constexpr,
               s_layout: gl.constexpr, o_layout: gl.constexpr, p_layout: gl.constexpr):
    """Step j of the KV loop: the online softmax on key block j and its product with V, added into acc, with the
    look-ahead loads of block j + NUM_STAGES - 1.

    PV_IN_FLIGHT: acc comes in and goes out as the pending result of an asynchronous P V product (the previous
    step's, or the zeros before the first), waited for together with this step's scores: one wait per step. Else
    the P V product is waited for at the end of the step, and acc is a plain tensor. MASKED: keys past N and, if
    causal, keys after the query row get probability 0.

    PRODUCER_WARP: the step issues no loads (the producer warp does, ``_kv_producer``); it hands each buffer back
    instead, by an arrive on the buffer's "empty" barrier (k_empty, v_empty) as soon as the product that read it has
    been waited for: K's of block j after the scores' wait, V's of block j after its P V product's wait (with
    PV_IN_FLIGHT, in step j + 1, so step j hands back V's buffer of block j - 1, if j > 0).
    """
    slot = j % NUM_STAGES
    phase = (j // NUM_STAGES) & 1
    ahead = j + NUM_STAGES - 1      # the block whose tiles go into the buffers that block j - 1 used

    if not PRODUCER_WARP:
        # K's buffer of block j - 1 is free (its q k^T product was waited for in step j - 1): refill it first, and
        # V's too unless block j - 1's P V product may still be reading it.
        _issue_load(k_desc, k_smem, k_bars, ahead, n_total, kv_b, kv_h, BLOCK_N, NUM_STAGES)
        if not PV_IN_FLIGHT:
            _issue_load(v_desc, v_smem, v_bars, ahead, n_total, kv_b, kv_h, BLOCK_N, NUM_STAGES)

    # s = q @ k^T: Q and K^T (a transposed view of the K tile) from shared memory.
    mbarrier.wait(k_bars.index(slot), phase)
    k_tile = k_smem.index(slot).reshape([BLOCK_N, HEAD_DIM])
    s = warpgroup_mma(q_tile, k_tile.permute((1, 0)), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout),
                      use_acc=False, is_async=True)
    if PV_IN_FLIGHT:
        # One wait for the scores and the previous step's P V product (wgmma groups complete in order); then V's
        # buffer of block j - 1 is free.
        s, acc = warpgroup_mma_wait(num_outstanding=0, deps=(s, acc))
        if PRODUCER_WARP:
            mbarrier.arrive(k_empty.index(slot))
            mbarrier.arrive(v_empty.index((j + NUM_STAGES - 1) % NUM_STAGES), pred=j > 0)
        else:
            _issue_load(v_desc, v_smem, v_bars, ahead, n_total, kv_b, kv_h, BLOCK_N, NUM_STAGES)
    else:
        s = warpgroup_mma_wait(num_outstanding=0, deps=(s, ))
        if PRODUCER_WARP:
            mbarrier.arrive(k_empty.index(slot))

    if MASKED:
        # Key start_n + c is kept for a row when c <= the row's last key relative to this block: with a causal
        # mask the row's own position, else N - 1 - start_n. One comparison per score, against a column index
        # that does not change from step to step. With a causal mask no key past N is kept for a row below N (the
        # key would come after the row); rows past N do keep such keys, whose K rows the TMA filled with zeros (a
        # score of 0, finite) and whose outputs the TMA store drops.
        start_n = j * BLOCK_N
        cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        if IS_CAUSAL:
            last = offs_m - start_n
        else:
            last = gl.full([BLOCK_M], N - 1, gl.int32, gl.SliceLayout(1, s_layout)) - start_n
        s = gl.where(cols[None, :] <= last[:, None], s, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1))
    p = gl.exp2(_exponent(s, m_new[:, None], qk_scale))
    alpha = gl.exp2(_exponent(m_i, m_new, qk_scale))
    l_i = l_i * alpha + gl.sum(p, 1)
    acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    p_op = gl.convert_layout(p.to(k_desc.dtype), p_layout)

    # acc += p @ v: P from registers, V from shared memory (left running into the next step if PV_IN_FLIGHT).
    mbarrier.wait(v_bars.index(slot), phase)
    v_tile = v_smem.index(slot).reshape([BLOCK_N, HEAD_DIM])
    acc = warpgroup_mma(p_op, v_tile, acc, is_async=True)
    if not PV_IN_FLIGHT:
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        if PRODUCER_WARP:
            mbarrier.arrive(v_empty.index(slot))
    return acc, l_i, m_new


@gluon.jit
def _kv_producer(k_desc, v_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, n_total, kv_b, kv_h,
                 BLOCK_N: gl.constexpr, NUM_STAGES: gl.constexpr, base=0):
    """The producer warp (PRODUCER_WARP): the TMA loads of K and V of key blocks 0 .. n_total - 1, in order, K's
    then V's of each block, into ring buffer j % NUM_STAGES once the consumer has handed it back. Block j waits on
    the buffer's "empty" barrier for parity ((j // NUM_STAGES) & 1) ^ 1: the first NUM_STAGES blocks pass at once
    (a fresh barrier counts as having completed the phase before its first, of parity 1), block j >= NUM_STAGES
    waits for the consumer's release of block j - NUM_STAGES. The tile's bytes arrive on its "ready" barrier (k_bars,
    v_bars, with the expected byte count), which the consumer waits on as it does without a producer.
    PERSISTENT: base is the ring position of block 0, the blocks of the program's earlier tiles (0 otherwise):
    block j is the ring's block base + j, for its buffer and parity."""
    for j in range(n_total):
        slot = (base + j) % NUM_STAGES
        phase = ((base + j) // NUM_STAGES) & 1
        mbarrier.wait(k_empty.index(slot), phase ^ 1)
        mbarrier.expect(k_bars.index(slot), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [kv_b, kv_h, j * BLOCK_N, 0], k_bars.index(slot), k_smem.index(slot))
        mbarrier.wait(v_empty.index(slot), phase ^ 1)
        mbarrier.expect(v_bars.index(slot), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [kv_b, kv_h, j * BLOCK_N, 0], v_bars.index(slot), v_smem.index(slot))


@gluon.jit
def _overlap_softmax(s, m_i, l_i, offs_m, j, N, qk_scale, MASKED: gl.constexpr, IS_CAUSAL: gl.constexpr,
                     BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, s_layout: gl.constexpr,
                     RARE_RESCALE: gl.constexpr = False, FUSED_EXPONENT: gl.constexpr = False,
                     SHORT_REDUCTIONS: gl.constexpr = False, LANE_SUMS: gl.constexpr = False,
                     LANE_MAX: gl.constexpr = False, FIRST: gl.constexpr = False,
                     EARLY_EXP: gl.constexpr = False):
    """SOFTMAX_OVERLAP: the online softmax of key block j's scores s (masked as ``_attn_step`` masks them): the
    probabilities p, the factor alpha by which the output so far is to be rescaled, the new l_i and m_i, and
    whether acc is to be rescaled (1, a scalar; always without RARE_RESCALE).

    RARE_RESCALE (stage v31, FlashAttention-4's conditional rescaling, kernels.flash_fwd's LAZY_RESCALE): the
    maxima m_i stay, and neither l_i nor acc is rescaled, unless some row's maximum grew by more than
    RESCALE_GROWTH in exp2 units: one decision per warp (a vote over its 16 rows, which only that warp's threads hold
    in acc, l_i and m_i), so that the branch that skips acc's rescale is uniform in the warp. The exponents are then at most RESCALE_GROWTH: the
    probabilities at most 2^8, which float32 sums and 16-bit P hold without loss, and the largest at least 1 once a
    row has a finite score; a NaN score keeps its row NaN (its exponent is NaN whichever maximum it is taken from),
    and a row whose scores are all -inf keeps NO_SCORE and probabilities 0.

    FUSED_EXPONENT (stage v33, with RARE_RESCALE): the exponents by ``_fused_exponent``: one FFMA per score where
    every row of the warp has |m_i x qk_scale| < FUSED_LIMIT, the exact exponent's FADD and FMUL otherwise.

    SHORT_REDUCTIONS (stage v34, with FUSED_EXPONENT): the row maxima and row sums by ``_row_reduce``, whose
    dependent chains within a thread are about a third as long.

    LANE_SUMS (stage v35, with FUSED_EXPONENT): l_i is each thread's partial sums ([BLOCK_M, 4], ``_lane_sums``),
    rescaled and added to within the thread, with no shuffle; the consumer adds the lanes' sums once, at the tile's
    end (``_row_sums``).

    LANE_MAX (stage v36, with LANE_SUMS): m_i is each lane's copy of its rows' maxima ([BLOCK_M, 4], the layout of
    l_i; the four lanes of a row hold the same value). The vote on the warp's growth is taken on each lane's
    max(m_i, its own entries of the row): a row's maximum grew by more than RESCALE_GROWTH exactly where one of its
    lanes' did (the maximum over the lanes of the rounded differences is the rounded difference of the maxima), so
    the decision is v35's. Only where the vote says so are the lanes' maxima exchanged (``_quad_max``: two
    shuffles per row behind a branch uniform in the warp), so that a step that does not rescale has no shuffle
    between its scores and its exponentials. FUSED_EXPONENT's vote is taken on the maxima before the step, which
    are the step's where it does not rescale (``_lane_exponent``); a step that rescales takes the exact exponent,
    and a tile's first block (FIRST), whose maxima are all new, v35's vote on its new maxima. alpha, the rescale
    decision and acc's rescale are per lane too (``_rescaled`` on ``_lane_view``s of acc)."""
    if MASKED:
        start_n = j * BLOCK_N
        cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        if IS_CAUSAL:
            last = offs_m - start_n
        else:
            last = gl.full([BLOCK_M], N - 1, gl.int32, gl.SliceLayout(1, s_layout)) - start_n
        s = gl.where(cols[None, :] <= last[:, None], s, float("-inf"))
    if LANE_MAX and EARLY_EXP and not FIRST:
        # the probabilities from the maxima before the step first (``_early_exponent``), which are the step's where
        # it does not rescale, beside (not after) the in-thread FMNMX of the step's maxima and the warp's vote on
        # them; where the vote says the warp rescales, the probabilities again from the new maxima (``_redo_exponent``)
        s4 = _lane_view(s)
        neg = m_i * -qk_scale
        p4 = gl.exp2(_early_exponent(s4, m_i, neg, _warp_small(neg), qk_scale))
        pm = gl.maximum(m_i, gl.max(gl.max(s4, 3), 1))
        warp = _warp_grew(_exponent(pm, m_i, qk_scale))
        m_new = _quad_max(m_i, pm, warp)
        p4 = _redo_exponent(p4, s4, m_new, qk_scale, warp)
        alpha = gl.where(warp != 0, gl.exp2(_exponent(m_i, m_new, qk_scale)), 1.0)
        l_i = l_i * alpha + gl.sum(gl.sum(p4, 3), 1)
        p = gl.convert_layout(gl.reshape(p4, [BLOCK_M, BLOCK_N]), s_layout, assert_trivial=True)
        m_i = m_new
        rescale = warp
    elif LANE_MAX:
        # each thread's maxima of its rows' entries (in-thread FMNMX), the warp's vote on them, and the maxima across
        # a row's four lanes (two shuffles) only where the vote says some row grew (``_quad_max``)
        pm = gl.maximum(m_i, gl.max(gl.max(_lane_view(s), 3), 1))
        warp = _warp_grew(_exponent(pm, m_i, qk_scale))
        m_new = _quad_max(m_i, pm, warp)
        if FIRST:
            # a tile's first block, whose maxima are new in every row with a finite score: the fused exponent's
            # vote on them, as v35 takes it, and no growth to force the exact exponent
            voted = m_new
            grew = gl.zeros_like(warp)
        else:
            # FUSED_EXPONENT's vote on the maxima the rows had (off that path: they are known before the scores)
            voted = m_i
            grew = warp
        neg = voted * -qk_scale
        p4 = gl.exp2(_lane_exponent(s, m_new, neg, _warp_small(neg), grew, qk_scale))
        alpha = gl.where(warp != 0, gl.exp2(_exponent(m_i, m_new, qk_scale)), 1.0)     # after: off that path too
        l_i = l_i * alpha + gl.sum(gl.sum(p4, 3), 1)
        p = gl.convert_layout(gl.reshape(p4, [BLOCK_M, BLOCK_N]), s_layout, assert_trivial=True)
        m_i = m_new
        rescale = warp
    else:
        if SHORT_REDUCTIONS:
            m_new = gl.maximum(m_i, _row_reduce(s, True))
        else:
            m_new = gl.maximum(m_i, gl.max(s, 1))
        if RARE_RESCALE:
            # one decision per warp (its 16 rows), whose rows no other warp touches: a vote, no barrier
            warp = _warp_grew(_exponent(m_new, m_i, qk_scale))
            alpha = gl.where(warp != 0, gl.exp2(_exponent(m_i, m_new, qk_scale)), 1.0)
            m_i = gl.where(warp != 0, m_new, m_i)
            if FUSED_EXPONENT:
                p = gl.exp2(_fused_exponent(s, m_i, qk_scale))
            else:
                p = gl.exp2(_exponent(s, m_i[:, None], qk_scale))
            if LANE_SUMS:
                l_i = l_i * gl.convert_layout(alpha, gl.SliceLayout(1, l_i.type.layout), assert_trivial=True)[:, None]
                l_i = l_i + _lane_sums(p)
            elif SHORT_REDUCTIONS:
                l_i = l_i * alpha + _row_reduce(p, False)
            else:
                l_i = l_i * alpha + gl.sum(p, 1)
            rescale = warp
        else:
            p = gl.exp2(_exponent(s, m_new[:, None], qk_scale))
            alpha = gl.exp2(_exponent(m_i, m_new, qk_scale))
            l_i = l_i * alpha + gl.sum(p, 1)
            m_i = m_new
            rescale = 1
    return p, alpha, l_i, m_i, rescale


@gluon.jit
def _row_reduce(x, MAX: gl.constexpr):
    """SHORT_REDUCTIONS: the maximum (MAX) or the sum of each row of a warpgroup's 64-row block x (a warpgroup MMA's
    accumulator layout), as ``gl.max(x, 1)`` or ``gl.sum(x, 1)`` give it, in the same layout, with shorter chains.

    In that layout a thread holds, of each of its rows, the columns 8 c + 2 t and 8 c + 2 t + 1 (t its lane's
    quarter, c = 0 .. BLOCK_N / 8 - 1: 32 values at BLOCK_N = 128), and Triton reduces them in one chain, each FMNMX
    or FADD waiting for the one before: 32 deep per row, two rows interleaved (SASS of the sm_90 build). Seen as
    [rows, BLOCK_N / 32, 4, 8] (a reshape of the registers' indices, no data moved: the columns 32 a + 8 b + e), the
    reduction over b first leaves 2 BLOCK_N / 32 chains of 4 per row, over a next one chain of BLOCK_N / 32, and the
    lanes' 8 columns (two in a thread, then two shuffles) last: about 10 dependent instructions instead of 34.
    The maximum is the same value in any order; the sum is another rounding of the same float32 terms."""
    rows: gl.constexpr = x.shape[0]
    gl.static_assert(x.shape[1] % 32 == 0, "SHORT_REDUCTIONS: blocks of 32 key columns")
    r = gl.reshape(x, [rows, x.shape[1] // 32, 4, 8])
    if MAX:
        y = gl.max(gl.max(gl.max(r, 2), 1), 1)
    else:
        y = gl.sum(gl.sum(gl.sum(r, 2), 1), 1)
    return gl.convert_layout(y, gl.SliceLayout(1, x.type.layout), assert_trivial=True)


@gluon.jit
def _lane_sums(p):
    """LANE_SUMS: each thread's partial sums of its rows of a warpgroup's 64-row block p (a warpgroup MMA's
    accumulator layout), as a [rows, 4] tensor whose column t is held by the lanes of quarter t: in that layout a
    thread holds, of each of its rows, the columns 8 c + 2 t and 8 c + 2 t + 1, so that over its ``_lane_view``
    ([rows, BLOCK_N / 8, 4, 2], no data moved) the sums over the last axis and then the second are within the
    thread. FlashAttention-3 keeps its row sums so, and adds across the lanes once per tile."""
    return gl.sum(gl.sum(_lane_view(p), 3), 1)


@gluon.jit
def _lane_view(x):
    """LANE_SUMS, LANE_MAX: a warpgroup MMA's accumulator x ([64, C]) seen as [64, C / 8, 4, 2] (a reshape of the
    registers' indices, no data moved): axis 2 is the lane's quarter t of a row's four lanes, axes 1 and 3 a thread's
    own entries of the row (columns 8 c + 2 t and 8 c + 2 t + 1)."""
    gl.static_assert(x.shape[1] % 8 == 0, "LANE_SUMS, LANE_MAX: blocks of 8 columns")
    return gl.reshape(x, [x.shape[0], x.shape[1] // 8, 4, 2])


@gluon.jit
def _lane_broadcast(v, x4):
    """LANE_MAX: a per-lane row value v ([64, 4], the layout of ``_lane_sums``) broadcast over a thread's entries of
    x4, a ``_lane_view`` ([64, C / 8, 4, 2]; the [64, 4] layouts of two views of different C are the same
    registers and lanes, so the conversion moves nothing)."""
    v = gl.convert_layout(v, gl.SliceLayout(1, gl.SliceLayout(3, x4.type.layout)), assert_trivial=True)
    return gl.expand_dims(gl.expand_dims(v, 1), 3)


@gluon.jit
def _quad_max(m, pm, warp):
    """LANE_MAX: the rows' new maxima, per lane ([64, 4]): where the warp's vote (warp, 1.0 or 0.0, the same in every
    lane) says some row grew, the maximum of pm (each lane's max(m, its entries)) over the row's four lanes, two
    shuffles (``QUAD_MAX_ASM``); else m itself, with no shuffle (the asm's outputs are tied to m)."""
    return gl.inline_asm_elementwise(QUAD_MAX_ASM, "=r,=r,0,1,r,r,r,r", [m, pm, warp], dtype=gl.float32,
                                     is_pure=True, pack=2)


@gluon.jit
def _lane_exponent(s, m, neg, small, warp, qk_scale):
    """LANE_MAX: the exponents of the scores s against their rows' maxima m (per lane, [64, 4]) as a
    [64, BLOCK_N / 8, 4, 2] ``_lane_view``: ``_fused_exponent``'s, with its vote (small) and fma addend (neg) taken
    on the maxima before the step, which are m where the warp did not grow (warp, ``_warp_grew``); where it grew, the
    exact exponent (``_lane_exponent_code``), so that the vote is not on the path from the scores to the
    exponentials. A tile's first block (``_overlap_softmax``'s FIRST) passes warp = 0 and its vote on the new
    maxima m."""
    gl.static_assert(s.shape[0] == 64, "LANE_MAX: one warpgroup's 64 rows of scores (128 threads)")
    n: gl.constexpr = s.shape[1] // 2
    s4 = _lane_view(s)
    return gl.inline_asm_elementwise(_lane_exponent_code(n), _lane_exponent_constraints(n),
                                     [s4, _lane_broadcast(m, s4), _lane_broadcast(neg, s4), qk_scale,
                                      _lane_broadcast(small, s4), _lane_broadcast(warp, s4)],
                                     dtype=gl.float32, is_pure=True, pack=n)


@gluon.jit
def _early_exponent(s4, m, neg, small, qk_scale):
    """EARLY_EXP: the exponents of a ``_lane_view`` of scores against their rows' maxima before the step (m, per
    lane), by the fused exponent's vote on those maxima (small) and its addend (neg): what ``_lane_exponent`` gives
    in a step that does not rescale, taken without the step's maxima or its growth vote, and into registers of
    their own, so that the scores stay for ``_redo_exponent``."""
    n: gl.constexpr = s4.shape[0] * s4.shape[1] * s4.shape[2] * s4.shape[3] // 128    # a thread's: 64 rows, 128 threads
    return gl.inline_asm_elementwise(_early_exponent_code(n), _early_exponent_constraints(n),
                                     [s4, _lane_broadcast(m, s4), _lane_broadcast(neg, s4), qk_scale,
                                      _lane_broadcast(small, s4)],
                                     dtype=gl.float32, is_pure=True, pack=n)


@gluon.jit
def _redo_exponent(p4, s4, m, qk_scale, warp):
    """EARLY_EXP: the probabilities p4 of the scores s4 (``_lane_view``s), taken again from the new maxima m where
    the warp's growth vote (warp) says the step rescales (``_redo_code``: a branch uniform in the warp), else
    p4 itself."""
    n: gl.constexpr = s4.shape[0] * s4.shape[1] * s4.shape[2] * s4.shape[3] // 128    # a thread's: 64 rows, 128 threads
    return gl.inline_asm_elementwise(_redo_code(n), _redo_constraints(n),
                                     [p4, s4, _lane_broadcast(m, s4), qk_scale, _lane_broadcast(warp, s4)],
                                     dtype=gl.float32, is_pure=True, pack=n)


@gluon.jit
def _row_sums(l_i, LANE_SUMS: gl.constexpr):
    """The row sums: l_i itself, or with LANE_SUMS the sum of its lanes' partial sums (``_lane_sums``), in the
    layout of a row's entries of the scores."""
    if LANE_SUMS:
        return gl.sum(l_i, 1)
    else:
        return l_i


@gluon.jit
def _rescaled(acc, alpha, rescale, o_layout: gl.constexpr, RARE_RESCALE: gl.constexpr = False,
              LANE_MAX: gl.constexpr = False):
    """acc times each row's alpha. RARE_RESCALE: rescale is the warp's decision (1.0 or 0.0 in each of its rows'
    entries, the same in every lane: ``_warp_grew``), and a warp without it skips the multiplications behind a
    uniform branch (``_rescale_code``); its alpha is then 1 in every row, so acc is what the multiplications would
    give. LANE_MAX: alpha and rescale are per lane ([64, 4], ``_lane_sums``' layout), broadcast over a
    ``_lane_view`` of acc, so that no row value changes lanes."""
    if LANE_MAX:
        # alpha and rescale per lane ([64, 4], ``_lane_view``): acc seen as [64, HEAD_DIM / 8, 4, 2] (no data moved)
        n4: gl.constexpr = acc.shape[1] // 2
        acc4 = _lane_view(acc)
        acc4 = gl.inline_asm_elementwise(_rescale_code(n4), _rescale_constraints(n4),
                                         [acc4, _lane_broadcast(alpha, acc4), _lane_broadcast(rescale, acc4)],
                                         dtype=gl.float32, is_pure=True, pack=n4)
        acc = gl.convert_layout(gl.reshape(acc4, [acc.shape[0], acc.shape[1]]), o_layout, assert_trivial=True)
    elif RARE_RESCALE:
        a = gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
        w = gl.convert_layout(rescale, gl.SliceLayout(1, o_layout))[:, None]
        n: gl.constexpr = acc.shape[1] // 2        # a thread's entries of acc: half its columns (64 rows, 128 threads)
        acc = gl.inline_asm_elementwise(_rescale_code(n), _rescale_constraints(n), [acc, a, w], dtype=gl.float32,
                                        is_pure=True, pack=n)
    else:
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    return acc


@gluon.jit
def _warp_grew(growth):
    """RARE_RESCALE: 1.0 in every row of a warp where some row's maximum grew by more than RESCALE_GROWTH (growth is
    in exp2 units; a NaN row does not ask), else 0.0: one vote over the warp's 16 rows, the same in all its lanes
    and in both of a thread's rows. In a 64-row warpgroup's layout a thread holds two rows (r and r + 8) of its
    warp's 16: the asm takes both (pack=2) and votes on either having grown. With one vote per row (pack=1, up to
    commit 0d29541) the two votes could differ, and ``_rescaled``, which takes a thread's first entry's decision
    for all its entries, skipped the rescale of acc's second row where only that row had grown: wrong output once
    a row's maximum grew past RESCALE_GROWTH after its first key block (tests/test_guards_gpu.py's large scores;
    random inputs of the verify grid rarely grow so far)."""
    return gl.inline_asm_elementwise(WARP_GREW_ASM, "=r,=r,r,r", [growth], dtype=gl.float32, is_pure=True, pack=2)


@gluon.jit
def _warp_small(scaled_max):
    """FUSED_EXPONENT: 1.0 in every row of a warp where every row's |m x qk_scale| (scaled_max, either sign) is below
    FUSED_LIMIT, else 0.0 (a NaN row votes no): one vote over the warp's 16 rows, both of a thread's rows at once
    (pack=2, as ``_warp_grew``), the same in all its lanes."""
    return gl.inline_asm_elementwise(WARP_SMALL_ASM, "=r,=r,r,r", [scaled_max], dtype=gl.float32, is_pure=True,
                                     pack=2)


@gluon.jit
def _fused_exponent(s, m, qk_scale):
    """FUSED_EXPONENT: the exponents of the scores s against their rows' maxima m, in exp2 units: where every row of
    the warp has |m x qk_scale| < FUSED_LIMIT (``_warp_small``), FlashAttention's fma(s, qk_scale, -m x qk_scale),
    one FFMA per score, whose error is at most half an ulp of the rounded m x qk_scale (FUSED_LIMIT's note); else
    ``_exponent``'s (s - m) x qk_scale, exact for the largest score at any magnitude. The choice is a branch uniform in
    the warp inside the asm (``_exponent_code``), so that a warp runs one of the two, not both and a select."""
    neg = m * -qk_scale                   # -(m x qk_scale), rounded once: the fma's addend
    small = _warp_small(neg)
    gl.static_assert(s.shape[0] == 64, "FUSED_EXPONENT: one warpgroup's 64 rows of scores (128 threads)")
    n: gl.constexpr = s.shape[1] // 2     # a thread's scores: half a row's (64 rows, 128 threads)
    return gl.inline_asm_elementwise(_exponent_code(n), _exponent_constraints(n),
                                     [s, m[:, None], neg[:, None], qk_scale, small[:, None]],
                                     dtype=gl.float32, is_pure=True, pack=n)


@gluon.jit
def _take_turn(my_turn, t, TURN_FLIP: gl.constexpr):
    """PINGPONG: wait for this consumer's turn of round t, the other consumer's pass of round t - TURN_FLIP (see
    ``_consumer_pair``'s "The turns")."""
    mbarrier.wait(my_turn, (t & 1) ^ TURN_FLIP)


@gluon.jit
def _pass_turn(next_turn):
    """PINGPONG: the products of this consumer's round are issued: the turn goes to the other consumer."""
    mbarrier.arrive(next_turn)


@gluon.jit
def _overlap_step(acc, p_op, alpha, rescale, l_i, m_i, q_tile, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, l_buf, j,
                  offs_m, N, qk_scale, dtype: gl.constexpr,
                  MASKED: gl.constexpr, IS_CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                  HEAD_DIM: gl.constexpr, NUM_STAGES: gl.constexpr,
                  s_layout: gl.constexpr, o_layout: gl.constexpr, p_layout: gl.constexpr,
                  PINGPONG: gl.constexpr = False, my_turn=None, next_turn=None, TURN_FLIP: gl.constexpr = 0,
                  base=0, rbase=0, PAIRED_CVT: gl.constexpr = False, RARE_RESCALE: gl.constexpr = False,
                  FUSED_EXPONENT: gl.constexpr = False,
                  SHORT_REDUCTIONS: gl.constexpr = False, LANE_SUMS: gl.constexpr = False,
                  LANE_MAX: gl.constexpr = False, EARLY_EXP: gl.constexpr = False):
    """SOFTMAX_OVERLAP, step j >= 1: FlashAttention-3's intra-warpgroup overlap. acc comes in complete (block j - 2's
    product waited for), p_op and alpha are block j - 1's probabilities and rescale factor. The step issues q k^T of
    block j, rescales acc by alpha and issues block j - 1's P V product after it; it waits for the scores alone
    (warpgroup_mma_wait(1): warpgroup MMAs complete in order, so the older q k^T is done while P V may still run),
    hands K's buffer back, and computes block j's softmax while block j - 1's P V product runs on the tensor cores;
    then waits for that product (wait 0) and hands block j - 1's V buffer back. Returns acc (complete) and block j's
    p_op, alpha, l_i, m_i.

    PINGPONG: the step's two products are issued in this consumer's turn, round j (``_take_turn``, ``_pass_turn``):
    acc is rescaled and both tiles waited for first, then the turn is taken, both products issued back to back and
    the turn passed to the other consumer, whose products the tensor cores then run while this one's softmax does.

    PERSISTENT: base is the ring position of the tile's block 0 and rbase the turns' round of its round 0 (both 0
    otherwise): block j is the ring's block base + j, and step j the round rbase + j."""
    slot = (base + j) % NUM_STAGES
    prev = (base + j - 1) % NUM_STAGES
    if PAIRED_CVT:
        # p_op came in as block j - 1's float32 probabilities: converted here, where the conversions can write into
        # the registers the P V product reads (a converted P carried round the loop came back in other registers,
        # and ptxas copied it into the operand's with one PRMT or MOV per pair in the consumer's turn)
        p_op = _operand(p_op, dtype, p_layout, True)
    if PINGPONG:
        acc = _rescaled(acc, alpha, rescale, o_layout, RARE_RESCALE, LANE_MAX)
        mbarrier.wait(k_bars.index(slot), ((base + j) // NUM_STAGES) & 1)
        mbarrier.wait(v_bars.index(prev), ((base + j - 1) // NUM_STAGES) & 1)
        _take_turn(my_turn, rbase + j, TURN_FLIP)
        s = warpgroup_mma(q_tile, k_smem.index(slot).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                          gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout), use_acc=False, is_async=True)
        acc = warpgroup_mma(p_op, v_smem.index(prev).reshape([BLOCK_N, HEAD_DIM]), acc, is_async=True)
        _pass_turn(next_turn)
    else:
        mbarrier.wait(k_bars.index(slot), ((base + j) // NUM_STAGES) & 1)
        k_tile = k_smem.index(slot).reshape([BLOCK_N, HEAD_DIM])
        s = warpgroup_mma(q_tile, k_tile.permute((1, 0)), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout),
                          use_acc=False, is_async=True)
        acc = _rescaled(acc, alpha, rescale, o_layout, RARE_RESCALE, LANE_MAX)
        mbarrier.wait(v_bars.index(prev), ((base + j - 1) // NUM_STAGES) & 1)
        v_tile = v_smem.index(prev).reshape([BLOCK_N, HEAD_DIM])
        acc = warpgroup_mma(p_op, v_tile, acc, is_async=True)
    s = warpgroup_mma_wait(num_outstanding=1, deps=(s, ))
    mbarrier.arrive(k_empty.index(slot))
    p, alpha, l_i, m_i, rescale = _overlap_softmax(s, m_i, l_i, offs_m, j, N, qk_scale, MASKED, IS_CAUSAL, BLOCK_M,
                                                   BLOCK_N, s_layout, RARE_RESCALE, FUSED_EXPONENT,
                                                   SHORT_REDUCTIONS, LANE_SUMS, LANE_MAX, False, EARLY_EXP)
    if not PAIRED_CVT:
        p_op = _operand(p, dtype, p_layout)
    # The row sums into a scratch buffer of shared memory that nothing reads: a store that needs every exponential
    # of the step, placed before the wait for the P V product. Without it ptxas moves that wait (WARPGROUP.DEPBAR)
    # up above the exponentials, and the softmax no longer runs under the product (tests/test_gluon_build.py counts
    # the MUFU.EX2 between the two waits).
    l_buf.store(l_i)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
    mbarrier.arrive(v_empty.index(prev))
    if PAIRED_CVT:
        p_op = p        # converted at the next step's start, into the operand's registers
    return acc, p_op, alpha, rescale, l_i, m_i


@gluon.jit
def _consumer(q_smem, q_bar, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, n_free,
              n_total, off_b, off_h, kv_h, start_m, N, qk_scale,
              IS_CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr,
              NUM_STAGES: gl.constexpr, PV_IN_FLIGHT: gl.constexpr, PRODUCER_WARP: gl.constexpr,
              s_layout: gl.constexpr, o_layout: gl.constexpr, p_layout: gl.constexpr, row_layout: gl.constexpr,
              SOFTMAX_OVERLAP: gl.constexpr = False, l_buf=None, PINGPONG: gl.constexpr = False, my_turn=None,
              next_turn=None, TURN_FLIP: gl.constexpr = 0, PERSISTENT: gl.constexpr = False, base=0, rbase=0,
              q_phase=0, q_empty=None, o_smem=None, PAIRED_CVT: gl.constexpr = False,
              RARE_RESCALE: gl.constexpr = False, FUSED_EXPONENT: gl.constexpr = False,
              SHORT_REDUCTIONS: gl.constexpr = False, LANE_SUMS: gl.constexpr = False, LANE_MAX: gl.constexpr = False,
              Q_REGS: gl.constexpr = False, EARLY_EXP: gl.constexpr = False):
    """The warpgroup's work after the first loads: the online softmax over key blocks [0, n_total) (unmasked, then
    masked), the division by l_i and O's TMA store. Inlined into the kernel without PRODUCER_WARP; with it, the
    default partition of the warp-specialized region; with TWO_CONSUMERS, each of the two consumer partitions (the
    default one and a 4-warp worker), on its own 64-row half of Q's buffer (``_consumer_pair``).

    PERSISTENT (with SOFTMAX_OVERLAP): one tile of the program's (``_persistent_consumer``): its block 0 is the ring's
    block base, its round 0 the turns' round rbase, and its Q the q_phase-th fill of Q's buffer (parity); it hands
    Q's buffer back (q_empty) once its last q k^T product has been waited for, and the last block's V buffer once its
    P V product has, and stores O from its own buffer (o_smem) without waiting for the copy, after waiting for the
    previous tile's store to have read that buffer."""
    dtype: gl.constexpr = k_desc.dtype
    offs_m = start_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=row_layout)
    m_i = gl.full([BLOCK_M], NO_SCORE, gl.float32, row_layout)      # not -inf: the guard of rows without a finite score
    if LANE_SUMS:
        l_i = _lane_sums(gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout))    # each thread's partial sums: 0
    else:
        l_i = gl.zeros([BLOCK_M], gl.float32, row_layout)
    if LANE_MAX:
        m_i = gl.full([BLOCK_M, 4], NO_SCORE, gl.float32, l_i.type.layout)     # each lane's copy of its rows' maxima
    acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, o_layout)
    if PV_IN_FLIGHT and not SOFTMAX_OVERLAP:
        acc = warpgroup_mma_init(acc)       # the zeros, as if the result of a pending product
    q_tile = q_smem.reshape([BLOCK_M, HEAD_DIM])
    mbarrier.wait(q_bar, q_phase)
    if Q_REGS:
        # the q k^T products' A operand from registers, read from Q's buffer once per tile (the buffer is still
        # handed back after the tile's last q k^T product, as without Q_REGS)
        q_tile = q_tile.load(gl.DotOperandLayout(operand_index=0, parent=s_layout, k_width=2))

    if SOFTMAX_OVERLAP:
        # Block 0's scores and softmax alone (masked: a block wholly below the diagonal loses no key to the mask);
        # then steps 1 .. n_total - 1, each issuing the previous block's P V product after its own q k^T
        # (``_overlap_step``); then the last block's P V product. The ring's releases are those of PV_IN_FLIGHT:
        # K's of block j in step j, V's of block j - 1 in step j, the last V's never.
        # PINGPONG: block 0's q k^T is round 0 of the turns, step j round j, the last P V product round n_total.
        mbarrier.wait(k_bars.index(base % NUM_STAGES), (base // NUM_STAGES) & 1)
        if PINGPONG:
            _take_turn(my_turn, rbase, TURN_FLIP)
        s0 = warpgroup_mma(q_tile, k_smem.index(base % NUM_STAGES).reshape([BLOCK_N, HEAD_DIM]).permute((1, 0)),
                           gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout), use_acc=False, is_async=True)
        if PINGPONG:
            _pass_turn(next_turn)
        s0 = warpgroup_mma_wait(num_outstanding=0, deps=(s0, ))
        mbarrier.arrive(k_empty.index(base % NUM_STAGES))
        p, alpha, l_i, m_i, rescale = _overlap_softmax(s0, m_i, l_i, offs_m, 0, N, qk_scale, True, IS_CAUSAL,
                                                       BLOCK_M, BLOCK_N, s_layout, RARE_RESCALE, FUSED_EXPONENT,
                                                       SHORT_REDUCTIONS, LANE_SUMS, LANE_MAX, True)
        p_op = p if PAIRED_CVT else _operand(p, dtype, p_layout)     # PAIRED_CVT: converted in the step that uses it
        for j in range(1, n_free):
            acc, p_op, alpha, rescale, l_i, m_i = _overlap_step(acc, p_op, alpha, rescale, l_i, m_i, q_tile, k_smem, v_smem, k_bars,
                                                       v_bars, k_empty, v_empty, l_buf, j, offs_m, N, qk_scale, dtype,
                                                       False, IS_CAUSAL, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_STAGES,
                                                       s_layout, o_layout, p_layout, PINGPONG, my_turn, next_turn,
                                                       TURN_FLIP, base, rbase, PAIRED_CVT,
                                                       RARE_RESCALE, FUSED_EXPONENT, SHORT_REDUCTIONS, LANE_SUMS,
                                                       LANE_MAX, EARLY_EXP)
        for j in range(gl.maximum(n_free, 1), n_total):
            acc, p_op, alpha, rescale, l_i, m_i = _overlap_step(acc, p_op, alpha, rescale, l_i, m_i, q_tile, k_smem, v_smem, k_bars,
                                                       v_bars, k_empty, v_empty, l_buf, j, offs_m, N, qk_scale, dtype,
                                                       True, IS_CAUSAL, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_STAGES,
                                                       s_layout, o_layout, p_layout, PINGPONG, my_turn, next_turn,
                                                       TURN_FLIP, base, rbase, PAIRED_CVT,
                                                       RARE_RESCALE, FUSED_EXPONENT, SHORT_REDUCTIONS, LANE_SUMS,
                                                       LANE_MAX, EARLY_EXP)
        if PERSISTENT:
            mbarrier.arrive(q_empty)        # every q k^T product of the tile has been waited for
        last = base + n_total - 1           # the ring's block of the last key block
        if PAIRED_CVT:
            p_op = _operand(p_op, dtype, p_layout, True)
        acc = _rescaled(acc, alpha, rescale, o_layout, RARE_RESCALE, LANE_MAX)
        mbarrier.wait(v_bars.index(last % NUM_STAGES), (last // NUM_STAGES) & 1)
        if PINGPONG:
            _take_turn(my_turn, rbase + n_total, TURN_FLIP)
        acc = warpgroup_mma(p_op, v_smem.index(last % NUM_STAGES).reshape([BLOCK_N, HEAD_DIM]), acc, is_async=True)
        if PINGPONG:
            _pass_turn(next_turn)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        if PERSISTENT:
            mbarrier.arrive(v_empty.index(last % NUM_STAGES))      # the ring goes on into the next tile
    else:
        for j in range(n_free):
            acc, l_i, m_i = _attn_step(acc, l_i, m_i, q_tile, k_desc, v_desc, k_smem, v_smem, k_bars, v_bars,
                                       k_empty, v_empty, j, n_total, off_b, kv_h, offs_m, N, qk_scale, False,
                                       IS_CAUSAL, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_STAGES, PV_IN_FLIGHT,
                                       PRODUCER_WARP, s_layout, o_layout, p_layout)
        for j in range(n_free, n_total):
            acc, l_i, m_i = _attn_step(acc, l_i, m_i, q_tile, k_desc, v_desc, k_smem, v_smem, k_bars, v_bars,
                                       k_empty, v_empty, j, n_total, off_b, kv_h, offs_m, N, qk_scale, True,
                                       IS_CAUSAL, BLOCK_M, BLOCK_N, HEAD_DIM, NUM_STAGES, PV_IN_FLIGHT,
                                       PRODUCER_WARP, s_layout, o_layout, p_layout)
        if PV_IN_FLIGHT:
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))     # the last P V product
    # (The barriers are not invalidated: PTX asks for that only before their memory is used for something else,
    # and here it never is; each invalidation would cost a CTA barrier. With PRODUCER_WARP, V's buffer of the last
    # block is not handed back either: no load waits for it.)

    # O = acc / l_i, through Q's buffer (free: the last q k^T product has completed) and a TMA store.
    # a row without a finite score has acc = 0 and l_i = 0: its output is 0, as SDPA gives
    l_o = gl.convert_layout(_row_sums(l_i, LANE_SUMS), gl.SliceLayout(1, o_layout))
    out = acc / gl.where(l_o == 0.0, 1.0, l_o)[:, None]
    if PERSISTENT:
        # O's own buffer: the previous tile's store must have read it (the issuing thread waits, the CTA barrier
        # holds the others); the copy is left running, under the next tile, and waited for at the program's end
        tma.store_wait(pendings=0)
        gl.thread_barrier()
        o_smem.reshape([BLOCK_M, HEAD_DIM]).store(out.to(dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(o_desc, [off_b, off_h, start_m * BLOCK_M, 0], o_smem)
    else:
        q_tile.store(out.to(dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(o_desc, [off_b, off_h, start_m * BLOCK_M, 0], q_smem)
        tma.store_wait(pendings=0)


@gluon.jit
def _consumer_pair(q_smem, q_bar, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, l_smem, n_total,
                   off_b, off_h, kv_h, start_m, N, qk_scale,
                   IS_CAUSAL: gl.constexpr, CONSUMER_M: gl.constexpr, BLOCK_N: gl.constexpr, HEAD_DIM: gl.constexpr,
                   NUM_STAGES: gl.constexpr, PV_IN_FLIGHT: gl.constexpr, s_layout: gl.constexpr,
                   o_layout: gl.constexpr, p_layout: gl.constexpr, row_layout: gl.constexpr,
                   SOFTMAX_OVERLAP: gl.constexpr = False, SPLIT_CONSUMERS: gl.constexpr = False,
                   PINGPONG: gl.constexpr = False, turns=None):
    """TWO_CONSUMERS: the fork into three partitions, the two consumer warpgroups and the producer warp.

    Consumer c (0: the default partition, 1: a 4-warp worker) is ``_consumer`` of a 64-row program whose query block
    is m_c = 2 start_m + c: rows [m_c * 64, m_c * 64 + 64) of the program's 128, on its own half of Q's buffer, with
    the loop bounds such a program has (below); its offs_m, so its causal mask, and its O store follow from m_c.
    The producer loads the program's key blocks [0, n_total) once for both. (Every claim below is reasoning and a
    CPU build; the GPU verify grid checks what follows from it: see "What only the GPU shows" in the module's
    docstring.)

    The loop bounds (CONSUMER_M = BLOCK_N = 64, so a query block and a key block are the same 64 rows). Causal:
    consumer c's rows see keys [0, min(N, (m_c + 1) * 64)), n_total_c = cdiv(min(N, (m_c + 1) * 64), 64) blocks;
    the n_free_c = m_c blocks wholly below its first row need no mask, and the rest, its own diagonal block m_c, is
    masked (keys after the row, and so keys past N for rows below N, get probability 0). Consumer 1's range is the
    program's: n_total_1 = cdiv(min(N, (start_m + 1) * 128), 64) = n_total. Consumer 0's is m0 + 1 = n_total - 1
    blocks where the program's second half has a row below N (N > m1 * 64): it skips block m1, wholly after its rows,
    rather than masking all of it; else (N <= m1 * 64) n_total_0 = n_total = m1. Without a causal mask both
    consumers have the program's bounds: N // 64 unmasked blocks, then the ragged last one masked by N. Every
    program has a row below N (start_m * 128 < N), so consumer 0 has at least one block and n_free_c <= n_total_c.
    A consumer whose rows are all past N (consumer 1 of the last program when N % 128 is in [1, 64]): causal, its
    n_free_1 = m1 = cdiv(N, 64) = n_total, so it runs the program's (and consumer 0's) blocks 0 .. m1 - 1 unmasked,
    on a Q half that the TMA filled with zeros (scores 0, finite; keys past N read as zeros too); without a causal
    mask it runs the program's bounds. Either way it waits for and releases every block consumer 0 does, so the
    producer is never left waiting for it, and its O store writes nothing (every row is at or past N).

    The ring. Block j goes into slot s = j % NUM_STAGES as that slot's k-th use, k = j // NUM_STAGES; each barrier
    of the slot completes one phase per use, phase k for block j, and a wait with parity k & 1 passes once phase k
    has completed as long as phase k + 1 cannot have completed too (the wait cannot tell them apart). Two barriers
    per buffer (K's and V's apart, each as below):

    - "ready" (k_bars, v_bars, count 1): the producer's expect (one arrive, with the tile's bytes) and the TMA's
      bytes complete phase k when block j has landed. Consumer c waits for block j with parity k & 1. Phase k + 1
      needs the load of block j + NUM_STAGES, which the producer issues only after phase k of the slot's "empty"
      barrier, which needs consumer c's own release of block j (count 2, below), which comes after this wait: so
      phase k + 1 cannot have completed, and the wait returns exactly when block j is there. (With a count of 1,
      as in v20, the other consumer's release alone would complete the phase, and block j + NUM_STAGES could
      overwrite the buffer before consumer c had read block j: the race that the count of 2 closes.)
    - "empty" (k_empty, v_empty, count 2): the arrivals are the consumers' releases only, one per consumer and block
      (one thread's arrive after the consumer's 128-thread CTA barrier, once its product that read the buffer has
      been waited for: K's after the scores, V's after the P V product, with P V in flight in the next step). Each
      release of block j falls into phase k: consumer c releases block j only after waiting for it to be ready, so
      after the producer loaded it, so after phase k - 1 had completed (below); and phase k cannot complete
      without it, since its only other possible arrivals are the other consumer's release of block j and releases
      of block j + NUM_STAGES, which cannot come before block j + NUM_STAGES is loaded, i.e. before phase k has
      completed. So phase k completes with the two releases of block j, and nothing else. The producer waits for
      it before loading block j + NUM_STAGES, with parity (k & 1) ^ 1 before loading block j itself (for phase
      k - 1; a fresh barrier passes parity 1 at once, as if phase -1 had completed: the first NUM_STAGES loads do
      not wait); phase k cannot have completed already then (it needs the releases of block j, not yet loaded).
    - Releases left out. The producer loads blocks 0 .. n_total - 1, and the load of block j waits only for the
      releases of block j - NUM_STAGES, so those of blocks n_total - NUM_STAGES and later are never waited for and
      need not come; nor can a later release fall into their slot's phase (the slot is not used again). The
      consumers leave out: each one its last block's V release (P V in flight: it would be released in the step
      after, which does not come), block n_total_c - 1; and consumer 0, when it skips block n_total - 1, both of
      that block's releases, its own last V release then being block n_total - 2's. All within the last two blocks:
      hence NUM_STAGES >= 2. The barriers end the kernel with those phases incomplete; they are never reused.
    - No deadlock: the producer waits at block j only for the releases of block j - NUM_STAGES, which each
      consumer makes in its step j - NUM_STAGES (K) or j - NUM_STAGES + 1 <= j - 1 (V), for blocks already
      loaded; a consumer waits only for blocks the producer loads in order. Consumer 0, stopping one block early,
      has made every release the producer waits for (the last load, of block n_total - 1, waits for block
      n_total - 1 - NUM_STAGES <= n_total - 3: K's released in consumer 0's step n_total - 3, V's in its step
      n_total - 2, its last). And a consumer that waits holds nothing that the producer needs: the load of
      block j waits for block j - NUM_STAGES's releases, which each consumer makes in its steps j - NUM_STAGES
      (K) and j - NUM_STAGES + 1 <= j - 1 (V), before its step j waits for block j.

    The turns (PINGPONG). Each consumer has n_total + 1 rounds (``_consumer``): both consumers have the program's
    n_total blocks (shown in the module's docstring, "The consumers in their own partitions", for 128-row K/V
    blocks, the only ones PINGPONG takes), so both have the same
    number of rounds. Consumer c waits on turns[c] and arrives on turns[1 - c]; each barrier's count is 1, so the
    other consumer's pass of a round completes one phase. turns[1]'s phase t completes with consumer 0's pass of
    round t, which consumer 1's round t waits for (parity t & 1). turns[0]'s phase t completes with consumer 1's
    pass of round t, which consumer 0's round t + 1 waits for (parity ((t + 1) & 1) ^ 1 = t & 1); its round 0 waits
    with parity 1, which a fresh barrier passes at once (TURN_FLIP = 1 for consumer 0, 0 for consumer 1). No wait
    can see a phase two ahead of its own: turns[1]'s phase t + 1 needs consumer 0's round t + 1, which needs
    consumer 1's pass of round t, after its wait; and likewise for turns[0]. So the rounds alternate strictly, 0 of
    consumer 0, 0 of consumer 1, 1 of consumer 0, ..., and neither waits for a pass that does not come: the last,
    consumer 1's pass of round n_total, is waited for by nobody and leaves turns[0] with a completed phase that is
    never reused. A round's turn is taken after its tile waits and released before its MMA waits, so a consumer
    never holds the turn while it waits for the producer or for the tensor cores, and the ring's argument above
    holds as it is.

    The O stores. Consumer c turns its 64 rows of O into 16 bits in its own half of Q's buffer, once its last q k^T
    product (the only reader of that half: the other consumer never reads it) has been waited for; then
    fence_async_shared, Gluon's 128-thread CTA barrier of that consumer, one thread's TMA store of its 64 rows at
    row m_c * 64 of o_desc (block [1, 1, 64, HEAD_DIM]), and store_wait(0) before the partition ends, so that the
    buffer is not left while the copy engine still reads it. The two stores write disjoint rows; rows at or past N
    are dropped by the copy engine (a whole box past N included: consumer 1 of the last program at N = 130).
    """
    m0 = 2 * start_m            # the consumers' 64-row query blocks
    m1 = m0 + 1
    if IS_CAUSAL:
        n_free0 = (m0 * CONSUMER_M) // BLOCK_N
        n_total0 = gl.cdiv(gl.minimum(N, (m0 + 1) * CONSUMER_M), BLOCK_N)
        n_free1 = (m1 * CONSUMER_M) // BLOCK_N
    else:
        n_free0 = N // BLOCK_N
        n_total0 = n_total
        n_free1 = n_free0
    # SPLIT_CONSUMERS: setmaxnreg, 240 registers per thread for consumer 1 (and, by Triton's rule, consumer 0), 24
    # for the producer's warpgroup (see "The consumers in their own partitions, with 240 registers"); else none.
    CONSUMER_REGS: gl.constexpr = _SPLIT_REGS if SPLIT_CONSUMERS else _NO_REALLOCATION
    PRODUCER_REGS: gl.constexpr = _PRODUCER_REGS if SPLIT_CONSUMERS else _NO_REALLOCATION
    gl.warp_specialize([
        (_consumer, (q_smem.index(0), q_bar, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars, k_empty,
                     v_empty, n_free0, n_total0, off_b, off_h, kv_h, m0, N, qk_scale, IS_CAUSAL, CONSUMER_M,
                     BLOCK_N, HEAD_DIM, NUM_STAGES, PV_IN_FLIGHT, True, s_layout, o_layout, p_layout, row_layout,
                     SOFTMAX_OVERLAP, l_smem.index(0), PINGPONG, turns.index(0), turns.index(1), 1)),
        (_consumer, (q_smem.index(1), q_bar, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars, k_empty,
                     v_empty, n_free1, n_total, off_b, off_h, kv_h, m1, N, qk_scale, IS_CAUSAL, CONSUMER_M,
                     BLOCK_N, HEAD_DIM, NUM_STAGES, PV_IN_FLIGHT, True, s_layout, o_layout, p_layout, row_layout,
                     SOFTMAX_OVERLAP, l_smem.index(1), PINGPONG, turns.index(1), turns.index(0), 0)),
        (_kv_producer, (k_desc, v_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, n_total, off_b, kv_h,
                        BLOCK_N, NUM_STAGES)),
    ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])


@gluon.jit
def _tile_count(T, P, pid):
    """PERSISTENT: how many of the T tiles program pid of P takes (``_tile_of``): one per round of P tiles, the
    last round, cdiv(T, P) - 1, holding fewer than P when P does not divide T."""
    rounds = gl.cdiv(T, P)
    last = rounds - 1
    pos = gl.where(last % 2 == 0, pid, P - 1 - pid)
    return last + (last * P + pos < T).to(gl.int32)


@gluon.jit
def _section_heads(BH, GROUP, n_m, P):
    """SECTIONS: the query heads of a section of the tile order (``_tile_of``): those of the fewest K/V heads S, a
    power of two dividing the B H_kv K/V heads, whose S GROUP n_m tiles fill at least one and a half rounds of the P
    programs; or all B H heads where none does (one section: v26's order)."""
    need = (3 * P + 1) // 2
    s = 1
    while s * GROUP * n_m < need and (BH // GROUP) % (2 * s) == 0:
        s = s * 2
    return gl.where(s * GROUP * n_m < need, BH, s * GROUP)


@gluon.jit
def _tile_of(i, pid, P, BH, H, n_m, SH=0, SECTIONS: gl.constexpr = False):
    """PERSISTENT: (batch, head, query block) of program pid's i-th tile. The T = BH * n_m tiles are taken heaviest
    first: tile t is query block n_m - 1 - t // BH of batch*head t % BH. Round i hands tiles [i P, i P + P) to the P
    programs in order when i is even and in reverse when it is odd (a snake), so that the program that took a
    round's heaviest tile takes the next round's lightest: with a causal mask a tile's work falls with t, and the
    programs' sums of work stay within a round's spread of each other, where a plain stride (tile i P + pid) gives
    program 0 the heaviest tile of every round.
    SECTIONS: the order in sections of SH query heads (``_section_heads``: a few K/V heads' GROUP query heads each;
    SH divides BH), each section's tiles taken as above over its own heads; the last section heaviest
    first, the one before it lightest first, and so on alternately, so that the work falls and rises smoothly from
    round to round and the snake still balances it (a section that starts heavy again after a light end would
    not). The P programs running at once then read the K/V of one or two sections, a few heads, instead of every
    head's: at N = 16384 (D = 128) 8 MB of K/V per head, where the L2 holds 60 MB."""
    t = i * P + gl.where(i % 2 == 0, pid, P - 1 - pid)
    if SECTIONS:
        # SH divides BH (_section_heads), so every section has SH heads: section t // (SH n_m), and within it the
        # round r of its heads and the head
        v = t // SH
        sec = v // n_m
        r = v - sec * n_m
        bh = sec * SH + (t - v * SH)
        m = gl.where((BH // SH - 1 - sec) % 2 == 0, n_m - 1 - r, r)
    else:
        bh = t % BH
        m = n_m - 1 - t // BH
    return bh // H, bh % H, m


@gluon.jit
def _snake_block(P: gl.constexpr):
    """SNAKE_SMS: (batch*head, query block) of this program of a (B H, n_m) grid. Assuming that the hardware starts
    programs in launch order (axis 0 fastest), one per SM in a wave of P, a second per SM in the next wave (not
    documented by NVIDIA; v32's timing is the test); program t takes the t-th heaviest block (query block n_m - 1 -
    r // BH of batch*head r % BH, with r = t) in an even wave and the wave's blocks in reverse in an odd one, so
    that an SM's two programs are a heavy and a light block (with a causal mask a block's work falls with r), where
    in launch order an SM's two are the i-th and the (P + i)-th heaviest."""
    BH = gl.num_programs(0)
    n_m = gl.num_programs(1)
    t = gl.program_id(1) * BH + gl.program_id(0)
    first = t // P * P
    last = gl.minimum(first + P, BH * n_m) - 1            # the wave's last program
    r = gl.where(t // P % 2 == 0, t, first + last - t)
    return r % BH, n_m - 1 - r // BH


@gluon.jit
def _program_tiles(B, H, N, BLOCK_M: gl.constexpr):
    """PERSISTENT: (n_m, BH, pid, P, count) of this program: the query blocks per head, the batch*heads, the
    program's index and the grid's programs (``_tile_of``'s arguments), and how many tiles it takes."""
    n_m = gl.cdiv(N, BLOCK_M)
    BH = B * H
    pid = gl.program_id(0)
    P = gl.num_programs(0)
    return n_m, BH, pid, P, _tile_count(BH * n_m, P, pid)


@gluon.jit
def _block_bounds(m, N, IS_CAUSAL: gl.constexpr, CONSUMER_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """(n_free, n_total) of a consumer's CONSUMER_M-row query block m: causal, its rows see keys
    [0, min(N, (m + 1) CONSUMER_M)), the n_free blocks wholly below its first row unmasked; else every key, the
    N // BLOCK_N full blocks unmasked (see ``_consumer_pair``'s "The loop bounds")."""
    if IS_CAUSAL:
        n_total = gl.cdiv(gl.minimum(N, (m + 1) * CONSUMER_M), BLOCK_N)
        n_free = (m * CONSUMER_M) // BLOCK_N
    else:
        n_total = gl.cdiv(N, BLOCK_N)
        n_free = N // BLOCK_N
    return n_free, n_total


@gluon.jit
def _folded_blocks(start_m, n_m, N, folded, IS_CAUSAL: gl.constexpr, CONSUMER_M: gl.constexpr,
                   BLOCK_N: gl.constexpr):
    """FOLD: the two consumers' query blocks of tile start_m of the n_m = cdiv(N, 128) tiles of a head and their
    bounds (``_block_bounds``), (m0, n_free0, n_total0, m1, n_free1, n_total1). Unfolded, v27's: blocks 2 start_m
    and 2 start_m + 1. Folded (a causal grid of one round, ``_fold``): consumer 0 takes block 2 n_m - 1 - start_m
    of the head's 2 n_m and consumer 1 block start_m, the i-th heaviest with the i-th lightest, so that every tile
    has about the same work. Either way consumer 0's rows see at least as many key blocks as consumer 1's
    (n_total1 <= n_total0: equal unfolded, with 128-row key blocks; folded, m1 < m0), so the tile's key blocks are
    consumer 0's. Block 2 n_m - 1 is wholly past N when N % 128 is in [1, 64] (as consumer 1's of v27's last tile):
    its rows run their bounds on a Q that the TMA filled with zeros (finite scores), and their O store writes
    nothing."""
    m0 = gl.where(folded, 2 * n_m - 1 - start_m, 2 * start_m)
    m1 = gl.where(folded, start_m, 2 * start_m + 1)
    n_free0, n_total0 = _block_bounds(m0, N, IS_CAUSAL, CONSUMER_M, BLOCK_N)
    n_free1, n_total1 = _block_bounds(m1, N, IS_CAUSAL, CONSUMER_M, BLOCK_N)
    return m0, n_free0, n_total0, m1, n_free1, n_total1


@gluon.jit
def _fold(T, P, IS_CAUSAL: gl.constexpr):
    """FOLD: whether the tiles are folded (``_folded_blocks``): causal, and every program takes one tile (T <= P),
    so that no later round can balance a heavy tile with a light one."""
    if IS_CAUSAL:
        folded = T <= P
    else:
        folded = T < 0
    return folded


@gluon.jit
def _drain(k_bars, v_bars, k_empty, v_empty, lo, hi, base, rbase, NUM_STAGES: gl.constexpr,
           PINGPONG: gl.constexpr, my_turn, next_turn, TURN_FLIP: gl.constexpr):
    """FOLD: a consumer's part in the tile's key blocks [lo, hi) that its rows do not see (the other consumer's
    rows do): each block is waited for and handed back at once, and with PINGPONG its round of the turns (block j's
    is round rbase + j + 1: the consumer's rounds 0 .. lo were its own blocks') taken and passed, so that the ring's
    releases (count 2) and the turns' strict alternation go on as if it had run the block. The wait comes first:
    a release before the block has landed would fall into the slot's previous phase, the release of block
    base + j - NUM_STAGES, and free that buffer before the other consumer had read it."""
    for j in range(lo, hi):
        blk = base + j
        slot = blk % NUM_STAGES
        phase = (blk // NUM_STAGES) & 1
        mbarrier.wait(k_bars.index(slot), phase)
        mbarrier.wait(v_bars.index(slot), phase)
        if PINGPONG:
            _take_turn(my_turn, rbase + j + 1, TURN_FLIP)
            _pass_turn(next_turn)
        mbarrier.arrive(k_empty.index(slot))
        mbarrier.arrive(v_empty.index(slot))


@gluon.jit
def _persistent_producer(q_desc, k_desc, v_desc, q_smem, q_bar, q_empty, k_smem, v_smem, k_bars, v_bars, k_empty,
                         v_empty, H, GROUP, N, IS_CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr,
                         BLOCK_N: gl.constexpr, CONSUMER_M: gl.constexpr, NUM_STAGES: gl.constexpr,
                         SECTIONS: gl.constexpr, FOLD: gl.constexpr = False):
    """PERSISTENT: the producer warp over the program's tiles (``_tile_of``): each tile's Q, both halves on q_bar
    once both consumers have handed Q's buffer back (q_empty, parity (i & 1) ^ 1 for tile i: a fresh barrier passes
    the first), then its K and V blocks, which go on round the ring from where the previous tile's left off."""
    n_m, BH, pid, P, count = _program_tiles(q_desc.shape[0], H, N, BLOCK_M)
    SH = _section_heads(BH, GROUP, n_m, P) if SECTIONS else BH     # SECTIONS: a section's query heads
    folded = _fold(BH * n_m, P, IS_CAUSAL)
    base = 0
    for i in range(count):
        off_b, off_h, start_m = _tile_of(i, pid, P, BH, H, n_m, SH, SECTIONS)
        mbarrier.wait(q_empty, (i & 1) ^ 1)
        mbarrier.expect(q_bar, 2 * q_desc.block_type.nbytes)
        if FOLD:
            # FOLD: the consumers' two query blocks (_folded_blocks); the tile's key blocks are consumer 0's, whose
            # rows see at least as many as consumer 1's
            m0, _f0, n_total, m1, _f1, _n1 = _folded_blocks(start_m, n_m, N, folded, IS_CAUSAL, CONSUMER_M, BLOCK_N)
            tma.async_copy_global_to_shared(q_desc, [off_b, off_h, m0 * CONSUMER_M, 0], q_bar, q_smem.index(0))
            tma.async_copy_global_to_shared(q_desc, [off_b, off_h, m1 * CONSUMER_M, 0], q_bar, q_smem.index(1))
        else:
            if IS_CAUSAL:
                n_total = gl.cdiv(gl.minimum(N, (start_m + 1) * BLOCK_M), BLOCK_N)
            else:
                n_total = gl.cdiv(N, BLOCK_N)
            for c in gl.static_range(2):
                tma.async_copy_global_to_shared(q_desc, [off_b, off_h, (2 * start_m + c) * CONSUMER_M, 0], q_bar,
                                                q_smem.index(c))
        _kv_producer(k_desc, v_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, n_total, off_b,
                     off_h // GROUP, BLOCK_N, NUM_STAGES, base)
        base += n_total


@gluon.jit
def _persistent_consumer(q_smem, q_bar, q_empty, o_smem, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars,
                         k_empty, v_empty, l_buf, H, GROUP, N, qk_scale, C: gl.constexpr, IS_CAUSAL: gl.constexpr,
                         BLOCK_M: gl.constexpr, CONSUMER_M: gl.constexpr, BLOCK_N: gl.constexpr,
                         HEAD_DIM: gl.constexpr, NUM_STAGES: gl.constexpr, s_layout: gl.constexpr,
                         o_layout: gl.constexpr, p_layout: gl.constexpr, row_layout: gl.constexpr,
                         PINGPONG: gl.constexpr, my_turn, next_turn, TURN_FLIP: gl.constexpr,
                         SECTIONS: gl.constexpr, FOLD: gl.constexpr = False, PAIRED_CVT: gl.constexpr = False,
                         RARE_RESCALE: gl.constexpr = False, FUSED_EXPONENT: gl.constexpr = False,
                         SHORT_REDUCTIONS: gl.constexpr = False, LANE_SUMS: gl.constexpr = False,
                         LANE_MAX: gl.constexpr = False,
                         Q_REGS: gl.constexpr = False, EARLY_EXP: gl.constexpr = False):
    """PERSISTENT: consumer C over the program's tiles, the producer's sequence (``_tile_of``): each tile is
    ``_consumer`` of its 64-row query block 2 start_m + C with the tile's loop bounds (both consumers have the
    program tile's, as with SPLIT_CONSUMERS' 128-row K/V blocks: see ``_consumer_pair``), its block 0 at ring
    position base (the blocks of the earlier tiles) and its round 0 at base + i (each tile has n_total + 1 rounds);
    the last O store is waited for before the partition ends.
    FOLD: the query blocks and bounds of ``_folded_blocks``; the tile has consumer 0's key blocks, of which
    consumer 1 runs its own and drains the rest (``_drain``), so that both still take n_total + 1 rounds of the
    tile's n_total blocks."""
    n_m, BH, pid, P, count = _program_tiles(k_desc.shape[0], H, N, BLOCK_M)
    SH = _section_heads(BH, GROUP, n_m, P) if SECTIONS else BH     # SECTIONS: a section's query heads
    base = 0
    for i in range(count):
        off_b, off_h, start_m = _tile_of(i, pid, P, BH, H, n_m, SH, SECTIONS)
        if FOLD:
            # FOLD: this consumer's query block and bounds (_folded_blocks)
            m0, n_free0, n_total0, m1, n_free1, n_total1 = _folded_blocks(start_m, n_m, N,
                                                                          _fold(BH * n_m, P, IS_CAUSAL), IS_CAUSAL,
                                                                          CONSUMER_M, BLOCK_N)
            if C == 0:
                m_c = m0
                n_free = n_free0
                n_total = n_total0
            else:
                m_c = m1
                n_free = n_free1
                n_total = n_total1
                n_blocks = n_total0         # the tile's key blocks
        else:
            if IS_CAUSAL:
                n_total = gl.cdiv(gl.minimum(N, (start_m + 1) * BLOCK_M), BLOCK_N)
                n_free = ((2 * start_m + C) * CONSUMER_M) // BLOCK_N
            else:
                n_total = gl.cdiv(N, BLOCK_N)
                n_free = N // BLOCK_N
            m_c = 2 * start_m + C
        # (PV_IN_FLIGHT is passed on: SOFTMAX_OVERLAP's steps do not read it)
        _consumer(q_smem, q_bar, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, n_free,
                  n_total, off_b, off_h, off_h // GROUP, m_c, N, qk_scale, IS_CAUSAL, CONSUMER_M, BLOCK_N,
                  HEAD_DIM, NUM_STAGES, True, True, s_layout, o_layout, p_layout, row_layout, True, l_buf,
                  PINGPONG, my_turn, next_turn, TURN_FLIP, True, base, base + i, i & 1, q_empty, o_smem,
                  PAIRED_CVT, RARE_RESCALE, FUSED_EXPONENT, SHORT_REDUCTIONS, LANE_SUMS, LANE_MAX, Q_REGS,
                  EARLY_EXP)
        if FOLD and C == 1:
            # the tile's key blocks are consumer 0's, whose rows see at least as many: consumer 1 drains those its
            # rows do not see (consumer 1 and not 0, whose one more live register through the steps spilled)
            _drain(k_bars, v_bars, k_empty, v_empty, n_total, n_blocks, base, base + i, NUM_STAGES, PINGPONG,
                   my_turn, next_turn, TURN_FLIP)
            base += n_blocks
        else:
            base += n_total
    tma.store_wait(pendings=0)


@gluon.jit
def _gluon_attn_fwd(q_desc, k_desc, v_desc, o_desc, qk_scale, H, GROUP, N,
                    HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                    NUM_STAGES: gl.constexpr, IS_CAUSAL: gl.constexpr, PRODUCER_WARP: gl.constexpr = False,
                    TWO_CONSUMERS: gl.constexpr = False, SOFTMAX_OVERLAP: gl.constexpr = False,
                    REGISTER_REALLOC: gl.constexpr = False, SPLIT_CONSUMERS: gl.constexpr = False,
                    PINGPONG: gl.constexpr = False, PERSISTENT: gl.constexpr = False,
                    SECTIONS: gl.constexpr = False, FOLD: gl.constexpr = False,
                    LEAN_BARRIERS: gl.constexpr = "", PAIRED_CVT: gl.constexpr = False,
                    RARE_RESCALE: gl.constexpr = False, SNAKE_SMS: gl.constexpr = 0,
                    FUSED_EXPONENT: gl.constexpr = False,
                    SHORT_REDUCTIONS: gl.constexpr = False, LANE_SUMS: gl.constexpr = False,
                    LANE_MAX: gl.constexpr = False, Q_REGS: gl.constexpr = False,
                    EARLY_EXP: gl.constexpr = False):
    """O = softmax(Q K^T * scale [+ causal mask]) V for one (batch*head, query block) per program.

    q_desc, o_desc: TMA descriptors of the (B, H, N, HEAD_DIM) tensors, block [1, 1, BLOCK_M, HEAD_DIM]; k_desc,
    v_desc: of the (B, H // GROUP, N, HEAD_DIM) tensors, block [1, 1, BLOCK_N, HEAD_DIM]; all with the NVMMA shared
    layout of `shared_layout` (``descriptors`` makes them). qk_scale: the softmax scale times log2(e), positive.
    Launched on exactly ``grid(B, H, N, BLOCK_M)`` with 4 warps: the query block is read from the grid's size.
    PRODUCER_WARP: a warp-specialized kernel with a TMA producer warp (see the module's docstring); launched with
    ``launch_options(BLOCK_M, BLOCK_N, HEAD_DIM, True)``: num_warps=4 and the tile's maxnreg.
    TWO_CONSUMERS (with PRODUCER_WARP, BLOCK_M = 128): two consumer warpgroups of 64 rows each; q_desc's and o_desc's
    block is [1, 1, 64, HEAD_DIM] (``descriptors(..., two_consumers=True)``); launched on ``grid(B, H, N, 128)``
    with ``launch_options(128, BLOCK_N, HEAD_DIM, True, True)``: num_warps=4 and no maxnreg.
    REGISTER_REALLOC (with SOFTMAX_OVERLAP): the two consumer warpgroups are one 8-warp default partition; q_desc's
    and o_desc's block is [1, 1, 128, HEAD_DIM] (``descriptors(..., two_consumers=False)``); launched with
    ``launch_options(128, BLOCK_N, HEAD_DIM, True, True, True)``: num_warps=8 and maxnreg 168.
    SPLIT_CONSUMERS (with REGISTER_REALLOC): the two consumers in their own partitions again, as with TWO_CONSUMERS
    (64-row q_desc and o_desc blocks), with setmaxnreg; launched with ``launch_options(128, 128, HEAD_DIM, True,
    True, True, True)``: num_warps=4 and maxnreg 168.
    PERSISTENT (with SPLIT_CONSUMERS): a persistent grid, launched on ``grid(B, H, N, 128, True, n_sms)`` (one
    program per SM, at most one per tile), with SPLIT_CONSUMERS' descriptors and options; the tiles are read from
    N, H and q_desc's shape, the programs from the grid.
    SECTIONS (with PERSISTENT): the tiles in sections of a few K/V heads (``_tile_of``).
    FOLD (with PERSISTENT): on a causal grid of one round, each tile's consumers take a light and a heavy 64-row
    query block of its head (``_folded_blocks``).
    LEAN_BARRIERS (with PERSISTENT): LEAN_MARK, or "" (off): the kernel's PTX carries the mark, and the compile's
    PTX stage drops the consumers' CTA barriers before their mbarrier operations (``drop_membar_barriers``).
    PAIRED_CVT (with PERSISTENT): the probabilities become the P V product's 16-bit operand two at a time, by one
    paired conversion each (``_operand``).
    RARE_RESCALE (with PAIRED_CVT): each consumer rescales its l_i and acc only in the steps where some row's maximum
    grew by more than RESCALE_GROWTH (``_overlap_softmax``).
    FUSED_EXPONENT (with RARE_RESCALE; stage v33): the consumers' exponents by one FFMA per score where a warp's rows'
    scaled maxima are below FUSED_LIMIT, the exact exponent otherwise (``_fused_exponent``).
    SHORT_REDUCTIONS (with FUSED_EXPONENT; stage v34): the consumers' row maxima and sums in short chains
    (``_row_reduce``).
    LANE_SUMS (with FUSED_EXPONENT; stage v35): the consumers' row sums kept per thread, added across the lanes
    once per tile (``_lane_sums``).
    LANE_MAX (with LANE_SUMS; stage v36): the consumers' row maxima kept per lane, their vote taken on each thread's
    own maxima, and a row's four lanes' maxima exchanged only in a step that rescales (``_quad_max``).
    SNAKE_SMS (without PERSISTENT; stage v32's small_n_tile): the GPU's SMs, or 0 (off): the programs, in launch
    order, are dealt the query blocks heaviest first in waves of SNAKE_SMS, every second wave in reverse
    (``_snake_block``), so that the SM that took a wave's heaviest block is dealt the next wave's lightest.
    """
    gl.static_assert(PAIRED_CVT or not RARE_RESCALE, "RARE_RESCALE is built on PAIRED_CVT")
    gl.static_assert(RARE_RESCALE or not FUSED_EXPONENT, "FUSED_EXPONENT is built on RARE_RESCALE")
    gl.static_assert(PERSISTENT or not FUSED_EXPONENT, "FUSED_EXPONENT: the persistent kernel's 64-row consumers")
    gl.static_assert(FUSED_EXPONENT or not SHORT_REDUCTIONS, "SHORT_REDUCTIONS is built on FUSED_EXPONENT")
    gl.static_assert(FUSED_EXPONENT or not LANE_SUMS, "LANE_SUMS is built on FUSED_EXPONENT")
    gl.static_assert(LANE_SUMS or not LANE_MAX, "LANE_MAX is built on LANE_SUMS")
    gl.static_assert(LANE_MAX or not Q_REGS, "Q_REGS is built on LANE_MAX")
    gl.static_assert(LANE_MAX or not EARLY_EXP, "EARLY_EXP is built on LANE_MAX")
    dtype: gl.constexpr = q_desc.dtype
    gl.static_assert(PERSISTENT or LEAN_BARRIERS == "", "LEAN_BARRIERS is built on PERSISTENT")
    if LEAN_BARRIERS != "":
        # the mark: an empty inline asm (a comment) that the compile's PTX stage finds (``_stages_hook``)
        gl.inline_asm_elementwise(LEAN_BARRIERS, "=r,r", [N], dtype=gl.int32, is_pure=False, pack=1)

    # The schedule: batch*head on axis 0, the query block on axis 1, reversed (the heaviest first).
    off_bh = gl.program_id(0)
    start_m = gl.num_programs(1) - 1 - gl.program_id(1)
    gl.static_assert(SNAKE_SMS == 0 or not PERSISTENT, "SNAKE_SMS: a grid of one program per query block")
    if SNAKE_SMS > 0:
        off_bh, start_m = _snake_block(SNAKE_SMS)
    off_b = off_bh // H
    off_h = off_bh % H
    kv_h = off_h // GROUP

    # The register layouts: the two products' accumulators (one warpgroup, warps stacked along the rows), P as the
    # A operand of the second, and the per-row statistics.
    # REGISTER_REALLOC: two warpgroups in one partition, stacked along the rows (warpgroup w: rows 64 w .. 64 w + 63).
    # SPLIT_CONSUMERS: each warpgroup in its own partition again (one warpgroup per layout, as before v23).
    ONE_PARTITION: gl.constexpr = REGISTER_REALLOC and not SPLIT_CONSUMERS
    WARPS: gl.constexpr = 8 if ONE_PARTITION else 4
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WARPS, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WARPS, 1],
                                                       instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)

    # Whether a step's P V product may run on into the next step, waited for with the next scores (one wait per
    # step, as Triton pipelines v13): its P operand and accumulator then stay in registers while the next q k^T
    # product is issued. Chosen when the three tiles (acc, S in float32, P in 16 bits) take at most 192 of a
    # thread's 255 registers: 64x64 and 64x128 tiles at D = 128, and 128x64 at D = 64; a 128x64 tile at D = 128
    # (224) waits for its P V product within the step, as it would spill otherwise.
    # TWO_CONSUMERS: each consumer warpgroup holds CONSUMER_M = BLOCK_M // 2 of the program's rows, and the rule is
    # its tiles'.
    # REGISTER_REALLOC: both consumers in one partition (PAIR off), which covers the program's BLOCK_M rows.
    # SPLIT_CONSUMERS: two partitions again (PAIR on).
    PAIR: gl.constexpr = TWO_CONSUMERS and not ONE_PARTITION
    CONSUMER_M: gl.constexpr = BLOCK_M // 2 if PAIR else BLOCK_M
    PV_IN_FLIGHT: gl.constexpr = CONSUMER_M * (HEAD_DIM + BLOCK_N + BLOCK_N // 2) <= 192 * 128

    gl.static_assert(TWO_CONSUMERS or not SOFTMAX_OVERLAP, "SOFTMAX_OVERLAP is built on TWO_CONSUMERS")
    gl.static_assert(SOFTMAX_OVERLAP or not REGISTER_REALLOC, "REGISTER_REALLOC is built on SOFTMAX_OVERLAP")
    gl.static_assert(BLOCK_M == 128 or not REGISTER_REALLOC, "REGISTER_REALLOC: a 128-row Q tile, two warpgroups")
    gl.static_assert(REGISTER_REALLOC or not SPLIT_CONSUMERS, "SPLIT_CONSUMERS is built on REGISTER_REALLOC")
    gl.static_assert(SPLIT_CONSUMERS or not PINGPONG, "PINGPONG is built on SPLIT_CONSUMERS")
    # PINGPONG: both consumers take the same n_total + 1 turns, which holds when a key block is a program's two
    # query blocks (see _consumer_pair's "The turns")
    gl.static_assert(BLOCK_N == BLOCK_M or not PINGPONG, "PINGPONG: 128-row K/V blocks")
    gl.static_assert(SPLIT_CONSUMERS or not PERSISTENT, "PERSISTENT is built on SPLIT_CONSUMERS")
    # PERSISTENT: both consumers have the tile's n_total blocks (see _persistent_consumer)
    gl.static_assert(BLOCK_N == BLOCK_M or not PERSISTENT, "PERSISTENT: 128-row K/V blocks")
    gl.static_assert(PERSISTENT or not SECTIONS, "SECTIONS is built on PERSISTENT")
    gl.static_assert(PERSISTENT or not FOLD, "FOLD is built on PERSISTENT")
    # Shared memory: Q's tile (O's on the way out), the K and V rings, and their barriers ("ready": the tile has
    # arrived; with a producer warp also "empty": the consumer is done with the buffer).
    if PAIR:
        # One Q (then O) buffer per consumer, its CONSUMER_M rows: q_desc's and o_desc's block is [1, 1, CONSUMER_M,
        # HEAD_DIM] (``descriptors(..., two_consumers=True)``), which the kernel checks at compile time.
        gl.static_assert(PRODUCER_WARP, "TWO_CONSUMERS needs PRODUCER_WARP: the producer warp feeds both consumers")
        gl.static_assert(BLOCK_M == 128, "TWO_CONSUMERS: a 128-row Q tile, 64 rows per consumer warpgroup")
        gl.static_assert(NUM_STAGES >= 2, "TWO_CONSUMERS: two stages at least (see _consumer_pair)")
        gl.static_assert(q_desc.block_type.shape[2] == CONSUMER_M, "TWO_CONSUMERS: q_desc's block has 64 rows")
        gl.static_assert(o_desc.block_type.shape[2] == CONSUMER_M, "TWO_CONSUMERS: o_desc's block has 64 rows")
        q_smem = gl.allocate_shared_memory(dtype, [2, 1, 1, CONSUMER_M, HEAD_DIM], q_desc.layout)
    else:
        q_smem = gl.allocate_shared_memory(dtype, [1, 1, BLOCK_M, HEAD_DIM], q_desc.layout)
    if SOFTMAX_OVERLAP:
        # each consumer's scratch row sums (see _overlap_step): stored every step, never read
        if LANE_SUMS:     # each thread's partial sums (_lane_sums): 4 per row
            l_smem = gl.allocate_shared_memory(gl.float32, [2 if PAIR else 1, CONSUMER_M, 4],
                                               gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0]))
        else:
            l_smem = gl.allocate_shared_memory(gl.float32, [2 if PAIR else 1, CONSUMER_M],
                                               gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0]))
    else:
        l_smem = q_smem
    k_smem = gl.allocate_shared_memory(dtype, [NUM_STAGES, 1, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [NUM_STAGES, 1, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_bars = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    v_bars = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    if PRODUCER_WARP:
        k_empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
        v_empty = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    else:
        k_empty = k_bars        # not used without a producer warp
        v_empty = v_bars
    if PERSISTENT:
        # O's own buffer, one half per consumer, so that a tile's O store runs under the next tile, whose Q is
        # loaded into Q's buffer once both consumers have handed it back (q_empty, one arrive each)
        o_smem = gl.allocate_shared_memory(dtype, [2, 1, 1, CONSUMER_M, HEAD_DIM], o_desc.layout)
        q_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(q_empty, count=2)
    else:
        o_smem = q_smem         # not used without PERSISTENT
        q_empty = q_bar
    if PINGPONG:
        # consumer c's turn barrier: the other consumer's one arrive per round completes its phase
        turns = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        for c in gl.static_range(2):
            mbarrier.init(turns.index(c), count=1)
    else:
        turns = k_empty         # not used without PINGPONG
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(k_bars.index(i), count=1)
        mbarrier.init(v_bars.index(i), count=1)
        if PRODUCER_WARP:
            if PAIR:
                # A buffer is free once both consumers have released it: one arrive from each (see _consumer_pair).
                mbarrier.init(k_empty.index(i), count=2)
                mbarrier.init(v_empty.index(i), count=2)
            else:
                mbarrier.init(k_empty.index(i), count=1)    # one arrive per release: Gluon issues it from one thread
                mbarrier.init(v_empty.index(i), count=1)
    fence_async_shared()

    # The loop bounds: key blocks [0, n_free) need no mask, [n_free, n_total) do.
    if IS_CAUSAL:
        hi = gl.minimum(N, (start_m + 1) * BLOCK_M)
        n_free = (start_m * BLOCK_M) // BLOCK_N
    else:
        hi = N
        n_free = N // BLOCK_N
    n_total = gl.cdiv(hi, BLOCK_N)

    # Q once (by the warpgroup, before any fork: it is in flight while the producer warp starts), then the K and V
    # loads: the first NUM_STAGES - 1 blocks here and the rest from the steps, or all of them by the producer warp.
    if PERSISTENT:
        # The producer loads every tile's Q (_persistent_producer); Q's barrier counts a phase per tile.
        CONSUMER_REGS: gl.constexpr = _SPLIT_REGS
        gl.warp_specialize([
            (_persistent_consumer, (q_smem.index(0), q_bar, q_empty, o_smem.index(0), k_desc, v_desc, o_desc, k_smem,
                                    v_smem, k_bars, v_bars, k_empty, v_empty, l_smem.index(0), H, GROUP, N, qk_scale,
                                    0, IS_CAUSAL, BLOCK_M, CONSUMER_M, BLOCK_N, HEAD_DIM, NUM_STAGES, s_layout,
                                    o_layout, p_layout, row_layout, PINGPONG, turns.index(0), turns.index(1), 1,
                                    SECTIONS, FOLD, PAIRED_CVT, RARE_RESCALE, FUSED_EXPONENT,
                                    SHORT_REDUCTIONS, LANE_SUMS, LANE_MAX, Q_REGS, EARLY_EXP)),
            (_persistent_consumer, (q_smem.index(1), q_bar, q_empty, o_smem.index(1), k_desc, v_desc, o_desc, k_smem,
                                    v_smem, k_bars, v_bars, k_empty, v_empty, l_smem.index(1), H, GROUP, N, qk_scale,
                                    1, IS_CAUSAL, BLOCK_M, CONSUMER_M, BLOCK_N, HEAD_DIM, NUM_STAGES, s_layout,
                                    o_layout, p_layout, row_layout, PINGPONG, turns.index(1), turns.index(0), 0,
                                    SECTIONS, FOLD, PAIRED_CVT, RARE_RESCALE, FUSED_EXPONENT,
                                    SHORT_REDUCTIONS, LANE_SUMS, LANE_MAX, Q_REGS, EARLY_EXP)),
            (_persistent_producer, (q_desc, k_desc, v_desc, q_smem, q_bar, q_empty, k_smem, v_smem, k_bars, v_bars,
                                    k_empty, v_empty, H, GROUP, N, IS_CAUSAL, BLOCK_M, BLOCK_N, CONSUMER_M,
                                    NUM_STAGES, SECTIONS, FOLD)),
        ], [4, 1], [CONSUMER_REGS, _PRODUCER_REGS])
    elif PAIR:
        # Both halves of the Q tile on one barrier: one expect of both tiles' bytes (an expect is also the
        # barrier's one arrive, so a second expect could come after the first tile had completed the phase), two
        # copies. A half wholly past N reads as zeros, and its bytes still count (at N = 130, for instance).
        mbarrier.expect(q_bar, 2 * q_desc.block_type.nbytes)
        for c in gl.static_range(2):
            tma.async_copy_global_to_shared(q_desc, [off_b, off_h, (2 * start_m + c) * CONSUMER_M, 0], q_bar,
                                            q_smem.index(c))
    else:
        mbarrier.expect(q_bar, q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [off_b, off_h, start_m * BLOCK_M, 0], q_bar, q_smem)
    if PERSISTENT:
        pass                    # forked above
    elif PRODUCER_WARP:
        if ONE_PARTITION:
            # One consumer partition of two warpgroups (8 warps, the default) and the producer warp: the MMAs are all
            # in the default partition, whose setmaxnreg (240) ptxas honours (see "Register reallocation").
            gl.warp_specialize([
                (_consumer, (q_smem, q_bar, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars, k_empty,
                             v_empty, n_free, n_total, off_b, off_h, kv_h, start_m, N, qk_scale, IS_CAUSAL, BLOCK_M,
                             BLOCK_N, HEAD_DIM, NUM_STAGES, PV_IN_FLIGHT, PRODUCER_WARP, s_layout, o_layout,
                             p_layout, row_layout, SOFTMAX_OVERLAP, l_smem.index(0))),
                (_kv_producer, (k_desc, v_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, n_total, off_b,
                                kv_h, BLOCK_N, NUM_STAGES)),
            ], [1], [_PRODUCER_REGS])
        elif TWO_CONSUMERS:
            _consumer_pair(q_smem, q_bar, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty,
                           l_smem, n_total, off_b, off_h, kv_h, start_m, N, qk_scale, IS_CAUSAL, CONSUMER_M, BLOCK_N,
                           HEAD_DIM, NUM_STAGES, PV_IN_FLIGHT, s_layout, o_layout, p_layout, row_layout,
                           SOFTMAX_OVERLAP, SPLIT_CONSUMERS, PINGPONG, turns)
        else:
            gl.warp_specialize([
                (_consumer, (q_smem, q_bar, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars, k_empty,
                             v_empty, n_free, n_total, off_b, off_h, kv_h, start_m, N, qk_scale, IS_CAUSAL, BLOCK_M,
                             BLOCK_N, HEAD_DIM, NUM_STAGES, PV_IN_FLIGHT, PRODUCER_WARP, s_layout, o_layout,
                             p_layout, row_layout)),
                (_kv_producer, (k_desc, v_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, n_total, off_b,
                                kv_h, BLOCK_N, NUM_STAGES)),
            ], [1], [_PRODUCER_REGS])
    else:
        for i in gl.static_range(NUM_STAGES - 1):
            _issue_load(k_desc, k_smem, k_bars, i, n_total, off_b, kv_h, BLOCK_N, NUM_STAGES)
            _issue_load(v_desc, v_smem, v_bars, i, n_total, off_b, kv_h, BLOCK_N, NUM_STAGES)
        _consumer(q_smem, q_bar, k_desc, v_desc, o_desc, k_smem, v_smem, k_bars, v_bars, k_empty, v_empty, n_free,
                  n_total, off_b, off_h, kv_h, start_m, N, qk_scale, IS_CAUSAL, BLOCK_M, BLOCK_N, HEAD_DIM,
                  NUM_STAGES, PV_IN_FLIGHT, PRODUCER_WARP, s_layout, o_layout, p_layout, row_layout)


# ---------------------------------------------------------------------------------------------------------------
# The host side
# ---------------------------------------------------------------------------------------------------------------

def shared_layout(rows: int, head_dim: int, dtype) -> gl.NVMMASharedLayout:
    """The shared layout of one [1, 1, rows, head_dim] TMA tile (and of the kernel's buffer for it): NVMMA
    swizzling, the widest the row allows (128 bytes at D = 64 and 128 in 16 bits)."""
    return gl.NVMMASharedLayout.get_default_for([1, 1, rows, head_dim], dtype)


def _gl_dtype(torch_dtype):
    import torch
    return {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}[torch_dtype]


def descriptors(q, k, v, out, block_m: int, block_n: int, two_consumers: bool = False) -> tuple:
    """Host TMA descriptors (Gluon's TensorDescriptor) of q, k, v and out, whole 4-D (B, heads, N, D) tensors; a
    block is one (batch, head)'s block_m rows of q and out, or block_n rows of k and v; with two_consumers (the
    kernel's TWO_CONSUMERS in two partitions, without REGISTER_REALLOC or with SPLIT_CONSUMERS: ``splits_q``)
    block_m // 2 rows of q and
    out, one consumer's. A dimension of size 1 is never stepped
    over: it gets a stride that TMA accepts (D elements), as in kernels.launcher.host_descriptors."""
    D = q.shape[-1]
    dt = _gl_dtype(q.dtype)
    q_rows = block_m // 2 if two_consumers else block_m

    def strides(t):
        return [st if n > 1 else D for st, n in zip(t.stride()[:-1], t.shape[:-1])] + [1]

    return tuple(TensorDescriptor(t, list(t.shape), strides(t), [1, 1, rows, D], shared_layout(rows, D, dt))
                 for t, rows in ((q, q_rows), (k, block_n), (v, block_n), (out, q_rows)))


def splits_q(two_consumers: bool, register_realloc: bool, split_consumers: bool = False) -> bool:
    """Whether each consumer warpgroup has its own Q (and O) tile and descriptor block (block_m // 2 rows): with
    TWO_CONSUMERS in two partitions, not with REGISTER_REALLOC, whose one partition loads and stores all block_m,
    unless SPLIT_CONSUMERS makes them two partitions again."""
    return two_consumers and (split_consumers or not register_realloc)


def grid(B: int, H: int, N: int, block_m: int, persistent: bool = False, n_sms: int | None = None) -> tuple:
    """The launch grid: (batch*head, query blocks); the kernel reverses the query blocks itself, from the grid's
    size along axis 1 (so a launch must use exactly this grid; axis 1 is at most 65535: N <= 65535 * block_m).
    persistent (PERSISTENT): (programs,), one per SM of the GPU (n_sms) and at most one per tile."""
    if persistent:
        if not n_sms or n_sms < 1:
            raise ValueError(f"a persistent grid needs the GPU's number of SMs, got {n_sms!r}")
        return (min(n_sms, B * H * triton.cdiv(N, block_m)),)
    return (B * H, triton.cdiv(N, block_m))


def section_heads(BH: int, GROUP: int, n_m: int, P: int) -> int:
    """SECTIONS: the query heads of a section of the tile order on P programs, ``_section_heads`` in Python (the
    kernel computes its own; this copy is for the tests and the verify grid, which the GPU checks against it)."""
    need = (3 * P + 1) // 2
    s = 1
    while s * GROUP * n_m < need and (BH // GROUP) % (2 * s) == 0:
        s *= 2
    return BH if s * GROUP * n_m < need else s * GROUP


def snake_block(t: int, P: int, BH: int, n_m: int) -> tuple:
    """SNAKE_SMS: ``_snake_block`` in Python, (batch*head, query block) of program t (launch order) of a (BH, n_m)
    grid dealt in waves of P (for the tests and the verify grid; the kernel computes its own)."""
    first = t // P * P
    last = min(first + P, BH * n_m) - 1
    r = t if t // P % 2 == 0 else first + last - t
    return r % BH, n_m - 1 - r // BH


def fold(T: int, P: int, causal: bool) -> bool:
    """FOLD: whether a grid of T tiles on P programs is folded, ``_fold`` in Python (for the tests and the verify
    grid; the kernel computes its own)."""
    return bool(causal) and T <= P


def folded_blocks(start_m: int, N: int, folded: bool, causal: bool, consumer_m: int = 64,
                  block_n: int = 128) -> tuple:
    """FOLD: ``_folded_blocks`` in Python, (m0, n_free0, n_total0, m1, n_free1, n_total1) of tile start_m."""
    def bounds(m):
        if causal:
            return (m * consumer_m) // block_n, -(-min(N, (m + 1) * consumer_m) // block_n)
        return N // block_n, -(-N // block_n)
    n_m = -(-N // (2 * consumer_m))
    m0, m1 = (2 * n_m - 1 - start_m, start_m) if folded else (2 * start_m, 2 * start_m + 1)
    return (m0, *bounds(m0), m1, *bounds(m1))


def kernel_args(q, k, v, out, causal: bool, block_m: int, block_n: int, num_stages: int,
                sm_scale: float | None = None, producer_warp: bool = False, two_consumers: bool = False,
                softmax_overlap: bool = False, register_realloc: bool = False,
                split_consumers: bool = False, pingpong: bool = False, persistent: bool = False,
                sections: bool = False, fold: bool = False, lean_barriers: bool = False,
                paired_cvt: bool = False, rare_rescale: bool = False, snake_sms: int = 0,
                fused_exponent: bool = False, short_reductions: bool = False, lane_sums: bool = False,
                lane_max: bool = False, q_regs: bool = False, early_exp: bool = False) -> dict:
    """Every parameter of `_gluon_attn_fwd` by name, for a call on these tensors (what a launch passes, with the
    options of ``launch_options(block_m, block_n, D, producer_warp, two_consumers)``). two_consumers needs
    producer_warp (the kernel's TWO_CONSUMERS is built on PRODUCER_WARP)."""
    if two_consumers and not producer_warp:
        raise ValueError("two_consumers (the Gluon kernel's TWO_CONSUMERS) needs producer_warp: the producer warp "
                         "loads K and V once for both consumer warpgroups")
    if softmax_overlap and not two_consumers:
        raise ValueError("softmax_overlap (the Gluon kernel's SOFTMAX_OVERLAP) needs two_consumers: it reorders "
                         "each consumer warpgroup's products")
    if register_realloc and not softmax_overlap:
        raise ValueError("register_realloc (the Gluon kernel's REGISTER_REALLOC) needs softmax_overlap: it puts that "
                         "kernel's two consumer warpgroups into one partition")
    if split_consumers and not register_realloc:
        raise ValueError("split_consumers (the Gluon kernel's SPLIT_CONSUMERS) needs register_realloc: it gives that "
                         "kernel's two consumer warpgroups their own partitions again, keeping its registers")
    if pingpong and not split_consumers:
        raise ValueError("pingpong (the Gluon kernel's PINGPONG) needs split_consumers: it orders the products of "
                         "that kernel's two consumer partitions")
    if persistent and not split_consumers:
        raise ValueError("persistent (the Gluon kernel's PERSISTENT) needs split_consumers: its programs loop over "
                         "that kernel's tiles")
    if sections and not persistent:
        raise ValueError("sections (the Gluon kernel's SECTIONS) needs persistent: it orders that kernel's tiles")
    if fold and not persistent:
        raise ValueError("fold (the Gluon kernel's FOLD) needs persistent: it pairs the query blocks of that "
                         "kernel's tiles")
    if lean_barriers and not persistent:
        raise ValueError("lean_barriers (the Gluon kernel's LEAN_BARRIERS) needs persistent: its PTX pass is checked "
                         "on that kernel's consumers only")
    if paired_cvt and not persistent:
        raise ValueError("paired_cvt (the Gluon kernel's PAIRED_CVT) needs persistent: only that kernel's consumers "
                         "take it")
    if rare_rescale and not paired_cvt:
        raise ValueError("rare_rescale (the Gluon kernel's RARE_RESCALE) needs paired_cvt: it skips that kernel's "
                         "rescales")
    if fused_exponent and not rare_rescale:
        raise ValueError("fused_exponent (the Gluon kernel's FUSED_EXPONENT) needs rare_rescale: it computes that "
                         "kernel's exponents against its kept maxima")
    if lane_sums and not fused_exponent:
        raise ValueError("lane_sums (the Gluon kernel's LANE_SUMS) needs fused_exponent: it keeps that kernel's "
                         "row sums per thread")
    if lane_max and not lane_sums:
        raise ValueError("lane_max (the Gluon kernel's LANE_MAX) needs lane_sums: it keeps that kernel's row maxima "
                         "per lane, as that kernel keeps its row sums")
    if early_exp and not lane_max:
        raise ValueError("early_exp (the Gluon kernel's EARLY_EXP) needs lane_max: it reorders that kernel's softmax "
                         "in the persistent consumers")
    if q_regs and not lane_max:
        raise ValueError("q_regs (the Gluon kernel's Q_REGS) needs lane_max: it changes the q k^T products of that "
                         "kernel's persistent consumers")
    if short_reductions and not fused_exponent:
        raise ValueError("short_reductions (the Gluon kernel's SHORT_REDUCTIONS) needs fused_exponent: it shortens "
                         "that kernel's row reductions")
    if snake_sms and (persistent or snake_sms < 0):
        raise ValueError(f"snake_sms (the Gluon kernel's SNAKE_SMS, {snake_sms!r}) deals a grid of one program per "
                         f"query block over the GPU's SMs: give their number, without persistent")
    _, H, N, D = q.shape
    H_kv = k.shape[1]
    if sm_scale is None:
        sm_scale = 1.0 / math.sqrt(D)
    q_desc, k_desc, v_desc, o_desc = descriptors(q, k, v, out, block_m, block_n,
                                                 splits_q(two_consumers, register_realloc, split_consumers))
    return dict(q_desc=q_desc, k_desc=k_desc, v_desc=v_desc, o_desc=o_desc, qk_scale=float(sm_scale) * LOG2E,
                H=H, GROUP=H // H_kv, N=N, HEAD_DIM=D, BLOCK_M=block_m, BLOCK_N=block_n, NUM_STAGES=num_stages,
                IS_CAUSAL=bool(causal), PRODUCER_WARP=bool(producer_warp), TWO_CONSUMERS=bool(two_consumers),
                SOFTMAX_OVERLAP=bool(softmax_overlap), REGISTER_REALLOC=bool(register_realloc),
                SPLIT_CONSUMERS=bool(split_consumers), PINGPONG=bool(pingpong), PERSISTENT=bool(persistent),
                SECTIONS=bool(sections), FOLD=bool(fold), LEAN_BARRIERS=LEAN_MARK if lean_barriers else "",
                PAIRED_CVT=bool(paired_cvt), RARE_RESCALE=bool(rare_rescale), SNAKE_SMS=int(snake_sms),
                FUSED_EXPONENT=bool(fused_exponent), SHORT_REDUCTIONS=bool(short_reductions),
                LANE_SUMS=bool(lane_sums), LANE_MAX=bool(lane_max), Q_REGS=bool(q_regs),
                EARLY_EXP=bool(early_exp))


def tile_registers(block_m: int, block_n: int, head_dim: int) -> int:
    """Registers per thread of one warpgroup that the three tiles take (acc and S in float32, P in 16 bits): the
    kernel's PV_IN_FLIGHT is this <= 192."""
    return block_m * (head_dim + block_n + block_n // 2) // 128


def producer_registers(block_m: int, block_n: int, head_dim: int, two_consumers: bool = False) -> dict:
    """With PRODUCER_WARP: the kernel's maxnreg at launch and the registers per thread that setmaxnreg gives the
    producer's and the consumer's warpgroups (Triton's rule: the consumer gets 2 * maxnreg - producer). With
    two_consumers (TWO_CONSUMERS) nothing is reallocated: every warpgroup has the 168 registers per thread that 384
    threads can have, and the launch passes no maxnreg (None)."""
    if two_consumers:       # no reallocation, and no maxnreg at launch (see TWO_CONSUMERS_REGISTERS)
        return {"maxnreg": None, "producer": TWO_CONSUMERS_REGISTERS, "consumer": TWO_CONSUMERS_REGISTERS}
    maxnreg = (PRODUCER_WARP_MAXNREG if tile_registers(block_m, block_n, head_dim) <= 192
               else PRODUCER_WARP_MAXNREG_WIDE)
    return {"maxnreg": maxnreg, "producer": PRODUCER_WARP_NUM_REGS,
            "consumer": (2 * maxnreg - PRODUCER_WARP_NUM_REGS) // 8 * 8}


def two_consumers_tile(D: int, N: int | None = None) -> tuple:
    """The tile (block_m, block_n, num_warps, num_stages), kernels.stages.Tile's fields, that TWO_CONSUMERS runs at
    for head dim D and sequence length N: 128x64 with three stages at every D and N. The tile is fixed by the
    registers (64-row K/V blocks: see TWO_CONSUMERS_TILES); the ring's depth is free, since one program runs per SM
    whatever it is (its 384 threads take 61440 of the SM's 65536 registers) and three stages take 128 KiB of shared
    memory at D = 128 (96 KiB with two): the third stage gives the two consumers, which drift apart, a block more of
    slack before the slower one holds the producer up, at no cost in programs per SM. N does not change the choice
    (v13's tuned tiles differ with N by their programs per SM and their tile's rows, both fixed here)."""
    if D not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"the Gluon kernel supports head dims {SUPPORTED_HEAD_DIMS}, got {D}")
    return (128, 64, NUM_WARPS, 3)


def register_realloc_tile(D: int, N: int | None = None) -> tuple:
    """The tile (block_m, block_n, num_warps, num_stages) that REGISTER_REALLOC runs at: 128x128 with two stages,
    8 warps (the consumers' partition), at every D and N."""
    if D not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"the Gluon kernel supports head dims {SUPPORTED_HEAD_DIMS}, got {D}")
    return (128, 128, REGISTER_REALLOC_WARPS, 2)


def split_consumers_tile(D: int, N: int | None = None) -> tuple:
    """The tile (block_m, block_n, num_warps, num_stages) that SPLIT_CONSUMERS runs at: 128x128 with two stages,
    4 warps (consumer 0's partition, the default), at every D and N."""
    if D not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"the Gluon kernel supports head dims {SUPPORTED_HEAD_DIMS}, got {D}")
    return (128, 128, NUM_WARPS, 2)


def launch_options(block_m: int, block_n: int, head_dim: int, producer_warp: bool = False,
                   two_consumers: bool = False, register_realloc: bool = False,
                   split_consumers: bool = False) -> dict:
    """The launch (and compile) options of `_gluon_attn_fwd` for this tile: num_warps=4 (the warpgroup; with
    PRODUCER_WARP the default partition, to which the compiler adds the producer warp's warpgroup: 8 warps, 256
    threads; with TWO_CONSUMERS consumer 0, to which it adds consumer 1's warpgroup and the producer's: 12 warps,
    384 threads), and with PRODUCER_WARP maxnreg, the registers per thread at launch that the partitions'
    setmaxnreg share out (``producer_registers``; without it Triton assumes 65536 / 256 = 256 and asks setmaxnreg
    for more than a thread can have). With TWO_CONSUMERS no maxnreg: given one, Triton's warp-specialization
    lowering would reallocate registers around its partitions' dispatch loop (the workers waiting in it at 120),
    and ptxas would then serialize every warpgroup MMA of the consumer in the worker partition on v21's schedule,
    whose P V product stays in flight across the step's end (see TWO_CONSUMERS_REGISTERS and the module's
    docstring; with v22's in-step wait for P V it does not: SPLIT_CONSUMERS). With REGISTER_REALLOC num_warps=8 (the two consumer
    warpgroups' partition) and maxnreg 168 (REGISTER_REALLOC_MAXNREG); with SPLIT_CONSUMERS too num_warps=4 (consumer
    0's partition) and maxnreg 168 (SPLIT_CONSUMERS_MAXNREG), which setmaxnreg shares out as 240, 240 and 24; PINGPONG,
    built on SPLIT_CONSUMERS, launches with its options."""
    if split_consumers:
        return {"num_warps": NUM_WARPS, "maxnreg": SPLIT_CONSUMERS_MAXNREG}
    if register_realloc:
        return {"num_warps": REGISTER_REALLOC_WARPS, "maxnreg": REGISTER_REALLOC_MAXNREG}
    opts = {"num_warps": NUM_WARPS}
    if producer_warp and not two_consumers:
        opts["maxnreg"] = producer_registers(block_m, block_n, head_dim)["maxnreg"]
    return opts


def specialize(kwargs: dict) -> tuple:
    """(signature, constexprs, attrs) of `_gluon_attn_fwd` for these arguments, as Triton's JIT computes them: a
    descriptor becomes 'tensordesc<fp16[1, 1, 64, 128],NVMMASharedLayout(...)>', an integer 'i32' (with its
    divisibility by 16 as an attribute) or, equal to 1, a constant."""
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.runtime.jit import native_specialize_impl

    signature, constexprs, attrs = {}, {}, {}
    for i, param in enumerate(_gluon_attn_fwd.params):
        value = kwargs[param.name]
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            constexprs[(i,)] = value
            continue
        ty, spec = native_specialize_impl(CUDABackend, value, False, True, True)
        signature[param.name] = ty
        if ty == "constexpr":
            constexprs[(i,)] = spec
        elif spec:
            attrs[(i,)] = CUDABackend.parse_attr(spec)
    return signature, constexprs, attrs


def compile_for(arch: int, shape, dtype="float16", causal: bool = True, block_m: int = 64, block_n: int = 64,
                num_stages: int = 3, num_warps: int | None = None, producer_warp: bool = False,
                two_consumers: bool = False, softmax_overlap: bool = False, register_realloc: bool = False,
                split_consumers: bool = False, pingpong: bool = False, persistent: bool = False,
                sections: bool = False, fold: bool = False, lean_barriers: bool = False,
                paired_cvt: bool = False, rare_rescale: bool = False, snake_sms: int = 0,
                fused_exponent: bool = False, short_reductions: bool = False, lane_sums: bool = False,
                lane_max: bool = False, q_regs: bool = False, early_exp: bool = False):
    """Compile `_gluon_attn_fwd` for sm_<arch> without a GPU, as the JIT would for q of shape (B, H, N, D) and k, v
    of (B, H_kv, N, D); shape is (B, H, H_kv, N, D) or a kernels.shapes.Shape, dtype a torch dtype or its name;
    producer_warp: the PRODUCER_WARP kernel, with its launch options; two_consumers (with producer_warp): the
    TWO_CONSUMERS kernel. Returns Triton's CompiledKernel (.asm["ttgir"], ["ptx"], ["cubin"]; .metadata.shared)."""
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    if arch != 90:
        raise ValueError(f"the Gluon kernel uses Hopper's warpgroup MMA (wgmma, sm_90a only); got sm_{arch}")
    if hasattr(shape, "as_dict"):
        shape = (shape.B, shape.H, shape.H_kv, shape.N, shape.D)
    B, H, H_kv, N, D = shape
    dt = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    if num_warps is None:
        num_warps = REGISTER_REALLOC_WARPS if register_realloc and not split_consumers else NUM_WARPS
    check_config(D, dt, block_m, block_n, num_stages, num_warps, two_consumers=two_consumers,
                 register_realloc=register_realloc, split_consumers=split_consumers, persistent=persistent)
    # Tensors on the meta device: no memory, and an address of 0, which is 16-byte aligned like a real one.
    q = torch.empty((B, H, N, D), dtype=dt, device="meta")
    k = torch.empty((B, H_kv, N, D), dtype=dt, device="meta")
    v = torch.empty((B, H_kv, N, D), dtype=dt, device="meta")
    kwargs = kernel_args(q, k, v, torch.empty_like(q), causal, block_m, block_n, num_stages,
                         producer_warp=producer_warp, two_consumers=two_consumers, softmax_overlap=softmax_overlap,
                         register_realloc=register_realloc, split_consumers=split_consumers, pingpong=pingpong,
                         persistent=persistent, sections=sections, fold=fold, lean_barriers=lean_barriers,
                         paired_cvt=paired_cvt, rare_rescale=rare_rescale, snake_sms=snake_sms,
                         fused_exponent=fused_exponent, short_reductions=short_reductions, lane_sums=lane_sums,
                         lane_max=lane_max, q_regs=q_regs, early_exp=early_exp)
    signature, constexprs, attrs = specialize(kwargs)
    return triton.compile(GluonASTSource(_gluon_attn_fwd, signature, constexprs, attrs),
                          target=GPUTarget("cuda", arch, 32),
                          # no num_stages: Gluon does no pipelining of its own
                          options=launch_options(block_m, block_n, D, producer_warp, two_consumers, register_realloc,
                                                 split_consumers))


def check_config(D: int, dtype, block_m: int, block_n: int, num_stages: int, num_warps: int = NUM_WARPS,
                 two_consumers: bool = False, register_realloc: bool = False, split_consumers: bool = False,
                 persistent: bool = False) -> None:
    """Raise ValueError for a head dim, dtype or tile the kernel does not support (with two_consumers: that the
    TWO_CONSUMERS kernel does not take, ``TWO_CONSUMERS_TILES``; with register_realloc, REGISTER_REALLOC_TILES and 8
    warps; with split_consumers, SPLIT_CONSUMERS_TILES and 4 warps; with persistent, PERSISTENT_TILES)."""
    import torch
    if dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"the Gluon kernel takes float16 or bfloat16, got {dtype}")
    if D not in SUPPORTED_HEAD_DIMS:
        raise ValueError(f"the Gluon kernel supports head dims {SUPPORTED_HEAD_DIMS}, got {D}")
    if persistent and (block_m, block_n, num_stages) not in PERSISTENT_TILES:
        raise ValueError(f"the persistent Gluon kernel takes the tiles (block_m, block_n, num_stages) "
                         f"{list(PERSISTENT_TILES)} (O's own buffer leaves no room for a third K/V stage at D = 128); "
                         f"got {block_m}x{block_n} with {num_stages} stages")
    if split_consumers:
        if num_warps != NUM_WARPS:
            raise ValueError(f"the Gluon kernel with its consumer warpgroups split into partitions runs one warpgroup "
                             f"per partition (num_warps={NUM_WARPS}), got num_warps={num_warps}")
        if (block_m, block_n, num_stages) not in SPLIT_CONSUMERS_TILES:
            raise ValueError(f"the Gluon kernel with its consumer warpgroups split into partitions takes the tiles "
                             f"(block_m, block_n, num_stages) {list(SPLIT_CONSUMERS_TILES)}; got {block_m}x{block_n} "
                             f"with {num_stages} stages")
        return
    if register_realloc:
        if num_warps != REGISTER_REALLOC_WARPS:
            raise ValueError(f"the Gluon kernel with register reallocation runs its two consumer warpgroups as one "
                             f"partition (num_warps={REGISTER_REALLOC_WARPS}), got num_warps={num_warps}")
        if (block_m, block_n, num_stages) not in REGISTER_REALLOC_TILES:
            raise ValueError(f"the Gluon kernel with register reallocation takes the tiles (block_m, block_n, "
                             f"num_stages) {list(REGISTER_REALLOC_TILES)}; got {block_m}x{block_n} with "
                             f"{num_stages} stages")
        return
    if num_warps != NUM_WARPS:
        raise ValueError(f"the Gluon kernel runs one warpgroup (num_warps={NUM_WARPS}), got num_warps={num_warps}")
    if two_consumers:
        if (block_m, block_n, num_stages) not in TWO_CONSUMERS_TILES:
            raise ValueError(f"the Gluon kernel with two consumer warpgroups takes the tiles (block_m, block_n, "
                             f"num_stages) {list(TWO_CONSUMERS_TILES)} (a 128-row Q tile, 64 rows per consumer); "
                             f"got {block_m}x{block_n} with {num_stages} stages")
        return
    if block_m not in SUPPORTED_BLOCK_M or block_n not in SUPPORTED_BLOCK_N or num_stages not in SUPPORTED_STAGES:
        raise ValueError(f"the Gluon kernel supports block_m in {SUPPORTED_BLOCK_M}, block_n in {SUPPORTED_BLOCK_N} "
                         f"and num_stages in {SUPPORTED_STAGES}; got {block_m}x{block_n} with {num_stages} stages")
    if block_m == 128 and block_n == 128:
        # acc and S alone take 128 + 128 of a thread's registers at D = 128 (it spills hundreds), and it still
        # spills at D = 64
        raise ValueError("the Gluon kernel does not support 128x128 tiles with one warpgroup (they spill); "
                         "use 128x64 or 64x128")


def forward(q, k, v, *, causal: bool = True, sm_scale: float | None = None, block_m: int | None = None,
            block_n: int | None = None, num_stages: int | None = None, out=None, producer_warp: bool = False,
            two_consumers: bool = False, softmax_overlap: bool = False, register_realloc: bool = False,
            split_consumers: bool = False, pingpong: bool = False, persistent: bool = False,
            sections: bool = False, fold: bool = False, lean_barriers: bool = False,
            paired_cvt: bool = False, rare_rescale: bool = False, fused_exponent: bool = False,
            short_reductions: bool = False, lane_sums: bool = False, lane_max: bool = False,
            q_regs: bool = False, early_exp: bool = False):
    """softmax(q k^T * sm_scale [+ causal mask]) v by `_gluon_attn_fwd` on the GPU, for a first check of the kernel
    (the project's launcher does the input checks; this one checks only what the kernel supports). q: (B, H, N, D),
    k and v: (B, H_kv, N, D), CUDA tensors of one 16-bit dtype with stride(-1) = 1, 16-byte aligned, the other
    strides multiples of 16 bytes. The tile defaults to 64x64 with 3 stages, and with two_consumers (which turns
    producer_warp on: TWO_CONSUMERS is built on it) to ``two_consumers_tile(D, N)``. Returns out (a fresh tensor
    like q unless given)."""
    import torch
    B, H, N, D = q.shape
    lane_max = lane_max or q_regs or early_exp
    lane_sums = lane_sums or lane_max
    fused_exponent = fused_exponent or short_reductions or lane_sums
    rare_rescale = rare_rescale or fused_exponent
    paired_cvt = paired_cvt or rare_rescale
    persistent = persistent or sections or fold or lean_barriers or paired_cvt
    split_consumers = split_consumers or pingpong or persistent
    register_realloc = register_realloc or split_consumers
    softmax_overlap = softmax_overlap or register_realloc
    two_consumers = two_consumers or softmax_overlap
    producer_warp = producer_warp or two_consumers
    default = (split_consumers_tile(D, N) if split_consumers else register_realloc_tile(D, N) if register_realloc
               else two_consumers_tile(D, N) if two_consumers else (64, 64, NUM_WARPS, 3))
    block_m = default[0] if block_m is None else block_m
    block_n = default[1] if block_n is None else block_n
    num_stages = default[3] if num_stages is None else num_stages
    opts = launch_options(block_m, block_n, D, producer_warp, two_consumers, register_realloc, split_consumers)
    check_config(D, q.dtype, block_m, block_n, num_stages, opts["num_warps"], two_consumers=two_consumers,
                 register_realloc=register_realloc, split_consumers=split_consumers, persistent=persistent)
    if out is None:
        out = torch.empty_like(q)
    args = kernel_args(q, k, v, out, causal, block_m, block_n, num_stages, sm_scale, producer_warp, two_consumers,
                       softmax_overlap, register_realloc, split_consumers, pingpong, persistent, sections, fold,
                       lean_barriers, paired_cvt, rare_rescale, fused_exponent=fused_exponent,
                       short_reductions=short_reductions, lane_sums=lane_sums, lane_max=lane_max,
                       q_regs=q_regs, early_exp=early_exp)
    n_sms = torch.cuda.get_device_properties(q.device).multi_processor_count if persistent else None
    _gluon_attn_fwd[grid(B, H, N, block_m, persistent, n_sms)](**args, **opts)
    return out
