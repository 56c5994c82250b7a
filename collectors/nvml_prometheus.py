"""The agent's /metrics: the newest tick of every GPU in dcgm-exporter's names and labels.

The sampler swaps one immutable `TickSnapshot` in at the end of each tick (one attribute
store); a scrape reads that attribute once and formats it, so a scrape holds no lock the tick
waits for and never sees half a tick. Names, units and labels: data.prometheus_names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from data.errors import PrometheusError
from data.prometheus_names import INVENTORY_SERIES, LABELS, SAMPLE_SERIES, Series


@dataclass(frozen=True, slots=True)
class TickSnapshot:
    """One tick: each GPU's sample row (read-only mappings), as the sampler buffered them."""

    ts_ns: int
    rows: tuple[Mapping[str, Any], ...]


class SnapshotSource(Protocol):
    """What the exporter reads from the sampler: the newest tick and the static facts."""

    host: str

    @property
    def latest(self) -> TickSnapshot | None: ...

    @property
    def inventory_by_gpu(self) -> Mapping[int, Mapping[str, Any]]: ...


class SnapshotCollector(Collector):
    """A prometheus_client collector over the sampler's newest tick."""

    def __init__(self, sampler: SnapshotSource) -> None:
        self._sampler = sampler

    def collect(self) -> Iterator[Metric]:
        snapshot = self._sampler.latest  # read once: the tick may swap in a newer one
        if snapshot is None:
            return
        inventory = self._sampler.inventory_by_gpu
        labels = {
            int(row["gpu"]): self._labels(int(row["gpu"]), inventory.get(int(row["gpu"]), {}))
            for row in snapshot.rows
        }
        for series in SAMPLE_SERIES:
            family = _family(series, ((labels[int(r["gpu"])], r) for r in snapshot.rows))
            if family is not None:
                yield family
        for series in INVENTORY_SERIES:
            family = _family(series, ((labels[g], inventory.get(g, {})) for g in labels))
            if family is not None:
                yield family

    def _labels(self, gpu: int, inv: Mapping[str, Any]) -> list[str]:
        values = {
            "gpu": str(gpu),
            "UUID": inv.get("uuid") or "",
            "modelName": inv.get("name") or "",
            "Hostname": self._sampler.host,
            "DCGM_FI_DRIVER_VERSION": inv.get("driver_version") or "",
            "dash_source": inv.get("source") or "",
        }
        return [str(values[name]) for name in LABELS]


def _family(
    series: Series, rows: Iterator[tuple[list[str], Mapping[str, Any]]]
) -> GaugeMetricFamily | None:
    """The gauge of one column over the GPUs that have a value (NULL: no sample, never 0)."""
    family = GaugeMetricFamily(series.name, series.help, labels=LABELS)
    for labels, row in rows:
        value = row.get(series.column)
        if value is not None:
            family.add_metric(labels, float(value) / series.scale)
    return family if family.samples else None


def serve(sampler: SnapshotSource, address: str, port: int) -> int:
    """Serve /metrics for `sampler` on address:port in a daemon thread; the port bound (port
    0 asks the system for a free one). Raises PrometheusError when it cannot listen."""
    if not 0 <= port <= 65535:
        raise PrometheusError(f"--prometheus-port {port}: not a TCP port (0-65535)")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(sampler))
    try:
        server, _thread = start_http_server(port, addr=address, registry=registry)
    except OSError as e:
        why = e.strerror or str(e)
        raise PrometheusError(f"--prometheus-address {address} port {port}: {why}") from None
    return int(server.server_address[1])
