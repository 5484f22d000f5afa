"""The GPU's state around a timed measurement, read through NVML (nvidia-ml-py, `import pynvml`): SM clock, power,
temperature, clock event (throttle) reasons, and the energy of a window.

Why: at long sequences the H200 sits at its power limit and lowers its SM clock (reason 0x4, software power cap),
so that one kernel's time moves with the GPU's state. nvidia-smi snapshots between repeats see an idle GPU; this
module reads the state while the kernels run, so that every timed row carries the clock it ran at, its power, its
energy and whether the power cap was engaged.

- `NvmlGpu`: the GPU this process uses (the first of CUDA_VISIBLE_DEVICES: by UUID when it names one, else by
  index; index 0 when unset). `read()` is one full reading (sm_mhz, power_w, temp_c, throttle, energy_mj, uuid,
  power_limit_w); `read_fast()` the three that change within milliseconds (sm_mhz, power_w, throttle).
- `Sampler`: a context manager around a measurement: a full reading before and after (the GPU synchronized first,
  so that the window covers exactly the GPU work inside), and a background thread taking `read_fast()` every
  interval_ms in between. A window's energy is its readings' mean power times its wall time (`window_energy_mj`):
  NVML's energy counter moves only every 100 ms on an H200, too coarse for a timed window.
- The arithmetic is separate from the reading, so that the tests check it with fake readings
  (tests/test_gpu_state.py): `summarize` (clock median and extremes, mean power, the OR of the masks, the power-cap
  flag), `energy_per_call_mj`, `state_row` (the columns a timed row gets, STATE_COLUMNS).

Power: on Ampere (but GA100) and newer GPUs, nvmlDeviceGetPowerUsage is a one-second average, longer than most
timed windows; the instantaneous power (field NVML_FI_DEV_POWER_INSTANT, through nvmlDeviceGetFieldValues) is read
where the driver has it, and `NvmlGpu.power_source` says which one a run used (env.json's `nvml` section).

A machine without NVML (nvidia-ml-py not installed, no driver, no GPU) fails with GpuStateError as soon as the GPU
is opened: a measurement never records a row without its state. Importing this module loads neither pynvml nor
torch.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
from typing import Callable, Sequence

# NVML's clock event reasons (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*): bits of the mask.
GPU_IDLE = 0x1
APPLICATIONS_CLOCKS = 0x2
SW_POWER_CAP = 0x4           # the clocks are lowered to keep the board within its power limit
HW_SLOWDOWN = 0x8            # clocks halved or more: temperature, external power brake, or power too high
SYNC_BOOST = 0x10
SW_THERMAL_SLOWDOWN = 0x20
HW_THERMAL_SLOWDOWN = 0x40
HW_POWER_BRAKE_SLOWDOWN = 0x80
REASON_NAMES = {GPU_IDLE: "gpu_idle", APPLICATIONS_CLOCKS: "applications_clocks", SW_POWER_CAP: "sw_power_cap",
                HW_SLOWDOWN: "hw_slowdown", SYNC_BOOST: "sync_boost", SW_THERMAL_SLOWDOWN: "sw_thermal_slowdown",
                HW_THERMAL_SLOWDOWN: "hw_thermal_slowdown", HW_POWER_BRAKE_SLOWDOWN: "hw_power_brake_slowdown"}
# A reading is power-capped when any of these is set: the software power cap, and the hardware slowdowns that a
# power excursion (or the power brake) engages.
POWER_CAP_REASONS = SW_POWER_CAP | HW_SLOWDOWN | HW_POWER_BRAKE_SLOWDOWN

# The columns a timed row gets from `state_row`, in this order (bench.py's timings.csv, after its older columns).
STATE_COLUMNS = ["gpu_uuid", "sm_mhz", "sm_min_mhz", "sm_max_mhz", "power_w", "power_limit_w", "temp_c",
                 "throttle", "power_capped", "capped_frac", "energy_mj", "flush_energy_mj", "window_ms",
                 "state_readings"]


class GpuStateError(RuntimeError):
    """The GPU's state cannot be read (no NVML, no driver, another GPU than the one measured) or makes no sense."""


# ---------------------------------------------------------------------------------------------------------------
# The arithmetic (pure: readings in, numbers out)
# ---------------------------------------------------------------------------------------------------------------
def is_power_capped(mask: int) -> bool:
    """Whether a clock event mask holds a power-cap reason (POWER_CAP_REASONS)."""
    return bool(int(mask) & POWER_CAP_REASONS)


def reason_names(mask: int) -> str:
    """The reasons of a mask by name, '+'-joined ('sw_power_cap+hw_slowdown'); '' for none."""
    mask = int(mask)
    names = [name for bit, name in REASON_NAMES.items() if mask & bit]
    rest = mask & ~sum(REASON_NAMES)
    return "+".join(names + ([hex(rest)] if rest else []))


def sample_mhz(readings: Sequence[dict], t0: float, starts_us: Sequence[float], times_us: Sequence[float]) -> list:
    """Each timed sample's SM clock (MHz): that of the reading (each with sm_mhz and t_s, the host's clock in
    seconds) nearest the sample's middle, the GPU's timeline taken to begin at t0, the window's start (its first
    sample begins within a launch's latency of it); starts_us and times_us are the samples' starts (us after the
    first's) and times (kernel_timer.sample_series). Readings come every interval_ms: samples shorter than that
    share a reading."""
    if not readings:
        raise GpuStateError("no GPU state reading in the window: the sampler took none")
    if len(starts_us) != len(times_us):
        raise ValueError(f"{len(starts_us)} sample starts for {len(times_us)} sample times")
    at = [float(r["t_s"]) - t0 for r in readings]
    return [float(readings[min(range(len(at)), key=lambda i: abs(at[i] - (s + d / 2) / 1e6))]["sm_mhz"])
            for s, d in zip(starts_us, times_us)]


def summarize(readings: Sequence[dict]) -> dict:
    """The state during a window from the sampler's readings (each with sm_mhz, power_w, throttle): the SM clock's
    median, min and max (MHz), the mean power (W), the OR of the clock event masks (hex), whether any reading was
    power-capped and the fraction that were, and how many readings there were."""
    if not readings:
        raise GpuStateError("no GPU state reading in the window: the sampler took none")
    clocks = [float(r["sm_mhz"]) for r in readings]
    masks = [int(r["throttle"]) for r in readings]
    seen = 0
    for m in masks:
        seen |= m
    capped = [is_power_capped(m) for m in masks]
    return dict(sm_mhz=statistics.median(clocks), sm_min_mhz=min(clocks), sm_max_mhz=max(clocks),
                power_w=statistics.fmean(float(r["power_w"]) for r in readings), throttle=hex(seen),
                power_capped=any(capped), capped_frac=sum(capped) / len(capped), state_readings=len(readings))


def energy_delta_mj(before: dict, after: dict) -> float:
    """The energy counter's change between two full readings (mJ); raises if it went back (a driver reload)."""
    delta = float(after["energy_mj"]) - float(before["energy_mj"])
    if delta < 0:
        raise GpuStateError(f"the GPU's energy counter went back ({before['energy_mj']} -> {after['energy_mj']} "
                            f"mJ): was the driver reloaded?")
    return delta


def window_energy_mj(readings: Sequence[dict], seconds: float) -> float:
    """The energy of a window (mJ): its readings' mean power times its wall time. Not NVML's energy counter: on an
    H200 that counter moves every 100 ms, in steps of 60-70 J (data/nvidia-h200/probes/gpu-state), which a timed
    window of 30-100 ms cannot resolve; the instant power is read every few milliseconds."""
    if seconds <= 0:
        raise ValueError(f"a window's wall time must be > 0, got {seconds}")
    return summarize(readings)["power_w"] * seconds * 1e3


def energy_per_call_mj(window_mj: float, flush_mj: float, calls: int) -> float:
    """Energy of one call (mJ): the timed window's energy (calls samples, each a flush and a call) less the energy
    of one flush alone (flush_mj) for each sample, over the number of calls. Not clipped: a negative value says the
    counter's resolution is too coarse for the window."""
    if calls < 1:
        raise ValueError(f"calls must be >= 1, got {calls}")
    return (window_mj - calls * flush_mj) / calls


def state_row(window: "Sampler", flushes: "Sampler", calls: int, n_flushes: int) -> dict:
    """The STATE_COLUMNS of a timed row: `window` sampled the timed samples (calls of them, each a flush and a
    call), `flushes` n_flushes flushes alone, right after. The clock, power and masks are the window's (flushes
    included); temp_c is the higher of the window's two full readings; flush_energy_mj is the energy of one flush
    alone (the flushes' window over n_flushes), energy_mj that of one call with one flush's taken off
    (energy_per_call_mj); each window's energy is its mean power times its wall time (window_energy_mj)."""
    if window.before["uuid"] != window.after["uuid"]:
        raise GpuStateError(f"the window's readings come from two GPUs: {window.before['uuid']}, "
                            f"{window.after['uuid']}")
    if n_flushes < 1:
        raise ValueError(f"n_flushes must be >= 1, got {n_flushes}")
    window_mj = window_energy_mj(window.readings, window.seconds)
    flush_mj = window_energy_mj(flushes.readings, flushes.seconds) / n_flushes
    return {"gpu_uuid": window.before["uuid"], **summarize(window.readings),
            "power_limit_w": window.before["power_limit_w"],
            "temp_c": max(window.before["temp_c"], window.after["temp_c"]),
            "energy_mj": energy_per_call_mj(window_mj, flush_mj, calls), "flush_energy_mj": flush_mj,
            "window_ms": window.seconds * 1e3}


# ---------------------------------------------------------------------------------------------------------------
# The sampler: a thread of readings between two full ones
# ---------------------------------------------------------------------------------------------------------------
class Sampler:
    """Around a measurement: `before` and `after` are full readings (gpu.read()), each taken once the GPU has
    finished its work (sync()); `readings` are gpu.read_fast() taken by a background thread every interval_ms in
    between (its first one interval after the start, so that it sees the GPU loaded; one is taken at the end if the
    window was shorter than the interval); `seconds` is the window's wall time. An error in the thread is raised on
    leaving the window, never dropped."""

    def __init__(self, gpu, interval_ms: float, sync: Callable[[], object] = lambda: None,
                 clock: Callable[[], float] = time.perf_counter):
        if interval_ms <= 0:
            raise ValueError(f"interval_ms must be > 0, got {interval_ms}")
        self.gpu, self.interval_s, self.sync, self.clock = gpu, interval_ms / 1e3, sync, clock
        self.before = self.after = None
        self.readings: list = []
        self.seconds = 0.0
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                self.readings.append({**self.gpu.read_fast(), "t_s": self.clock()})
        except BaseException as err:   # raised again in __exit__
            self._error = err

    def __enter__(self) -> "Sampler":
        self.sync()
        self.before = self.gpu.read()
        self.readings, self._error = [], None
        self._stop.clear()
        self.t0 = self.clock()
        self._thread = threading.Thread(target=self._run, name="gpu-state-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.sync()
        finally:
            self._stop.set()
            self._thread.join()
        self.seconds = self.clock() - self.t0
        if exc[0] is not None:
            return
        if self._error is not None:
            raise GpuStateError(f"the GPU state sampler failed: {self._error!r}") from self._error
        if not self.readings:
            self.readings.append({**self.gpu.read_fast(), "t_s": self.clock()})
        self.after = self.gpu.read()


# ---------------------------------------------------------------------------------------------------------------
# NVML (the GPU side; pynvml is imported when a GPU is opened)
# ---------------------------------------------------------------------------------------------------------------
def visible_gpu(env=None) -> tuple:
    """How NVML finds the GPU this process uses: ('uuid', 'GPU-...') when CUDA_VISIBLE_DEVICES' first entry is a
    UUID, ('index', i) when it is an index, ('index', 0) when it is unset or empty. A MIG instance is refused: its
    power and clocks are the whole GPU's."""
    first = ((os.environ if env is None else env).get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip()
    if first.startswith("GPU-"):
        return "uuid", first
    if first.startswith("MIG-"):
        raise GpuStateError(f"CUDA_VISIBLE_DEVICES names a MIG instance ({first}): its power, energy and clocks are "
                            f"the whole GPU's; measure on a whole GPU")
    try:
        return "index", int(first)
    except ValueError:
        raise GpuStateError(f"CUDA_VISIBLE_DEVICES={first!r} is neither an index nor a GPU UUID") from None


def same_gpu(nvml_uuid: str, cuda_uuid: str) -> bool:
    """Whether NVML's UUID ('GPU-xxxxxxxx-...') and CUDA's (torch's device property, without the prefix) name one
    GPU."""
    def norm(u):
        u = str(u).strip().lower()
        return u[4:] if u.startswith("gpu-") else u
    return norm(nvml_uuid) == norm(cuda_uuid)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlGpu:
    """One GPU read through NVML. `nvml` is the pynvml module (a fake in the tests); `env` the environment whose
    CUDA_VISIBLE_DEVICES names the GPU (this process's by default)."""

    def __init__(self, nvml=None, env=None):
        if nvml is None:
            try:
                import pynvml as nvml
            except ImportError as err:
                raise GpuStateError("NVML's Python binding is not installed (pip package nvidia-ml-py, module "
                                    "pynvml; it is one of pyproject.toml's dependencies): the GPU's clocks, power "
                                    "and energy cannot be recorded") from err
        self.nvml = nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as err:
            raise GpuStateError(f"NVML did not start ({err}): no NVIDIA driver or GPU here? The GPU's clocks, power "
                                f"and energy cannot be recorded") from err
        how, which = visible_gpu(env)
        try:
            self.handle = (nvml.nvmlDeviceGetHandleByUUID(which) if how == "uuid"
                           else nvml.nvmlDeviceGetHandleByIndex(which))
        except nvml.NVMLError as err:
            raise GpuStateError(f"NVML finds no GPU by {how} {which!r} (CUDA_VISIBLE_DEVICES): {err}") from err
        self.uuid = _text(nvml.nvmlDeviceGetUUID(self.handle))
        # the clock event reasons: the current name, or the one before it (nvidia-ml-py before 12.535)
        self._reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        self._instant = getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", None)
        if self._instant is not None and self._instant_mw() is None:
            self._instant = None
        self.power_source = ("instant (NVML_FI_DEV_POWER_INSTANT)" if self._instant is not None
                             else "nvmlDeviceGetPowerUsage (a one-second average on Ampere and newer)")

    def _instant_mw(self):
        """The instantaneous power (mW) from NVML's field values; None where the driver does not give it."""
        nvml = self.nvml
        try:
            value = nvml.nvmlDeviceGetFieldValues(self.handle, [self._instant])[0]
        except nvml.NVMLError:
            return None
        if value.nvmlReturn != getattr(nvml, "NVML_SUCCESS", 0):
            return None
        member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
        return getattr(value.value, member.get(value.valueType, "uiVal"))

    def power_w(self) -> float:
        mw = self._instant_mw() if self._instant is not None else None
        return (self.nvml.nvmlDeviceGetPowerUsage(self.handle) if mw is None else mw) / 1e3

    def read_fast(self) -> dict:
        """What changes within milliseconds: SM clock (MHz), power (W), clock event reasons (mask)."""
        nvml = self.nvml
        return dict(sm_mhz=nvml.nvmlDeviceGetClockInfo(self.handle, nvml.NVML_CLOCK_SM), power_w=self.power_w(),
                    throttle=int(self._reasons(self.handle)))

    def read(self) -> dict:
        """A full reading: read_fast's, the temperature (C), the energy counter (mJ since the driver loaded), the
        enforced power limit (W) and the GPU's UUID."""
        nvml = self.nvml
        return {**self.read_fast(), "temp_c": nvml.nvmlDeviceGetTemperature(self.handle, nvml.NVML_TEMPERATURE_GPU),
                "energy_mj": nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle),
                "power_limit_w": nvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1e3, "uuid": self.uuid}

    def describe(self) -> dict:
        """For env.json: the GPU as NVML names it, its UUID, power limit and where its power readings come from."""
        nvml = self.nvml
        return dict(name=_text(nvml.nvmlDeviceGetName(self.handle)), uuid=self.uuid,
                    power_limit_w=nvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1e3,
                    power_source=self.power_source, driver=_text(nvml.nvmlSystemGetDriverVersion()))


_GPU: NvmlGpu | None = None


def this_gpu() -> NvmlGpu:
    """This process's GPU, opened once (raises GpuStateError where NVML cannot read it)."""
    global _GPU
    if _GPU is None:
        _GPU = NvmlGpu()
    return _GPU
