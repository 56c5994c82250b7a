"""Real GPUs: `PynvmlSource` samples them through NVML and, on Hopper and newer, GPM (the
rules it keeps are in the package docstring and docs/decisions.md D8)."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from collectors.nvml_source.protocol import METRICS, GpuLostError, Warn
from data.errors import NvmlUnavailableError

# GPM compares two snapshots; closer than this they can fall in one internal refresh.
# Ticks at a 100 ms interval arrive 100 ± ~1 ms apart, hence 95 and not 100.
GPM_MIN_GAP_NS = 95_000_000
# The process list is the call that slows most under load (34 -> 188 µs median beside a GEMM
# on the H200, D21): read once a second, and carried on the ticks between.
PROCESS_LIST_PERIOD_NS = 1_000_000_000
_ARCH = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada",
    9: "Hopper",
    10: "Blackwell",
    11: "Rubin",
}


_GPM_IDS = {
    "gpm_sm_util_pct": "NVML_GPM_METRIC_SM_UTIL",
    "gpm_sm_occupancy_pct": "NVML_GPM_METRIC_SM_OCCUPANCY",
    "gpm_dram_bw_util_pct": "NVML_GPM_METRIC_DRAM_BW_UTIL",
    "gpm_tensor_util_pct": "NVML_GPM_METRIC_ANY_TENSOR_UTIL",
    "gpm_fp16_util_pct": "NVML_GPM_METRIC_FP16_UTIL",
    "gpm_fp32_util_pct": "NVML_GPM_METRIC_FP32_UTIL",
    "gpm_pcie_rx_mib_s": "NVML_GPM_METRIC_PCIE_RX_PER_SEC",
    "gpm_pcie_tx_mib_s": "NVML_GPM_METRIC_PCIE_TX_PER_SEC",
    "gpm_nvlink_rx_mib_s": "NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC",
    "gpm_nvlink_tx_mib_s": "NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC",
}
_FIELDS = {"power_instant_mw": "NVML_FI_DEV_POWER_INSTANT", "temp_mem_c": "NVML_FI_DEV_MEMORY_TEMP"}


@dataclass
class _Gpu:
    """One device: its handle, GPM snapshot buffers and what it cannot report."""

    index: int
    handle: Any
    unsupported: dict[str, str] = field(default_factory=dict)  # column -> why
    gpm: list[str] = field(default_factory=list)  # GPM columns still read
    gpm_prev: Any = None
    gpm_cur: Any = None
    gpm_prev_ns: int | None = None
    gpm_get: Any = None  # the metrics request: built once, its two samples set per tick
    procs: tuple[int, str] | None = None  # process_count, processes as last read
    procs_ns: int | None = None  # when (monotonic)


class PynvmlSource:
    """Samples real GPUs through nvidia-ml-py. Raises NvmlUnavailableError without NVML."""

    kind = "nvml"

    def __init__(self, gpus: list[int] | None = None, warn: Warn = lambda _m: None) -> None:
        try:
            import pynvml
        except ImportError:
            raise NvmlUnavailableError("pynvml: not installed (pip install nvidia-ml-py)") from None
        self.N = pynvml
        self._warn = warn
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
        except pynvml.NVMLError as e:
            raise NvmlUnavailableError(
                f"NVML: {e} (is the NVIDIA driver installed and a GPU visible?)"
            ) from None
        wanted = list(range(count)) if gpus is None else gpus
        if not wanted or any(not 0 <= i < count for i in wanted):
            pynvml.nvmlShutdown()
            raise NvmlUnavailableError(f"GPUs {wanted}: this node has {count} GPU(s)")
        self._gpus = {i: self._open(i) for i in wanted}

    def _open(self, i: int) -> _Gpu:
        N = self.N
        g = _Gpu(i, N.nvmlDeviceGetHandleByIndex(i))
        try:  # before GPM: GPM reports 0 MiB/s, not an error, for links that do not exist
            N.nvmlDeviceGetNvLinkState(g.handle, 0)
        except N.NVMLError as e:
            for col in ("gpm_nvlink_rx_mib_s", "gpm_nvlink_tx_mib_s"):
                self._unsupported(g, col, f"no NVLink ({e})")
        self._check_gpm(g)
        return g

    def _check_gpm(self, g: _Gpu) -> None:
        N = self.N
        why = None
        try:
            if not N.nvmlGpmQueryDeviceSupport(g.handle).isSupportedDevice:
                why = "GPM needs Hopper or newer"
            elif self._call(lambda: N.nvmlDeviceGetMigMode(g.handle)[0]) == 1:
                why = "MIG mode (GPM per GPU instance is not sampled)"
        except N.NVMLError as e:
            why = f"GPM: {e}"
        if why:
            for col in _GPM_IDS:
                self._unsupported(g, col, why)
            return
        g.gpm = [c for c in _GPM_IDS if c not in g.unsupported]
        g.gpm_prev, g.gpm_cur = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
        # Built per tick, this 19 KB struct and its ids cost ~40 µs of pynvml's attribute
        # hooks on the H200 (cProfile of the agent's sample, D70); NVML writes only results.
        g.gpm_get = N.c_nvmlGpmMetricsGet_t()
        g.gpm_get.version, g.gpm_get.numMetrics = N.NVML_GPM_METRICS_GET_VERSION, len(g.gpm)
        for i, col in enumerate(g.gpm):
            g.gpm_get.metrics[i].metricId = getattr(N, _GPM_IDS[col])

    def _call(self, fn: Callable[[], Any]) -> Any:
        """fn(), or None when the GPU does not support it (MIG query on a non-MIG GPU)."""
        try:
            return fn()
        except self.N.NVMLError as e:
            if e.value in (self.N.NVML_ERROR_NOT_SUPPORTED, self.N.NVML_ERROR_FUNCTION_NOT_FOUND):
                return None
            raise

    def _unsupported(self, g: _Gpu, col: str, why: str) -> None:
        if col not in g.unsupported:
            g.unsupported[col] = why
            self._warn(f"gpu {g.index}: {col} not available ({why}); stored as NULL")

    def read(self, g: _Gpu, cols: tuple[str, ...], fn: Callable[[], Any]) -> Any:
        """fn() for the columns `cols`; None (and, once, a warning) when unsupported."""
        if all(c in g.unsupported for c in cols):
            return None
        N = self.N
        try:
            return fn()
        except N.NVMLError as e:
            if e.value == N.NVML_ERROR_GPU_IS_LOST:
                raise GpuLostError(f"gpu {g.index}: {e}") from None
            if e.value in (
                N.NVML_ERROR_NOT_SUPPORTED,
                N.NVML_ERROR_FUNCTION_NOT_FOUND,
                N.NVML_ERROR_NO_PERMISSION,
            ):
                for c in cols:
                    self._unsupported(g, c, str(e))
            return None  # other errors: no value this tick

    def gpu_indices(self) -> list[int]:
        return list(self._gpus)

    def inventory(self, gpu: int) -> dict[str, Any]:
        N, g = self.N, self._gpus[gpu]
        h = g.handle

        def get(fn: Callable[[], Any]) -> Any:
            try:
                return fn()
            except N.NVMLError:
                return None

        cc = get(lambda: N.nvmlDeviceGetCudaComputeCapability(h)) or (None, None)
        bus = get(lambda: N.nvmlDeviceGetMemoryBusWidth(h))
        mem_mhz = get(lambda: N.nvmlDeviceGetMaxClockInfo(h, N.NVML_CLOCK_MEM))
        mem = get(lambda: N.nvmlDeviceGetMemoryInfo(h, version=N.nvmlMemory_v2))
        return {
            "uuid": get(lambda: N.nvmlDeviceGetUUID(h)),
            "name": get(lambda: N.nvmlDeviceGetName(h)),
            "architecture": _ARCH.get(get(lambda: N.nvmlDeviceGetArchitecture(h)) or -1),
            "compute_major": cc[0],
            "compute_minor": cc[1],
            "cuda_cores": get(lambda: N.nvmlDeviceGetNumGpuCores(h)),
            "mem_bus_width_bits": bus,
            "max_sm_clock_mhz": get(lambda: N.nvmlDeviceGetMaxClockInfo(h, N.NVML_CLOCK_SM)),
            "max_mem_clock_mhz": mem_mhz,
            "mem_total_bytes": mem.total if mem else None,
            "power_limit_mw": get(lambda: N.nvmlDeviceGetEnforcedPowerLimit(h)),
            # DDR: two transfers per memory clock; H200: 2 × 3201 MHz × 6016 bit / 8 = 4.81 TB/s
            "peak_hbm_bytes_per_s": 2 * mem_mhz * 1e6 * bus / 8 if mem_mhz and bus else None,
            "pcie_gen": get(lambda: N.nvmlDeviceGetCurrPcieLinkGeneration(h)),
            "pcie_width": get(lambda: N.nvmlDeviceGetCurrPcieLinkWidth(h)),
            "gpm_supported": bool(g.gpm),
            "unsupported": json.dumps(sorted(g.unsupported)),
            "driver_version": get(N.nvmlSystemGetDriverVersion),
        }

    def sample(self, gpu: int) -> dict[str, Any]:
        N, g = self.N, self._gpus[gpu]
        h = g.handle
        row: dict[str, Any] = dict.fromkeys(METRICS)
        u = self.read(
            g, ("util_gpu_pct", "util_mem_pct"), lambda: N.nvmlDeviceGetUtilizationRates(h)
        )
        if u is not None:
            row["util_gpu_pct"], row["util_mem_pct"] = u.gpu, u.memory
        row["sm_clock_mhz"] = self.read(
            g, ("sm_clock_mhz",), lambda: N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM)
        )
        row["mem_clock_mhz"] = self.read(
            g, ("mem_clock_mhz",), lambda: N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_MEM)
        )
        row["power_mw"] = self.read(g, ("power_mw",), lambda: N.nvmlDeviceGetPowerUsage(h))
        row["temp_gpu_c"] = self.read(
            g, ("temp_gpu_c",), lambda: N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU)
        )
        mem = self.read(
            g,
            ("mem_used_bytes", "mem_reserved_bytes"),
            lambda: N.nvmlDeviceGetMemoryInfo(h, version=N.nvmlMemory_v2),
        )
        if mem is not None:
            row["mem_used_bytes"], row["mem_reserved_bytes"] = mem.used, mem.reserved
        row["clocks_event_reasons"] = self.read(
            g, ("clocks_event_reasons",), lambda: N.nvmlDeviceGetCurrentClocksEventReasons(h)
        )
        self._fields(g, row)
        self._processes(g, row)
        self._gpm(g, row)
        return row

    def _processes(self, g: _Gpu, row: dict[str, Any]) -> None:
        """The compute processes, read at most once per PROCESS_LIST_PERIOD_NS; a failed read
        is not carried on."""
        now = time.monotonic_ns()
        if g.procs_ns is None or now - g.procs_ns >= PROCESS_LIST_PERIOD_NS:
            procs = self.read(
                g,
                ("process_count", "processes"),
                lambda: self.N.nvmlDeviceGetComputeRunningProcesses(g.handle),
            )
            g.procs_ns = now
            g.procs = (
                None
                if procs is None
                else (len(procs), json.dumps([[p.pid, p.usedGpuMemory] for p in procs]))
            )
        if g.procs is not None:
            row["process_count"], row["processes"] = g.procs

    def _fields(self, g: _Gpu, row: dict[str, Any]) -> None:
        N = self.N
        cols = [c for c in _FIELDS if c not in g.unsupported]
        if not cols:
            return
        ids = [getattr(N, _FIELDS[c]) for c in cols]
        values = self.read(g, tuple(cols), lambda: N.nvmlDeviceGetFieldValues(g.handle, ids))
        for col, v in zip(cols, values or [], strict=False):
            if v.nvmlReturn == N.NVML_SUCCESS:
                row[col] = _field_value(v)
            elif v.nvmlReturn in (N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_INVALID_ARGUMENT):
                self._unsupported(g, col, str(N.NVMLError(v.nvmlReturn)))

    def _gpm(self, g: _Gpu, row: dict[str, Any]) -> None:
        if not g.gpm:
            return
        N = self.N
        now = time.monotonic_ns()
        if g.gpm_prev_ns is not None and now - g.gpm_prev_ns < GPM_MIN_GAP_NS:
            return  # too close to the last snapshot: no data rather than a false 0
        if self.read(g, tuple(g.gpm), lambda: N.nvmlGpmSampleGet(g.handle, g.gpm_cur)) is None:
            if any(c in g.unsupported for c in g.gpm):
                g.gpm = []
            g.gpm_prev_ns = None  # the next pair starts afresh
            return
        if g.gpm_prev_ns is not None:
            mg = g.gpm_get
            mg.sample1, mg.sample2 = g.gpm_prev, g.gpm_cur
            if self.read(g, tuple(g.gpm), lambda: N.nvmlGpmMetricsGet(mg)) is not None:
                for col, m in zip(g.gpm, mg.metrics[: len(g.gpm)], strict=False):
                    if m.nvmlReturn == N.NVML_SUCCESS and not math.isnan(m.value):
                        row[col] = float(m.value)
        g.gpm_prev, g.gpm_cur, g.gpm_prev_ns = g.gpm_cur, g.gpm_prev, now

    def close(self) -> None:
        for g in self._gpus.values():
            for s in (g.gpm_prev, g.gpm_cur):
                if s is not None:
                    self.N.nvmlGpmSampleFree(s)
        self.N.nvmlShutdown()


def _field_value(v: Any) -> int | float:
    kinds = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}
    return getattr(v.value, kinds.get(v.valueType, "ullVal"))  # type: ignore[no-any-return]
