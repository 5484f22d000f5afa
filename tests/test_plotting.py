"""The figures' shared helpers (pipeline.plotting): the per-run ratio to cuDNN, the band over runs, and the refusal
of a legend over the data."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from pipeline import plotting  # noqa: E402


def rows():
    # two runs, two lengths; cuDNN is faster in run-b, so the per-run ratio differs from the ratio of medians
    return pd.DataFrame([
        dict(run="run-a", variant="torch-cudnn", N=512, time_us=10.0),
        dict(run="run-a", variant="v7", N=512, time_us=30.0),
        dict(run="run-b", variant="torch-cudnn", N=512, time_us=5.0),
        dict(run="run-b", variant="v7", N=512, time_us=20.0),
        dict(run="run-a", variant="torch-cudnn", N=1024, time_us=20.0),
        dict(run="run-a", variant="v7", N=1024, time_us=50.0),
        dict(run="run-b", variant="v7", N=1024, time_us=60.0),      # no cuDNN in run-b at 1024: dropped
    ])


def test_over_cudnn_divides_within_each_run_and_length_and_the_band_spans_the_runs():
    r = plotting.over_cudnn(rows())
    v7 = r[r.variant == "v7"].set_index(["run", "N"]).x_cudnn
    assert v7.to_dict() == {("run-a", 512): 3.0, ("run-b", 512): 4.0, ("run-a", 1024): 2.5}
    assert (r[r.variant == "torch-cudnn"].x_cudnn == 1.0).all()
    band = plotting.run_band(r, "x_cudnn", ["variant", "N"]).set_index(["variant", "N"])
    assert band.loc[("v7", 512)].to_dict() == {"median": 3.5, "lo": 3.0, "hi": 4.0, "runs": 2}
    assert band.loc[("v7", 1024)].to_dict() == {"median": 2.5, "lo": 2.5, "hi": 2.5, "runs": 1}


def test_over_cudnn_refuses_two_cudnn_rows_of_one_run_at_one_length():
    twice = pd.concat([rows(), rows().iloc[[0]]])
    with pytest.raises(ValueError, match="two torch-cudnn rows"):
        plotting.over_cudnn(twice)


def test_a_legend_over_the_axes_is_refused_and_one_beside_them_is_not():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1], label="a line")
    ax.legend(loc="upper left")
    with pytest.raises(ValueError, match="lies over the axes"):
        plotting.legend_outside(fig)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.tight_layout()
    plotting.legend_outside(fig)
    # a legend in a panel of its own (axes turned off) is beside the data too
    fig2, (data, key) = plt.subplots(1, 2, figsize=(6, 3))
    data.plot([0, 1], [0, 1], label="a line")
    key.axis("off")
    key.legend(*data.get_legend_handles_labels(), loc="center")
    plotting.legend_outside(fig2)
    plt.close("all")


def test_save_refuses_a_figure_with_a_legend_over_its_data(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="a line")
    ax.legend()
    with pytest.raises(ValueError, match="lies over the axes"):
        plotting.save(fig, tmp_path / "f")
    assert not (tmp_path / "f.pdf").exists()
