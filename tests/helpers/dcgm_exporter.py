"""A stand-in for a cluster's dcgm-exporter: recorded H200 rows served with prometheus_client
under exactly the names, units and labels dcgm-exporter uses (its etc/default-counters.csv
and etc/dcp-metrics-included.csv), converted here by hand from the recording's columns, not
through the dashboard's table (data.prometheus_names), so a wrong factor there shows."""

from __future__ import annotations

import csv
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

MIB = 1024 * 1024
# dcgm-exporter's name -> (recording column, series value from the column's value)
DCGM_FIELDS: dict[str, tuple[str, Any]] = {
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock_mhz", lambda v: v),
    "DCGM_FI_DEV_MEM_CLOCK": ("mem_clock_mhz", lambda v: v),
    "DCGM_FI_DEV_MEMORY_TEMP": ("temp_mem_c", lambda v: v),
    "DCGM_FI_DEV_GPU_TEMP": ("temp_gpu_c", lambda v: v),
    "DCGM_FI_DEV_POWER_USAGE": ("power_mw", lambda v: v / 1000),  # W
    "DCGM_FI_DEV_GPU_UTIL": ("util_gpu_pct", lambda v: v),  # %
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("util_mem_pct", lambda v: v),
    "DCGM_FI_DEV_FB_USED": ("mem_used_bytes", lambda v: v / MIB),  # MiB
    "DCGM_FI_DEV_FB_RESERVED": ("mem_reserved_bytes", lambda v: v / MIB),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": ("clocks_event_reasons", lambda v: v),  # older name
    "DCGM_FI_PROF_SM_ACTIVE": ("gpm_sm_util_pct", lambda v: v / 100),  # ratio
    "DCGM_FI_PROF_SM_OCCUPANCY": ("gpm_sm_occupancy_pct", lambda v: v / 100),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("gpm_tensor_util_pct", lambda v: v / 100),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("gpm_dram_bw_util_pct", lambda v: v / 100),
    "DCGM_FI_PROF_PCIE_TX_BYTES": ("gpm_pcie_tx_mib_s", lambda v: v * MIB),  # B/s
    "DCGM_FI_PROF_PCIE_RX_BYTES": ("gpm_pcie_rx_mib_s", lambda v: v * MIB),
}
INT_COLUMNS = {"sm_clock_mhz", "mem_clock_mhz", "temp_mem_c", "temp_gpu_c", "power_mw",
               "util_gpu_pct", "util_mem_pct", "mem_used_bytes", "mem_reserved_bytes",
               "clocks_event_reasons"}  # fmt: skip


def recorded_rows(path: Path) -> list[dict[str, float | None]]:
    """The recording's DCGM-exported columns, as numbers (None for an empty cell)."""
    with path.open(newline="") as fh:
        return [
            {
                col: (int(r[col]) if col in INT_COLUMNS else float(r[col])) if r[col] else None
                for col, _ in DCGM_FIELDS.values()
            }
            for r in csv.DictReader(fh)
        ]


class _Exporter(Collector):
    """Serves the next recorded row at each scrape, for each GPU in `gpus` (label sets with
    the same label names)."""

    def __init__(self, rows: list[dict[str, float | None]], gpus: list[dict[str, str]],
                 fb_total_mib: float) -> None:  # fmt: skip
        self._rows = itertools.cycle(rows)
        self._lock = threading.Lock()
        self._gpus = gpus
        self._fb_total_mib = fb_total_mib

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            row = next(self._rows)
        values = {name: convert(row[col]) for name, (col, convert) in DCGM_FIELDS.items()
                  if row[col] is not None}  # fmt: skip
        used, reserved = row["mem_used_bytes"], row["mem_reserved_bytes"]
        if used is not None and reserved is not None:
            values["DCGM_FI_DEV_FB_FREE"] = self._fb_total_mib - (used + reserved) / MIB
        names = list(self._gpus[0])
        for name, value in values.items():
            family = GaugeMetricFamily(name, f"{name} as dcgm-exporter serves it", labels=names)
            for labels in self._gpus:
                family.add_metric([labels[n] for n in names], value)
            yield family


def serve_dcgm_exporter(
    rows: list[dict[str, float | None]], gpus: list[dict[str, str]], fb_total_bytes: int
) -> int:
    """Serve the rows on a free loopback port in a daemon thread; returns the port."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Exporter(rows, gpus, fb_total_bytes / MIB))
    server, _ = start_http_server(0, addr="127.0.0.1", registry=registry)
    return int(server.server_address[1])
