"""SHA-256 checksums of a data folder (SHA256SUMS, in sha256sum's format), written after a run and verified
whenever the data is read."""
from __future__ import annotations

import hashlib
import os
import shutil
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


def listed(folder: Path) -> dict:
    """relative path -> digest, as SHA256SUMS lists them; raises naming the file and line of a malformed line."""
    sums = Path(folder) / NAME
    if not sums.exists():
        raise FileNotFoundError(f"{sums} is missing: this data folder was never sealed (the run did not finish?)")
    entries = {}
    for i, line in enumerate(sums.read_text().splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or not name:
            raise ValueError(f"{sums}, line {i}: not '<sha256>  <path>': {line!r}")
        if name in entries:
            raise ValueError(f"{sums}, line {i}: {name} is listed twice")
        entries[name] = digest
    if not entries:
        raise ValueError(f"{sums} lists no file: a sealed run is its listed files, and this one lists none")
    return entries


def verify(folder: Path) -> list:
    """A sealed run is exactly its listed files: raise naming every file that is missing, changed, or present but
    not listed; return the listed files' paths."""
    folder = Path(folder)
    entries = listed(folder)
    problems = []
    for name, digest in entries.items():
        p = folder / name
        if not p.exists():
            problems.append(f"{name}: missing")
        elif _digest(p) != digest:
            problems.append(f"{name}: changed since the run (checksum differs)")
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != NAME}
    problems += [f"{name}: not listed in {NAME} (added after the run was sealed?)" for name in sorted(present - set(entries))]
    if problems:
        raise ValueError(f"{folder}: data does not match {NAME}: " + "; ".join(problems))
    return [folder / name for name in entries]


def publish(staging: Path, dest: Path) -> Path:
    """Seal a finished run in its staging folder and move it to dest in one rename (on the same file system), so
    that dest exists only complete and sealed. Refuses an existing dest."""
    staging, dest = Path(staging), Path(dest)
    if dest.is_dir() and not any(dest.iterdir()):
        dest.rmdir()                                     # the empty folder Snakemake makes for the output
    if dest.exists():
        raise FileExistsError(f"{dest} exists: a finished run is never overwritten; choose another run name")
    write(staging)
    verify(staging)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.incoming")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(staging, tmp)                        # staging may be on another file system
    verify(tmp)
    os.rename(tmp, dest)
    shutil.rmtree(staging)
    return dest / NAME


if __name__ == "__main__":
    cmd, folder = sys.argv[1], Path(sys.argv[2])
    if cmd == "publish":
        print(f"publish: {publish(folder, Path(sys.argv[3]))}")
    else:
        write(folder) if cmd == "write" else verify(folder)
        print(f"{cmd}: {folder} ok")
