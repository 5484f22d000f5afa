"""The partial CSV files that bench.py and verify.py append to as they go, so that an interrupted step resumes."""
from __future__ import annotations

import csv
from pathlib import Path


def read_rows(path: Path, columns: list, program: str) -> list:
    """The rows of a partial file; an empty one (killed before its header was written) holds none, and a file with
    another header is refused."""
    if not path.exists() or path.stat().st_size == 0:
        return []
    with open(path) as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != columns:
            raise ValueError(f"{path} has the columns {reader.fieldnames}, not {columns}: it comes from another "
                             f"version of {program}; move it away to start again")
        return list(reader)
