"""What a committed pytest log says: its last summary line, as the paper's values steps quote the GPU tests."""
from __future__ import annotations

import re
from pathlib import Path


def summary(log: Path) -> dict:
    """pytest's last summary line of a log, as {'passed': n, 'xfailed': n, ...}."""
    lines = [ln for ln in Path(log).read_text().splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    if not lines:
        raise ValueError(f"{log}: no pytest summary")
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", lines[-1])}


def passed(log: Path) -> int:
    """The number of tests that passed in a log where none failed or errored; raises otherwise."""
    s = summary(log)
    if s.get("failed", 0) or s.get("error", 0) or s.get("errors", 0) or not s.get("passed"):
        raise ValueError(f"{log}: {s} is not a run where every test passed")
    return s["passed"]
