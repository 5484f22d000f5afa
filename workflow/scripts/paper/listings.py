"""Each switch's code, cut from the kernel source, as a listing for the paper: every `if <CONSTEXPR>:` block of the
kernel (with its else branches), and every line that passes the constexpr as a keyword argument
(results/paper/code_<switch>.tex; a switch that only the host sees gets a note instead)."""

import re
import sys
from pathlib import Path

from kernels.stages import ALL_SWITCHES, GLUON


def aliases(source: str, constexpr: str) -> list:
    """The constexprs the kernel derives from this one (`NAME: gl.constexpr = ... CONSTEXPR ...`), whose blocks
    are the switch's code too (e.g. PAIR, TWO_CONSUMERS without REGISTER_REALLOC)."""
    return re.findall(rf"^\s*([A-Z_]+): gl\.constexpr = [^:,\n]*\b{constexpr}\b", source,
                      flags=re.M)


def blocks(source: str, constexpr: str) -> list:
    """The source's blocks that a constexpr (or one derived from it) opens, dedented, the lines that derive those,
    and the lines that pass it by keyword."""
    lines = source.splitlines()
    found = []
    names = "|".join([constexpr, *aliases(source, constexpr)])
    for i, line in enumerate(lines):
        if re.search(rf"\w+={constexpr}\b", line) or re.match(
                rf"\s*(?:{names}): gl\.constexpr = [^:,\n]*\b{constexpr}\b", line):
            found.append(line.strip())      # a keyword argument or a derived constexpr: the line says it all
            continue
        if re.match(rf"\s*(el)?if (not )?(\w+ and )?(?:{names})\b", line):
            indent = len(line) - len(line.lstrip())
            block = [line]
            for nxt in lines[i + 1:]:
                depth = len(nxt) - len(nxt.lstrip())
                if nxt.strip() and (depth < indent or depth == indent and not nxt.lstrip().startswith(
                        ("else", "elif"))):     # an else of an enclosing block ends this one too
                    break
                block.append(nxt)
            found.append("\n".join(b[indent:] if b.strip() else b for b in block).rstrip())
    return found


def listing(source: str, constexpr: str, note: str = "# (host side only)") -> str:
    code = blocks(source, constexpr) if constexpr else []
    return "\\begin{lstlisting}\n" + "\n\n".join(code or [note]) + "\n\\end{lstlisting}\n"


def main(kernel: Path, gluon: Path, outputs) -> None:
    """A Triton switch's code from the Triton kernel, a Gluon switch's from the Gluon kernel (`gluon` itself is
    that whole kernel)."""
    sources = {False: Path(kernel).read_text(), True: Path(gluon).read_text()}
    for out in outputs:
        switch = Path(out).stem.removeprefix("code_")
        note = f"# (the whole kernel: {Path(gluon).as_posix()})" if switch == "gluon" else "# (host side only)"
        Path(out).write_text(listing(sources[switch in GLUON], ALL_SWITCHES[switch].kernel_arg, note))


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    main(snakemake.input.kernel, snakemake.input.gluon, snakemake.output)  # noqa: F821
