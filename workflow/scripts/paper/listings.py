"""Each switch's code, cut from the kernel source, as a listing for the paper: every `if <CONSTEXPR>:` block of the
kernel (with its else branches), and every line that passes the constexpr as a keyword argument
(results/paper/code_<switch>.tex; a switch that only the host sees gets a note instead)."""

import re
import sys
from pathlib import Path

from kernels.stages import ALL_SWITCHES


def blocks(source: str, constexpr: str) -> list:
    """The source's blocks that a constexpr opens, dedented, and the lines that pass it by keyword."""
    lines = source.splitlines()
    found = []
    for i, line in enumerate(lines):
        if re.search(rf"\w+={constexpr}\b", line):      # a keyword argument: the line says it all
            found.append(line.strip())
            continue
        if re.match(rf"\s*if (\w+ and )?{constexpr}\b", line):
            indent = len(line) - len(line.lstrip())
            block = [line]
            for nxt in lines[i + 1:]:
                if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent and not nxt.lstrip().startswith(
                        ("else", "elif")):
                    break
                block.append(nxt)
            found.append("\n".join(b[indent:] if b.strip() else b for b in block).rstrip())
    return found


def listing(source: str, constexpr: str) -> str:
    code = blocks(source, constexpr) if constexpr else []
    return "\\begin{lstlisting}\n" + "\n\n".join(code or ["# (host side only)"]) + "\n\\end{lstlisting}\n"


def main(kernel: Path, outputs) -> None:
    source = Path(kernel).read_text()
    for out in outputs:
        switch = Path(out).stem.removeprefix("code_")
        Path(out).write_text(listing(source, ALL_SWITCHES[switch].kernel_arg))


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    main(snakemake.input.kernel, snakemake.output)  # noqa: F821
