"""The Gluon kernel (kernels.gluon_fwd) on the CPU: it compiles for sm_90 at the tiles it supports, and its SASS shows
what the kernel says it does: Hopper's warpgroup MMA (HGMMA, never mma.sync's HMMA) with P fed from registers, TMA
loads and a TMA store, base-2 exponentials, no spills, and a KV loop that issues the next block's loads before its
own products. With PRODUCER_WARP (stage v20) the kernel is warp-specialized: a one-warp partition issues every K and
V load, the consumer warpgroup keeps the products, and setmaxnreg moves registers from the first to the second;
without it the kernel has no partition. Gluon kernels do not run in Triton's interpreter, which these tests set up
elsewhere: the kernels are compiled in a subprocess without TRITON_INTERPRET, and their correctness is a GPU
test's."""
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
HEADLINE = (2, 16, 8, 1024, 128)          # B, H, H_kv, N, D: the headline shape (fp16, causal)

# name -> (shape, dtype, causal, block_m, block_n, num_stages). N is a run-time argument (only its divisibility by
# 16 specializes the kernel), so the headline's 128x64 kernel is also the one of N = 16384, v13's tile there.
CONFIGS = {
    "64x64s3": (HEADLINE, "float16", True, 64, 64, 3),
    "128x64s2": (HEADLINE, "float16", True, 128, 64, 2),
    "64x128s2": (HEADLINE, "float16", True, 64, 128, 2),
    "64x64s3-D64": ((2, 16, 8, 1024, 64), "float16", True, 64, 64, 3),
    "128x64s2-D64": ((2, 16, 8, 1024, 64), "float16", True, 128, 64, 2),
    "64x64s3-bf16": (HEADLINE, "bfloat16", True, 64, 64, 3),
    "128x64s2-bf16": (HEADLINE, "bfloat16", True, 128, 64, 2),
    "64x64s3-noncausal": (HEADLINE, "float16", False, 64, 64, 3),
    "128x64s2-noncausal": (HEADLINE, "float16", False, 128, 64, 2),
    # a ragged N (no divisibility by 16) without grouping (GROUP = 1 is a constant), and N = 1 (a constant: the
    # compiler drops the unmasked loop) with single-batch, single-head tensors (descriptor strides of size-1 dims)
    "64x64s3-ragged": ((1, 4, 4, 1000, 128), "float16", True, 64, 64, 3),
    "128x64s2-N1": ((1, 1, 1, 1, 64), "bfloat16", False, 128, 64, 2),
}
LOOPED = [name for name in CONFIGS if CONFIGS[name][0][3] > 1]     # the configurations whose KV loops stay loops

# The kernel with PRODUCER_WARP (stage v20): name -> (shape, dtype, causal, block_m, block_n, num_stages, the
# configuration above that compiles the same without it).
PRODUCER_CONFIGS = {
    "pw-64x64s3": (HEADLINE, "float16", True, 64, 64, 3, "64x64s3"),
    "pw-128x64s2": (HEADLINE, "float16", True, 128, 64, 2, "128x64s2"),
    "pw-64x64s3-bf16-noncausal-D64": ((2, 16, 8, 1024, 64), "bfloat16", False, 64, 64, 3,
                                      "64x64s3-bf16-noncausal-D64"),
    "pw-64x64s3-ragged": ((1, 4, 4, 1000, 128), "float16", True, 64, 64, 3, "64x64s3-ragged"),
    "pw-128x64s2-N1": ((1, 1, 1, 1, 64), "bfloat16", False, 128, 64, 2, "128x64s2-N1"),
}
CONFIGS["64x64s3-bf16-noncausal-D64"] = ((2, 16, 8, 1024, 64), "bfloat16", False, 64, 64, 3)   # a twin of the above
PRODUCER_LOOPED = [name for name in PRODUCER_CONFIGS if PRODUCER_CONFIGS[name][0][3] > 1]

_COMPILE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from kernels.gluon_fwd import compile_for
    configs, out = json.loads(sys.argv[1]), Path(sys.argv[2])
    for name, (shape, dtype, causal, bm, bn, stages, producer) in configs.items():
        k = compile_for(90, tuple(shape), dtype, causal, bm, bn, stages, producer_warp=producer)
        d = out / name
        d.mkdir(parents=True)
        (d / "kernel.cubin").write_bytes(k.asm["cubin"])
        (d / "kernel.ptx").write_text(k.asm["ptx"])
        (d / "kernel.ttgir").write_text(k.asm["ttgir"])
        (d / "meta.json").write_text(json.dumps({"shared": k.metadata.shared, "num_warps": k.metadata.num_warps}))
""")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every configuration compiled for sm_90 in one subprocess (without the interpreter), then read back: name ->
    dict of the metrics, the SASS text and the TTGIR."""
    from kernels.build import RESOURCE_LINE, _tool, sass_mix
    from kernels.gpus import blocks_per_sm

    out = tmp_path_factory.mktemp("gluon_build")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    configs = {**{name: [*c, False] for name, c in CONFIGS.items()},
               **{name: [*c[:6], True] for name, c in PRODUCER_CONFIGS.items()}}
    proc = subprocess.run([sys.executable, "-c", _COMPILE, json.dumps(configs), str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = {}
    for name in configs:
        d = out / name
        sass = _tool("cuobjdump", "-sass", str(d / "kernel.cubin"))
        usage = RESOURCE_LINE.search(_tool("cuobjdump", "-res-usage", str(d / "kernel.cubin")))
        registers, stack, _, local = (int(x) for x in usage.groups())
        meta = json.loads((d / "meta.json").read_text())
        shared, num_warps = meta["shared"], meta["num_warps"]
        mix = sass_mix(sass)
        result[name] = dict(registers=registers, stack=stack, local=local, shared=shared, mix=mix, sass=sass,
                            ttgir=(d / "kernel.ttgir").read_text(), ptx=(d / "kernel.ptx").read_text(),
                            num_warps=num_warps,
                            blocks_per_sm=blocks_per_sm(90, registers, shared, num_warps)["blocks_per_sm"])
    return result


def _instructions(sass: str) -> list:
    """(address, instruction text without its predicate) of every SASS instruction."""
    ins = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T0-9]+\s+)?(.*?)\s*;", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2)))
    return ins


def innermost_loops(ins: list) -> list:
    """The bodies (lists of instruction texts) of the innermost loops (backward branches) among instructions ins."""
    spans = []
    for addr, text in ins:
        m = re.match(r"BRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            spans.append((int(m.group(1), 16), addr))
    inner = [(s, e) for s, e in spans if not any(s <= s2 and e2 < e for s2, e2 in spans if (s2, e2) != (s, e))]
    return [[t for a, t in ins if s <= a <= e] for s, e in inner]


def kv_loops(sass: str) -> list:
    """The bodies (lists of instruction texts) of the KV loops: the innermost backward branches whose body holds a
    warpgroup MMA (the out-of-line barrier retries, also backward branches, hold none)."""
    return [b for b in innermost_loops(_instructions(sass)) if any(t.startswith("HGMMA") for t in b)]


@pytest.mark.parametrize("name", CONFIGS)
def test_compiles_without_spilling(built, name):
    m = built[name]
    assert 0 < m["registers"] <= 255
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0, f"{name} spills"
    assert m["local"] == 0 and m["stack"] == 0
    assert 0 < m["shared"] <= 232448            # Hopper's most shared memory per block (227 KB)


@pytest.mark.parametrize("name", CONFIGS)
def test_targets_sm_90a(built, name):
    """wgmma needs the architecture-specific target sm_90a, which Triton picks for sm_90; one warpgroup."""
    assert ".target sm_90a" in built[name]["ptx"] and ".reqntid 128" in built[name]["ptx"]


@pytest.mark.parametrize("name", CONFIGS)
def test_hopper_instructions(built, name):
    """Warpgroup MMA (HGMMA) and no mma.sync (HMMA); TMA loads (UTMALDG) and store (UTMASTG); exp2 (MUFU.EX2)."""
    mix = built[name]["mix"]
    assert mix.get("HGMMA", 0) > 0 and mix.get("HMMA", 0) == 0
    assert mix.get("UTMALDG", 0) > 0 and mix.get("UTMASTG", 0) > 0
    assert mix.get("MUFU.EX2", 0) > 0
    assert mix.get("LDG", 0) == 0 and mix.get("STG", 0) == 0     # all memory traffic goes through the TMA


@pytest.mark.parametrize("name", CONFIGS)
def test_descriptors_are_4d(built, name):
    """Every TMA copy names (batch, head, row, 0) of a 4-D tensor: a tile never reaches another head's rows."""
    ptx = built[name]["ptx"]
    copies = re.findall(r"cp\.async\.bulk\.tensor\.(\d)d", ptx)
    assert copies and set(copies) == {"4"}, copies


@pytest.mark.parametrize("name", CONFIGS)
def test_p_feeds_the_pv_product_from_registers(built, name):
    """q k^T reads both operands from shared memory ('HGMMA.64xBNx16.F32 Rd, gdesc[..]': one descriptor for A
    and B); P V takes P from registers ('HGMMA.64xDx16.F32 Rd, Ra, gdesc[..]'), with V as a transposed B (tnspB:
    V's rows are keys). Nothing else in the KV loops goes through shared memory (no LDS/STS/LDSM/STSM): the
    conversion of P to the A-operand layout is a renaming of registers."""
    shape, _, _, _, bn, _ = CONFIGS[name]
    D = shape[4]
    lines = [t for t in (t for _, t in _instructions(built[name]["sass"])) if t.startswith("HGMMA")]
    qk = [t for t in lines if re.match(rf"HGMMA\.64x{bn}x16\.F32(\.BF16)? ", t)]
    pv = [t for t in lines if re.match(rf"HGMMA\.64x{D}x16\.F32(\.BF16)? ", t) and ".tnspB" in t]
    if D == bn:   # the two products have the same instruction shape; V is the transposed operand
        qk = [t for t in qk if ".tnspB" not in t]
    assert qk and pv and len(qk) + len(pv) == len(lines)
    assert all(re.match(r"HGMMA\S+ R\d+, gdesc\[", t) for t in qk)
    assert all(re.match(r"HGMMA\S+ R\d+, R\d+, gdesc\[", t) for t in pv)
    for body in kv_loops(built[name]["sass"]):
        assert not [t for t in body if re.match(r"(LDS|STS|LDSM|STSM)\b", t)]


@pytest.mark.parametrize("name", LOOPED)
def test_kv_loop_pipeline(built, name):
    """Each KV loop (unmasked, masked) issues the look-ahead TMA loads of a later block before its own q k^T
    product: the loads run ahead of the tensor cores. Per step, one WARPGROUP.DEPBAR (the P V product waited for
    with the next scores) where the registers allow it, else two; every TMA load is preceded by a CTA barrier
    (the ring buffer it refills was read by the products of all four warps)."""
    shape, _, _, bm, bn, _ = CONFIGS[name]
    D = shape[4]
    in_flight = bm * (D + bn + bn // 2) <= 192 * 128       # the kernel's PV_IN_FLIGHT
    loops = kv_loops(built[name]["sass"])
    assert len(loops) == 2
    for body in loops:
        first_mma = next(i for i, t in enumerate(body) if t.startswith("HGMMA"))
        loads = [i for i, t in enumerate(body) if t.startswith("UTMALDG")]
        assert len(loads) == 2 and loads[0] < first_mma             # K's load, before the step's q k^T product
        if not in_flight:
            assert loads[1] < first_mma                             # V's too
        waits = [t for t in body if t.startswith("WARPGROUP.DEPBAR")]
        assert waits == ["WARPGROUP.DEPBAR.LE gsb0, 0x0"] * (1 if in_flight else 2)
        for i in loads:   # a CTA barrier since the last wait for the products in this step (or the step's start)
            since = max([w for w, t in enumerate(body[:i]) if t.startswith("WARPGROUP.DEPBAR")], default=0)
            assert any(t.startswith("BAR.SYNC") for t in body[since:i])
        assert sum(t.startswith("MUFU.EX2") for t in body) == bm * bn // 128 + bm // 32   # P, and alpha per row


def test_q_buffer_carries_o_and_the_shared_memory_fits_two_programs(built):
    """O leaves through Q's buffer: shared memory is Q's tile plus the K and V rings (and the barriers), so that two
    64x64 programs with 3 stages share an SM at D = 128, as v13's do."""
    for name, (shape, _, _, bm, bn, stages) in CONFIGS.items():
        D = shape[4]
        tiles = 2 * (bm * D + 2 * stages * bn * D)
        assert tiles <= built[name]["shared"] <= tiles + 1024, name
    assert built["64x64s3"]["blocks_per_sm"] == 2
    assert built["128x64s2"]["blocks_per_sm"] == 2


@pytest.mark.parametrize("name", CONFIGS)
def test_without_the_producer_warp_there_is_no_warp_specialization(built, name):
    """PRODUCER_WARP off (the default): one warpgroup, no partitions, no register reallocation (v19's kernel)."""
    m = built[name]
    assert "ttg.warp_specialize" not in m["ttgir"] and "setmaxnreg" not in m["ptx"] and ".maxnreg" not in m["ptx"]
    assert m["num_warps"] == 4 and "USETMAXREG" not in m["sass"]


def test_grid_axis_0_is_batch_head_and_query_blocks_are_reversed(built):
    """v13's schedule: grid (B*H, query blocks); the kernel reads program_id(1) backwards (heaviest first)."""
    from kernels.gluon_fwd import grid
    assert grid(2, 16, 1024, 64) == (32, 16) and grid(2, 16, 1000, 128) == (32, 8)
    ttgir = built["64x64s3"]["ttgir"]
    assert re.search(r"tt\.get_program_id x", ttgir) and re.search(r"tt\.get_program_id y", ttgir)
    assert re.search(r"tt\.get_num_programs y", ttgir)


# ---------------------------------------------------------------------------------------------------------------
# PRODUCER_WARP (stage v20): a TMA producer warp and register reallocation
# ---------------------------------------------------------------------------------------------------------------

def _tile(name):
    shape, _, _, bm, bn, _, _ = PRODUCER_CONFIGS[name]
    return bm, bn, shape[4]


def partitions(sass: str, consumer_regs: int) -> tuple:
    """(the workers' instructions, the consumer's) of a warp-specialized kernel: the consumer's code starts where
    its warps take their registers (USETMAXREG.TRY_ALLOC of the consumer's count), after the workers' dispatch
    loop and partitions (the producer warp's, and the idle warps' that Triton pads its warpgroup with). The
    workers' out-of-line retries of their barrier waits, at the end, are counted with the consumer's."""
    ins = _instructions(sass)
    start = next(i for i, (_, t) in enumerate(ins) if t == f"USETMAXREG.TRY_ALLOC.CTAPOOL UP0, {consumer_regs:#x}")
    return ins[:start], ins[start:]


@pytest.mark.parametrize("name", PRODUCER_CONFIGS)
def test_producer_compiles_without_spilling(built, name):
    """The kernel's registers are the maxnreg it is launched with; ptxas spills nothing in any partition."""
    from kernels.gluon_fwd import producer_registers
    m = built[name]
    assert m["registers"] == producer_registers(*_tile(name))["maxnreg"]
    assert m["mix"].get("STL", 0) == 0 and m["mix"].get("LDL", 0) == 0, f"{name} spills"
    assert m["local"] == 0 and m["stack"] == 0
    assert 0 < m["shared"] <= 232448


@pytest.mark.parametrize("name", PRODUCER_CONFIGS)
def test_producer_is_a_one_warp_partition(built, name):
    """ttg.warp_specialize with one worker partition of one warp asking for 24 registers; the module's maxnreg is
    the launch's. Triton pads the worker into a warpgroup: 8 warps, 256 threads (.reqntid 256)."""
    from kernels.gluon_fwd import producer_registers
    m = built[name]
    ttgir = m["ttgir"]
    assert ttgir.count("ttg.warp_specialize(") == 1
    assert "requestedRegisters = array<i32: 24>" in ttgir
    assert re.search(r"partition0\(.*\) num_warps\(1\)", ttgir) and "partition1(" not in ttgir
    assert f"ttg.maxnreg = {producer_registers(*_tile(name))['maxnreg']} : i32" in ttgir
    assert ".reqntid 256" in m["ptx"] and m["num_warps"] == 8


@pytest.mark.parametrize("name", PRODUCER_CONFIGS)
def test_registers_are_reallocated(built, name):
    """PTX: .maxnreg M; the workers' warpgroup gives all but 24 registers back (setmaxnreg.dec 24; its 'inc 24'
    are Triton's no-op re-entries of the dispatch loop) and the consumer takes them (setmaxnreg.inc 2 M - 24): the
    two warpgroups' registers are exactly the 8 warps' at launch. SASS: USETMAXREG.DEALLOC 0x18 and TRY_ALLOC of
    the consumer's count."""
    from kernels.gluon_fwd import producer_registers
    r = producer_registers(*_tile(name))
    m = built[name]
    assert re.search(rf"^\.maxnreg {r['maxnreg']}$", m["ptx"], re.MULTILINE)
    counts = set(re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+);", m["ptx"]))
    assert counts == {("dec", "24"), ("inc", "24"), ("inc", str(r["consumer"]))}
    assert r["producer"] == 24 and 128 * (r["producer"] + r["consumer"]) == 256 * r["maxnreg"]
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x18" in m["sass"]
    assert f"USETMAXREG.TRY_ALLOC.CTAPOOL UP0, {r['consumer']:#x}" in m["sass"]


@pytest.mark.parametrize("name", PRODUCER_CONFIGS)
def test_the_producer_issues_the_kv_loads_and_the_consumer_the_products(built, name):
    """The producer warp's code holds every K and V load (two tiles, one TMA message per 64 columns) and no
    product; the consumer's holds Q's load, O's store, and exactly the warpgroup MMAs of the kernel without the
    producer, P fed from registers as there. Every copy is 4-D."""
    from kernels.gluon_fwd import producer_registers
    bm, bn, D = _tile(name)
    m, twin = built[name], built[PRODUCER_CONFIGS[name][6]]
    worker, consumer = partitions(m["sass"], producer_registers(bm, bn, D)["consumer"])

    def count(ins, op):
        return sum(t.startswith(op) for _, t in ins)

    assert count(worker, "UTMALDG") == 2 * (D // 64) and count(worker, "HGMMA") == 0
    assert count(consumer, "UTMALDG") == 1 and count(consumer, "UTMASTG") == 1
    assert count(consumer, "HGMMA") == twin["mix"]["HGMMA"] == m["mix"]["HGMMA"]
    pv = [t for _, t in consumer if re.match(rf"HGMMA\.64x{D}x16\.F32(\.BF16)? ", t) and ".tnspB" in t]
    assert pv and all(re.match(r"HGMMA\S+ R\d+, R\d+, gdesc\[", t) for t in pv)
    copies = re.findall(r"cp\.async\.bulk\.tensor\.(\d)d", m["ptx"])
    assert copies and set(copies) == {"4"}


@pytest.mark.parametrize("name", PRODUCER_LOOPED)
def test_producer_loop(built, name):
    """The producer warp's loop, one per key block: wait for K's buffer to be empty, expect its bytes on its ready
    barrier, copy; the same for V. One warp: no CTA barrier, no product."""
    from kernels.gluon_fwd import producer_registers
    bm, bn, D = _tile(name)
    worker, _ = partitions(built[name]["sass"], producer_registers(bm, bn, D)["consumer"])
    loops = [b for b in innermost_loops(worker) if any(t.startswith("UTMALDG") for t in b)]
    assert len(loops) == 1
    body = loops[0]
    ops = [t.split()[0] for t in body if re.match(r"(UTMALDG|SYNCS|BAR|HGMMA)", t)]
    per_tile = ["SYNCS.PHASECHK.TRANS64.TRYWAIT"] + ["UTMALDG.4D"] * (D // 64)
    assert ops.count("SYNCS.PHASECHK.TRANS64.TRYWAIT") == 2 and ops.count("SYNCS.ARRIVE.TRANS64") == 2
    assert [o for o in ops if o != "SYNCS.ARRIVE.TRANS64"] == per_tile * 2      # K's wait and copies, then V's
    assert not [o for o in ops if o.startswith(("BAR", "HGMMA"))]


@pytest.mark.parametrize("name", PRODUCER_LOOPED)
def test_consumer_kv_loops(built, name):
    """The consumer's KV loops (unmasked, masked) are the kernel's without the producer, less the loads: no TMA, the
    same products, waits (WARPGROUP.DEPBAR) and exponentials, instruction for instruction (registers aside); and
    two releases per step (arrives of count 1 on the "empty" barriers: K's buffer of this block, V's of this block
    or, P V in flight, of the previous one), each after a CTA barrier (the four warps are done with the buffer)."""
    loops, twin = kv_loops(built[name]["sass"]), kv_loops(built[PRODUCER_CONFIGS[name][6]]["sass"])
    assert len(loops) == len(twin) == 2
    for body, other in zip(loops, twin):
        assert not [t for t in body if t.startswith("UTMALDG")]
        for op in ("HGMMA", "WARPGROUP.DEPBAR", "MUFU.EX2"):
            assert [t.split()[0] for t in body if t.startswith(op)] == [t.split()[0] for t in other
                                                                         if t.startswith(op)], op
        releases = [i for i, t in enumerate(body) if t.startswith("SYNCS.ARRIVE.TRANS64.A1T0 RZ")]
        assert len(releases) == 2
        for i in releases:
            since = max([w for w, t in enumerate(body[:i]) if t.startswith("WARPGROUP.DEPBAR")], default=0)
            assert any(t.startswith("BAR.SYNC") for t in body[since:i])


def test_producer_shared_memory_and_programs_per_sm(built):
    """Shared memory: the kernel's without the producer, plus the "empty" barriers and Triton's partition state (at
    most 256 bytes). Two programs per SM at 64x64 with 3 stages (maxnreg 128: 2 x 256 x 128 = 65536); one at 128x64
    and D = 128, whose consumer needs 256 registers (maxnreg 140)."""
    for name, c in PRODUCER_CONFIGS.items():
        assert built[c[6]]["shared"] < built[name]["shared"] <= built[c[6]]["shared"] + 256, name
    assert built["pw-64x64s3"]["blocks_per_sm"] == 2
    assert built["pw-128x64s2"]["blocks_per_sm"] == 1


# ---------------------------------------------------------------------------------------------------------------
# The host side, in this process (no compile)
# ---------------------------------------------------------------------------------------------------------------

def test_descriptor_signature_is_what_the_jit_specializes():
    from kernels.gluon_fwd import kernel_args, specialize
    q = torch.empty(2, 16, 1024, 128, dtype=torch.float16)
    k = torch.empty(2, 8, 1024, 128, dtype=torch.float16)
    args = kernel_args(q, k, k.clone(), torch.empty_like(q), True, 64, 64, 3)
    signature, constexprs, attrs = specialize(args)
    assert len(constexprs) == 6 and attrs       # the six constexprs; N, H divisible by 16
    layout = ("NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=4, transposed=False, "
              "fp4_padded=False, cga_layout=[])")
    assert signature["q_desc"] == f"tensordesc<fp16[1, 1, 64, 128],{layout}>"
    assert signature["k_desc"] == signature["v_desc"] == f"tensordesc<fp16[1, 1, 64, 128],{layout}>"
    assert signature["qk_scale"] == "fp32" and signature["H"] == signature["N"] == "i32"
    assert list(signature)[8:] == ["HEAD_DIM", "BLOCK_M", "BLOCK_N", "NUM_STAGES", "IS_CAUSAL", "PRODUCER_WARP"]
    assert args["GROUP"] == 2 and abs(args["qk_scale"] - 1.4426950408889634 / 128 ** 0.5) < 1e-12
    assert args["PRODUCER_WARP"] is False           # off by default: v19's kernel
    assert kernel_args(q, k, k.clone(), torch.empty_like(q), True, 64, 64, 3, producer_warp=True)["PRODUCER_WARP"]


def test_launch_options():
    """num_warps=4 always (with PRODUCER_WARP the default partition's); with PRODUCER_WARP also the tile's maxnreg:
    128 (consumer 232 registers, producer 24) where the tiles fit, 140 (consumer 256) for 128x64 at D = 128."""
    from kernels.gluon_fwd import launch_options, producer_registers
    assert launch_options(64, 64, 128) == launch_options(128, 64, 128) == {"num_warps": 4}
    assert launch_options(64, 64, 128, True) == {"num_warps": 4, "maxnreg": 128}
    assert launch_options(128, 64, 128, True) == {"num_warps": 4, "maxnreg": 140}
    for tile in [(64, 64, 64), (64, 64, 128), (64, 128, 128), (64, 128, 64), (128, 64, 64)]:
        assert producer_registers(*tile) == {"maxnreg": 128, "producer": 24, "consumer": 232}, tile
    assert producer_registers(128, 64, 128) == {"maxnreg": 140, "producer": 24, "consumer": 256}


def test_descriptors_of_strided_and_single_head_tensors():
    """Whole 4-D tensors with their own strides (a view whose last dimension is contiguous works); a dimension of
    size 1 gets the stride D, which TMA accepts."""
    from kernels.gluon_fwd import descriptors
    base = torch.empty(1, 1024, 3, 8, 64, dtype=torch.bfloat16)          # (B, N, qkv, H, D), as a fused projection
    q, k, v = (base[:, :, i].transpose(1, 2) for i in range(3))          # (B, H, N, D) views, strided
    out = torch.empty(1, 8, 1024, 64, dtype=torch.bfloat16)
    dq, dk, dv, do = descriptors(q, k, v, out, 128, 64)
    assert dv.strides == dk.strides == dq.strides
    assert dq.shape == [1, 8, 1024, 64] and dq.strides == [64, 64, 3 * 8 * 64, 1]
    assert dq.block_shape == [1, 1, 128, 64] and dk.block_shape == [1, 1, 64, 64]
    assert do.strides == [64, 1024 * 64, 64, 1]
    assert dq.layout.swizzle_byte_width == 128 and dq.layout.rank == 4


def test_unsupported_configurations_are_refused():
    from kernels.gluon_fwd import check_config
    check_config(128, torch.float16, 64, 64, 3)
    for bad in [(256, torch.float16, 64, 64, 3), (128, torch.float32, 64, 64, 3), (128, torch.float16, 32, 64, 3),
                (128, torch.float16, 64, 64, 4), (128, torch.float16, 128, 128, 2)]:
        with pytest.raises(ValueError):
            check_config(*bad)
    with pytest.raises(ValueError):
        check_config(128, torch.float16, 64, 64, 3, num_warps=8)
    from kernels.gluon_fwd import compile_for
    with pytest.raises(ValueError, match="sm_90a only"):
        compile_for(120, HEADLINE)
