"""The paper's numbers from v23's first GPU check (data/<gpu>/probes/v23-check, sealed; check_command.sh ran
workflow/scripts/tools/check_stages.py): v23 (register_realloc) at its own tile and at v22's (128x64, three stages),
against v22 at the same N and dtype, every row checked against float64 first. One call, outside the pipeline: the
figures isolate what the one 8-warp partition costs at v22's tile, from what the 128-row K/V blocks give."""
import sys
from pathlib import Path

import pandas as pd

from kernels.stages import STAGES

from pipeline import seal
from pipeline.latex import Values

OWN = STAGES["v23"].tile        # v23's tile in the registry: 128x128, 8 warps, two stages
AT_V22 = "128x64w8s3"           # v23 at v22's tile (v22: 128x64, 4 warps of a partition, three stages)
DTYPES = {"float16": "fp16", "bfloat16": "bf16"}


def tile_of(key: str) -> str:
    return key.rsplit("|", 1)[-1]


def values(seal_file: Path, timing: Path, precheck: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("v23check")
    t = pd.concat([pd.read_csv(timing), pd.read_csv(precheck)])
    if not (t.status.isin(["ok", "failed"]) & ((t.status == "ok") | (t.variant == "torch-cudnn"))).all():
        raise ValueError(f"{timing}: a row of ours is not ok")
    v.macro("VtwothreeChecked", int((t.variant == "v23").sum()))
    v.macro("VtwothreeNeighbourOk", int((t[t.variant == "v23"].neighbour_nan_ok.astype(str) == "True").sum()))
    t = pd.read_csv(timing)
    t["tile"] = t.key.map(tile_of)
    own = f"{OWN.block_m}x{OWN.block_n}w{OWN.num_warps}s{OWN.num_stages}"
    for (dt, n), g in t.groupby(["dtype", "N"]):
        us = {(r.variant, r.tile): r.time_us for r in g.itertuples()}
        v22 = next(x for (s, _), x in us.items() if s == "v22")
        v.put("vcheck", f"own@{n}", DTYPES[dt], f"{100 * (us['v23', own] / v22 - 1):+.0f}")
        v.put("vcheck", f"at22@{n}", DTYPES[dt], f"{100 * (us['v23', AT_V22] / v22 - 1):+.0f}")
        v.put("vcheck", f"blocks@{n}", DTYPES[dt], f"{100 * (us['v23', own] / us['v23', AT_V22] - 1):+.0f}")
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
