"""Keep only some steps of a run's staging archive (run_parts.sh's staging-<run>.tar.gz), so that a later lease resumes
the run at the same commit with those steps done and measures the rest itself.

A lease of the device may be too short for a whole run on a slower GPU (run-36 on an H100: every set timed, the
lease over before Nsight's cross-check). The steps whose results do not depend on which card of a kind ran them (the
verify grid, the compile step, the plan, the model's figures and the GPU check's name) can then come from the earlier
lease, while every step that is timed or profiled runs again on the new lease's one GPU: a run's ratios compare within
one GPU, and the GPU check's gpu.json names the kind, not the card. The archive's staging folder and Snakemake's
metadata of the kept outputs are copied; every other file is left out (the timed sets, the profile, Qwen3 end to
end, the timer check, the ceilings, the logs of steps not kept).

    python workflow/scripts/tools/trim_staging.py results/staging-run-36.tar.gz --out .whl/staging-run-36.tar.gz

The kept steps are recorded beside the commit in the archive (<staging>/<run>.trimmed), and each step's own
env.json still names the card it ran on.
"""
from __future__ import annotations

import argparse
import base64
import io
import re
import sys
import tarfile

# The steps kept by default, by the files (relative to the run's staging folder) their outputs, logs and benchmarks
# are: what does not depend on which card of the GPU's kind ran it.
KEPT = {"gpu_check": ["gpu.json", "benchmarks/gpu_check.tsv"],
        "plan": ["plan.yaml", "benchmarks/plan.tsv"],
        "theory": ["theory.csv", "benchmarks/theory.tsv"],
        "compile": ["compile/", "benchmarks/compile.tsv"],
        "verify_gpu": ["verify/", "benchmarks/verify_gpu.tsv"]}
STAGING = re.compile(r"^results/staging/[^/]+/[^/]+$")      # results/staging/<gpu>/<run>, the run's folder
METADATA = ".snakemake/metadata/"


def metadata_path(record: str) -> str:
    """The output file a Snakemake metadata record is of (record: its path under .snakemake/metadata/). Snakemake
    names it by the output's path in urlsafe base64, cut into folder names of at most the file system's name length,
    each but the last prefixed with '@' (snakemake.persistence's _record_path)."""
    b64 = "".join(part[1:] if i < len(parts) - 1 else part
                  for parts in [record.split("/")] for i, part in enumerate(parts))
    return base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).decode()


def run_folder(names: list) -> str:
    """The archive's one run folder (the commit file's, results/staging/<gpu>/<run>.commit, without .commit)."""
    folders = {n[:-len(".commit")] for n in names if n.endswith(".commit") and STAGING.match(n[:-len(".commit")])}
    if len(folders) != 1:
        raise ValueError(f"the archive holds {len(folders)} run commit files ({sorted(folders)}); "
                         "expected one, as run_parts.sh packs it")
    return folders.pop()


def kept(rel: str, steps: list) -> bool:
    """Whether a file of the run folder (relative path) belongs to one of the steps kept."""
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for s in steps for p in KEPT[s])


def trim(src: str, out: str, steps: list) -> list:
    """Write out: src's commit file, its run folder's files of the kept steps and their metadata records, and a
    <run>.trimmed file naming the steps. Returns the names written."""
    unknown = sorted(set(steps) - set(KEPT))
    if unknown:
        raise ValueError(f"steps {unknown}: only {sorted(KEPT)} can be kept (the others depend on the card)")
    with tarfile.open(src) as tar:
        members = tar.getmembers()
        run = run_folder([m.name for m in members])
        written = []
        with tarfile.open(out, "w:gz") as dst:
            for m in members:
                if not m.isfile():
                    continue
                name = m.name
                keep = name == f"{run}.commit"
                if name.startswith(run + "/"):
                    keep = kept(name[len(run) + 1:], steps)
                elif name.startswith(METADATA):
                    path = metadata_path(name[len(METADATA):])
                    keep = path.startswith(run + "/") and kept(path[len(run) + 1:], steps)
                if keep:
                    dst.addfile(m, tar.extractfile(m))
                    written.append(name)
            record = ("\n".join(steps) + "\n").encode()
            info = tarfile.TarInfo(f"{run}.trimmed")
            info.size = len(record)
            dst.addfile(info, io.BytesIO(record))
    missing = [s for s in steps if not any(n.startswith(f"{run}/{KEPT[s][0]}") for n in written)]
    if missing:
        raise ValueError(f"{src}: no output of {missing} to keep (the archive's lease did not finish them)")
    return written + [f"{run}.trimmed"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("archive", help="run_parts.sh's staging-<run>.tar.gz")
    ap.add_argument("--out", required=True, help="the trimmed archive (put it in run_parts.sh's $WHEELS)")
    ap.add_argument("--steps", nargs="+", default=list(KEPT), choices=list(KEPT), help="the steps to keep")
    args = ap.parse_args(argv)
    names = trim(args.archive, args.out, args.steps)
    print(f"{args.out}: {len(names)} files of {', '.join(args.steps)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
