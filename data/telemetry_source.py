"""Where GPU telemetry is read from: the lake (our agents' segments) or a Prometheus server
(our agents' /metrics, or a cluster's dcgm-exporter). Both answer the same four reads with the
same frame columns (data.reads_telemetry documents them), so the Live page and a run's
analyses do not care which one they got.

`open_telemetry(store, url)` picks one: a Prometheus URL given (the Live page's field), else
$DASH_PROMETHEUS_URL, else the lake.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from data import reads_telemetry
from data.reads_prometheus import PrometheusTelemetry

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store

PROMETHEUS_URL_ENV = "DASH_PROMETHEUS_URL"


class TelemetrySource(Protocol):
    """The telemetry reads (data.reads_telemetry documents each frame's columns)."""

    label: str  # where the samples come from, for a caption

    def gpus(self) -> pd.DataFrame: ...

    def inventory(self, at_ns: int | None = None) -> pd.DataFrame: ...

    def samples(
        self, start_ns: int, end_ns: int, hosts: Sequence[str] | None = None
    ) -> pd.DataFrame: ...

    def bucketed(self, start_ns: int, end_ns: int, bucket_ns: int) -> pd.DataFrame: ...


class LakeTelemetry:
    """The reads over the store's lake (gpu_samples and gpu_inventory)."""

    label = "the local store"

    def __init__(self, store: Store) -> None:
        self.store = store

    def gpus(self) -> pd.DataFrame:
        return reads_telemetry.gpus(self.store)

    def inventory(self, at_ns: int | None = None) -> pd.DataFrame:
        """The newest inventory row of each GPU (an agent's start; `at_ns` is not needed)."""
        return reads_telemetry.inventory(self.store)

    def samples(
        self, start_ns: int, end_ns: int, hosts: Sequence[str] | None = None
    ) -> pd.DataFrame:
        return reads_telemetry.samples(self.store, start_ns, end_ns, hosts)

    def bucketed(self, start_ns: int, end_ns: int, bucket_ns: int) -> pd.DataFrame:
        return reads_telemetry.bucketed(self.store, start_ns, end_ns, bucket_ns)


def prometheus_url_from_env() -> str | None:
    """$DASH_PROMETHEUS_URL, or None when it is unset or empty."""
    return os.environ.get(PROMETHEUS_URL_ENV, "").strip() or None


def open_telemetry(store: Store, prometheus_url: str | None = None) -> TelemetrySource:
    """Prometheus at `prometheus_url` (else $DASH_PROMETHEUS_URL) when one is given, else the
    store's lake. A URL that is not http(s) raises PrometheusError."""
    url = (prometheus_url or "").strip() or prometheus_url_from_env()
    return PrometheusTelemetry(url) if url else LakeTelemetry(store)


def run_samples(
    source: TelemetrySource, store: Store, run_id: str, pad_ns: int = 1_000_000_000
) -> pd.DataFrame:
    """Raw samples during a trace run (its window from the store), widened by pad_ns on both
    sides (a sample describes the period before it), on the hosts the trace names (all hosts
    when it names none): the gpu_samples columns. Empty when the run has no Unix time base."""
    window = reads_telemetry.run_window(store, run_id)
    if window is None:
        return source.samples(0, 0)
    hosts = reads_telemetry.run_hosts(store, run_id)
    return source.samples(window[0] - pad_ns, window[1] + pad_ns, hosts or None)


def thinned(source: TelemetrySource, samples: pd.DataFrame, points_per_gpu: int) -> pd.DataFrame:
    """Raw `samples` as a chart draws them: themselves when they hold at most points_per_gpu
    rows per GPU, else the same GPUs bucketed over the same span into at most that many
    buckets (source.bucketed's columns), so that a long run draws as cheaply as the Live
    window."""
    keys = set(zip(samples["host"], samples["gpu"], strict=True))
    if len(samples) <= points_per_gpu * len(keys):
        return samples
    lo, hi = int(samples["ts_ns"].min()), int(samples["ts_ns"].max()) + 1
    frame = source.bucketed(lo, hi, -(-(hi - lo) // points_per_gpu))
    keep = [k in keys for k in zip(frame["host"], frame["gpu"], strict=True)]
    return frame[keep].reset_index(drop=True)
