"""The build step on the CPU: every stage compiles for sm_90 (and the consumer parts), and the static SASS shows
what each optimization should change. The stages at their own tiles are the pipeline's own build step
(results/build, shared with tests/test_pipeline.py); other tiles and shapes are compiled here by `python -m
kernels.build` in a subprocess, as the pipeline does (the interpreter these tests use elsewhere would replace the
compiler)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_run import pipeline_build, read_build

from kernels import STAGES

ROOT = Path(__file__).resolve().parents[1]


def build(out: Path, *args) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-m", "kernels.build", "--out", str(out), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_build(out)


@pytest.fixture(scope="module")
def stages():
    return read_build(pipeline_build())


def own_tile(variant) -> str:
    """The tile the build step compiles a variant at: its own at the headline shape."""
    from kernels.shapes import HEADLINE
    from kernels.stages import default_tile, resolve_variant
    return default_tile(resolve_variant(variant), HEADLINE.D, HEADLINE.N).label()


def artifacts(variant, arch=90) -> Path:
    """The folder of a variant's compiled artifacts in the pipeline's build (kernels.build's out/sm_<arch>/...)."""
    return ROOT / "results" / "build" / f"sm_{arch}" / f"sm_{arch}" / f"{variant}_{own_tile(variant)}"


def sass(variant, arch=90) -> str:
    """The SASS of a variant in the pipeline's build, at its own tile."""
    return (artifacts(variant, arch) / "kernel.sass").read_text()


def at(stages, variant, arch=90, tile=None):
    """A variant's build metrics, at its own default tile unless one is given."""
    return stages[(variant, arch, tile or own_tile(variant))]


# early_exponent's build (v38) at its default tile: 12 stores of a consumer's scalars into its 32-byte stack frame, in
# the consumers' prologues, outside the KV loops (kernels.gluon_fwd.EARLY_STACK_BYTES bounds the frame)
EARLY_SPILL_STORES = 12


@pytest.mark.parametrize("arch", [90, 89])
def test_every_stage_compiles(stages, arch):
    """Every stage compiles for the H200 without spilling, but for the few stores of a consumer's scalars outside
    the KV loops that fused_exponent's build makes (kernels.gluon_fwd.FUSED_STACK_BYTES; EARLY_SPILL_STORES with
    early_exponent; tests/test_gluon_build.py holds its loops free of them); on sm_89, the article's stages do (ours
    are for Hopper)."""
    from kernels.gluon_fwd import FUSED_STACK_BYTES
    from kernels.stages import ARTICLE_STAGES
    for v in (STAGES if arch == 90 else ARTICLE_STAGES):
        m = at(stages, v, arch)
        assert m["compiles"] == 1, m["note"]
        assert m["registers"] > 0 and m["sass_instructions"] > 0 and m["shared_bytes"] > 0
        switches = STAGES[v].switches
        allowed = (EARLY_SPILL_STORES if "early_exponent" in switches
                   else FUSED_STACK_BYTES // 4 if "fused_exponent" in switches else 0)
        assert m["spill_stores"] <= allowed and m["local_bytes"] == 0, f"{v} spills on sm_{arch}"


def test_artifacts_written(stages):
    d = artifacts("v7")
    assert ".target sm_90a" in (d / "kernel.ptx").read_text()
    assert "HMMA" in (d / "kernel.sass").read_text()
    assert (d / "kernel.cubin").stat().st_size > 0


def test_tensor_cores_used(stages):
    for v in STAGES:
        assert at(stages, v).get("sass.HMMA", 0) + at(stages, v).get("sass.HGMMA", 0) > 0


def test_two_phase_adds_a_second_loop(stages):
    assert at(stages, "v3")["sass.BRA"] > at(stages, "v2")["sass.BRA"]


@pytest.mark.parametrize("arch", [90, 89])
def test_v4_drops_the_round_trip_conversion(stages, arch):
    """C4's change: the float16 -> float32 conversion of P (HADD2.F32) is gone, and fewer instructions remain."""
    v3, v4 = at(stages, "v3", arch), at(stages, "v4", arch)
    assert v3.get("sass.HADD2", 0) > 0 and v4.get("sass.HADD2", 0) == 0
    assert v4["sass_instructions"] < v3["sass_instructions"]


def test_warp_specialization_shrinks_shared_memory(stages):
    """C5 on the article's likely GPU class (sm_89): shared memory per block falls by more than half, lifting the
    shared-memory limit from 2 blocks per SM."""
    v4, v5 = at(stages, "v4", 89), at(stages, "v5", 89)
    assert v5["shared_bytes"] < 0.5 * v4["shared_bytes"]
    assert v4["blocks_limit_shared"] == 2 and v5["blocks_limit_shared"] > 2


@pytest.mark.parametrize("arch", [90, 89])
def test_exp2_removes_the_multiplication(stages, arch):
    """C6: tl.exp is a multiplication by log2(e) plus ex2; with the factor folded into the scale the FMULs go and
    the number of MUFU.EX2 stays (it does not fall: each exponential still needs one)."""
    v5, v6 = at(stages, "v5", arch), at(stages, "v6", arch)
    assert v6["sass.FMUL"] < v5["sass.FMUL"]
    assert v6["sass.MUFU.EX2"] == v5["sass.MUFU.EX2"]
    assert v6["sass_instructions"] < v5["sass_instructions"]


@pytest.mark.parametrize("arch", [90, 89])
def test_constant_strides_shrink_address_arithmetic(stages, arch):
    """C7: with the row stride a constant, address arithmetic (IMAD, LEA) shrinks."""
    v6, v7 = at(stages, "v6", arch), at(stages, "v7", arch)
    assert v7["sass_instructions"] < v6["sass_instructions"]
    assert v7["sass.IMAD"] + v7["sass.LEA"] < v6["sass.IMAD"] + v6["sass.LEA"]


def test_hopper_tile_turns_the_products_into_wgmma(stages):
    """v8's change: at 64 query rows per warpgroup both products become Hopper's warpgroup MMA (HGMMA), and no
    HMMA is left."""
    from kernels.stages import stage_adding
    v8, v7 = at(stages, stage_adding("hopper_tile")), at(stages, "v7")
    assert v7.get("sass.HGMMA", 0) == 0 and v7["sass.HMMA"] > 0
    assert v8["sass.HGMMA"] > 0 and v8.get("sass.HMMA", 0) == 0


def test_tma_replaces_the_pointer_loads(stages):
    """v9's change: the K and V tiles arrive by TMA (UTMALDG) instead of cp.async (LDGSTS), with less address
    arithmetic, so fewer registers."""
    from kernels.stages import previous_stage, stage_adding
    tma = stage_adding("tma")
    before, after = at(stages, previous_stage(tma)), at(stages, tma)
    assert before.get("sass.UTMALDG", 0) == 0 and before["sass.LDGSTS"] > 0
    assert after["sass.UTMALDG"] > 0 and after.get("sass.LDGSTS", 0) == 0
    assert after["registers"] < before["registers"]


def test_heavy_first_only_renumbers_the_blocks(stages):
    """v10's change is a few integer instructions at the start: the products and exponentials are untouched, and the
    binary grows by at most 1% (the compiler places the TMA loads a little differently: 11 UTMALDG in v9, 13 in
    v10)."""
    from kernels.stages import previous_stage, stage_adding
    hf = stage_adding("heavy_first")
    before, after = at(stages, previous_stage(hf)), at(stages, hf)
    assert 0 < after["sass_instructions"] - before["sass_instructions"] <= 0.01 * before["sass_instructions"]
    for op in ("sass.HGMMA", "sass.MUFU.EX2"):
        assert after[op] == before[op]


def test_host_descriptors_drop_the_per_program_descriptor_setup(stages):
    """v11's change: no descriptor is written and fenced by each program, so fewer fences, branches and
    instructions, with the same loop (HGMMA, TMA loads, exponentials)."""
    from kernels.stages import previous_stage, stage_adding
    hd = stage_adding("host_descriptors")
    before, after = at(stages, previous_stage(hd)), at(stages, hd)
    assert after["sass.FENCE"] < before["sass.FENCE"] and after["sass.BRA"] < before["sass.BRA"]
    assert after["sass_instructions"] < 0.9 * before["sass_instructions"]
    for op in ("sass.HGMMA", "sass.UTMALDG", "sass.MUFU.EX2"):
        assert after[op] == before[op]


def exponent_chains(ptx: str) -> list:
    """For each ex2.approx in a PTX listing, the opcodes that compute its input, innermost last: the instruction
    that defines the input, then (for a subtraction) the one that defines its first operand. A multiplication by
    log2(e) (0f3FB8AA3B, tl.exp's lowering) and moves are looked through. fused_exponent's asm (one line: an fma per
    score, or behind the warp's vote the exact arm) stands for its exact arm, which must define every output the
    fused arm does."""
    import re
    chains = []
    for function in re.split(r"\n\s*\.(?:visible\s+|weak\s+)?(?:entry|func)\b", ptx):   # registers are per function
        chains += _exponent_chains_of(function)
    return chains


def _exponent_chains_of(function: str) -> list:
    import re
    defs, chains = {}, []

    def source(reg):   # the latest definition so far (PTX may assign a register more than once)
        op, args = defs.get(reg, ("?", []))
        while op.startswith("mov") or (op.startswith("mul") and "0f3FB8AA3B" in args):
            regs = [a for a in args if a.startswith("%r")]
            if not regs:
                return "?", []
            op, args = defs.get(regs[0], ("?", []))
        return op, args

    for line in function.splitlines():
        exact = re.search(r"\bEXACT\w*:(.*?)DONE\w*:", line)
        if exact:   # fused_exponent's asm (kernels.gluon_fwd._exponent_code): the exact arm defines each output
            fused = {out: (a, scale, addend) for out, a, scale, addend in
                     re.findall(r"fma\.rn\.f32 (%r\d+), (%r\d+), (%r\d+), (%r\d+);", re.split(r"\bEXACT\w*:", line)[0])}
            arm = re.findall(r"sub\.rn\.f32 (%r\d+), (%r\d+), (%r\d+); mul\.rn\.f32 (%r\d+), (%r\d+), (%r\d+);",
                             exact.group(1))
            assert arm and {out for out, *_ in arm} == set(fused), line[:200]
            for out, s, m_, out2, a, scale in arm:
                # as the fused arm: (s - m) x scale from the score the fma reads (in the output's own register, or
                # with early_exponent's asm (kernels.gluon_fwd._early_exponent_code) into an output of its own), the
                # same scale as the fma's, and a maximum that is not the fma's addend (-m x scale)
                f_s, f_scale, f_addend = fused[out]
                assert out == out2 == a and s == f_s and scale == f_scale and m_ != f_addend, line[:200]
                defs[out + "~sub"] = ("sub.rn.f32", [s, m_])
                defs[out] = ("mul.rn.f32", [out + "~sub", scale])
            continue
        redo = re.findall(r"sub\.rn\.f32 (%r\d+), (%r\d+), (%r\d+); mul\.rn\.f32 (%r\d+), (%r\d+), (%r\d+); "
                          r"ex2\.approx\.ftz\.f32 (%r\d+), (%r\d+);", line)
        if redo:    # early_exponent's redo (kernels.gluon_fwd._redo_code): each exponential's (s - m) x scale inline
            for out, s, m_, out2, a, scale, out3, b in redo:
                assert out == out2 == a == out3 == b, line[:200]
                chains.append(("mul.rn.f32", "sub.rn.f32"))
            continue
        m = re.match(r"\s*(?:@%p\d+\s+)?([a-z][a-z0-9.]*)\s+(%r\d+),\s*(.*);", line)
        if not m:
            continue
        op, args = m.group(1), [a.strip() for a in m.group(3).split(",")]
        if op.startswith("ex2.approx"):
            op1, args1 = source(args[0])
            ops = [source(a)[0] for a in args1 if a.startswith("%r")] if op1.startswith(("sub", "mul")) else []
            op2 = next((op for op in ops if op.startswith("sub")), ops[0] if ops else "")   # either operand
            chains.append((op1, op2))
        defs[m.group(2)] = (op, args)
    return chains


def test_every_exponent_is_the_difference_from_the_maximum_then_scaled(stages):
    """Issue 22's exponent, in every stage (kernels.flash_fwd's notes on the exponent): each exponential's input is
    (s - m) * scale, a multiplication (mul.f32) of a subtraction (sub.f32), for the probabilities and the rescale
    factors alike (tl.exp's own multiplication by log2(e) looked through), and no minimum clamps it. FlashAttention's
    fused fma(s, scale, -m), the article's and ours up to run-28, would show as an fma.rn.f32 (and run-28's clamp as
    min.NaN.f32 before every exponential). fused_exponent (v33) takes that fma where a warp's rows' |m x scale| are
    below 2^12 and keeps this exponent for the rest: its asm is read as its exact arm (``exponent_chains``)."""
    for v in STAGES:
        ptx = (artifacts(v) / "kernel.ptx").read_text()
        chains = exponent_chains(ptx)
        assert chains, f"{v}: no ex2.approx in the PTX"
        wrong = sorted({c for c in chains if not (c[0].startswith("mul") and c[1].startswith("sub"))})
        assert not wrong, f"{v}: exponentials not of (s - m) * scale: {wrong} ({len(chains)} in all)"
        assert "min.NaN.f32" not in ptx, f"{v}: a clamp left"


def test_triton_waits_for_every_warpgroup_mma(stages):
    """Why the softmax does not overlap the products in Triton 3.6: after every group of HGMMA the warpgroup waits
    for all of them (WARPGROUP.DEPBAR.LE gsb0, 0x0), even when the loop asks for the next block's scores before the
    softmax of the current one (overlap_qk), which only costs registers (spills, under a register cap) and shared
    memory."""
    from kernels.stages import TRITON_STAGES, register_cap
    LAST = TRITON_STAGES[-1]
    for variant in (LAST, f"{LAST}+overlap_qk"):
        waits = [line.split("WARPGROUP.DEPBAR.LE", 1)[1].split(";")[0].strip() for line in sass(variant).splitlines()
                 if "WARPGROUP.DEPBAR.LE" in line]
        assert waits and set(waits) == {"gsb0, 0x0"}, waits
    plain, overlap = at(stages, LAST), at(stages, f"{LAST}+overlap_qk")
    assert overlap["shared_bytes"] > plain["shared_bytes"]
    assert (overlap["registers"] > plain["registers"] if register_cap(STAGES[LAST].switches, STAGES[LAST].tile) is None
            else overlap["registers"] == plain["registers"] and overlap["spill_stores"] > plain["spill_stores"] == 0)


def test_warp_specialization_refused_on_sm120(stages):
    """Triton 3.6 cannot warp-specialize this loop for sm_120; the build records the refusal and its reason. A Gluon
    stage (Hopper's warpgroup MMA and TMA) is refused on every architecture but sm_90, saying so."""
    from kernels.stages import GLUON_STAGES
    for v in STAGES:
        m = at(stages, v, 120)
        ws = "warp_specialize" in STAGES[v].switches
        gluon = v in GLUON_STAGES
        assert m["compiles"] == (0 if ws or gluon else 1)
        if ws:
            assert "Triton cannot build this variant at tile 32x32w4s3" in m["note"]
            assert "TritonGPUAutomaticWarpSpecialization" in m["note"]
        if gluon:
            assert "sm_90 only, not sm_120" in m["note"]


def test_bad_variant_name_fails_early(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-m", "kernels.build", "--variants", "v99", "--out", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "unknown variant 'v99'" in proc.stderr


def test_warp_specialization_refused_at_64x64_with_4_warps(tmp_path):
    """Measured on the H200 before this artifact: v5 fails to compile at 64x64 with 4 warps. The build reproduces
    it on the CPU, and the same tile without warp specialization compiles."""
    t = build(tmp_path, "--variants", "v4", "v5", "--archs", "90", "--tiles", "64x64w4s3", "64x64w8s3")
    assert t[("v4", 90, "64x64w4s3")]["compiles"] == 1
    assert t[("v5", 90, "64x64w4s3")]["compiles"] == 0
    assert "NVGPUWarpSpecialization" in t[("v5", 90, "64x64w4s3")]["note"]
    assert t[("v5", 90, "64x64w8s3")]["compiles"] == 1


def test_prescaled_q_drops_the_exponents_multiplication(stages):
    """C10 at the current source: v7's exponent is (s - m) * scale (since issue 22's exact exponent; the article's,
    and ours up to run-28, was one fused FFMA, s * scale - m, which prescaling turned into an FADD); with Q prescaled
    it is s - m alone, every exponential's input a subtraction. Scaling Q at load adds more instructions than the
    loop sheds at the article's tile."""
    for arch in (90, 89):
        v7, pre = at(stages, "v7", arch), at(stages, "v7+prescale_q", arch)
        assert pre["sass_instructions"] >= v7["sass_instructions"] and pre["sass.FADD"] == v7["sass.FADD"]
    chains = {v: exponent_chains((artifacts(v) / "kernel.ptx").read_text()) for v in ("v7", "v7+prescale_q")}
    assert chains["v7"] and all(op1.startswith("mul") and op2.startswith("sub") for op1, op2 in chains["v7"])
    assert chains["v7+prescale_q"] and all(op1.startswith("sub") for op1, _ in chains["v7+prescale_q"])


def test_hopper_matrix_instructions_need_64_rows(tmp_path):
    """Why the article's tile is slow on Hopper: with 32 query rows Triton emits mma.sync (HMMA); from 64 rows per
    4-warp group it emits wgmma (HGMMA), Hopper's own matrix instruction."""
    t = build(tmp_path, "--variants", "v7-warp_specialize", "--archs", "90", "--tiles", "32x32w4s3", "64x64w4s3")
    small, large = t[("v7-warp_specialize", 90, "32x32w4s3")], t[("v7-warp_specialize", 90, "64x64w4s3")]
    assert small.get("sass.HMMA", 0) > 0 and small.get("sass.HGMMA", 0) == 0
    assert large.get("sass.HGMMA", 0) > 0 and large.get("sass.HMMA", 0) == 0


def _loops(sass: str) -> list:
    """The innermost loops of a SASS listing: (start, end, instructions), from each backward branch to its target."""
    import re
    ins = [(int(m.group(1), 16), m.group(2)) for m in
           (re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line) for line in sass.splitlines()) if m]
    loops = []
    for addr, text in ins:
        m = re.search(r"\bBRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            loops.append((int(m.group(1), 16), addr))
    # innermost only: a backward branch from an out-of-line wait (a TMA barrier's retry) back into the code spans
    # real loops, and is not one
    return [(s, e, ins) for s, e in loops if not any(s <= s2 and e2 < e for s2, e2 in loops if (s2, e2) != (s, e))]


def skippable_fmuls(sass: str) -> int:
    """The most FMUL instructions that one forward branch inside a loop jumps over (0 if no branch skips any)."""
    import re
    best = 0
    for start, end, ins in _loops(sass):
        body = [(a, t) for a, t in ins if start <= a <= end]
        for a, t in body:
            m = re.search(r"\bBRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", t)
            if m and a < int(m.group(1), 16) <= end:
                target = int(m.group(1), 16)
                best = max(best, sum(1 for b, u in body if a < b < target and re.match(r"(@!?U?P\w+\s+)?FMUL\b", u)))
    return best


def test_lazy_rescale_puts_the_accumulator_rescale_behind_a_branch(stages):
    """v14's change: the multiplication of the accumulator by exp2(m_old - m_new), one FMUL per accumulator element
    a thread holds (BLOCK_M x HEAD_DIM / 128 = 64 at 64x64w4, D=128), moves behind a forward branch inside the KV
    loop, which steps without a grown maximum jump over; the exponentials of the scores stay."""
    from kernels.stages import previous_stage, stage_adding
    lazy = stage_adding("lazy_rescale")
    skipped = {variant: skippable_fmuls(sass(variant)) for variant in (previous_stage(lazy), lazy)}
    assert skipped[previous_stage(lazy)] == 0
    assert skipped[lazy] >= 64
    before, after = at(stages, previous_stage(lazy)), at(stages, lazy)
    assert after["sass.MUFU.EX2"] <= before["sass.MUFU.EX2"] + 8 and after["sass.HGMMA"] == before["sass.HGMMA"]


def test_q_in_registers_feeds_the_first_product_from_registers(stages):
    """v15's change: the q k^T warpgroup MMA takes its A operand (Q) from registers (HGMMA R, R, gdesc) instead of
    shared memory (HGMMA R, gdesc); the P V product already did. More registers, less shared memory."""
    import re
    from kernels.stages import previous_stage, stage_adding
    v15 = stage_adding("q_in_registers")
    a_from_registers = {}
    for variant in (previous_stage(v15), v15):
        qk = [line for line in sass(variant).splitlines() if re.search(r"HGMMA\.64x\d+x16\.F32\s", line) and ".tnspB" not in line]
        assert qk, variant
        a_from_registers[variant] = all(re.search(r"HGMMA\S*\s+R\d+,\s*R\d+,\s*gdesc", line) for line in qk)
    assert a_from_registers == {previous_stage(v15): False, v15: True}
    before, after = at(stages, previous_stage(v15)), at(stages, v15)
    assert after["shared_bytes"] < before["shared_bytes"] and after["registers"] > before["registers"]


def test_three_per_sm_fits_three_programs(stages):
    """v16's change: at most 168 registers per thread and 65568 B of shared memory, so three 4-warp programs share
    an SM (two before), without spilling."""
    from kernels.stages import previous_stage, stage_adding
    three = stage_adding("three_per_sm")
    before, after = at(stages, previous_stage(three)), at(stages, three)
    assert before["blocks_per_sm"] == 2 and after["blocks_per_sm"] == 3
    assert after["registers"] <= 168 < before["registers"] and after["spill_stores"] == 0


def test_two_warpgroups_runs_two_programs_of_eight_warps(tmp_path):
    """v18's change: a 128x64 tile of 8 warps is split by query rows into two warpgroups of 64 (each issues its own
    HGMMA.64xN instructions on the K/V tile both share), Q is the q k^T product's A operand from shared memory again,
    and the register cap (128) lets two programs, 16 warps, share an SM without spilling. Uncapped the same kernel
    takes more registers and one program per SM; v17 held 12 warps per SM, v13's long-N tile 8."""
    import re
    from kernels.stages import STAGES as REGISTRY, previous_stage, stage_adding, switches_label
    v18 = stage_adding("two_warpgroups")
    t = build(tmp_path, "--variants", previous_stage(v18), v18, "--archs", "90", "--shape", "2,16,8,16384,128")
    before, after = t[(previous_stage(v18), 90, REGISTRY[previous_stage(v18)].tile.label())], \
        t[(v18, 90, REGISTRY[v18].tile.label())]
    assert after["registers"] <= 128 and after["spill_stores"] == after["spill_loads"] == 0
    assert after["blocks_per_sm"] * REGISTRY[v18].tile.num_warps == 16
    assert before["blocks_per_sm"] * REGISTRY[previous_stage(v18)].tile.num_warps == 12
    d = next((tmp_path / "sm_90").glob(f"{v18}_*"))
    ttgir, sass = (d / "kernel.ttgir").read_text(), (d / "kernel.sass").read_text()
    assert re.search(r"nvidia_mma<\{[^}]*warpsPerCTA = \[8, 1\]", ttgir)   # 8 warps stacked along the query rows
    qk = [line for line in sass.splitlines() if re.search(r"HGMMA\.64x64x16\.F32\s", line)]
    assert qk and not any(re.search(r"HGMMA\S*\s+R\d+,\s*R\d+,\s*gdesc", line) for line in qk)
    uncapped = build(tmp_path / "uncapped", "--variants", switches_label(REGISTRY[v18].switches - {"two_warpgroups"}),
                     "--archs", "90", "--tiles", REGISTRY[v18].tile.label(), "--shape", "2,16,8,16384,128")
    (free,) = uncapped.values()
    assert free["registers"] > 128 and free["blocks_per_sm"] == 1


def test_warp_specialization_partitions_our_loop_on_sm90_only_with_q_in_registers(tmp_path):
    """Why FlashAttention-3's producer/consumer split was not a switch before v15: Triton 3.6's automatic warp
    specialization refuses v13's loop at 4 warps on sm_90 (the pass fails) and at 8 warps compiles it without any
    partition (no ttg.warp_specialize op in the TTGIR). With Q in registers (v15) the same pass splits the loop into
    partitions, with register reallocation (SETMAXREG); the probe data/nvidia-h200/probes/probe-ws timed that kernel
    (and found it wrong at one tile: the launcher refuses the pair on the GPU)."""
    from kernels.stages import STAGES as REGISTRY, stage_adding, switches_label
    before = switches_label(REGISTRY[stage_adding("heads_inner")].switches | {"warp_specialize"})
    after = switches_label(REGISTRY[stage_adding("q_in_registers")].switches | {"warp_specialize"})
    t = build(tmp_path, "--variants", before, after, "--archs", "90", "--tiles", "64x64w4s2", "128x128w8s3")
    four, eight = t[(before, 90, "64x64w4s2")], t[(before, 90, "128x128w8s3")]
    assert four["compiles"] == 0 and "NVGPUWarpSpecialization" in four["note"]
    assert eight["compiles"] == 1

    def artifacts(variant, tile):
        d = next((tmp_path / "sm_90").glob(f"{variant}_{tile}"))
        return (d / "kernel.ttgir").read_text(), (d / "kernel.sass").read_text()
    ttgir, _ = artifacts(before, "128x128w8s3")
    assert "tt.warp_specialize" in ttgir and "ttg.warp_specialize" not in ttgir
    assert t[(after, 90, "64x64w4s2")]["compiles"] == 1
    ttgir, sass = artifacts(after, "64x64w4s2")
    assert "ttg.warp_specialize" in ttgir and "SETMAXREG" in sass
    # one consumer warpgroup: 4 warps of the default partition, 8 more for the other partitions (384 threads)
    ptx = next((tmp_path / "sm_90").glob(f"{after}_64x64w4s2")).joinpath("kernel.ptx").read_text()
    assert '"ttg.num-warps" = 4' in ttgir and ".reqntid 384" in ptx
    # two warpgroups of consumers (8 warps) are not partitioned, with Q in registers or not
    ttgir, _ = artifacts(after, "128x128w8s3")
    assert t[(after, 90, "128x128w8s3")]["compiles"] == 1 and "ttg.warp_specialize" not in ttgir


def test_head_groups_only_renumbers_the_programs(stages):
    """v17's change is the mapping of one grid axis to (head group, query block, head): integer divisions before the
    loop (about a hundred instructions); the products, the exponentials and the KV loops are untouched."""
    from kernels.stages import previous_stage, stage_adding
    hg = stage_adding("head_groups")
    before, after = at(stages, previous_stage(hg)), at(stages, hg)
    assert 0 < after["sass_instructions"] - before["sass_instructions"] <= 150
    for op in ("sass.HGMMA", "sass.MUFU.EX2"):
        assert after[op] == before[op]
    loops = {}
    for variant in (previous_stage(hg), hg):
        loops[variant] = sorted(e - s for s, e, _ in _loops(sass(variant)) if e - s > 0x100)   # the KV loops, by length
    assert loops[hg] == loops[previous_stage(hg)] and loops[hg]


def test_q_in_registers_and_prescale_q_are_two_kernel_flags(tmp_path):
    """Two switches, two code paths (issue 22): q_in_registers (Q_IN_REGISTERS) makes Q a computed tensor by an
    exact q + 0 and keeps the scale in the float32 scores; prescale_q (PRESCALE_Q) scales Q at load in 16 bits. The
    launch sets each flag for its own switch only. Built for sm_90, v15 and v15 with prescale_q in place of
    q_in_registers both feed the q k^T warpgroup MMA from registers (HGMMA R, R, gdesc); in the KV loop v15 keeps
    prescale_q's subtractions (s - m) and adds the scale's multiplication to each ((s - m) x scale: issue 22's
    exact exponent), and it has fewer multiplications outside the loop (none of Q at load)."""
    import re
    import torch
    from kernels.flash_fwd import _attn_fwd
    from kernels.launcher import plan_launch
    from kernels.shapes import HEADLINE
    from kernels.stages import STAGES as REGISTRY, stage_adding, switches_label
    assert {"Q_IN_REGISTERS", "PRESCALE_Q"} <= set(_attn_fwd.arg_names)
    q, k, v = HEADLINE.tensors(fill="empty")
    for switches in ({"q_in_registers"}, {"prescale_q"}, {"q_in_registers", "prescale_q"}, set()):
        kwargs = plan_launch(q, k, v, torch.empty_like(q), switches=switches).kwargs
        assert (kwargs["Q_IN_REGISTERS"], kwargs["PRESCALE_Q"]) == ("q_in_registers" in switches,
                                                                     "prescale_q" in switches), switches
    v15 = stage_adding("q_in_registers")
    twin = switches_label(REGISTRY[v15].switches - {"q_in_registers"} | {"prescale_q"})
    tile = REGISTRY[v15].tile.label()
    t = build(tmp_path, "--variants", v15, twin, "--archs", "90", "--tiles", tile)
    listing = {variant: (tmp_path / "sm_90" / f"{variant}_{tile}" / "kernel.sass").read_text()
               for variant in (v15, twin)}
    counts = {}
    for variant, text in listing.items():
        m = t[(variant, 90, tile)]
        assert m["compiles"] == 1 and m["spill_stores"] == 0 and m["local_bytes"] == 0, variant
        qk = [line for line in text.splitlines()
              if re.search(r"HGMMA\.64x\d+x16\.F32\s", line) and ".tnspB" not in line]
        assert qk and all(re.search(r"HGMMA\S*\s+R\d+,\s*R\d+,\s*gdesc", line) for line in qk), variant
        start, end, ins = max(_loops(text), key=lambda loop: loop[1] - loop[0])     # the unmasked KV loop
        body = [u for a, u in ins if start <= a <= end]
        counts[variant] = {op: sum(1 for u in body if re.match(rf"(@!?U?P\w+\s+)?{op}\b", u))
                           for op in ("FADD", "FFMA", "FMUL")}
    scaled = counts[v15]["FMUL"] - counts[twin]["FMUL"]
    assert scaled > 0 and counts[twin]["FADD"] == counts[v15]["FADD"], counts
    outside = {v: t[(v, 90, tile)]["sass.FMUL"] - counts[v]["FMUL"] for v in (v15, twin)}
    assert outside[v15] < outside[twin], (outside, counts)
