"""What a partial file (pipeline.partial_csv) was begun under, so that a resume can refuse to mix rows made by other
code or for another plan with its own: the project's commit, the SHA-256 of each source file its rows depend on
(the kernels and their tables, the library, the step's own script), and the SHA-256 of its plan (bench.py: the run's
plan and its sets; verify.py: its list of cases).

`current(script, plan, plan_is)` is this run's origin; `differences(recorded, current)` names every part of it that
differs, one sentence each (an empty list: the same origin).
"""
from __future__ import annotations

import datetime
import hashlib
import json
from pathlib import Path

from . import gpu_env

# The code a GPU step's rows depend on beside its own script: the kernels, their tile tables and the library (what
# the GPU rules declare as their inputs, workflow/rules/common.smk's KERNEL_SOURCES, REGISTRY and LIBRARY).
SOURCE_GLOBS = ("kernels/*.py", "kernels/*.csv", "pipeline/*.py")


def script_name(file: str) -> str:
    """A step's script as origin names it: its path inside the tree (a script run from elsewhere: its full path)."""
    path = Path(file).resolve()
    try:
        return path.relative_to(gpu_env.ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def plan_sha256(plan) -> str:
    """SHA-256 of a plan as canonical JSON (keys sorted), so that the same plan gives the same hash whatever the
    layout of the file it was read from."""
    return hashlib.sha256(json.dumps(plan, sort_keys=True, default=str).encode()).hexdigest()


def sources(script: str) -> dict:
    """Path inside the tree (gpu_env.ROOT) -> SHA-256, for every file of SOURCE_GLOBS and the step's script."""
    root = gpu_env.ROOT
    paths = {p for g in SOURCE_GLOBS for p in root.glob(g)} | {root / script}
    return {(p.relative_to(root).as_posix() if p.is_relative_to(root) else p.as_posix()):
            hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(paths) if p.is_file()}


def current(script: str, plan, plan_is: str) -> dict:
    """This run's origin. plan_is says in words what the plan is (the differences name it so)."""
    return {"commit": gpu_env.project_commit(), "sources": sources(script), "plan_sha256": plan_sha256(plan),
            "plan_is": plan_is, "begun": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def differences(recorded: dict, now: dict) -> list:
    """One sentence for each part of the origin that differs: the commit, each source file changed, added or
    removed, the plan. 'begun' (when) is never compared."""
    out = []
    if recorded.get("commit") != now["commit"]:
        out.append(f"the commit: the partial file was begun at {recorded.get('commit')}, the tree is at "
                   f"{now['commit']}")
    old, new = recorded.get("sources") or {}, now["sources"]
    for name in sorted(set(old) | set(new)):
        if name not in new:
            out.append(f"{name}: removed since the partial file was begun")
        elif name not in old:
            out.append(f"{name}: new since the partial file was begun")
        elif old[name] != new[name]:
            out.append(f"{name}: changed since the partial file was begun")
    if recorded.get("plan_sha256") != now["plan_sha256"]:
        out.append(f"{now['plan_is']}: another one than the partial file was begun for (SHA-256 "
                   f"{str(recorded.get('plan_sha256'))[:12]}..., this run's {now['plan_sha256'][:12]}...)")
    return out
