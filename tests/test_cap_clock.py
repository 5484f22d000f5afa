"""The cap-clock probe's reader (workflow/scripts/paper/values/capclock.py, pipeline.nsight.stream_launches) and its
script (tools/cap_clock.sh): Nsight's CSV after the stream's own lines, read launch by launch with its thousands
separators; NVML's clock event reasons named, an unnamed bit refused; the script refuses to run without the tree's
commit."""
import os
import subprocess
from pathlib import Path

import pytest

from pipeline.nsight import stream_launches
from steps import step

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "data" / "nvidia-h100-80gb-hbm3" / "probes" / "cap-clock"
capclock = step("paper/values/capclock")


def test_nsights_csv_is_read_per_launch_past_the_streams_lines():
    wide = stream_launches(PROBE / "ncu-v36-float16.csv")
    assert len(wide) == 3
    cycles = wide["sm__cycles_elapsed.avg"]
    clock = wide["sm__cycles_elapsed.avg.per_second"]
    ns = wide["gpu__time_duration.sum"]
    # the three metrics agree with each other: cycles = clock x duration, within a percent per launch
    assert ((cycles / (clock * ns * 1e-9) - 1).abs() < 0.01).all(), wide


def test_fewer_than_three_launches_are_refused(tmp_path):
    lines = (PROBE / "ncu-v36-float16.csv").read_text().splitlines()
    kept = [ln for ln in lines if not ln.startswith(('"1"', '"2"'))]
    short = tmp_path / "ncu-v36-float16.csv"
    short.write_text("\n".join(kept) + "\n")
    with pytest.raises(ValueError, match="1 profiled launches"):
        stream_launches(short)


def test_clock_event_reasons_are_named_and_an_unnamed_bit_is_refused():
    assert capclock.reason_names(0x4) == "software power cap"
    assert capclock.reason_names(0x4 | 0x80) == "software power cap, hardware power brake"
    assert capclock.reason_names(0) == "none"
    with pytest.raises(ValueError, match="0x100"):
        capclock.reason_names(0x104)


def test_the_script_refuses_to_run_without_the_trees_commit(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PROJECT_COMMIT"}
    env["OUT"] = str(tmp_path)
    proc = subprocess.run(["bash", str(ROOT / "workflow" / "scripts" / "tools" / "cap_clock.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "set PROJECT_COMMIT" in proc.stderr
    assert not list(tmp_path.glob("cap-clock/ncu-*.csv"))      # stopped before any measurement
