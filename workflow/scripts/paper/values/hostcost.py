"""The paper's numbers from the host-cost probe (data/<gpu>/probes/host-cost, sealed; workflow/scripts/tools/
host_cost.py at the commit its env.json records): the host time of a plain call of every stage at the headline through
Triton's Python launcher, through the direct launch filling its host descriptors on every call, and through the
direct launch reusing them (what `attention` does), where that call's time goes, and PyTorch's SDPA on the same
host."""
import json
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.selection import HOST_TARGET_US as TARGET_US



def values(seal_file: Path, host_cost: Path, env: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("hostcost")
    d = pd.read_csv(host_cost)
    by = {path: g.set_index("variant") for path, g in d.groupby("path")}
    stages = by["cache"].index
    desc = [s for s in stages if by["cache"].loc[s, "host_descriptors"]]
    if not desc or set(by["triton"].loc[desc, "direct"]) != {False}:
        raise ValueError("the probe's descriptor stages should take Triton's Python launcher on its `triton` path")
    checked = d[d.path.isin(["triton", "fill", "cache"])]
    v.macro("HcChecked", len(checked))
    v.macro("HcSame", int(checked.same_as_triton.astype(bool).sum()))
    v.macro("HcStages", len(stages))
    v.macro("HcDescStages", f"{desc[0]}--{desc[-1]}" if len(desc) > 1 else desc[0])
    triton, cache, fill = by["triton"].loc[desc, "host_us"], by["cache"].host_us, by["fill"].loc[desc, "host_us"]
    launch, out_given = by["launch_only"].host_us, by["cache_out_given"].host_us
    v.macro("HcTritonMin", fixed(triton.min(), 1))
    v.macro("HcTritonMax", fixed(triton.max(), 1))
    v.macro("HcCacheMin", fixed(cache.min(), 1))
    v.macro("HcCacheMax", fixed(cache.max(), 1))
    v.macro("HcFillMin", fixed(fill.min(), 1))
    v.macro("HcFillMax", fixed(fill.max(), 1))
    v.macro("HcLaunchMin", fixed(launch.min(), 1))
    v.macro("HcLaunchMax", fixed(launch.max(), 1))
    v.macro("HcOutGivenMin", fixed(out_given.min(), 1))
    v.macro("HcOutGivenMax", fixed(out_given.max(), 1))
    sig, alloc = by["signature_only"].host_us, by["out_only"].host_us
    v.macro("HcSigMin", fixed(sig.min(), 1))
    v.macro("HcSigMax", fixed(sig.max(), 1))
    v.macro("HcOutMin", fixed(alloc.min(), 1))
    v.macro("HcOutMax", fixed(alloc.max(), 1))
    v.macro("HcSdpaUs", fixed(by["torch"].loc["sdpa", "host_us"], 1))
    v.macro("HcCudnnUs", fixed(by["torch"].loc["cudnn", "host_us"], 1))
    v.macro("HcOverTarget", int((by["cache"].host_us > TARGET_US).sum()))
    v.macro("HcTargetUs", TARGET_US)
    v.macro("HcLoops", int(d.host_loops.iloc[0]))
    v.macro("HcCalls", int(d.host_calls.iloc[0]))
    v.macro("HcCommit", json.loads(Path(env).read_text())["project_commit"][:7])
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
