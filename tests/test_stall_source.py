"""The reading of Nsight's warp samples per SASS instruction (pipeline.warp_samples: probes/stall-source,
probes/early-exp-samples): SASS opcodes sorted into kinds, a launch's KV loop picked by how often its instructions
ran, and the loop's samples split by kind."""
import pandas as pd
import pytest

from pipeline import warp_samples as stall


@pytest.mark.parametrize("sass, op, kind", [
    ("HGMMA.64x128x16.F32 R24, gdesc[UR36], RZ, !UPT", "HGMMA.64x128x16.F32", "mma_issue"),
    ("WARPGROUP.DEPBAR.LE gsb0, 0x1", "WARPGROUP.DEPBAR.LE", "mma_wait"),
    ("@!P0  BRA 0x7f3bbf7c7a80", "BRA", "sync"),
    ("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR18+0x30940], R38", "SYNCS.PHASECHK.TRANS64.TRYWAIT", "sync"),
    ("MUFU.EX2 R28, R28", "MUFU.EX2", "exp"),
    ("FMNMX.FTZ R13, R12, R13, !PT", "FMNMX.FTZ", "max"),
    ("F2FP.F16.F32.PACK_AB R164, R206, R207", "F2FP.F16.F32.PACK_AB", "convert"),
    ("@P4   FADD.FTZ R17, -R10, R17", "FADD.FTZ", "float_other"),
    ("UIADD3 UR6, UR6, -0x1, URZ", "UIADD3", "other"),
])
def test_an_instruction_is_sorted_by_its_opcode_with_its_predicate_left_off(sass, op, kind):
    assert stall.opcode(sass) == op
    assert stall.kind(op) == kind


def launch(rows):
    return pd.DataFrame(rows, columns=["sass", "inst_executed", "smsp__pcsamp_sample_count"])


def test_the_kv_loop_is_what_ran_at_least_a_quarter_as_often_as_the_most_run_instruction(tmp_path):
    path = tmp_path / "x.csv"
    launch([("MUFU.EX2 R1, R1", 1000, 30), ("HGMMA.64x128x16.F32 R24, gdesc[UR36], RZ", 1000, 10),
            ("WARPGROUP.DEPBAR.LE gsb0, 0x1", 1000, 10), ("NOP", 4, 50),          # an idle warp: outside the loop
            ("FMNMX R5, R2, R5, !PT", 250, 0), (None, None, 7)]).to_csv(path, index=False)
    d = stall.instructions(path)
    assert len(d) == 5                                     # the row without SASS is not an instruction
    share = stall.shares(d)
    assert share["loop"] == pytest.approx(50 / 100 * 100)
    assert (share["exp"], share["mma_issue"], share["mma_wait"], share["max"]) == (60, 20, 20, 0)
    assert share["softmax"] == pytest.approx(60)
    assert stall.per_step(d, r"MUFU") == 1 and stall.per_step(d, r"FMNMX") == 0.25


def test_a_table_without_source_counters_is_refused(tmp_path):
    path = tmp_path / "x.csv"
    pd.DataFrame({"sass": ["NOP"], "inst_executed": [1]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match="SourceCounters"):
        stall.instructions(path)
