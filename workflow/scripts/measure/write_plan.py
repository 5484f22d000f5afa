"""The rule `plan`: the measurement plan as this run sees it (config/config.yaml with any --config override),
written into the run folder for its GPU steps to read (a Snakemake script: `snakemake` is given)."""
from pathlib import Path

import yaml

out = Path(snakemake.output[0])  # noqa: F821 (given by Snakemake)
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(yaml.safe_dump({"plan": snakemake.config["plan"]}, sort_keys=False))  # noqa: F821
Path(snakemake.log[0]).write_text(f"wrote {out}\n")  # noqa: F821
