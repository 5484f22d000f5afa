"""Captions of Snakemake's HTML report, read from the code that makes each item: a figure's from its script's
docstring (workflow/scripts/paper/figures/<name>.py), a table's from its line in the tables script's docstring
("- <name>.tex: what it is"), so that the report says what the code says and nothing is written twice. Snakemake
renders a caption as reStructuredText: the text is escaped, so that a name like gpu__time_duration stays text."""
from __future__ import annotations

import ast
import re
from pathlib import Path

_RST_SPECIAL = re.compile(r"([\\`*_|])")


def rst_escape(text: str) -> str:
    """Text for reStructuredText: its inline markup characters escaped, its whitespace one space."""
    return _RST_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def docstring(script: Path) -> str:
    """The module docstring of a Python file, without running it ('' where it has none)."""
    return ast.get_docstring(ast.parse(Path(script).read_text())) or ""


def figure_caption(script: Path) -> str:
    """A figure's caption: its script's docstring, escaped for reStructuredText."""
    text = docstring(script)
    if not text:
        raise ValueError(f"{script} has no docstring: a figure's script says what the figure shows (the report's "
                         f"caption)")
    return rst_escape(text)


def table_captions(script: Path) -> dict:
    """Each table's caption from the tables script's docstring: name -> the text of its item '- <name>.tex: ...'
    (continued on the lines indented below it), escaped for reStructuredText."""
    items, name = {}, None
    for line in docstring(script).splitlines():
        m = re.match(r"- (\w+)\.tex: (.*)", line)
        if m:
            name = m.group(1)
            items[name] = [m.group(2)]
        elif name and line.startswith("  ") and line.strip():
            items[name].append(line.strip())
        else:
            name = None
    text = {n: " ".join(parts).rstrip(";.") + "." for n, parts in items.items()}
    return {n: rst_escape(t[:1].upper() + t[1:]) for n, t in text.items()}
