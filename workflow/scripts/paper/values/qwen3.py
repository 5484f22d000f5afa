"""The paper's numbers on Qwen3 end to end in Hugging Face transformers, from the Qwen3 probe (data/<gpu>/probes/
qwen3-e2e, sealed; workflow/scripts/measure/qwen3_e2e.py at the commit its env.json records): prefill of the 0.6B, 8B
and 32B layouts with random bfloat16 weights, our stage against transformers' SDPA, the logits checked against a
float32 run of the same weights, prefill timed eager and from CUDA graphs, and attention alone on layer 0's q, k, v."""
import json
import sys
from pathlib import Path

import pandas as pd

from pipeline import seal
from pipeline.latex import Values, fixed, listing


def ratio(d: pd.DataFrame, metric: str, mode: str) -> pd.Series:
    """ours / SDPA of a metric's median, per (model, batch, N)."""
    m = d[(d.metric == metric) & (d["mode"] == mode)].pivot_table(index=["model", "batch", "N"], columns="impl",
                                                                    values="value")
    if m.isna().any().any() or set(m.columns) != {"ours", "sdpa"}:
        raise ValueError(f"{metric} ({mode}) lacks ours or SDPA at some point")
    return m["ours"] / m["sdpa"]


def values(seal_file: Path, qwen3: Path, env: Path) -> Values:
    seal.verify(Path(seal_file).parent)
    v = Values("qwen3")
    d = pd.read_csv(qwen3)
    e = json.loads(Path(env).read_text())
    if (d.status != "ok").any():
        raise ValueError(f"{qwen3}: rows not ok: the text quotes a complete probe")
    models = sorted(d.model.unique(), key=lambda m: float(m.rstrip("B")))
    layers = d.drop_duplicates("model").set_index("model")
    v.macro("QwModels", listing(models))
    v.macro("QwLayers", listing([f"{m} at {layers.loc[m, 'layers']} of its {layers.loc[m, 'layers_full']} layers"
                                 for m in models]))
    v.macro("QwNs", listing(sorted(d.N.unique())))
    v.macro("QwBatches", listing(sorted(d.batch.unique())))
    v.macro("QwRepeats", int(d[d.metric == "prefill_ms_median"].n.min()))
    v.macro("QwStage", e["stage"])
    v.macro("QwTransformers", e["transformers"])
    v.macro("QwCommit", e["project_commit"][:7])
    checks = d[(d.metric == "check_ok") & (d.impl == "ours")]
    v.macro("QwChecks", len(checks))
    v.macro("QwChecksOk", int(checks.value.sum()))
    vs_fp32 = d[(d.metric == "rel_error_vs_fp32")].pivot_table(index=["model", "batch", "N"], columns="impl",
                                                                 values="value")
    v.macro("QwErrRatioMax", fixed((vs_fp32["ours"] / vs_fp32["sdpa"]).max(), 2))
    graph, eager = ratio(d, "prefill_ms_median", "graph"), ratio(d, "prefill_ms_median", "eager")
    v.macro("QwPrefillGraphMin", fixed(graph.min(), 2))
    v.macro("QwPrefillGraphMax", fixed(graph.max(), 2))
    v.macro("QwPrefillGraphFaster", int((graph < 1).sum()))
    v.macro("QwPrefillEagerMin", fixed(eager.min(), 2))
    v.macro("QwPrefillEagerMax", fixed(eager.max(), 2))
    v.macro("QwPrefillEagerFaster", int((eager < 1).sum()))
    v.macro("QwPoints", len(graph))
    a = ratio(d, "attn_op_ms_median", "bench")
    v.macro("QwAttnMin", fixed(a.min(), 2))
    v.macro("QwAttnMax", fixed(a.max(), 2))
    long = a[a.index.get_level_values("N") == d.N.max()]
    v.macro("QwAttnLongMin", fixed(long.min(), 2))
    v.macro("QwAttnLongMax", fixed(long.max(), 2))
    share = d[(d.metric == "attn_share") & (d.impl == "ours") & (d.N == d.N.max())]
    v.macro("QwShareLongMin", fixed(100 * share.value.min(), 0))
    v.macro("QwShareLongMax", fixed(100 * share.value.max(), 0))
    v.macro("QwNMax", int(d.N.max()))
    return v


if __name__ == "__main__":                  # run by Snakemake's script: directive
    sys.stderr = open(snakemake.log[0], "w")  # noqa: F821
    values(**dict(snakemake.input.items())).write(snakemake.output[0])  # noqa: F821
