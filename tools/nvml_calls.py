"""The NVML calls the agent makes on every tick (collectors/nvml_source/gpu.py), one callable
each, for the tools that time them on the device (nvml_call_cost.py, nvml_exit_cost.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def agent_calls(N: Any, h: Any, sample: Any) -> dict[str, Callable[[], object]]:
    """name -> the call on device handle `h` (pynvml as `N`); GPM snapshots go to `sample`."""
    return {
        "utilization": lambda: N.nvmlDeviceGetUtilizationRates(h),
        "clock_sm": lambda: N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_SM),
        "clock_mem": lambda: N.nvmlDeviceGetClockInfo(h, N.NVML_CLOCK_MEM),
        "power": lambda: N.nvmlDeviceGetPowerUsage(h),
        "temperature": lambda: N.nvmlDeviceGetTemperature(h, N.NVML_TEMPERATURE_GPU),
        "memory_v2": lambda: N.nvmlDeviceGetMemoryInfo(h, version=N.nvmlMemory_v2),
        "clocks_event_reasons": lambda: N.nvmlDeviceGetCurrentClocksEventReasons(h),
        "fields_both": lambda: N.nvmlDeviceGetFieldValues(
            h, [N.NVML_FI_DEV_POWER_INSTANT, N.NVML_FI_DEV_MEMORY_TEMP]
        ),
        "processes": lambda: N.nvmlDeviceGetComputeRunningProcesses(h),
        "gpm_sample_get": lambda: N.nvmlGpmSampleGet(h, sample),
    }
