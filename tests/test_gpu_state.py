"""The GPU state beside every timed sample (pipeline.gpu_state) and the settle step (pipeline.settle), on the CPU:
the summaries from fake readings, the sampler's thread with a fake reader, NVML read through a fake pynvml, the
energy of one call on a fake GPU whose kernels each draw their own power, and the settle rule on a fake clock.
(On the GPU the same code reads NVML; what only a GPU can show is listed in the report of the change.)"""
import statistics
import sys
import time
import types
from types import SimpleNamespace

import pytest

import pipeline.kernel_timer as kt
from pipeline import gpu_state, settle
from pipeline.call import timed_with_state
from pipeline.gpu_state import GpuStateError, Sampler


def reading(sm=1980, w=650.0, mask=0x0):
    return {"sm_mhz": sm, "power_w": w, "throttle": mask}


# ---------------------------------------------------------------------------------------------------------------
# The arithmetic
# ---------------------------------------------------------------------------------------------------------------
def test_a_cap_mid_window_flags_the_window():
    rs = [reading(1980, 600), reading(1980, 690), reading(1755, 700, gpu_state.SW_POWER_CAP),
          reading(1710, 700, gpu_state.SW_POWER_CAP), reading(1800, 680)]
    s = gpu_state.summarize(rs)
    assert s["power_capped"] and s["capped_frac"] == pytest.approx(2 / 5)
    assert s["sm_mhz"] == 1800 and s["sm_min_mhz"] == 1710 and s["sm_max_mhz"] == 1980
    assert s["power_w"] == pytest.approx(674.0) and s["throttle"] == "0x4" and s["state_readings"] == 5


def test_idle_and_thermal_reasons_are_seen_but_are_no_power_cap():
    s = gpu_state.summarize([reading(mask=gpu_state.GPU_IDLE), reading(mask=gpu_state.SW_THERMAL_SLOWDOWN)])
    assert not s["power_capped"] and s["capped_frac"] == 0 and s["throttle"] == "0x21"
    for bit in (gpu_state.SW_POWER_CAP, gpu_state.HW_SLOWDOWN, gpu_state.HW_POWER_BRAKE_SLOWDOWN):
        assert gpu_state.is_power_capped(bit)
    assert gpu_state.reason_names(0x4 | 0x8 | 0x1000) == "sw_power_cap+hw_slowdown+0x1000"
    assert gpu_state.reason_names(0) == ""
    with pytest.raises(GpuStateError, match="no GPU state reading"):
        gpu_state.summarize([])


def test_the_clock_median_of_an_even_count():
    s = gpu_state.summarize([reading(sm) for sm in (1500, 1875, 1980, 1605)])
    assert s["sm_mhz"] == (1605 + 1875) / 2


def test_energy_per_call_takes_the_flushes_off():
    # 200 samples: a window of 200 flushes and calls used 8000 mJ, a flush alone 24 mJ: 16 mJ a call
    assert gpu_state.energy_per_call_mj(8000.0, 24.0, 200) == pytest.approx(16.0)
    assert gpu_state.energy_per_call_mj(100.0, 12.0, 10) == pytest.approx(-2.0)   # not clipped: says "too coarse"
    with pytest.raises(ValueError):
        gpu_state.energy_per_call_mj(1.0, 0.0, 0)
    with pytest.raises(GpuStateError, match="energy counter went back"):
        gpu_state.energy_delta_mj({"energy_mj": 10}, {"energy_mj": 5})


def test_a_windows_energy_is_its_mean_power_times_its_time():
    assert gpu_state.window_energy_mj([reading(w=600.0), reading(w=700.0)], 0.1) == pytest.approx(65_000)
    with pytest.raises(ValueError, match="wall time"):
        gpu_state.window_energy_mj([reading()], 0.0)
    with pytest.raises(GpuStateError, match="no GPU state reading"):
        gpu_state.window_energy_mj([], 0.1)


def full(energy, temp=60, uuid="GPU-a", limit=700.0):
    return {**reading(), "temp_c": temp, "energy_mj": energy, "uuid": uuid, "power_limit_w": limit}


def test_the_row_of_a_window():
    window = SimpleNamespace(before=full(1_000, 55), after=full(9_000, 63), seconds=0.06,
                             readings=[reading(1980, 690), reading(1830, 700, 0x4), reading(1845, 700, 0x4)])
    flushes = SimpleNamespace(before=full(9_100), after=full(18_700), seconds=0.04, readings=[reading()])
    row = gpu_state.state_row(window, flushes, 200, 400)
    assert set(row) == set(gpu_state.STATE_COLUMNS)
    window_mj, flush_mj = (690 + 700 + 700) / 3 * 0.06 * 1e3, 650.0 * 0.04 * 1e3 / 400   # mean power x wall time
    assert row["flush_energy_mj"] == pytest.approx(flush_mj)                             # 65 mJ a flush
    assert row["energy_mj"] == pytest.approx((window_mj - 200 * flush_mj) / 200)         # 144 mJ a call
    assert row["sm_mhz"] == 1845 and row["power_capped"] and row["temp_c"] == 63 and row["gpu_uuid"] == "GPU-a"
    assert row["window_ms"] == pytest.approx(60) and row["power_limit_w"] == 700.0 and row["throttle"] == "0x4"
    window.after = full(9_000, uuid="GPU-b")
    with pytest.raises(GpuStateError, match="two GPUs"):
        gpu_state.state_row(window, flushes, 200, 400)


# ---------------------------------------------------------------------------------------------------------------
# The sampler's thread
# ---------------------------------------------------------------------------------------------------------------
class FakeReader:
    """A GPU whose clock falls by 15 MHz at each fast reading and whose energy counter counts full readings."""

    def __init__(self, fail_at=None):
        self.fast = self.full = 0
        self.fail_at = fail_at

    def read_fast(self):
        self.fast += 1
        if self.fast == self.fail_at:
            raise RuntimeError("NVML went away")
        return reading(1980 - 15 * self.fast, 700.0, 0x4 if self.fast > 3 else 0)

    def read(self):
        self.full += 1
        return full(1000 * self.full)


def test_the_sampler_reads_in_a_thread_between_two_full_readings():
    gpu, synced = FakeReader(), []
    with Sampler(gpu, interval_ms=1, sync=lambda: synced.append(1)) as s:
        assert s.before["energy_mj"] == 1000 and len(synced) == 1       # synchronized, then read
        time.sleep(0.1)
    assert len(synced) == 2 and s.after["energy_mj"] == 2000
    assert len(s.readings) >= 10                                      # ~100 at 1 ms; a loaded CI core gives fewer
    times = [r["t_s"] for r in s.readings]
    assert times == sorted(times) and s.seconds >= 0.1
    summary = gpu_state.summarize(s.readings)
    assert summary["power_capped"] and summary["sm_min_mhz"] < summary["sm_max_mhz"]


def test_a_window_shorter_than_the_interval_still_has_a_reading():
    gpu = FakeReader()
    with Sampler(gpu, interval_ms=10_000) as s:
        pass
    assert len(s.readings) == 1 and s.after is not None


def test_an_error_in_the_thread_is_raised_not_dropped():
    with pytest.raises(GpuStateError, match="sampler failed.*NVML went away"):
        with Sampler(FakeReader(fail_at=2), interval_ms=1):
            time.sleep(0.05)
    with pytest.raises(ValueError, match="interval_ms"):
        Sampler(FakeReader(), interval_ms=0)


# ---------------------------------------------------------------------------------------------------------------
# NVML through a fake pynvml
# ---------------------------------------------------------------------------------------------------------------
class FakeNvmlError(Exception):
    pass


def fake_pynvml(instant=True, new_reasons=True, init_error=None, gpus=("GPU-aaaa", "GPU-bbbb")):
    """A module with the names nvidia-ml-py's pynvml has, for two GPUs (index 0 and 1), the power in mW."""
    m = types.ModuleType("pynvml")
    m.NVMLError = FakeNvmlError
    m.NVML_CLOCK_SM, m.NVML_TEMPERATURE_GPU, m.NVML_SUCCESS, m.NVML_FI_DEV_POWER_INSTANT = 1, 0, 0, 186
    m.calls = []

    def init():
        if init_error:
            raise FakeNvmlError(init_error)

    def by_uuid(uuid):
        m.calls.append(("uuid", uuid))
        if uuid not in gpus:
            raise FakeNvmlError("Not Found")
        return gpus.index(uuid)

    def by_index(i):
        m.calls.append(("index", i))
        if not 0 <= i < len(gpus):
            raise FakeNvmlError("Invalid Argument")
        return i

    def field_values(h, ids):
        assert ids == [186]
        value = SimpleNamespace(uiVal=712_345, dVal=0.0)
        return [SimpleNamespace(nvmlReturn=0 if instant else 3, valueType=1, value=value)]

    m.nvmlInit = init
    m.nvmlDeviceGetHandleByUUID, m.nvmlDeviceGetHandleByIndex = by_uuid, by_index
    m.nvmlDeviceGetUUID = lambda h: gpus[h].encode()                 # bytes, as older bindings give
    m.nvmlDeviceGetName = lambda h: "NVIDIA H200"
    m.nvmlSystemGetDriverVersion = lambda: "580.00"
    m.nvmlDeviceGetClockInfo = lambda h, clock: {1: 1755}[clock]
    m.nvmlDeviceGetFieldValues = field_values
    m.nvmlDeviceGetPowerUsage = lambda h: 650_000
    m.nvmlDeviceGetTemperature = lambda h, sensor: {0: 61}[sensor]
    m.nvmlDeviceGetTotalEnergyConsumption = lambda h: 123_456_789
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700_000
    if new_reasons:
        m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x4
    else:
        m.nvmlDeviceGetCurrentClocksThrottleReasons = lambda h: 0x8
    return m


@pytest.mark.parametrize("visible, how", [(None, ("index", 0)), ("", ("index", 0)), ("1", ("index", 1)),
                                           ("GPU-bbbb,GPU-aaaa", ("uuid", "GPU-bbbb")), ("1,0", ("index", 1))])
def test_the_gpu_is_the_first_visible_one(visible, how):
    nvml = fake_pynvml()
    env = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    gpu = gpu_state.NvmlGpu(nvml, env)
    assert nvml.calls == [how] and gpu.uuid == ("GPU-aaaa" if how[1] in (0, "GPU-aaaa") else "GPU-bbbb")


def test_a_full_reading_in_the_units_of_the_columns():
    gpu = gpu_state.NvmlGpu(fake_pynvml(), {})
    assert gpu.read() == {"sm_mhz": 1755, "power_w": pytest.approx(712.345), "throttle": 0x4, "temp_c": 61,
                          "energy_mj": 123_456_789, "power_limit_w": 700.0, "uuid": "GPU-aaaa"}
    assert gpu.power_source.startswith("instant") and gpu.describe()["name"] == "NVIDIA H200"


def test_without_instant_power_or_the_new_reason_name_the_older_calls_serve():
    gpu = gpu_state.NvmlGpu(fake_pynvml(instant=False, new_reasons=False), {})
    assert gpu.read_fast() == {"sm_mhz": 1755, "power_w": 650.0, "throttle": 0x8}
    assert "one-second average" in gpu.power_source


@pytest.mark.parametrize("visible, message", [("MIG-1234", "MIG instance"), ("cuda0", "neither an index"),
                                              ("GPU-cccc", "no GPU by uuid 'GPU-cccc'"), ("5", "no GPU by index 5")])
def test_a_gpu_nvml_cannot_find_is_refused(visible, message):
    with pytest.raises(GpuStateError, match=message):
        gpu_state.NvmlGpu(fake_pynvml(), {"CUDA_VISIBLE_DEVICES": visible})


def test_no_nvml_fails_clearly(monkeypatch):
    with pytest.raises(GpuStateError, match="NVML did not start.*Driver Not Loaded"):
        gpu_state.NvmlGpu(fake_pynvml(init_error="Driver Not Loaded"), {})
    monkeypatch.setitem(sys.modules, "pynvml", None)                 # `import pynvml` raises ImportError
    with pytest.raises(GpuStateError, match="nvidia-ml-py"):
        gpu_state.NvmlGpu()
    monkeypatch.setattr(gpu_state, "_GPU", None)
    with pytest.raises(GpuStateError, match="nvidia-ml-py"):
        gpu_state.this_gpu()


def test_the_names_exist_in_the_real_binding():
    """Every pynvml name the reader uses (the fake's names) is nvidia-ml-py's; skipped where it is not installed."""
    pynvml = pytest.importorskip("pynvml")
    fake = fake_pynvml()
    names = {n for n in vars(fake) if n.startswith(("nvml", "NVML"))}
    missing = sorted(n for n in names if not hasattr(pynvml, n))
    assert not missing, missing
    assert pynvml.NVML_FI_DEV_POWER_INSTANT == 186 and pynvml.NVML_CLOCK_SM == 1
    assert pynvml.nvmlClocksEventReasonSwPowerCap == gpu_state.SW_POWER_CAP
    assert pynvml.nvmlClocksEventReasonHwSlowdown == gpu_state.HW_SLOWDOWN
    assert pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown == gpu_state.HW_POWER_BRAKE_SLOWDOWN


def test_nvml_and_cuda_uuids_are_compared_without_the_prefix():
    assert gpu_state.same_gpu("GPU-3f1a2b3c-0000-1111-2222-333344445555", "3f1a2b3c-0000-1111-2222-333344445555")
    assert not gpu_state.same_gpu("GPU-3f1a2b3c-0000-1111-2222-333344445555", "4f1a2b3c-0000-1111-2222-333344445555")


# ---------------------------------------------------------------------------------------------------------------
# The energy of one call, end to end on a fake GPU (the kernel timer's samples, then the flushes alone)
# ---------------------------------------------------------------------------------------------------------------
class EnergyGPU:
    """One stream, as tests/test_kernel_timer.py's FakeGPU, whose kernels each draw a power of their own (W) while
    they run. NVML's readings come from it: the power is the mean over the kernels run since the last full reading
    (what an instant power reading averages to over a window), the clock its GPU time."""

    WATTS = {kt.FLUSH_KERNEL: 300.0, "attn": 600.0}

    def __init__(self):
        self.host_ns = self.gpu_ns = 0
        self.energy_mj, self.records = 0.0, []
        self._since = (0.0, 0)         # energy (mJ) and busy time (ns) since the last full reading

    def launch(self, name, duration_ns):
        self.host_ns += 5_000
        start = max(self.gpu_ns, self.host_ns)
        self.gpu_ns = start + duration_ns
        self.records.append(kt.KernelRecord(name, start, self.gpu_ns))
        mj = duration_ns * 1e-9 * self.WATTS[name] * 1e3
        self.energy_mj += mj
        self._since = (self._since[0] + mj, self._since[1] + duration_ns)

    def recorder(self, run):
        self.records = []
        run()
        return list(self.records)

    def flush(self):
        self.launch(kt.FLUSH_KERNEL, 80_000)

    def clock(self):
        return self.gpu_ns * 1e-9

    def read_fast(self):
        mj, ns = self._since
        return reading(1830, mj / (ns * 1e-9) / 1e3 if ns else 0.0, 0x4)

    def read(self):
        self._since = (0.0, 0)
        return full(self.energy_mj)


# The fake GPU's work takes no wall time, so a reading the sampler's thread takes falls at a point of the window
# that the scheduler picks (before its first kernel: 0 W, a CI failure): an interval no window reaches leaves the
# one reading taken at the window's end (Sampler.__exit__), after all its kernels.
NO_THREAD_MS = 1e7


def test_the_energy_of_a_call_leaves_the_flush_out():
    gpu = EnergyGPU()
    stats = timed_with_state(lambda: gpu.launch("attn", 30_000), 100, gpu, NO_THREAD_MS, 250, flush=gpu.flush,
                             sync=lambda: None, recorder=gpu.recorder, clock=gpu.clock)
    assert stats["time_us"] == 30.0 and stats["timer"] == kt.TIMER        # the kernel timer's figures unchanged
    assert stats["energy_mj"] == pytest.approx(30e-6 * 600 * 1e3, rel=1e-3)   # 18 mJ: the call alone
    assert stats["flush_energy_mj"] == pytest.approx(80e-6 * 300 * 1e3, rel=1e-3)  # 24 mJ
    assert stats["power_capped"] and stats["sm_mhz"] == 1830 and set(gpu_state.STATE_COLUMNS) <= set(stats)
    # the warm-up ran outside the window: 3 calls and flushes, then 100 of each, then 250 flushes alone
    assert gpu.energy_mj == pytest.approx(103 * 18 + 353 * 24)
    assert timed_with_state(lambda: gpu.launch("attn", 30_000), 10, gpu, NO_THREAD_MS, flush=gpu.flush, sync=lambda: None,
                            recorder=gpu.recorder, clock=gpu.clock)["energy_mj"] == pytest.approx(18, rel=1e-3)


def test_the_samples_come_with_their_times_starts_and_clocks():
    """timed_with_state's sample series: each sample's time (its median time_us, its least min_us), its start by
    the GPU's clock (a flush and a call apart), and the clock of the one reading the window took."""
    gpu = EnergyGPU()
    stats = timed_with_state(lambda: gpu.launch("attn", 30_000), 20, gpu, NO_THREAD_MS, flush=gpu.flush,
                             sync=lambda: None, recorder=gpu.recorder, clock=gpu.clock)
    times, starts, mhz = ([float(x) for x in stats[c].split(";")]
                          for c in ("sample_times", "sample_starts", "sample_mhz"))
    assert len(times) == len(starts) == len(mhz) == stats["n_samples"] == 20
    assert times == [30.0] * 20 and statistics.median(times) == stats["time_us"] and min(times) == stats["min_us"]
    assert starts == [110.0 * i for i in range(20)]          # 80 us of flush, 30 of call
    assert mhz == [1830.0] * 20


def test_each_sample_takes_the_clock_of_the_reading_nearest_its_middle():
    """Readings every 5 ms, the clock falling from 1980 to 1600 MHz after 12 ms: samples of 3 ms whose middles
    fall before, around and after it."""
    readings = [{"sm_mhz": 1980 if t < 12e-3 else 1600, "t_s": 100.0 + t} for t in (5e-3, 10e-3, 15e-3, 20e-3)]
    starts, times = [0.0, 4000.0, 8000.0, 12000.0, 16000.0], [3000.0] * 5
    assert gpu_state.sample_mhz(readings, 100.0, starts, times) == [1980, 1980, 1980, 1600, 1600]
    with pytest.raises(ValueError, match="5 sample starts for 4 sample times"):
        gpu_state.sample_mhz(readings, 100.0, starts, times[:4])
    with pytest.raises(gpu_state.GpuStateError, match="no GPU state reading"):
        gpu_state.sample_mhz([], 100.0, starts, times)


# ---------------------------------------------------------------------------------------------------------------
# The settle step
# ---------------------------------------------------------------------------------------------------------------
class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def windows(clock, medians):
    """run_window for settle(): each window takes its length on the fake clock and gives the next median."""
    it = iter(medians)

    def run(ms):
        clock.t += ms / 1e3
        return next(it)
    return run


def test_settle_stops_when_the_clock_stops_falling():
    clock = FakeClock()
    out = settle.settle(windows(clock, [1980, 1890, 1815, 1800, 1795, 1500]), 500, 1.0, 20, clock)
    # 1815 -> 1800 is within 1% (1796.85): stable after the fourth window
    assert out == {"settle_s": 2.0, "settle_mhz": 1800.0, "settle_windows": 4, "settle_stable": True}


def test_settle_stops_at_its_time_limit_while_the_clock_still_falls():
    clock = FakeClock()
    out = settle.settle(windows(clock, [1980 - 30 * i for i in range(100)]), 500, 1.0, 3, clock)
    assert out["settle_windows"] == 6 and out["settle_s"] == 3.0 and not out["settle_stable"]
    assert out["settle_mhz"] == 1980 - 30 * 5
    assert settle.stable([1800], 1.0) is False                      # one window: nothing to compare
    with pytest.raises(ValueError):
        settle.settle(windows(clock, [1]), 0, 1.0, 3, clock)


def test_which_entries_are_settled():
    assert settle.needs_settle(16384, 0, 8192, 20, None)             # the first entry of the process
    assert not settle.needs_settle(16384, 0, 8192, 20, (0, 16384))   # the same block
    assert settle.needs_settle(16384, 0, 8192, 20, (0, 8192))        # another N
    assert settle.needs_settle(16384, 1, 8192, 20, (0, 16384))       # another repeat
    assert not settle.needs_settle(4096, 0, 8192, 20, None)          # short: never
    assert not settle.needs_settle(16384, 0, 8192, 0, None)          # max_s 0: off


def test_the_energy_counters_resolution_from_a_polled_series():
    """tools/check_gpu_state.py's reading of a polled counter: here it moves by 2 mJ or more every 20 ms."""
    from steps import step
    tool = step("tools/check_gpu_state")
    series = [(i * 0.001, 100 + 2 * (i // 20) + (i // 40)) for i in range(101)]   # polled every ms
    s = tool.counter_steps(series)
    assert s["polls"] == 101 and s["changes"] == 5 and s["median_update_ms"] == pytest.approx(20)
    assert s["min_increment_mj"] == 2 and s["median_increment_mj"] == 2            # 2, 3, 2, 3, 2
    assert tool.counter_steps([(0.0, 5), (0.1, 5)])["changes"] == 0


def test_importing_the_state_modules_loads_neither_nvml_nor_torch():
    """The aggregate imports gpu_state and settle for their column names: on a machine without a GPU stack."""
    import subprocess
    from pathlib import Path
    code = ("import sys, pipeline.gpu_state, pipeline.settle; "
            "bad = {'pynvml', 'torch', 'triton', 'pandas'} & set(sys.modules); assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
