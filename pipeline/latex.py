"""How the paper writes numbers and words: the one place for rounding, signs, escaping, listings, tables and values.

Values reach the TeX in two ways, both found by grep where they are made and where they are quoted:

- a macro whose name is written literally where it is made: `values.macro("NumRuns", ...)` -> `\\NumRuns`;
- a keyed value of a table of values: `values.put("stage", "v7", "us", ...)` -> `\\val{stage}{v7}{us}`, where the
  table's name ("stage") and the column ("us") are written literally where they are made, and the row is the data's
  (a stage, a switch, an N). The paper defines `\\val`, which stops the build on a key that was never made.

A zero never has a sign: "-0.0" is written "0.0" (and "+0.0" too, where a sign is asked for).
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

NONE = "--"   # a missing value in a table or the text


def no_minus_zero(text: str) -> str:
    """'-0', '-0.0', '+0.00' -> the number without a sign; any other text unchanged."""
    return text[1:] if re.fullmatch(r"[-+]0(\.0+)?", text) else text


def fixed(x, nd: int = 0, none: str = NONE) -> str:
    """x with nd decimals; `none` for a missing value; never a signed zero."""
    if pd.isna(x):
        return none
    return no_minus_zero(f"{x:.{nd}f}")


def signed(x, nd: int = 1) -> str:
    """A change with its sign ('+3.1', '-0.4'); a change that rounds to zero is written without one."""
    return no_minus_zero(f"{x:+.{nd}f}")


def span(med, lo, hi, nd: int = 1, runs: int | None = None) -> str:
    """'median [lowest, highest]' over runs (a comma, not a dash, so that a negative bound keeps its sign), the
    brackets written even where the runs agree ('23.9 [23.9, 23.9]'), so that a median of several runs never reads
    as one run's figure; the figure alone only for a single run (runs == 1)."""
    if runs is not None and int(runs) == 1:
        return fixed(med, nd)
    return f"{fixed(med, nd)} [{fixed(lo, nd)}, {fixed(hi, nd)}]"


def escape(s) -> str:
    """Text for TeX: backslash, underscore, percent, ampersand and hash escaped."""
    return (str(s).replace("\\", r"\textbackslash{}").replace("_", r"\_").replace("%", r"\%")
            .replace("&", r"\&").replace("#", r"\#"))


def listing(items, none: str = "none") -> str:
    """'A', 'A and B', 'A, B and C'; `none` for no item."""
    items = [str(i) for i in items]
    if not items:
        return none
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def times(x) -> str:
    """'64$\\times$64'-style product of two numbers."""
    a, b = x
    return f"{int(a)}$\\times${int(b)}"


NUMBER_WORDS = {0: "no", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight",
                9: "nine", 10: "ten"}


def count_word(n: int) -> str:
    """A count as the text says it: 'no', 'one' ... 'ten', then digits."""
    return NUMBER_WORDS.get(n, str(n))


def write_table(df: pd.DataFrame, path: Path, colfmt: str, long_caption: str | None = None,
                label: str | None = None, html: Path | None = None) -> None:
    """A table through pandas' Styler.to_latex with booktabs rules; the cells are TeX already. With long_caption, a
    longtable (it breaks across pages, its header repeated) with that caption and label, for tables that grow with
    the registry. With html, the same table as an HTML page there (html_table)."""
    sty = df.style.hide(axis="index").format(escape=None)
    if long_caption is None:
        Path(path).write_text(sty.to_latex(hrules=True, column_format=colfmt))
    else:
        Path(path).write_text(sty.to_latex(hrules=True, column_format=colfmt, environment="longtable",
                                           caption=long_caption, label=label))
    if html is not None:
        Path(html).write_text(html_table(df, colfmt, title=Path(path).stem, caption=long_caption))


# TeX of the tables' cells -> text: the few commands the tables write (escape() and the units), literal
# replacements, in this order; then `$` goes.
_BACKSLASH = "\x00"  # an escaped backslash, set aside until the end (it is text, not a command)
_TEX_TEXT = [("\\textbackslash{}", _BACKSLASH), ("\\_", "_"), ("\\%", "%"), ("\\&", "&"), ("\\#", "#"),
             ("$-$", "\u2212"), ("\\mu", "\u00b5"), ("\\times", "\u00d7"), ("\\,", "\u2009"), ("\\ ", " "),
             ("---", "\u2014"), ("--", "\u2013"), ("$", "")]


def tex_to_text(cell) -> str:
    r"""A table cell written for TeX as plain text (for HTML): $\mu$s -> µs, 64$\times$64 -> 64×64, \% -> %,
    a--b -> a–b, $N=4096$ -> N=4096. Raises on a TeX command it does not know, so that no raw TeX reaches the
    report."""
    text = str(cell)
    for tex, plain in _TEX_TEXT:
        text = text.replace(tex, plain)
    left = re.search(r"\\[A-Za-z]+|[{}]", text)
    if left:
        raise ValueError(f"table cell {cell!r}: {left.group(0)!r} has no text form (pipeline.latex._TEX_TEXT)")
    return text.replace(_BACKSLASH, "\\")


_HTML_STYLE = ("body{font-family:sans-serif;font-size:14px}table{border-collapse:collapse}"
               "th{border-bottom:2px solid #333;text-align:left;padding:3px 8px}"
               "td{border-bottom:1px solid #ddd;padding:3px 8px}td.r{text-align:right}caption{text-align:left;"
               "caption-side:top;padding:4px 0}")


def html_table(df: pd.DataFrame, colfmt: str, title: str = "", caption: str | None = None) -> str:
    """The table as an HTML page: every cell and header through tex_to_text, escaped; the columns aligned as colfmt
    aligns them in TeX (l, r)."""
    import html as _html
    align = [c for c in colfmt if c in "lcr"]
    cell = lambda x: _html.escape(tex_to_text(x))  # noqa: E731
    head = "".join(f"<th>{cell(c)}</th>" for c in df.columns)
    rows = "".join("<tr>" + "".join(f'<td class="{"r" if i < len(align) and align[i] == "r" else "l"}">{cell(x)}</td>'
                                    for i, x in enumerate(r)) + "</tr>\n" for r in df.itertuples(index=False))
    cap = f"<caption>{cell(caption)}</caption>" if caption else ""
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{_html.escape(title)}</title>"
            f"<style>{_HTML_STYLE}</style></head><body>\n<table>{cap}<thead><tr>{head}</tr></thead><tbody>\n"
            f"{rows}</tbody></table>\n</body></html>\n")


_NAME = re.compile(r"[A-Za-z]+")
_KEY = re.compile(r"[A-Za-z0-9_.+\-@]+")


class Values:
    """The numbers one step gives the paper: literal macros and keyed values, written as one .tex file."""

    def __init__(self, subject: str):
        self.subject = subject
        self.macros: dict = {}
        self.keyed: dict = {}

    def macro(self, name: str, text) -> None:
        """\\<name>: a macro's name is letters only, and is defined once."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"macro name {name!r}: letters only")
        if name in self.macros:
            raise ValueError(f"macro \\{name} made twice in {self.subject}")
        self.macros[name] = no_minus_zero(str(text))

    def put(self, table: str, row, column: str, text) -> None:
        """\\val{table}{row}{column}."""
        key = (table, str(row), column)
        for part in key:
            if not _KEY.fullmatch(part):
                raise ValueError(f"value key {key}: {part!r} has characters a key cannot hold")
        if key in self.keyed:
            raise ValueError(f"value {key} made twice in {self.subject}")
        self.keyed[key] = no_minus_zero(str(text))

    def write(self, path: Path) -> None:
        lines = [f"% Generated by the paper's `{self.subject}` values step from the data: do not edit.\n"]
        lines += [f"\\newcommand{{\\{k}}}{{{v}}}\n" for k, v in sorted(self.macros.items())]
        lines += [f"\\defval{{{t}}}{{{r}}}{{{c}}}{{{v}}}\n" for (t, r, c), v in sorted(self.keyed.items())]
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("".join(lines))
