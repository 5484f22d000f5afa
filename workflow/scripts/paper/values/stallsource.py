"""The paper's numbers from probes/stall-source (data/nvidia-h100-80gb-hbm3, sealed): Nsight Compute's warp-state
samples per SASS instruction (the SourceCounters section) of one launch of v36, v37 and cuDNN at N = 16384 and of
v36 and cuDNN at 4096 (float16, the headline layout), deep in a stream of calls, clocks as found.

Each launch's KV loop and its samples by kind of instruction: pipeline.warp_samples.

- \\val{stall}{<entry>@<N>}{mmaissue|mmawait|sync|exp|max|softmax}: a class's share of the KV loop's samples (%)
  (pipeline.warp_samples.CLASSES; `softmax`: the exponentials, maxima, conversions and other float arithmetic together);
- \\val{stall}{<entry>@<N>}{loop}: the KV loop's share of all the launch's samples (%);
- \\val{stall}{<entry>@<N>}{mufu|fmnmx}: MUFU.EX2 and FMNMX instructions per consumer warpgroup and step;
- \\StallSourceGpu, \\StallSourceCommit: the probe's GPU and commit.
"""
import json
import sys
from pathlib import Path

from pipeline import seal
from pipeline.latex import Values, fixed
from pipeline.warp_samples import instructions, per_step, shares

ENTRIES = {"v36": "v36", "v37": "v37", "cudnn": "torch-cudnn"}


def values(seal_file: Path, sources: list, env: Path) -> Values:
    folder = Path(seal_file).parent
    seal.verify(folder)
    v = Values("stall")
    v.macro("StallSourceCommit", (folder / "commit.txt").read_text().strip()[:7])
    smi = (folder / "nvidia-smi.csv").read_text().splitlines()
    v.macro("StallSourceGpu", smi[1].split(",")[1].strip()[:12])
    if json.loads(Path(env).read_text())["capability"] != "9.0":
        raise ValueError(f"{env}: not an sm_90 GPU, where the text reads Hopper's SASS")
    for path in map(Path, sources):
        entry, _dtype, n = path.name.removesuffix(".csv.gz").rsplit("-", 2)
        row = next(k for k, e in ENTRIES.items() if e == entry)
        d = instructions(path)
        share, key = shares(d), f"{row}@{n}"
        v.put("stall", key, "loop", fixed(share["loop"], 1))
        v.put("stall", key, "mmaissue", fixed(share["mma_issue"], 1))
        v.put("stall", key, "mmawait", fixed(share["mma_wait"], 1))
        v.put("stall", key, "sync", fixed(share["sync"], 1))
        v.put("stall", key, "softmax", fixed(share["softmax"], 1))
        v.put("stall", key, "exp", fixed(share["exp"], 1))
        v.put("stall", key, "max", fixed(share["max"], 1))
        copies = 1 if row == "cudnn" else 2      # one code both warpgroups run (cuDNN), or a copy each (ours)
        v.put("stall", key, "mufu", fixed(per_step(d, r"MUFU\.EX2") / copies, 0))
        v.put("stall", key, "fmnmx", fixed(per_step(d, r"FMNMX") / copies, 0))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
