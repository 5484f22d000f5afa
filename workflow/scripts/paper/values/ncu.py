"""The paper's numbers from Nsight Compute at the headline: the baseline's traffic, register limits around warp
specialization (\\val{ncu}{<stage>}{reg_blocks}), matrix instructions per kernel, instructions, shared-memory wavefronts,
registers and occupancy of the final stage and FlashAttention-2 (\\val{ncu}{<variant>}{...}), branch efficiency around
the two-phase loop, and the static SASS growth of that loop."""

import sys
from pathlib import Path

import pandas as pd

from kernels.stages import STAGES as REGISTRY, previous_stage, stage_adding

from pipeline.latex import Values, fixed
from pipeline.selection import BASELINE, FINAL, FINAL_NO_WS, at_article_tile

SECTOR_BYTES = 32  # an L2 sector
SHARED_WAVES = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")


def values(ncu: Path, build: Path) -> Values:
    v = Values("ncu")
    raw = pd.read_csv(ncu, usecols=["variant", "metric", "instance", "value"])
    med = raw[raw.instance.isna()].groupby(["variant", "metric"]).value.median()
    v.macro("DramReadBaselineMB", fixed(med[(BASELINE, "dram__bytes_read.sum")] / 1e6, 1))
    v.macro("LTwoReadBaselineMB",
            fixed(med[(BASELINE, "lts__t_sectors_srcunit_tex_op_read.sum")] * SECTOR_BYTES / 1e6, 1))
    ws = stage_adding("warp_specialize")
    for st in (previous_stage(previous_stage(ws)), previous_stage(ws), ws):
        v.put("ncu", st, "reg_blocks", fixed(med[(st, "launch__occupancy_limit_registers")]))
    v.put("ncu", ws, "smem_blocks", fixed(med[(ws, "launch__occupancy_limit_shared_mem")]))
    # The stages before warp specialization where shared memory allows no more blocks per SM than the registers:
    # there it limits occupancy as much as they do. Runs of stages with the same limit: '4 at v0--v1, 3 at v2--v4'.
    order = list(REGISTRY)
    runs = []
    for st in order[order.index(BASELINE):order.index(ws)]:
        smem, regs = med[(st, "launch__occupancy_limit_shared_mem")], med[(st, "launch__occupancy_limit_registers")]
        if smem <= regs:
            if runs and runs[-1][0] == smem and runs[-1][2] == previous_stage(st):
                runs[-1][2] = st
            else:
                runs.append([smem, st, st])
    v.macro("SmemCoLimitStages", f"{runs[0][1]}--{runs[-1][2]}" if runs else "none")
    v.macro("SmemCoLimitText", ", ".join(f"{fixed(n)} at {a}" + (f"--{b}" if b != a else "") for n, a, b in runs)
            if runs else "none")
    ops = raw[raw.metric == "sass__inst_executed_per_opcode"].groupby(["variant", "instance"]).value.median()

    def thousands(variant, opcode):
        return fixed(ops.get((variant, opcode), 0) / 1e3)

    v.macro("HgmmaCudnnK", thousands("torch-default", "HGMMA"))
    v.macro("HmmaCudnnK", thousands("torch-default", "HMMA"))
    v.macro("HgmmaFlashK", thousands("torch-flash", "HGMMA"))
    v.macro("HmmaFlashK", thousands("torch-flash", "HMMA"))
    v.macro("HgmmaBestTileK", thousands(FINAL_NO_WS, "HGMMA"))
    v.macro("HmmaFinalK", thousands(FINAL, "HMMA"))
    for variant in (FINAL, "torch-flash"):
        v.put("ncu", variant, "inst_m", fixed(med[(variant, "smsp__inst_executed.sum")] / 1e6, 1))
        v.put("ncu", variant, "shared_waves_m", fixed(sum(med[(variant, w)] for w in SHARED_WAVES) / 1e6, 2))
        v.put("ncu", variant, "regs", fixed(med[(variant, "launch__registers_per_thread")]))
        v.put("ncu", variant, "occupancy",
              fixed(med[(variant, "sm__warps_active.avg.pct_of_peak_sustained_active")], 1))
    eff = "smsp__sass_average_branch_targets_threads_uniform.pct"
    two = stage_adding("two_phase")
    v.macro("BranchEffFinal", fixed(med[(FINAL, eff)], 1))
    v.macro("BranchEffBeforeTwoPhase", fixed(med[(previous_stage(two), eff)], 1))
    b = pd.read_csv(build)
    sass = b[(b.arch == 90) & (b.metric == "sass_instructions") & at_article_tile(b)].set_index("variant").value
    v.macro("TwoPhaseSassGrowth", fixed(100 * (sass[two] / sass[previous_stage(two)] - 1)))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
