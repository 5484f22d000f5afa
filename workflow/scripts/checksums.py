"""SHA-256 checksums of a data folder (SHA256SUMS, in sha256sum's format), written after a run and verified
whenever the data is read."""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

NAME = "SHA256SUMS"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write(folder: Path) -> Path:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != NAME)
    out = folder / NAME
    out.write_text("".join(f"{_digest(p)}  {p.relative_to(folder).as_posix()}\n" for p in files))
    return out


def verify(folder: Path) -> None:
    """Raise naming every file that is missing or whose content changed since the checksums were written."""
    sums = folder / NAME
    if not sums.exists():
        raise FileNotFoundError(f"{sums} is missing: this data folder was never sealed (the run did not finish?)")
    problems = []
    for line in sums.read_text().splitlines():
        digest, name = line.split("  ", 1)
        p = folder / name
        if not p.exists():
            problems.append(f"{name}: missing")
        elif _digest(p) != digest:
            problems.append(f"{name}: changed since the run (checksum differs)")
    if problems:
        raise ValueError(f"{folder}: data does not match {NAME}: " + "; ".join(problems))


if __name__ == "__main__":
    cmd, folder = sys.argv[1], Path(sys.argv[2])
    write(folder) if cmd == "write" else verify(folder)
    print(f"{cmd}: {folder} ok")
