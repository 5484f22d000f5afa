"""pipeline.sweep: the fastest Gluon kernel of a run's N sweep, stages that launch one kernel pooled."""
import pandas as pd
import pytest

from pipeline.selection import RATIO_TIME
from pipeline.sweep import best_gluon, launch_of


def rows(n, times):
    """A sweep's rows at N = n (float16, D = 128): variant -> its repeats' kernel times."""
    return [{"dtype": "float16", "N": n, "D": 128, "variant": v, "repeat": r, RATIO_TIME: x}
            for v, xs in times.items() for r, x in enumerate(xs)]


def test_v32_launches_v31s_kernel_above_512_and_its_own_at_512():
    assert launch_of("v32", 128, 16384) == launch_of("v31", 128, 16384)
    assert launch_of("v32", 128, 1024) == launch_of("v31", 128, 1024)
    assert launch_of("v32", 128, 512) != launch_of("v31", 128, 512)
    assert launch_of("v32", 128, 512) != launch_of("v19", 128, 512)      # v19's kernel, in a snake


def test_one_kernel_timed_twice_is_one_entry_with_its_repeats_pooled():
    t = pd.DataFrame(rows(16384, {"torch-cudnn": [100, 100], "v31": [95, 96], "v32": [86, 87], "v30": [94, 94]})
                     + rows(512, {"torch-cudnn": [10, 10], "v31": [9.5, 9.5], "v32": [8, 8.2], "v19": [9, 9]}))
    best = best_gluon(t)
    long = best.loc[("float16", 16384)]
    assert long.stage == "v31/v32" and abs(long.x - 0.91) < 1e-9         # the median of 86, 87, 95, 96: not 0.865
    short = best.loc[("float16", 512)]
    assert short.stage == "v32" and abs(short.x - 0.81) < 1e-9           # two kernels there: the faster one


def test_a_length_without_cudnn_or_a_gluon_stage_is_refused_by_name():
    with pytest.raises(ValueError, match="float16 N=1024: the sweep timed no cuDNN there"):
        best_gluon(pd.DataFrame(rows(1024, {"v31": [9, 9]})))
    with pytest.raises(ValueError, match="float16 N=1024: the sweep timed no Gluon stage there"):
        best_gluon(pd.DataFrame(rows(1024, {"torch-cudnn": [9, 9], "v13": [9, 9]})))
