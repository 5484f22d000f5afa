"""The paper's appendix of the other GPUs (results/paper/other_gpus.tex, \\input at the end of the appendix): one
section per GPU whose runs are committed beside the config gpu's (data/<gpu>/run-*/), each from that GPU's own
aggregate (workflow/rules/gpus.smk: the aggregate phase's scripts on its runs alone), its tables (tables.py: the
headline stage table, the per-N ratios, the claims) and its figure of the N sweep (the main text's ours_sweep.py):
which runs, the GPU their env.json files name, the claims' verdicts in words, the three tables and the figure. With
no other GPU, the file holds a comment alone.

The numbers of these sections are the tables' own cells (written by tables.py from the data) and the counts and
names of the runs and claims read here from the aggregate; none is a macro of the main text, and nothing here is
read by a step of the main text.
"""
import sys
from pathlib import Path

import pandas as pd

from pipeline.latex import escape, listing

# Each claim verdict of claims.py, as the text says it of one claim and of several.
VERDICTS = (("holds", "holds", "hold"), ("partly", "holds partly", "hold partly"),
            ("does not hold", "does not hold", "do not hold"),
            ("not testable", "is not testable here", "are not testable here"))


def section(gpu: str, main_gpu: str, runs: Path, environment: Path, claims: Path, stages: Path, per_n: Path,
            claims_table: Path, sweep: Path) -> str:
    """One GPU's appendix section."""
    r = pd.read_csv(runs)
    env = pd.read_csv(environment, dtype=str, keep_default_na=False)
    names = sorted(set(env.gpu) - {""})
    if not names:
        raise ValueError(f"{environment}: no env.json of the runs of data/{gpu}/ names its GPU")
    name = escape(" / ".join(names))
    c = pd.read_csv(claims)
    verdicts = c.groupby("claim", sort=False).claim_verdict.first()
    unknown = set(verdicts) - {v for v, *_ in VERDICTS}
    if unknown:
        raise ValueError(f"{claims}: claim verdicts {sorted(unknown)} this appendix cannot say")
    said = [f"{listing(these)} {one if len(these) == 1 else several}" for v, one, several in VERDICTS
            if (these := list(verdicts[verdicts == v].index))]
    n = len(r)
    one = n == 1
    label = f"gpu-{gpu}"
    head = (f"\\section{{Runs on {name}}}\\label{{sec:{label}}}\n"
            f"The {'run' if one else f'{n} runs'} of \\texttt{{data/{escape(gpu)}/}} "
            f"({listing([escape(x) for x in r.run])}) {'was' if one else 'were'} measured on {name}, the GPU "
            f"{'its' if one else 'their'} \\texttt{{env.json}} files name. {'It is' if one else 'They are'} "
            f"aggregated apart from the runs of \\texttt{{data/{escape(main_gpu)}/}}, by the same steps and rules, "
            f"and no number of {'it' if one else 'them'} enters the sections above. "
            f"Table~\\ref{{tab:{label}-stages}} is Table~\\ref{{tab:stages}} of {'this run' if one else 'these runs'}, "
            f"Table~\\ref{{tab:{label}-pern}} Table~\\ref{{tab:pern}} and Table~\\ref{{tab:{label}-claims}} "
            f"Table~\\ref{{tab:claims}}"
            + ("; with one run, each range over runs is that run's own value, and the verdicts have no run-to-run "
               "noise to allow for. " if one else ". ")
            + f"Figure~\\ref{{fig:{label}-sweep}} is Figure~\\ref{{fig:ourssweep}} of "
              f"{'this run' if one else 'these runs'}. "
            + f"By the rules of Section~\\ref{{sec:claims}}, on {name} {listing(said)}.\n")

    def table(path: Path, caption: str, tag: str, sep: str, env: str = "table") -> str:
        """As the main text sets the same table: \\fittable (shrunk to the line only where wider, the build stopped
        below 8pt), at the main table's type size, column separation and float (the claims sideways)."""
        place = "[H]" if env == "table" else ""
        return (f"\\begin{{{env}}}{place}\\centering\\footnotesize\\setlength{{\\tabcolsep}}{{{sep}}}\n"
                f"\\fittable{{{label}-{tag}}}{{{Path(path).read_text().strip()}}}\n"
                f"\\caption{{{caption}}}\\label{{tab:{label}-{tag}}}\n\\end{{{env}}}\n")

    return "\n".join([
        head,
        table(stages, f"Each stage at the headline shape on {name}: the article's figures beside ours (median over "
                      f"runs, lowest--highest run), as Table~\\ref{{tab:stages}}.", "stages", "2pt"),
        table(per_n, f"Our leading stage on {name} against cuDNN and FlashAttention-2 at each $N$, as "
                     f"Table~\\ref{{tab:pern}}.", "pern", "2.5pt"),
        table(claims_table, f"The claims C1--C10 on {name}, by the rules of Section~\\ref{{sec:claims}}, as "
                            f"Table~\\ref{{tab:claims}}.", "claims", "3pt", "sidewaystable"),
        # the paper is built in paper/, so the figure's path is given from there
        f"\\begin{{figure}}[H]\\centering\n\\includegraphics[width=\\linewidth]{{../{Path(sweep).as_posix()}}}\n"
        f"\\caption{{As Figure~\\ref{{fig:ourssweep}}, of the runs on {name}: left, time over cuDNN's time in the same "
        f"run against $N$ (red dashed: the goal for the Gluon stages); orange our leading Triton stage, brown our last "
        f"stage measured on this GPU, as the legend names them (median over runs; bands: lowest to highest run); "
        f"right, percent of the measured matrix roof. Solid: float16; dashed: bfloat16.}}"
        f"\\label{{fig:{label}-sweep}}\n\\end{{figure}}\n",
    ])


def main(gpus, main_gpu: str, input, out: Path) -> None:
    gpus = list(gpus)
    def files(k):                           # Snakemake gives a one-file input as a string, several as a list
        x = getattr(input, k, [])
        return [x] if isinstance(x, (str, Path)) else list(x)
    lists = {k: files(k) for k in ("runs", "environment", "claims", "stages", "per_n", "claims_table", "sweep")}
    if any(len(v) != len(gpus) for v in lists.values()):
        raise ValueError(f"the appendix needs one file of each kind per GPU {gpus}: {lists}")
    parts = [f"% The other GPUs' runs (data/<gpu>/run-*/ beside data/{main_gpu}/): "
             + (", ".join(gpus) if gpus else "none committed, so no appendix") + "\n"]
    for i, gpu in enumerate(gpus):
        parts.append(section(gpu, main_gpu, *(lists[k][i] for k in lists)))
    Path(out).write_text("\n".join(parts))


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    main(snakemake.params.gpus, snakemake.params.main_gpu, snakemake.input, snakemake.output[0])  # noqa: F821
