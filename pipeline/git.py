"""What the project's git history says, for the checks that take it as their witness: whether a commit is known (an
env.json's project commit), which commit last changed a file (a seal), and the blobs of a commit's files. Each
asks git in one call, so that checking every sealed file stays fast.

Every function takes the repository's root; `history(root)` says whether there is one to ask (a copy of the tree
without .git has none, and the checks that need it say that they were skipped).
"""
from __future__ import annotations

import functools
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def history(root: Path = ROOT) -> bool:
    """Whether root is a git checkout (.git is a folder, or a file in a worktree) and git runs there."""
    if not (Path(root) / ".git").exists():
        return False
    try:
        return _git(root, "rev-parse", "--git-dir").returncode == 0
    except FileNotFoundError:                      # no git program
        return False


def _git(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], input=stdin, capture_output=True, text=True, timeout=120)


def _out(root: Path, *args: str, stdin: str | None = None) -> str:
    proc = _git(root, *args, stdin=stdin)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {root}: {proc.stderr.strip()}")
    return proc.stdout


def unknown_commits(commits, root: Path = ROOT) -> set:
    """The commits (full or abbreviated names) that root's history does not hold as commits."""
    commits = sorted(set(commits))
    if not commits:
        return set()
    lines = _out(root, "cat-file", "--batch-check", stdin="".join(f"{c}^{{commit}}\n" for c in commits)).splitlines()
    # one answer per asked line: '<sha> commit <size>', or '<name> missing' / '<name> ambiguous'
    return {c for c, line in zip(commits, lines) if line.split()[1:2] != ["commit"]}


def last_commit(path: Path, root: Path = ROOT) -> str | None:
    """The commit that last changed path (relative to root, or absolute inside it); None if none ever did."""
    return _out(root, "log", "-1", "--format=%H", "--", str(path)).strip() or None


def tree_blobs(commit: str, folder: Path, root: Path = ROOT) -> dict:
    """path (relative to root, posix) -> blob id, of every file under folder at commit."""
    out = _out(root, "ls-tree", "-r", "-z", "--full-tree", commit, "--", str(folder).rstrip("/") + "/")
    blobs = {}
    for entry in out.split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            mode, kind, blob = meta.split()
            if kind == "blob":
                blobs[path] = blob
    return blobs


def file_blobs(paths, root: Path = ROOT) -> dict:
    """path -> the blob id git would give the working tree's file (its bytes as they are: no filters)."""
    paths = [str(p) for p in paths]
    if not paths:
        return {}
    ids = _out(root, "hash-object", "--no-filters", "--stdin-paths", stdin="".join(f"{p}\n" for p in paths)).split()
    return dict(zip(paths, ids))


# Where SOURCE_GLOBS was defined over the history (workflow/scripts/ before pipeline/ existed): the files the
# source_sha256 of a commit's runs covered are that commit's globs, not today's.
GLOBS_AT = ("pipeline/gpu_env.py", "workflow/scripts/gpu_env.py")


def source_globs_at(commit: str, root: Path = ROOT) -> tuple:
    """The SOURCE_GLOBS of commit's gpu_env.py (today's where no file of GLOBS_AT defines them)."""
    import ast

    from . import gpu_env
    for path in GLOBS_AT:
        proc = _git(root, "show", f"{commit}:{path}")
        if proc.returncode != 0:
            continue
        for node in ast.parse(proc.stdout).body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SOURCE_GLOBS" for t in node.targets):
                return tuple(ast.literal_eval(node.value))
    return tuple(gpu_env.SOURCE_GLOBS)


@functools.lru_cache(maxsize=64)
def source_sha256_at(commit: str, root: Path = ROOT) -> str:
    """gpu_env.source_sha256 of the tree of commit (its files, by `git archive`, in a temporary folder), over that
    commit's SOURCE_GLOBS: what an env.json of a run made at that commit records as its source_sha256."""
    import io
    import tarfile
    import tempfile

    from . import gpu_env
    globs = source_globs_at(commit, root)
    # only the top-level entries that the globs reach: the data (most of the tree) is never read
    tops = {g.split("/")[0] for g in globs}
    present = [name for name in _out(root, "ls-tree", "--name-only", commit).splitlines() if name in tops]
    with tempfile.TemporaryDirectory() as tmp:
        if present:
            archive = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", commit, "--", *present],
                                     capture_output=True, timeout=300)
            if archive.returncode != 0:
                raise RuntimeError(f"git archive {commit} failed in {root}: {archive.stderr.decode().strip()}")
            with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
                # the "data" filter refuses links and names outside tmp (Python 3.11.4 on; git's own archive has none)
                tar.extractall(tmp, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        return gpu_env.source_sha256(Path(tmp), globs)
