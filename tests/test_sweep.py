"""pipeline.sweep: the fastest Gluon kernel of a run's N sweep, stages that launch one kernel pooled."""
import pandas as pd
import pytest

from pipeline.selection import RATIO_TIME
from pipeline.sweep import best_gluon, goal_tally, launch_of, qwen3_tally, verify_counts


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


def test_a_verify_grid_is_counted_as_a_range_of_stages_and_refused_otherwise(tmp_path):
    grid = tmp_path / "correctness.csv"
    grid.write_text("variant,status\nv0,ok\nv1,ok\nv1,refused\nv2,WRONG\n")
    assert verify_counts(grid) == dict(stages="v0-v2", ok="2", refused="1", wrong="1")
    grid.write_text("variant,status\nv0,ok\nv2,ok\n")              # v1 missing: not a range from v0
    with pytest.raises(ValueError, match="a range from v0"):
        verify_counts(grid)
    grid.write_text("variant,status\nv0,ok\nv1,timeout\n")         # a status the text does not count
    with pytest.raises(ValueError, match="counts ok, refused and WRONG"):
        verify_counts(grid)


def test_the_goals_tally_counts_a_point_at_the_goal_as_met_and_names_the_highest():
    best = pd.DataFrame({"dtype": ["float16", "float16", "bfloat16"], "N": [512, 16384, 16384],
                         "x": [0.83, 0.9003, 0.90], "stage": ["v32", "v38", "v38"]}).set_index(["dtype", "N"])
    assert goal_tally(best, 0.90) == dict(met="2", of="3", worst_x="0.9003", worst_at="float16, $N=$ 16384")
    points = [(0.93, "v38", "Qwen3-32B", 1024), (0.951, "v36", "Qwen3-8B", 8192)]
    assert qwen3_tally(points, 0.95) == dict(met="1", of="2", worst_x="0.951", worst_at="Qwen3-8B, $N=$ 8192, v36")
