"""SHA-256 checksums of a data folder (SHA256SUMS, in sha256sum's format), written after a run and verified
whenever the data is read; and the manifest that anchors them (data/SEALS.csv).

A sealed folder is exactly the files its SHA256SUMS lists, each named by its plain path inside the folder. Sealing
again (writing SHA256SUMS anew over edited files) would pass the checksums, so every sealed folder is also
recorded in the manifest, SEALS.csv in the data folder above it: one row per sealed folder, its path relative to
the manifest's folder and the SHA-256 of its SHA256SUMS. `verify` refuses a folder the manifest does not list, or
whose SHA256SUMS is not the one recorded. The manifest is committed: a new seal, or a seal written again, changes
it, and that is a reviewed change (`python -m pipeline.seal manifest data` writes it from the seals as they are).
The sealing step of the pipeline (`publish`) records the run it seals. tests/test_seal.py checks against the git
history that every sealed file is the version committed with its seal.

    python -m pipeline.seal write FOLDER              # seal (or seal again) a folder
    python -m pipeline.seal verify FOLDER             # its checksums, and its entry in the manifest above it
    python -m pipeline.seal check FOLDER              # its checksums alone (a folder outside data/: a history archive)
    python -m pipeline.seal publish STAGING DEST      # seal a finished run, move it to DEST, record it
    python -m pipeline.seal manifest [DATA]           # write DATA/SEALS.csv from every SHA256SUMS under DATA
    python -m pipeline.seal verify-all [DATA]         # every sealed folder under DATA, and the manifest's every row
"""
from __future__ import annotations

import csv
import hashlib
import json
import io
import os
import shutil
import sys
from pathlib import Path

NAME = "SHA256SUMS"
MANIFEST = "SEALS.csv"
MANIFEST_COLUMNS = ["folder", "sums_sha256"]   # the folder, relative to the manifest's own; SHA-256 of its NAME
HEX = set("0123456789abcdef")


class SealError(ValueError):
    """A sealed folder that does not hold, or a seal that the manifest does not anchor."""


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _is_digest(s: str) -> bool:
    return len(s) == 64 and set(s) <= HEX


def _plain_path_problem(name: str) -> str | None:
    """Why name is not a plain relative path inside a folder ('a/b.csv'), or None."""
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if "\\" in name:
        return "a path with a backslash"
    parts = name.split("/")
    if ".." in parts:
        return "a path that leads out of the folder (..)"
    if any(p in ("", ".") for p in parts):
        return "not a plain path (an empty or '.' part)"
    return None


def write(folder: Path) -> Path:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != NAME)
    out = folder / NAME
    out.write_text("".join(f"{_digest(p)}  {p.relative_to(folder).as_posix()}\n" for p in files))
    return out


def listed(folder: Path) -> dict:
    """relative path -> digest, as SHA256SUMS lists them; raises naming the file and line of a malformed line, of a
    name that is not a plain path inside the folder (absolute, or with '..'), or of one that names a folder."""
    folder = Path(folder)
    sums = folder / NAME
    if not sums.exists():
        raise FileNotFoundError(f"{sums} is missing: this data folder was never sealed (the run did not finish?)")
    entries = {}
    for i, line in enumerate(sums.read_text().splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or not _is_digest(digest) or not name:
            raise SealError(f"{sums}, line {i}: not '<sha256>  <path>': {line!r}")
        problem = _plain_path_problem(name)
        if problem:
            raise SealError(f"{sums}, line {i}: {name!r} is {problem}: a seal lists only the files inside its own "
                            f"folder, each by its path there")
        if (folder / name).is_dir():
            raise SealError(f"{sums}, line {i}: {name!r} is a folder: a seal lists files, each by its path")
        if name in entries:
            raise SealError(f"{sums}, line {i}: {name} is listed twice")
        entries[name] = digest
    if not entries:
        raise SealError(f"{sums} lists no file: a sealed run is its listed files, and this one lists none")
    return entries


def check(folder: Path) -> list:
    """The checksums alone: raise naming every listed file that is missing, changed or a link, and every file present
    but not listed; return the listed files' paths. `verify` is this and the manifest's entry."""
    folder = Path(folder)
    entries = listed(folder)
    problems, named_links = [], set()
    for name, digest in entries.items():
        p = folder / name
        linked = next((a for a in [p, *p.parents] if folder in a.parents and a.is_symlink()), None)
        if linked == p:
            problems.append(f"{name}: a link (a sealed file is a plain file)")
        elif linked is not None:
            problems.append(f"{name}: under {linked.relative_to(folder).as_posix()}, a link to a folder (a sealed "
                            f"run holds its files itself: put the folder's files in place of the link)")
        elif not p.exists():
            problems.append(f"{name}: missing")
        elif _digest(p) != digest:
            problems.append(f"{name}: changed since the run (checksum differs)")
        if linked is not None:
            named_links.add(linked)
    problems += [f"{p.relative_to(folder).as_posix()}: a link (a sealed run holds only plain files and folders)"
                 for p in sorted(folder.rglob("*")) if p.is_symlink() and p not in named_links]
    present = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != NAME}
    problems += [f"{name}: not listed in {NAME} (added after the run was sealed?)" for name in sorted(present - set(entries))]
    if problems:
        raise SealError(f"{folder}: data does not match {NAME}: " + "; ".join(problems))
    return [folder / name for name in entries]


def verify(folder: Path) -> list:
    """A sealed folder is exactly its listed files, and its SHA256SUMS is the one the manifest records: raise naming
    what does not hold (and how a reviewed reseal is recorded); return the listed files' paths."""
    folder = Path(folder)
    listed(folder)
    anchor(folder)
    return check(folder)


# ---------------------------------------------------------------------------------------------------------------
# The manifest
# ---------------------------------------------------------------------------------------------------------------
def find_manifest(folder: Path) -> Path | None:
    """The manifest of a sealed folder: MANIFEST in the nearest folder above it that has one (data/SEALS.csv)."""
    for parent in Path(folder).resolve().parents:
        if (parent / MANIFEST).is_file():
            return parent / MANIFEST
    return None


def key(folder: Path, manifest: Path) -> str:
    """The folder's row name in the manifest: its path relative to the manifest's folder."""
    folder, root = Path(folder).resolve(), Path(manifest).resolve().parent
    if root not in folder.parents:
        raise SealError(f"{folder} is not inside {root}, the folder of the manifest {manifest}")
    return folder.relative_to(root).as_posix()


def read_manifest(manifest: Path) -> dict:
    """folder -> SHA-256 of its SHA256SUMS; raises naming a malformed row, a folder listed twice, or two folders with
    one SHA256SUMS (one is a copy of the other)."""
    manifest = Path(manifest)
    rows = list(csv.reader(io.StringIO(manifest.read_text())))
    if not rows or rows[0] != MANIFEST_COLUMNS:
        raise SealError(f"{manifest}: the first line must be {','.join(MANIFEST_COLUMNS)}")
    entries = {}
    for i, row in enumerate(rows[1:], 2):
        if len(row) != 2 or not _is_digest(row[1]) or _plain_path_problem(row[0]):
            raise SealError(f"{manifest}, line {i}: not '<folder>,<sha256 of its {NAME}>': {','.join(row)!r}")
        if row[0] in entries:
            raise SealError(f"{manifest}, line {i}: {row[0]} is listed twice")
        entries[row[0]] = row[1]
    refuse_copies(entries, manifest)
    return entries


def refuse_copies(entries: dict, manifest: Path) -> None:
    """Two folders with one SHA256SUMS: one is a copy of the other, and a copied run is not a second measurement."""
    by_digest = {}
    for folder, digest in sorted(entries.items()):
        if digest in by_digest:
            raise SealError(f"{manifest}: {folder} has the same {NAME} as {by_digest[digest]}: one is a copy of the "
                            f"other, and a copied run is not a second measurement")
        by_digest[digest] = folder


def write_manifest(manifest: Path, entries: dict) -> Path:
    """Write the manifest (sorted by folder) in one rename, so that it is never seen half written."""
    manifest = Path(manifest)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(MANIFEST_COLUMNS)
    w.writerows(sorted(entries.items()))
    tmp = manifest.with_name(f".{manifest.name}.incoming")
    tmp.write_text(buf.getvalue())
    os.replace(tmp, manifest)
    return manifest


RESEAL = ("a seal written again is a reviewed change: if this one is meant, record it with `python -m pipeline.seal "
          "manifest {data}` and commit the seal and the manifest together")


def anchor(folder: Path) -> str:
    """Check that the manifest above the folder records its SHA256SUMS as it is; return the folder's row name."""
    folder = Path(folder)
    manifest = find_manifest(folder)
    if manifest is None:
        raise SealError(f"{folder}: no {MANIFEST} in any folder above it: a sealed folder is read only from a data "
                        f"folder whose manifest records its seal (data/{MANIFEST}); for a folder outside data/ (an "
                        f"unpacked history archive), `python -m pipeline.seal check {folder}` checks its checksums")
    name, data = key(folder, manifest), os.path.relpath(manifest.parent)
    recorded = read_manifest(manifest).get(name)
    if recorded is None:
        raise SealError(f"{folder}: not listed in {manifest}: a copied or new folder is not a sealed run until its "
                        f"seal is recorded; " + RESEAL.format(data=data))
    if _digest(folder / NAME) != recorded:
        raise SealError(f"{folder}/{NAME} differs from the one {manifest} records (sealed again since?); "
                        + RESEAL.format(data=data))
    return name


def record(folder: Path, manifest: Path | None = None) -> Path:
    """Add or update the folder's row in the manifest (found above it, or the one given, made if absent), after
    checking its checksums; refuses a SHA256SUMS that another folder of the manifest already has."""
    folder = Path(folder)
    check(folder)
    manifest = Path(manifest) if manifest is not None else find_manifest(folder)
    if manifest is None:
        raise SealError(f"{folder}: no {MANIFEST} in any folder above it to record the seal in")
    entries = read_manifest(manifest) if manifest.exists() else {}
    entries[key(folder, manifest)] = _digest(folder / NAME)
    refuse_copies(entries, manifest)
    return write_manifest(manifest, entries)


def sealed_folders(data: Path) -> list:
    """Every folder under data that holds a SHA256SUMS, sorted."""
    return sorted(p.parent for p in Path(data).rglob(NAME) if p.is_file())


def manifest(data: Path) -> Path:
    """Write data/SEALS.csv from every sealed folder under data, each checked first; print what changed."""
    data = Path(data)
    path = data / MANIFEST
    old = read_manifest(path) if path.exists() else {}
    new = {}
    for folder in sealed_folders(data):
        check(folder)
        new[key(folder, path)] = _digest(folder / NAME)
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            print(f"{name}: " + ("added" if name not in old else "removed" if name not in new else "sealed again"))
    refuse_copies(new, path)
    return write_manifest(path, new)


def verify_all(data: Path) -> list:
    """Every sealed folder under data verified against its checksums and data/SEALS.csv, and every row of the
    manifest a sealed folder: raise naming every problem at once; return the folders."""
    data = Path(data)
    path = data / MANIFEST
    if not path.is_file():
        raise SealError(f"{path} is missing: the manifest of the sealed folders under {data} "
                        f"(write it with `python -m pipeline.seal manifest {data}`, and commit it)")
    entries = read_manifest(path)
    folders = sealed_folders(data)
    problems = []
    for folder in folders:
        try:
            if find_manifest(folder) != path.resolve():
                raise SealError(f"{folder}: its nearest manifest is {find_manifest(folder)}, not {path}")
            verify(folder)
        except (SealError, FileNotFoundError) as err:
            problems.append(str(err))
    present = {key(f, path) for f in folders}
    problems += [f"{data / name}: listed in {path} but holds no {NAME} (removed or moved?)"
                 for name in sorted(set(entries) - present)]
    if problems:
        raise SealError(f"{len(problems)} problem(s) with the sealed data under {data}:\n  " + "\n  ".join(problems))
    return folders


def check_gpu_label(run: Path, folder_gpu: str) -> None:
    """Refuse (SealError) a run whose env.json or gpu.json names another GPU than the folder it goes to,
    data/<folder_gpu>/ (gpu_env.gpu_slug of the GPU's name): a run of another GPU is never filed as the H200's."""
    from pipeline.gpu_env import gpu_slug

    wrong = []
    for path in sorted(Path(run).rglob("*.json")):
        if path.name not in ("env.json", "gpu.json"):
            continue
        gpu = json.loads(path.read_text()).get("gpu")
        if gpu is not None and gpu_slug(str(gpu)) != folder_gpu:
            wrong.append(f"{path.relative_to(run)}: {gpu!r} (data/{gpu_slug(str(gpu))}/)")
    if wrong:
        raise SealError(f"{run}: measured on another GPU than its destination data/{folder_gpu}/ names: "
                        + "; ".join(wrong) + "; nothing was moved (measure with --config gpu=<that slug>)")


def publish(staging: Path, dest: Path, manifest: Path | None = None) -> Path:
    """Seal a finished run in its staging folder and move it to dest in one rename (on the same file system), so
    that dest exists only complete and sealed; then record its seal in the manifest (the one above dest, or the one
    given). Refuses an existing dest, and a dest with no manifest to record it in (before anything is moved)."""
    staging, dest = Path(staging), Path(dest)
    manifest = Path(manifest) if manifest is not None else find_manifest(dest)
    if manifest is None:
        raise SealError(f"{dest}: no {MANIFEST} in any folder above it to record the seal in (data/{MANIFEST})")
    if dest.is_dir() and not any(dest.iterdir()):
        dest.rmdir()                                     # the empty folder Snakemake makes for the output
    if dest.exists():
        raise FileExistsError(f"{dest} exists: a finished run is never overwritten; choose another run name")
    check_gpu_label(staging, dest.parent.name)
    write(staging)
    check(staging)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.incoming")
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(staging, tmp)                        # staging may be on another file system
    check(tmp)
    os.rename(tmp, dest)
    record(dest, manifest)
    shutil.rmtree(staging)
    return dest / NAME


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cmd, args = (argv[0], argv[1:]) if argv else ("", [])
    if cmd == "publish" and len(args) in (2, 3):
        print(f"publish: {publish(Path(args[0]), Path(args[1]), *(Path(a) for a in args[2:]))}")
    elif cmd in ("write", "verify", "check") and len(args) == 1:
        {"write": write, "verify": verify, "check": check}[cmd](Path(args[0]))
        print(f"{cmd}: {args[0]} ok")
    elif cmd == "manifest" and len(args) <= 1:
        print(f"manifest: {manifest(Path(args[0] if args else 'data'))}")
    elif cmd == "verify-all" and len(args) <= 1:
        data = Path(args[0] if args else "data")
        print(f"verify-all: {len(verify_all(data))} sealed folders under {data} ok, each as {data / MANIFEST} "
              f"records it")
    else:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (SealError, FileNotFoundError, FileExistsError) as err:
        print(f"{sys.argv[1] if len(sys.argv) > 1 else 'seal'}: {err}", file=sys.stderr)
        sys.exit(1)
