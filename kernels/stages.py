"""The stages, defined once: the article's (v0 ... v7) and ours beyond it on Hopper (v8 on).

Every other part of the artifact (the kernel launcher, the tests, the build, bench and profile programs, the
pipeline's wildcards) reads the stages from here. A *switch* is one optimization; a *stage* is the set of switches on
after a step: v0 has none, the article's last stage (FINAL) has its seven, and each of ours adds one more (turning
off, where it says so, the switches it replaces). Ablation variants are any other subset of the switches. A switch's
`change` says what it does; why each of ours was tried, and what it should change, is in data/predictions/stages.csv
and the paper.
"""
from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from .gpus import ARCHS


@dataclass(frozen=True)
class Switch:
    """One optimization: its name, the stage that introduces it and what it changes."""

    name: str
    stage: str
    change: str
    kernel_arg: str  # the tl.constexpr that turns it on ("" for a switch that only the host sees: a tile choice)
    replaces: tuple = ()  # switches of earlier stages that this one turns off (its stage and later ones lack them)
    requires: tuple = ()  # switches it is built on: a variant with it on and one of them off is refused


@dataclass(frozen=True)
class Tile:
    """Launch configuration: rows of Q per program, rows of K/V per step, warps, pipeline depth."""

    block_m: int = 32
    block_n: int = 32
    num_warps: int = 4
    num_stages: int = 3  # Triton's default on NVIDIA GPUs; the article does not set it

    def label(self) -> str:
        return f"{self.block_m}x{self.block_n}w{self.num_warps}s{self.num_stages}"


@dataclass(frozen=True)
class Stage:
    """One stage of the article: the change it makes and the switches that are on."""

    name: str
    change: str
    switches: frozenset
    tile: Tile = field(default_factory=Tile)


# In the article's order; the position is the stage that introduces the switch.
SWITCHES: Mapping[str, Switch] = {
    s.name: s
    for s in (
        Switch("grid_order", "v1",
               "grid axis 0 = query block, axis 1 = batch*head, so programs sharing K/V run together",
               "Q_BLOCKS_ON_AXIS0"),
        Switch("causal_skip", "v2",
               "causal: the KV loop stops at the diagonal, min(N, (m+1)*BM); blocks above it are never loaded",
               "CAUSAL_SKIP"),
        Switch("two_phase", "v3",
               "KV blocks that need no mask run without one; only the diagonal (or ragged last) blocks are masked",
               "TWO_PHASE"),
        Switch("no_extra_casts", "v4",
               "the row sum is taken from the float32 P, not from P rounded to 16 bits and converted back",
               "NO_EXTRA_CASTS"),
        Switch("warp_specialize", "v5",
               "tl.range(..., warp_specialize=True) on the KV loop: producer and consumer warps",
               "WARP_SPECIALIZE"),
        Switch("exp2", "v6",
               "log2(e) folded into the softmax scale on the host; tl.math.exp2 instead of tl.exp",
               "USE_EXP2"),
        Switch("const_strides", "v7",
               "stride_d = 1 and row stride = D as compile-time constants (contiguous rows required)",
               "CONST_STRIDES"),
    )
}

# Our stages beyond the article, on Hopper (sm_90): each adds one switch to the stage before it, in this order. Why
# each one, and what it should change, is written down before it is measured: data/predictions/stages.csv.
BEYOND: Mapping[str, Switch] = {
    s.name: s
    for s in (
        Switch("hopper_tile", "v8",
               "the tile is 64 query rows per warpgroup (64x64, 4 warps, 3 stages), so that tl.dot becomes Hopper's "
               "warpgroup MMA (HGMMA), and the KV loop is no longer warp-specialized",
               "", replaces=("warp_specialize",)),
        Switch("tma", "v9",
               "Q, K, V and O move through TMA tensor descriptors (tl.make_tensor_descriptor) instead of pointer "
               "tiles: no address arithmetic, no bounds masks on the loads",
               "USE_TMA"),
        Switch("heavy_first", "v10",
               "causal: the query blocks are launched in reverse order, the longest (last) ones first",
               "HEAVY_FIRST"),
        Switch("host_descriptors", "v11",
               "the TMA descriptors are made once on the host, for the whole tensors, and passed as kernel "
               "parameters, instead of by every program in global memory",
               "HOST_DESC"),
        Switch("tuned_tiles", "v12",
               "the tile depends on N: the fastest of a recorded tuning run at the nearest tuned N below "
               "(kernels/tuned_tiles.csv, chosen from the data by workflow/scripts/tools/choose_tiles.py)",
               ""),
        Switch("heads_inner", "v13",
               "grid axis 0 = batch*head again (the article's v1 undone): with heavy_first, every head's heaviest "
               "query block starts before any lighter one, longest-first over the whole grid",
               "", replaces=("grid_order",)),
        Switch("lazy_rescale", "v14",
               "the running output and row sums are rescaled only when some row's maximum grew by more than 8 "
               "(a factor 256 in exp2 units), decided once per block (FlashAttention-4's conditional rescaling): "
               "no multiplication of the whole accumulator at most steps",
               "LAZY_RESCALE"),
        Switch("q_in_registers", "v15",
               "Q is made a computed tensor at load (an exact q + 0), so that Triton keeps it in registers as the "
               "A operand of the q k^T warpgroup MMA instead of reading it from shared memory at every step; the "
               "scale stays in the float32 scores; lazy_rescale is off again",
               "Q_IN_REGISTERS", replaces=("lazy_rescale",)),
        Switch("three_per_sm", "v16",
               "64x64 tiles with 2 stages and at most 168 registers per thread (Triton's maxnreg) at every N, so "
               "that three programs (12 warps) share each SM instead of two",
               ""),
        Switch("head_groups", "v17",
               "the grid is ordered by groups of heads whose keys and values fit in half the L2 together, heaviest "
               "query block first within each group: at long sequences the programs running at once read the K "
               "and V of a few heads instead of all of them (at short N one group holds every head: heads_inner's "
               "order)",
               "HEAD_GROUPS"),
        Switch("two_warpgroups", "v18",
               "128x64 tiles of 8 warps (two warpgroups of 64 query rows share each K/V tile in shared memory) with "
               "2 stages and at most 128 registers per thread, so that two programs (16 warps) share each SM; Q is "
               "read from shared memory again, and three_per_sm's 64-row tiles go",
               "", replaces=("three_per_sm", "q_in_registers")),
    )
}

# Our own switches beyond the article: not part of any stage, available to every variant.
EXTENSIONS: Mapping[str, Switch] = {
    s.name: s
    for s in (
        Switch("prescale_q", "",
               "Q is multiplied by the softmax scale once, at load, instead of every score in the loop (C10)",
               "PRESCALE_Q"),
        Switch("overlap_qk", "",
               "the KV loop pipelined by hand: the scores of the next block are asked of the tensor cores before the "
               "softmax of the current one (FlashAttention-3's intra-warpgroup overlap, if Triton keeps the MMA "
               "in flight)",
               "OVERLAP_QK"),
    )
}
# Our stages in Gluon (triton.experimental.gluon; kernels/gluon_fwd.py), from v19 on: a second kernel source in the
# same registry. `gluon` takes the leading Triton stage's schedule (v13) into Gluon, without warp specialization, so
# that the language change alone is measured; each later Gluon stage adds one switch of that kernel. The Gluon kernel
# implements v13's switches as one fixed schedule: its variants vary only the Gluon switches.
GLUON: Mapping[str, Switch] = {
    s.name: s
    for s in (
        Switch("gluon", "v19",
               "the kernel is written in Gluon with v13's schedule (heaviest query block first, heads inner, host-made "
               "4-D TMA descriptors, the tuned tile per N, the two-phase causal loop, exp2) and no warp "
               "specialization: Q, K and V through TMA into shared memory, the K/V blocks in a ring of mbarriers, "
               "both products warpgroup MMAs, O out by a TMA store",
               "", replaces=("head_groups", "two_warpgroups")),
        Switch("producer_warp", "v20",
               "a TMA producer warp (FlashAttention-3's first feature): one warp of a worker warpgroup issues every "
               "K/V load into the ring and waits for each buffer's release, the consumer warpgroup only waits, "
               "multiplies and does the softmax; setmaxnreg gives the producer's warpgroup 24 registers per thread "
               "and the consumer the rest",
               "PRODUCER_WARP"),
        Switch("two_consumers", "v21",
               "two consumer warpgroups (FlashAttention-3's second feature): a program owns 128 query rows, 64 per "
               "consumer warpgroup, and the producer warp loads each K/V block (64 rows, a ring of three) once for "
               "both, whose releases it waits for; grid (B*H, cdiv(N, 128)), 12 warps and one program per SM, no "
               "register reallocation (with it ptxas serializes this schedule's warpgroup MMAs, whose P V product "
               "stays in flight into the next step)",
               "TWO_CONSUMERS", requires=("producer_warp",)),
        Switch("softmax_overlap", "v22",
               "the intra-warpgroup overlap (FlashAttention-3's third feature): each consumer warpgroup issues the "
               "next block's q k^T before the previous block's P V product, waits for the scores alone and computes "
               "their softmax while that P V product runs on the tensor cores, then waits for it (a scratch store "
               "of the row sums keeps ptxas from moving that wait above the exponentials)",
               "SOFTMAX_OVERLAP", requires=("two_consumers",)),
        Switch("register_realloc", "v23",
               "register reallocation for the two consumers (FlashAttention-3's, which v21 gave up): the two consumer "
               "warpgroups become one 8-warp partition, so that every warpgroup MMA is outside the workers' dispatch "
               "loop and setmaxnreg gives the consumers 240 registers per thread (the producer 24) without ptxas "
               "serializing the MMAs (the premise, checked on v21's schedule only, that in a worker partition it "
               "would: v24 shows it does not on v22's); with them the K/V blocks have 128 rows (128x128 tile, a ring of two), which "
               "halves the steps, barriers and row reductions per key and the re-reads of Q from shared memory; the "
               "two warpgroups now step together (each wait and release behind a 256-thread barrier)",
               "REGISTER_REALLOC", requires=("softmax_overlap",)),
        Switch("split_consumers", "v24",
               "the two consumer warpgroups in their own partitions again, keeping v23's registers and 128-row K/V "
               "blocks: with the overlap's in-step wait for P V, ptxas keeps a worker partition's warpgroup MMAs "
               "asynchronous under setmaxnreg (240 registers per consumer thread, 24 for the producer; v23's premise "
               "had been checked on v21's schedule only), so each consumer's CTA barriers are 128-thread ones again "
               "and the two warpgroups no longer step together; 64-row Q tiles per consumer, a 128x128 program tile "
               "in a ring of two",
               "SPLIT_CONSUMERS", requires=("register_realloc",)),
        Switch("pingpong", "v25",
               "ping-pong of the two consumer warpgroups (FlashAttention-3's warp scheduling): each step's two products "
               "(the next block's q k^T and the previous block's P V) are issued in the consumer's turn, which passes "
               "to the other consumer once they are issued (a pair of mbarriers, one arrive per turn, since Gluon 3.6 "
               "has no named barriers), so that one consumer's softmax runs while the tensor cores run the other's "
               "products instead of the two warpgroups' products interleaving",
               "PINGPONG", requires=("split_consumers",)),
        Switch("persistent", "v26",
               "a persistent, heaviest-first grid (FlashAttention-3's tile scheduling): one program per SM loops "
               "over the 128-row tiles, heaviest first, dealt out in rounds that alternate direction; the producer "
               "warp loads each tile's Q once both consumers have handed Q's buffer back and goes on round the K/V "
               "ring into the next tile, and O has its own buffer, so that a tile's O store and the next tile's "
               "first loads run under the end of the tile before, where a program per tile starts each tile cold",
               "PERSISTENT", requires=("split_consumers",)),
        Switch("l2_sections", "v27",
               "the persistent grid's tiles in sections of a few K/V heads (their query heads' tiles, heaviest "
               "first within the section; sections alternately heaviest and lightest first, so that the deal stays "
               "balanced), so that the programs running at once read the K/V of a few heads, which the L2 holds, "
               "where v26's order (a query block of every head at a time) streams every head's K/V from memory",
               "SECTIONS", requires=("persistent",)),
        Switch("folded_pairs", "v28",
               "on a causal grid of one round (no more 128-row tiles than programs, as at N = 512 at the headline "
               "layout), each tile's two consumers take a light and a heavy 64-row query block of its head (the "
               "i-th from the start with the i-th from the end, a fold), so that every program has about the same "
               "work, where 128-row tiles range from one key block to N / 128 and the heaviest sets the kernel's "
               "time; the consumer whose rows see fewer key blocks waits for and hands back the rest, and takes "
               "their turns",
               "FOLD", requires=("persistent",)),
        Switch("lean_barriers", "v29",
               "the consumers' CTA barriers that Gluon's shared-memory pass puts before a step's mbarrier waits, "
               "before each one-thread arrive and before the row sums' scratch store (five 128-thread bar.sync per "
               "step of each consumer in v28's build) are dropped from the PTX by a compile-stage pass, as "
               "FlashAttention-3's consumers release a buffer from one thread after their own MMA wait, without a "
               "barrier: the waits are each thread's own, the one-thread arrives follow that thread's wait for a "
               "warpgroup MMA, which completes for all four warps at once, and the scratch store is never read; "
               "Gluon 3.6 has no API to leave them out; the fold's drain keeps its barriers (there no MMA keeps "
               "the four warps within a phase of each other, and without them a warp two phases behind could "
               "hang)",
               "LEAN_BARRIERS", requires=("persistent",)),
        Switch("paired_cvt", "v30",
               "the probabilities become the P V product's 16-bit operand two at a time, by one cvt.rn.f16x2.f32 "
               "(bf16x2) per pair with the first in the low half, the operand's order, where a conversion per "
               "probability left ptxas packing each pair the other way round and swapping it back with a PRMT (32 "
               "per consumer thread and step at each consumer's 64x128 half of the 128x128 tile in float16, issued "
               "in the consumer's turn between its two products): the same rounding and the same values, 32 fewer "
               "instructions per step",
               "PAIRED_CVT", requires=("persistent",)),
        Switch("rare_rescale", "v31",
               "FlashAttention-4's conditional rescaling in the consumers (v14's lazy_rescale in Triton): the "
               "running maxima, sums and output are rescaled only in a step where some row's maximum grew by more "
               "than 8 in exp2 units (probabilities at most 2^8 otherwise), one decision per warp and step "
               "(a vote over a warp's 16 rows), so that the 64 multiplications of acc per thread are skipped "
               "behind a branch uniform in the warp in most steps of a long row",
               "RARE_RESCALE", requires=("paired_cvt",)),
        Switch("small_n_tile", "v32",
               "at N <= 512 (a causal grid of one round of 128-row tiles at the headline layout, where the "
               "persistent kernel's heaviest consumer walks N / 128 key blocks alone) v19's 64x64 tile and "
               "schedule, one warpgroup per program and two programs per SM, with the programs dealt the query "
               "blocks heaviest first in waves of one per SM, every second wave in reverse (a snake), so that an "
               "SM's two programs are a heavy and a light block; above 512 the persistent kernel of v31",
               "", requires=("rare_rescale",)),
        Switch("fused_exponent", "v33",
               "in the persistent kernel's consumers (v32 above N = 512), each score's exponent by FlashAttention's "
               "one FFMA, s x scale - m x scale with m x scale rounded once per row, in a step where every row of the "
               "warp has |m x scale| below 2^12 in exp2 units (one vote per warp and step, a branch uniform in the "
               "warp), where the exact exponent (s - m) x scale, kept for larger maxima, takes an FADD and an FMUL: "
               "64 fewer instructions per consumer thread and step at a 64x128 block of scores, and an error in each "
               "exponent of about 2^-13 at most, about a sixth of float16's rounding of P",
               "FUSED_EXPONENT", requires=("rare_rescale",)),
        Switch("short_reductions", "v34",
               "in the persistent kernel's consumers (v32 above N = 512), each row's maximum and sum of a block of "
               "scores reduced over a [64, BLOCK_N / 32, 4, 8] view of the accumulator's registers, axis by axis, "
               "where Triton's one reduction chains a thread's 32 values of a row (at BLOCK_N = 128) one after the "
               "other: about 10 dependent instructions before the exponentials instead of 34, the same count; the "
               "maximum is the same, the sum another rounding of the same float32 terms",
               "SHORT_REDUCTIONS", requires=("fused_exponent",)),
        Switch("lane_sums", "v35",
               "in the persistent kernel's consumers (v32 above N = 512), each thread's partial row sums kept across "
               "the steps (a [64, 4] tensor: the in-thread sums of a [64, BLOCK_N / 8, 4, 2] view of the "
               "probabilities, rescaled with the row), the lanes' sums added once per tile, as FlashAttention-3 "
               "does, where v33 adds them across the lanes with two shuffles and two FADDs per row in every step, "
               "after the last exponential; short_reductions off (v34 was slower)",
               "LANE_SUMS", replaces=("short_reductions",), requires=("fused_exponent",)),
        Switch("lane_max", "v36",
               "in the persistent kernel's consumers (v32 above N = 512), each row's maximum kept per lane, as the "
               "sums are since v35: a step's vote on a warp's growth is taken on each thread's maximum of its own "
               "entries of a row (the same decision: a row grew past the threshold exactly where one of its lanes' "
               "maxima did), and the two shuffles per row that exchange a row's four lanes' maxima run only in a "
               "step where the warp rescales, behind a branch uniform in the warp, where v35 runs them in every "
               "step on the path from the scores to the first exponential; the fused exponent's vote is taken on the maxima before the step, and a step that rescales takes the exact exponent",
               "LANE_MAX", requires=("lane_sums",)),
        Switch("q_registers", "v37",
               "in the persistent kernel's consumers (v32 above N = 512), the q k^T products' A operand (the "
               "consumer's 64 rows of Q) read from Q's shared buffer into registers once per tile (32 registers per "
               "thread) and taken from there by every step's warpgroup MMA, where v36's MMAs read it from shared "
               "memory in every step: 16 KB fewer shared-memory reads per consumer and step of the 80 KB that its two "
               "products read at a 64x128 block",
               "Q_REGS", requires=("lane_max",)),
        Switch("early_exponent", "v38",
               "in the persistent kernel's consumers (v32 above N = 512), each step's probabilities taken first from "
               "the rows' maxima before the step, which are the step's wherever the step does not rescale (v31's "
               "rare rescaling), beside the in-thread FMNMX of the step's maxima and the warp's vote on them, where "
               "v36's exponents wait for that vote; a step whose vote says it rescales takes its probabilities "
               "again from the new maxima behind a branch uniform in the warp (the same values as v36's), so that "
               "the maxima leave the path from a step's scores to its next products; q_registers off (v37 was "
               "slower)",
               "EARLY_EXP", replaces=("q_registers",), requires=("lane_max",)),
    )
}
ALL_SWITCHES: Mapping[str, Switch] = {**SWITCHES, **BEYOND, **GLUON, **EXTENSIONS}
TRITON_SWITCHES = tuple(s for s in ALL_SWITCHES if s not in GLUON)   # what the Triton kernel (and its interpreter) runs

ARTICLE_TILE = Tile()
HOPPER_TILE = Tile(64, 64, 4, 3)        # one warpgroup of 64 query rows: wgmma's m64
HOPPER_TILE_D256 = Tile(64, 32, 4, 2)   # D = 256: the K and V stages of 64x64x3 do not fit in 227 KiB
THREE_PER_SM_TILE = Tile(64, 64, 4, 2)  # three_per_sm: with Q in registers, 65568 B of shared memory per program
TWO_WARPGROUPS_TILE = Tile(128, 64, 8, 2)  # two_warpgroups: 98336 B of shared memory per program
# two_consumers (Gluon): 128 query rows per program, 64 per consumer warpgroup, 64-row K/V blocks in a ring of three;
# num_warps is the default partition's (consumer 0): the compiled kernel has 12 warps (kernels.gluon_fwd, which
# takes this tile and 128x64 with two stages only: two_consumers_tile, TWO_CONSUMERS_TILES)
TWO_CONSUMERS_TILE = Tile(128, 64, 4, 3)
# The compiled two-consumer kernels' warps beside their partitions' 4 + 4 + 1: Triton pads the producer warp's
# partition to a warpgroup (for setmaxnreg) with three idle warps, which run no partition and wait at the
# warp-specialization barrier (BAR.SYNC 0x1 of the workers' dispatch loop in the SASS) while the partitions run,
# so that Nsight counts each of them stalled at a barrier in every active cycle (tests/test_gluon_build.py: 12 warps).
PRODUCER_IDLE_WARPS = 3
# register_realloc (Gluon): 128 query rows, 128-row K/V blocks in a ring of two, 8 warps (the consumers' partition;
# 12 in the compiled kernel); kernels.gluon_fwd takes it, 128x128 with three stages and 128x64 with three
# (register_realloc_tile, REGISTER_REALLOC_TILES)
REGISTER_REALLOC_TILE = Tile(128, 128, 8, 2)
# split_consumers (Gluon): v23's tile with 4 warps, the default partition's (consumer 0; 12 in the compiled kernel);
# kernels.gluon_fwd takes it and 128x128 with three stages (split_consumers_tile, SPLIT_CONSUMERS_TILES)
SPLIT_CONSUMERS_TILE = Tile(128, 128, 4, 2)
REGISTERS_PER_SM = ARCHS[90].registers_per_sm                     # the H200's, from kernels.gpus
REGISTER_ALLOCATION_UNIT = ARCHS[90].register_alloc_unit // 32     # per thread (the allocation is per warp)


def head_group_size(N: int, D: int, element_bytes: int, group: int, heads: int, l2_bytes: int) -> int:
    """Query heads per group of the `head_groups` grid order. At most `fit` heads keep the keys and values they read
    (one K/V head per `group` query heads, N x D elements each for K and V) within half the L2; the `heads` (batch x
    heads) are split into as few groups as that allows, of equal size rounded up to whole GQA groups (the last group
    may be smaller), and a group holds at least one GQA group."""
    kv_bytes_per_query_head = 2 * N * D * element_bytes / group
    fit = max(group, int(l2_bytes // 2 // kv_bytes_per_query_head) // group * group)
    n_groups = math.ceil(heads / fit)
    size = math.ceil(math.ceil(heads / n_groups) / group) * group
    return min(heads, size)


# Gluon switches that set a variant's tile at every N (D <= 128), whatever tuned_tiles says: the kernel takes no other.
GLUON_TILES = {"split_consumers": SPLIT_CONSUMERS_TILE, "register_realloc": REGISTER_REALLOC_TILE,
               "two_consumers": TWO_CONSUMERS_TILE}  # the first on wins


# Switches that set a variant's tile at every N (D <= 128; the first on wins) and how many programs of it share an SM:
# the register cap is what lets that many fit. A tile of other warps, given by hand or by a tuning run, is not capped
# (the cap would leave too few registers).
SM_SHARING_TILES = {"two_warpgroups": (TWO_WARPGROUPS_TILE, 2), "three_per_sm": (THREE_PER_SM_TILE, 3)}


def register_cap(switches: Iterable[str], tile: Tile) -> int | None:
    """The most registers per thread a launch lets the compiler use (Triton's `maxnreg`), or None for no limit: the
    most that lets the switch's number of programs of the tile's warps share an SM's registers. With `three_per_sm`
    three 4-warp programs (168 registers); with `two_warpgroups` two 8-warp programs (128)."""
    switches = frozenset(switches)
    for switch, (own, programs) in SM_SHARING_TILES.items():
        if switch in switches and tile.num_warps == own.num_warps:
            per_thread = REGISTERS_PER_SM // (programs * tile.num_warps * 32)
            return per_thread // REGISTER_ALLOCATION_UNIT * REGISTER_ALLOCATION_UNIT
    return None


TUNED_TILES = Path(__file__).with_name("tuned_tiles.csv")


@functools.lru_cache(maxsize=None)
def tuned_tiles() -> tuple:
    """The recorded choice of tile per (D, N): rows of kernels/tuned_tiles.csv as (D, N, Tile), by N."""
    with open(TUNED_TILES, newline="") as f:
        rows = [(int(r["D"]), int(r["N"]), Tile(int(r["block_m"]), int(r["block_n"]), int(r["num_warps"]),
                                                int(r["num_stages"]))) for r in csv.DictReader(f)]
    return tuple(sorted(rows, key=lambda r: (r[0], r[1])))


def tuned_tile(D: int, N: int) -> Tile | None:
    """The tuned tile of the largest tuned N not above N (the smallest tuned N below the table), or None when
    nothing was tuned at this head dim."""
    rows = [(n, t) for d, n, t in tuned_tiles() if d == D]
    if not rows:
        return None
    below = [t for n, t in rows if n <= N]
    return below[-1] if below else rows[0][1]


SMALL_N_MAX = 512   # small_n_tile: the longest N that takes v19's tile and schedule


def small_n_route(switches: Iterable[str], tile: Tile) -> tuple:
    """small_n_tile: (the switches a launch at this tile runs, whether its grid is a snake). A 64-row tile (the
    default at N <= SMALL_N_MAX, or given) runs the first Gluon stage's switches with the snake; any other (the
    persistent tile) the stage's own without small_n_tile. Other switch sets run as they are, without the snake."""
    switches = frozenset(switches)
    if "small_n_tile" not in switches:
        return switches, False
    if tile.block_m == 64:
        return STAGES[GLUON["gluon"].stage].switches, True
    return switches - {"small_n_tile"}, False


def default_tile(switches: Iterable[str], D: int = 128, N: int | None = None) -> Tile:
    """The tile a variant runs at unless one is given: with `small_n_tile` at a known N <= SMALL_N_MAX (D <= 128),
    the first Gluon stage's tile there; with `two_consumers`, `two_warpgroups` or `three_per_sm` (D <= 128) its tile
    at every N; else with `tuned_tiles` and a known N, the recorded choice at that N (where this head dim was
    tuned); else the Hopper tile once `hopper_tile` is on; else the article's."""
    switches = frozenset(switches)
    if "small_n_tile" in switches and N is not None and N <= SMALL_N_MAX and D <= 128:
        return default_tile(STAGES[GLUON["gluon"].stage].switches, D, N)
    for switch, own in GLUON_TILES.items():
        if switch in switches and D <= 128:
            return own
    for switch, (own, _) in SM_SHARING_TILES.items():
        if switch in switches and D <= 128:
            return own
    if "tuned_tiles" in switches and N is not None and (t := tuned_tile(D, N)) is not None:
        return t
    if "hopper_tile" in switches:
        return HOPPER_TILE if D <= 128 else HOPPER_TILE_D256
    return ARTICLE_TILE


def _cumulative_stages() -> dict:
    stages = {"v0": Stage("v0", "baseline: grid (batch*head, query block); full KV loop with the mask; tl.exp",
                          frozenset())}
    on: set = set()
    for sw in (*SWITCHES.values(), *BEYOND.values(), *GLUON.values()):
        on.add(sw.name)
        on.difference_update(sw.replaces)
        stages[sw.stage] = Stage(sw.stage, sw.change, frozenset(on), default_tile(on))
    return stages


STAGES: Mapping[str, Stage] = _cumulative_stages()

# Roles: what the rest of the artifact names instead of typing a stage. A stage added after the article's last one
# changes none of them.
BASELINE = next(iter(STAGES))                 # the article's first stage (v0)
FINAL = list(STAGES)[len(SWITCHES)]           # the article's last stage (v7)
LAST = list(STAGES)[-1]                       # our last stage (the article's, then ours beyond it)
ARTICLE_STAGES = tuple(STAGES)[:len(SWITCHES) + 1]
OUR_STAGES = tuple(STAGES)[len(SWITCHES) + 1:]


def is_gluon(switches: Iterable[str]) -> bool:
    """Whether a variant runs the Gluon kernel (kernels/gluon_fwd.py) rather than the Triton one."""
    return not GLUON.keys().isdisjoint(switches)


GLUON_STAGES = tuple(s for s in STAGES if is_gluon(STAGES[s].switches))
TRITON_STAGES = tuple(s for s in STAGES if s not in GLUON_STAGES)   # what Triton's interpreter can run on the CPU
GLUON_BASE = STAGES[GLUON["gluon"].stage].switches - set(GLUON)     # the Triton switches the Gluon kernel's schedule is


def launch_signature(switches: Iterable[str], D: int = 128, N: int | None = None) -> tuple:
    """What a launch of these switches compiles and runs: the kernel's switch arguments that are on, and the default
    tile. Two variants with equal signatures launch the same kernel (v13 without heads_inner is v13: that switch only
    turns grid_order off, and grid_order is off in v13 anyway)."""
    switches = frozenset(switches)
    args = frozenset(ALL_SWITCHES[s].kernel_arg for s in switches if ALL_SWITCHES[s].kernel_arg)
    return args, default_tile(switches, D, N)


def missing_requirements(switches: Iterable[str]) -> list:
    """(switch, required switch) for every switch on whose `requires` names a switch that is off."""
    switches = frozenset(switches)
    return [(s, r) for s in ALL_SWITCHES if s in switches for r in ALL_SWITCHES[s].requires if r not in switches]


def stage_adding(switch: str) -> str:
    """The stage that turns a switch on (causal_skip -> v2)."""
    return {**SWITCHES, **BEYOND, **GLUON}[switch].stage


def previous_stage(stage: str) -> str:
    names = list(STAGES)
    return names[names.index(stage) - 1]


def without(stage: str, switch: str) -> str:
    """The name of a stage with one of its switches off (v7-warp_specialize)."""
    return f"{stage}-{switch}"


def frozen_switches(switches) -> frozenset | None:
    """A collection of switch names as a frozenset (None stays None); a string or a non-collection raises."""
    if switches is None or type(switches) is frozenset:
        return switches
    if isinstance(switches, str):
        raise TypeError(f"switches must be a collection of switch names, got the string {switches!r}; "
                        f"write switches={{{switches!r}}}")
    try:
        return frozenset(switches)
    except TypeError:
        raise TypeError(f"switches must be a collection of switch names (a set or list of {list(ALL_SWITCHES)}), "
                        f"got {switches!r}") from None


def check_switches(switches: Iterable[str]) -> frozenset:
    """Return the switches as a frozenset, or raise naming the unknown ones."""
    switches = frozen_switches(switches)
    unknown = sorted(switches - ALL_SWITCHES.keys())
    if unknown:
        raise ValueError(f"unknown switch(es) {unknown}; the switches are {list(ALL_SWITCHES)}")
    return switches


def get_stage(name: str) -> Stage:
    try:
        return STAGES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown stage {name!r}; the stages are {list(STAGES)}") from None


def switches_label(switches: Iterable[str]) -> str:
    """Canonical text of a switch set, in the article's order ('none' for the baseline)."""
    switches = check_switches(switches)
    return "+".join(s for s in ALL_SWITCHES if s in switches) or "none"


def parse_switches_label(label: str) -> frozenset:
    return frozenset() if label == "none" else check_switches(label.split("+"))


def stage_of(switches: Iterable[str]) -> str | None:
    """The stage whose switch set this is, or None for an ablation variant."""
    switches = frozenset(switches)
    for stage in STAGES.values():
        if stage.switches == switches:
            return stage.name
    return None


def variant_name(switches: Iterable[str]) -> str:
    """A short name: the stage name; else '<stage>-<switch>' or '<stage>+<switch>' of the article's last stage, of the
    baseline, or of the latest stage one switch away; else the label. A stage added later takes no name from the
    variants of the stages before it (v18-tma stays v18-tma once v19 exists)."""
    switches = check_switches(switches)
    if (name := stage_of(switches)) is not None:
        return name
    for base in (FINAL, BASELINE, *reversed(STAGES)):
        full = STAGES[base].switches
        if len(full - switches) == 1 and switches < full:
            return without(base, next(iter(full - switches)))
        if len(switches - full) == 1 and switches > full:
            return f"{base}+{next(iter(switches - full))}"
    return switches_label(switches)


def leave_one_out(base: str = FINAL) -> dict:
    """Variants of `base` with one of its switches turned off, by name; of a Gluon stage, one of the Gluon kernel's
    own feature switches (its schedule's Triton switches are fixed in that kernel, and without `gluon` it would be
    the Triton stage it came from, which is measured as a stage). A switch that another switch on requires is not
    left out (v21 without producer_warp would be two_consumers without the producer warp it is built on, which no
    kernel has)."""
    on = get_stage(base).switches
    own = [s for s in GLUON if s != "gluon"] if is_gluon(on) else (*SWITCHES, *BEYOND)
    required = {r for s in on for r in ALL_SWITCHES[s].requires}
    return {without(base, s): on - {s} for s in own if s in on and s not in required}


def add_one_in(base: str = BASELINE) -> dict:
    """Variants of `base` with one more of the article's switches turned on, by name."""
    on = get_stage(base).switches
    return {f"{base}+{s}": on | {s} for s in SWITCHES if s not in on}


def extended(base: str = FINAL) -> dict:
    """`base` with each of our own switches beyond the article (v7+prescale_q); none for a Gluon stage (they are the
    Triton kernel's)."""
    on = get_stage(base).switches
    return {} if is_gluon(on) else {f"{base}+{s}": on | {s} for s in EXTENSIONS}


def named_variants() -> dict:
    """Every named variant: the stages, the leave-one-out (v7-x) and add-one-in (v0+x) ablations of the article's
    switches, the article's final stage with each of our extensions (v7+x), and the leave-one-out ablations of our
    last stage of each kernel (the Triton one, and the Gluon one once there is one), with our extensions (Triton)."""
    return {**{name: st.switches for name, st in STAGES.items()}, **leave_one_out(FINAL), **add_one_in(BASELINE),
            **extended(FINAL), **last_ablations()}


def last_ablations() -> dict:
    """The leave-one-out ablations of our last stage of each kernel, and the Triton one with our extensions."""
    return {name: sw for base in dict.fromkeys((TRITON_STAGES[-1], LAST))
            for name, sw in {**leave_one_out(base), **extended(base)}.items()}


def resolve_variant(name: str) -> frozenset:
    """The switches of a variant given by name: a stage, '<stage>-<switch>' (the stage without one of its switches),
    '<stage>+<switch>' (with one more), or a switch label (a+b)."""
    variants = named_variants()
    if name in variants:
        return variants[name]
    for stage in sorted(STAGES, key=len, reverse=True):     # v13 before v1
        if name.startswith(stage) and name[len(stage):len(stage) + 1] in ("-", "+"):
            op, switch = name[len(stage)], name[len(stage) + 1:]
            on = STAGES[stage].switches
            if switch in ALL_SWITCHES and (switch in on) == (op == "-"):
                return on - {switch} if op == "-" else on | {switch}
    try:
        return parse_switches_label(name)
    except ValueError:
        raise ValueError(f"unknown variant {name!r}: give a stage {list(STAGES)}, an ablation "
                         f"{list(variants)[len(STAGES):]}, or switches joined by '+' from {list(ALL_SWITCHES)}") from None
