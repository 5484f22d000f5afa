"""The paper's numbers from the warp-specialization probe (data/<gpu>/probes/probe-ws, sealed; its program ran at the
commit its env.json records): the warp-specialized kernel's time over the leading stage's at each N
(\\val{probe}{<N>}{pct}), its tile, and the tiles where its output was wrong."""

import sys
from pathlib import Path

import pandas as pd

from pipeline import keys, seal
from pipeline.latex import Values, listing

BASE = "v13"   # what the probe timed it against, as its data names it


def values(seal_file: Path, probe: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("probe")
    d = pd.read_csv(probe)
    d["tile"] = keys.field(d.key, "tile")
    ws = d[d.variant.str.contains("warp_specialize")]
    for n, g in d.groupby("N"):
        base = g[g.variant == BASE].time_us.iloc[0]
        for r in ws[(ws.N == n) & (ws.status == "ok")].itertuples():
            v.put("probe", n, "pct", f"{100 * (r.time_us / base - 1):+.0f}")
    ok = ws[ws.status == "ok"]
    v.macro("ProbeWsTile", ok.tile.iloc[-1])
    wrong = ws[ws.status == "WRONG"]
    v.macro("ProbeWsWrongTiles", listing(sorted(set(wrong.tile))))
    v.macro("ProbeWsWrongNs", listing([str(n) for n in sorted(set(wrong.N))]))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
