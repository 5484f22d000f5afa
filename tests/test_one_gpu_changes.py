"""A change within a run pairs two entries timed on one GPU: the sets of an x2 run ran on two GPUs, and a change
between an entry of one set and an entry of another would set one GPU against the other (issue 19). The helper
(pipeline.selection.change_on_one_gpu), the ablation's values and the claims' changes leave such pairs out."""
import sys
from pathlib import Path

import pandas as pd

from pipeline.selection import change_on_one_gpu, pivot_with_gpus

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "workflow" / "scripts" / "paper" / "values"))
import ablation  # noqa: E402


def per_run(rows):
    return pd.DataFrame(rows, columns=["run", "variant", "time_us", "gpu"])


def test_a_pair_timed_on_two_gpus_is_left_out_and_one_on_one_gpu_kept():
    pr = per_run([("run-1", "v7", 100.0, "GPU-a"), ("run-1", "v7-exp2", 110.0, "GPU-a"),
                  ("run-2-x2", "v7", 100.0, "GPU-a"), ("run-2-x2", "v7-exp2", 50.0, "GPU-b"),
                  ("run-3", "v7", 100.0, None), ("run-3", "v7-exp2", 120.0, None)])
    times, gpus = pivot_with_gpus(pr)
    change = change_on_one_gpu(times, gpus, "v7-exp2", "v7")
    assert sorted(change.index) == ["run-1", "run-3"]          # run-3 recorded no GPU: kept
    assert round(change["run-1"], 9) == 10.0 and round(change["run-3"], 9) == 20.0


def test_the_ablation_judges_a_switch_by_its_one_gpu_pairs_alone():
    """Six runs on one GPU each show v7 5% faster without its grid order: a switch that costs time where it is.
    Seven x2 runs, whose v7-grid_order ran on the other GPU, show it 20% slower. Pooled, the median is +20% and the
    switch is not named; on one GPU it is named, at -5%."""
    rows = []
    for i in range(6):
        rows += [(f"run-{i}", "v7", 100.0, "GPU-a"), (f"run-{i}", "v7-grid_order", 95.0, "GPU-a")]
    for i in range(10, 17):
        rows += [(f"run-{i}-x2", "v7", 100.0, "GPU-a"), (f"run-{i}-x2", "v7-grid_order", 120.0, "GPU-b")]
    times, gpus = pivot_with_gpus(per_run(rows))
    pooled, v_pooled = ablation.costly(times, ablation.Values("t")), ablation.Values("t")
    ablation.costly(times, v_pooled)
    assert pooled["removed_pct"] == [] and v_pooled.keyed[("abl", "grid_order", "removed_pct")] == "20.0"
    v = ablation.Values("t")
    assert ablation.costly(times, v, gpus)["removed_pct"] == ["grid\\_order"]
    assert v.keyed[("abl", "grid_order", "removed_pct")] == "-5.0"
