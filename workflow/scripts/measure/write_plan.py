"""The rule `plan`: the measurement plan as this run sees it (config/config.yaml with any --config override), adapted
to the GPU the first GPU step detected (gpu.json: its compute capability), written into the run folder for its GPU
steps to read (a Snakemake script: `snakemake` is given). The variants that GPU cannot run (the Gluon stages off
Hopper: pipeline.plan.adapt) are left out of every set, and said: in the plan's `arch` (sealed with the run, read by
the aggregate step into runs.csv) and in the log."""
import json
from pathlib import Path

import yaml

from pipeline import plan

out = Path(snakemake.output[0])  # noqa: F821 (given by Snakemake)
gpu = json.loads(Path(snakemake.input.gpu).read_text())  # noqa: F821
adapted = plan.adapt(snakemake.config["plan"], gpu.get("capabilities") or [])  # noqa: F821
arch = adapted["arch"]
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(yaml.safe_dump({"plan": adapted}, sort_keys=False))
said = (f"skipped on this GPU ({gpu.get('gpu')}, compute capability {arch['capability']}): "
        f"{', '.join(arch['skipped'])}: {arch['why']}" if arch["skipped"] else
        f"every variant of the plan runs on this GPU ({gpu.get('gpu')}, compute capability {arch['capability']})")
Path(snakemake.log[0]).write_text(f"wrote {out}\nplan: {said}\n")  # noqa: F821
print(f"plan: {said}")
