"""The stage registry: each stage is the one before plus exactly one switch, and ablations derive from it."""
import dataclasses

import pytest

from kernels import STAGES, SWITCHES, add_one_in, leave_one_out, variant_name
from kernels.stages import parse_switches_label, resolve_variant, stage_of, switches_label


def test_stages_are_cumulative_one_switch_at_a_time():
    from kernels.stages import ALL_SWITCHES, ARTICLE_STAGES, BEYOND, FINAL, GLUON, LAST, OUR_STAGES
    names = list(STAGES)
    assert names == [f"v{i}" for i in range(len(SWITCHES) + len(BEYOND) + len(GLUON) + 1)]
    assert ARTICLE_STAGES == tuple(f"v{i}" for i in range(8)) and FINAL == "v7" and LAST == names[-1]
    assert OUR_STAGES == tuple(names[8:]) and len(OUR_STAGES) == len(BEYOND) + len(GLUON) >= 1
    assert STAGES["v0"].switches == frozenset()
    for prev, cur in zip(names, names[1:]):
        added = STAGES[cur].switches - STAGES[prev].switches
        removed = STAGES[prev].switches - STAGES[cur].switches
        assert len(added) == 1
        switch = ALL_SWITCHES[next(iter(added))]
        assert switch.stage == cur
        # one switch: it adds itself, and turns off only the switches it names as replaced
        assert removed == set(switch.replaces)
    assert STAGES["v7"].switches == frozenset(SWITCHES)


def test_article_tile_is_the_default_until_the_hopper_tile():
    from kernels.stages import (HOPPER_TILE, OUR_STAGES, REGISTER_REALLOC_TILE, SPLIT_CONSUMERS_TILE, THREE_PER_SM_TILE,
                                TWO_CONSUMERS_TILE, TWO_WARPGROUPS_TILE, default_tile)
    for name, st in STAGES.items():
        assert st.change
        if "split_consumers" in st.switches:     # register_realloc's tile with 4 warps (a warpgroup per partition)
            assert st.tile == SPLIT_CONSUMERS_TILE == default_tile(st.switches, 128, 1024)
            assert default_tile(st.switches, 128, 16384) == default_tile(st.switches, 64, 4096) == SPLIT_CONSUMERS_TILE
            assert dataclasses.replace(SPLIT_CONSUMERS_TILE, num_warps=8) == REGISTER_REALLOC_TILE
            assert SPLIT_CONSUMERS_TILE.num_warps == 4
        elif "register_realloc" in st.switches:     # its own tile at every N, over two_consumers' (D <= 128)
            assert st.tile == REGISTER_REALLOC_TILE == default_tile(st.switches, 128, 1024)
            assert default_tile(st.switches, 128, 16384) == default_tile(st.switches, 64, 4096) == REGISTER_REALLOC_TILE
            assert REGISTER_REALLOC_TILE.block_m == REGISTER_REALLOC_TILE.block_n == 128
            assert REGISTER_REALLOC_TILE.num_warps == 8
        elif "two_consumers" in st.switches:     # the Gluon kernel's one tile for it, at every N (D <= 128)
            assert st.tile == TWO_CONSUMERS_TILE == default_tile(st.switches, 128, 1024)
            assert default_tile(st.switches, 128, 16384) == default_tile(st.switches, 64, 4096) == TWO_CONSUMERS_TILE
            assert TWO_CONSUMERS_TILE.block_m == 128 and TWO_CONSUMERS_TILE.block_n == 64
        elif "two_warpgroups" in st.switches:    # its own tile at every N from then on (D <= 128)
            assert st.tile == TWO_WARPGROUPS_TILE == default_tile(st.switches, 128, 1024)
            assert default_tile(st.switches, 128, 16384) == TWO_WARPGROUPS_TILE
            assert default_tile(st.switches, 256) != TWO_WARPGROUPS_TILE
        elif "three_per_sm" in st.switches:    # its own tile at every N from then on
            assert st.tile == THREE_PER_SM_TILE == default_tile(st.switches, 128, 16384)
        elif "hopper_tile" in st.switches:
            assert name in OUR_STAGES and st.tile == HOPPER_TILE == default_tile(st.switches, 128)
            assert default_tile(st.switches, 256).block_n < HOPPER_TILE.block_n   # fits 227 KiB at D = 256
        else:
            assert (st.tile.block_m, st.tile.block_n, st.tile.num_warps) == (32, 32, 4)


def test_our_stages_ablate_from_our_last():
    """The leave-one-out of our last stage over its own kernel's switches: a Gluon stage's are the Gluon kernel's
    feature switches (its schedule's Triton switches are one fixed schedule in that kernel, and without `gluon` it
    would be a Triton stage), a Triton stage's all it has; of those, not one that another switch on is built on
    (v21 without producer_warp would be two_consumers without the producer warp it requires)."""
    from kernels.stages import ALL_SWITCHES, GLUON, LAST, TRITON_STAGES, is_gluon, named_variants
    loo = leave_one_out(LAST)
    own = set(GLUON) - {"gluon"} if is_gluon(STAGES[LAST].switches) else set(STAGES[LAST].switches)
    required = {r for s in STAGES[LAST].switches for r in ALL_SWITCHES[s].requires}
    assert set(loo) == {f"{LAST}-{s}" for s in STAGES[LAST].switches & own - required} and loo
    assert set(leave_one_out(TRITON_STAGES[-1])) == {f"{TRITON_STAGES[-1]}-{s}" for s in STAGES[TRITON_STAGES[-1]].switches}
    for name, sw in loo.items():
        assert resolve_variant(name) == sw and name in named_variants()
        assert variant_name(sw) == (stage_of(sw) or name)


def test_a_switch_is_built_on_what_it_requires():
    """A switch's `requires` names switches of earlier stages that are on in its own stage and every later one; a
    variant with the switch on and one of them off is named as missing it (and refused by the launcher)."""
    from kernels.stages import ALL_SWITCHES, missing_requirements, stage_adding
    for name, sw in ALL_SWITCHES.items():
        for r in sw.requires:
            assert r in ALL_SWITCHES and r in STAGES[sw.stage].switches
            assert list(STAGES).index(stage_adding(r)) < list(STAGES).index(sw.stage)
    assert ALL_SWITCHES["two_consumers"].requires == ("producer_warp",)
    v21 = STAGES[stage_adding("two_consumers")].switches
    assert missing_requirements(v21) == []
    assert missing_requirements(v21 - {"producer_warp"}) == [("two_consumers", "producer_warp")]
    for st in STAGES.values():
        assert missing_requirements(st.switches) == []


def test_ablations():
    loo, aoi = leave_one_out("v7"), add_one_in("v0")
    assert len(loo) == len(aoi) == len(SWITCHES) == 7
    assert all(len(s) == 6 for s in loo.values()) and all(len(s) == 1 for s in aoi.values())
    for name, sw in {**loo, **aoi}.items():
        assert resolve_variant(name) == sw
        # v7 without const_strides is v6, and v0 with grid_order is v1: those keep the stage's name
        assert variant_name(sw) == (stage_of(sw) or name)
    assert stage_of(loo["v7-const_strides"]) == "v6" and stage_of(aoi["v0+grid_order"]) == "v1"


@pytest.mark.parametrize("stage", list(STAGES))
def test_labels_round_trip(stage):
    sw = STAGES[stage].switches
    assert parse_switches_label(switches_label(sw)) == sw
    assert variant_name(sw) == stage


def test_extensions_are_not_stages():
    from kernels.stages import EXTENSIONS, extended
    assert not set(EXTENSIONS) & set(SWITCHES)
    assert all(not (set(EXTENSIONS) & st.switches) for st in STAGES.values())
    for name, sw in extended("v7").items():
        assert variant_name(sw) == name and resolve_variant(name) == sw and stage_of(sw) is None


def test_unknown_names_are_refused():
    with pytest.raises(ValueError, match="unknown variant 'v99'"):
        resolve_variant("v99")
    with pytest.raises(ValueError, match=r"unknown switch\(es\) \['fast'\]"):
        parse_switches_label("exp2+fast")


def test_registry_imports_neither_torch_nor_triton():
    """The pipeline's parse (Snakefile -> pipeline.plan), the aggregate and the paper's steps read the registry and the
    library without loading the GPU stack (the kernel timer's name of its method included); the kernel loads on first
    use."""
    import subprocess
    import sys
    code = ("import sys, kernels, pipeline.selection, pipeline.plan, pipeline.keys, pipeline.latex, pipeline.seal; "
            "from pipeline.kernel_timer import TIMER; "
            "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'loaded early'; "
            "kernels.attention; assert 'triton' in sys.modules; "
            "assert callable(kernels.attention) and not isinstance(kernels.attention, type(sys))")
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_tuned_tiles_are_the_recorded_choice(tmp_path):
    """kernels/tuned_tiles.csv is what choose_tiles.py derives from the committed tuning run it names, and the tuned
    stage takes the tile of the nearest tuned N below."""
    import csv
    from pathlib import Path

    from steps import step
    choose_tiles = step("tools/choose_tiles")
    from kernels.stages import TUNED_TILES, Tile, default_tile, stage_adding, tuned_tiles
    root = Path(__file__).resolve().parents[1]
    rows = list(csv.DictReader(open(TUNED_TILES)))
    run = root / "data" / "nvidia-h200" / rows[0]["run"]
    out = tmp_path / "tuned.csv"
    choose_tiles.main(["--run", str(run), "--out", str(out)])
    assert out.read_text() == TUNED_TILES.read_text()
    switches = STAGES[stage_adding("tuned_tiles")].switches
    table = {n: t for d, n, t in tuned_tiles() if d == 128}
    ns = sorted(table)
    for lo, hi in zip(ns, ns[1:]):
        assert default_tile(switches, 128, lo) == table[lo] == default_tile(switches, 128, hi - 1)
    assert default_tile(switches, 128, 1) == table[ns[0]]
    assert default_tile(switches, 128, 10 * ns[-1]) == table[ns[-1]]
    assert default_tile(switches, 64, ns[-1]) == default_tile(switches - {"tuned_tiles"}, 64, ns[-1])  # untuned D
    assert isinstance(table[ns[0]], Tile)


def test_head_group_size():
    """head_groups' groups at the headline layout on an H200 (60 MiB of L2): every head in one group up to N = 2048
    (v13's order), then fewer heads per group as each head's K and V grow, in whole GQA groups, equal sizes."""
    from kernels.stages import head_group_size
    h200_l2 = 62914560
    assert [head_group_size(n, 128, 2, 2, 32, h200_l2) for n in (1024, 2048, 4096, 8192, 16384)] == [32, 32, 16, 12, 6]
    assert head_group_size(8192, 128, 2, 8, 128, h200_l2) == 48          # Qwen3-32B: groups of 8 query heads
    assert head_group_size(1 << 20, 128, 2, 2, 32, h200_l2) == 2         # never less than one GQA group


def test_register_cap_fits_three_programs():
    from kernels.stages import REGISTERS_PER_SM, Tile, register_cap
    cap = register_cap({"three_per_sm"}, Tile(64, 64, 4, 2))
    assert cap == 168 and 3 * 128 * cap <= REGISTERS_PER_SM < 3 * 128 * (cap + 8)
    assert register_cap({"three_per_sm"}, Tile(128, 128, 8, 2)) is None and register_cap(set(), Tile(64, 64, 4, 2)) is None


def test_register_cap_fits_two_programs_of_two_warpgroups():
    from kernels.stages import REGISTERS_PER_SM, TWO_WARPGROUPS_TILE, Tile, register_cap
    cap = register_cap({"two_warpgroups"}, TWO_WARPGROUPS_TILE)
    assert cap == 128 and 2 * 256 * cap <= REGISTERS_PER_SM < 2 * 256 * (cap + 8)
    assert register_cap({"two_warpgroups"}, Tile(64, 64, 4, 2)) is None


def test_the_gluon_kernel_was_verified_on_a_gpu_at_its_current_source():
    """Gluon does not run in Triton's interpreter, so a Gluon stage's correctness is a committed GPU verification:
    a sealed correctness grid of data/ (a run's verify step, or a probe) with no WRONG case of a Gluon stage, recorded
    with the SHA-256 of kernels/gluon_fwd.py it ran (env.json's kernel_sha256, or a probe's kernel_sha256.json). This
    fails when the kernel's source changes after its last committed verification: verify again on the GPU
    (workflow/scripts/verify/verify.py --stages ...) and commit the result. A Gluon stage registered since (a new
    switch of an unchanged kernel) is not in that grid yet: unverified, which `verified_gluon_stages` says."""
    assert verified_gluon_stages(), ("no committed GPU verification of kernels/gluon_fwd.py at its current source: "
                                     "verify its stages on a GPU and commit the grid")


def verified_gluon_stages() -> set:
    """The Gluon stages that a sealed grid at the current source of kernels/gluon_fwd.py holds with no WRONG case."""
    import hashlib

    from gpu_grids import ROOT, sealed_grids
    from kernels.stages import GLUON_STAGES

    current = hashlib.sha256((ROOT / "kernels" / "gluon_fwd.py").read_bytes()).hexdigest()
    verified = set()
    for c, hashes in sealed_grids():
        if hashes.get("kernels/gluon_fwd.py") != current:
            continue
        for stage in GLUON_STAGES:
            rows = c[c.variant == stage]
            if (rows.status == "ok").any() and not (rows.status == "WRONG").any():
                verified.add(stage)
    return verified


def test_a_gluon_default_gives_way_to_its_fallback_for_a_call_it_does_not_take(monkeypatch):
    """On sm_90 the default may be a Gluon stage; a call of a head dim or dtype the Gluon kernel does not take gets
    the row's fallback (a Triton stage), one it takes gets the default, and no q means the default."""
    import torch

    from kernels import defaults
    from kernels.stages import TRITON_STAGES, is_gluon
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index: (9, 0))
    monkeypatch.setattr(defaults, "_rows", lambda: [dict(arch="90", stage="v19", fallback="v13")])
    for cache in (defaults._for_cuda, defaults.default_stages, defaults.fallback_stages):
        cache.cache_clear()
    try:
        dev = torch.device("cuda", 0)
        meta = lambda d, dt=torch.float16: torch.empty((1, 2, 8, d), dtype=dt, device="meta")  # noqa: E731
        assert defaults.default_stage(dev) == "v19" and is_gluon(STAGES["v19"].switches)
        assert defaults.default_stage(dev, meta(128)) == defaults.default_stage(dev, meta(64, torch.bfloat16)) == "v19"
        for q in (meta(96), meta(256), meta(32), meta(128, torch.float32)):
            assert defaults.default_stage(dev, q) == "v13" and "v13" in TRITON_STAGES
    finally:
        for cache in (defaults._for_cuda, defaults.default_stages, defaults.fallback_stages):
            cache.cache_clear()


def test_the_default_stage_is_the_verified_leader_on_its_architecture_and_the_articles_elsewhere(monkeypatch):
    import torch

    from kernels import defaults
    from kernels.stages import FINAL
    table = defaults.default_stages()
    assert table and all(s in STAGES for s in table.values())
    assert defaults.default_stage(torch.device("cpu")) == FINAL and defaults.default_stage(None) == FINAL
    for (major, minor), expected in (((9, 0), table[90]), ((8, 0), FINAL), ((12, 0), FINAL)):
        defaults._for_cuda.cache_clear()
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index, m=major, n=minor: (m, n))
        assert defaults.default_stage(torch.device("cuda", 0)) == expected
    defaults._for_cuda.cache_clear()
