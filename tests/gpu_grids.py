"""The committed GPU correctness grids, for the tests that ask which source of the Gluon kernel a GPU verified
(tests/test_stages.py, tests/test_gluon_build.py): each sealed correctness.csv under data/<gpu>/, with the SHA-256 of
the kernel sources it ran (its env.json's kernel_sha256, or its probe's kernel_sha256.json)."""
import json
from pathlib import Path

import pandas as pd

from pipeline import seal

ROOT = Path(__file__).resolve().parents[1]


def sealed_grids():
    """(grid as a DataFrame, {kernel source: SHA-256}) of each sealed grid that records its sources' hashes; each
    grid's folder is verified (seal.verify) before it is read."""
    for grid in sorted((ROOT / "data").glob("*/**/correctness.csv")):     # every GPU's: an H100 runs the sm_90 build too
        folder = next((p for p in grid.parents if (p / seal.NAME).exists()), None)
        if folder is None:
            continue
        hashes = {}
        for record in (grid.parent / "env.json", folder / "kernel_sha256.json"):
            if record.exists():
                data = json.loads(record.read_text())
                hashes.update(data.get("kernel_sha256", data))
        if not hashes:
            continue
        seal.verify(folder)
        yield pd.read_csv(grid), hashes
