"""Prometheus as the telemetry source: agents in replay mode and a stand-in dcgm-exporter,
scraped by a real Prometheus server (Debian's), read back through the dashboard's code.

Two agents replay real H200 rows (the power-capped bf16 GEMM phase and the pinned H2D copy
phase of data/samples/nvml_phases_h200.csv); the stand-in serves the whole recording under
dcgm-exporter's own names and units. What comes back is compared with the CSV files as the
`csv` module reads them, not with anything the dashboard computed.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

import pandas as pd
import pytest
from helpers.dcgm_exporter import DCGM_FIELDS, recorded_rows, serve_dcgm_exporter
from helpers.nvml_phases import INVENTORY, PHASES, phase_csv
from helpers.paths import fixture
from helpers.prometheus import agent, free_port, prometheus, wait_for
from helpers.rules import fire

from analysis.facts import gather
from analysis.telemetry import alerts
from collectors.ingest import ingest
from data import reads_prometheus
from data.errors import PrometheusError
from data.prometheus_names import SAMPLE_SERIES
from data.reads_prometheus import PrometheusTelemetry
from data.store import Store
from data.telemetry_source import PROMETHEUS_URL_ENV

TOTAL_BYTES = json.loads(INVENTORY.read_text())[0]["mem_total_bytes"]
# Columns compared with the recording: every exported sample column the replay plays back
# (sample_cost_ns is the agent's own cost, not a recorded value).
COMPARED = [s.column for s in SAMPLE_SERIES if s.column != "sample_cost_ns"]


@dataclass(frozen=True)
class Cluster:
    url: str
    csv: dict[str, Path]  # host -> the recording its agent replays


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    d = tmp_path_factory.mktemp("prometheus")
    recordings = {"node-gemm": phase_csv(d, "gemm_bf16"), "node-copy": phase_csv(d, "h2d_pinned")}
    gpu = {"gpu": "0", "UUID": "GPU-0", "pci_bus_id": "00000000:19:00.0", "device": "nvidia0",
           "modelName": "NVIDIA H200", "Hostname": "dcgm-node"}  # fmt: skip
    # someone else's series under the same names: not a GPU index, so never read
    other = {**gpu, "gpu": "all", "UUID": "", "modelName": "x"}
    dcgm = serve_dcgm_exporter(recorded_rows(PHASES), [gpu, other], TOTAL_BYTES)
    args = ("--loop", "--interval", "0.1")
    with (
        agent(d / "gemm", "--replay", recordings["node-gemm"], *args, "--host", "node-gemm",
              "--data", d / "gemm") as gemm_port,
        agent(d / "copy", "--replay", recordings["node-copy"], *args, "--host", "node-copy",
              "--data", d / "copy") as copy_port,
    ):  # fmt: skip
        targets = [f"127.0.0.1:{p}" for p in (gemm_port, copy_port, dcgm)]
        with prometheus(d / "prometheus", targets, "100ms") as url:
            src = PrometheusTelemetry(url)

            def enough() -> bool:
                g = src.gpus()
                return len(g) == 3 and bool((g["samples"] >= 100).all())

            wait_for(enough, 120, "100 scrapes (10 s) of each GPU")
            yield Cluster(url, {**recordings, "dcgm-node": PHASES})


def recorded(path: Path) -> list[dict[str, float | None]]:
    with path.open(newline="") as fh:
        return [{c: float(r[c]) if r[c] else None for c in COMPARED} for r in csv.DictReader(fh)]


def same(read: pd.Series, row: dict[str, float | None], columns: list[str]) -> bool:
    for c in columns:
        got, want = read[c], row[c]
        if want is None or pd.isna(got):
            if not (want is None and pd.isna(got)):
                return False
        elif not math.isclose(float(got), want, rel_tol=1e-9, abs_tol=1e-9):
            return False
    return True


def recent(url: str, seconds: float, hosts: list[str] | None = None) -> pd.DataFrame:
    now = time.time_ns()
    return PrometheusTelemetry(url).samples(now - int(seconds * 1e9), now, hosts)


@pytest.mark.parametrize("grid", [False, True], ids=["every-scrape", "grid"])
@pytest.mark.parametrize("host", ["node-gemm", "node-copy"])
def test_agent_series_read_back_equal_the_replayed_csv(
    cluster: Cluster, host: str, grid: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if grid:  # a span over EXACT_SPAN_NS is read on a grid of last_over_time (D23)
        monkeypatch.setattr(reads_prometheus, "EXACT_SPAN_NS", 0)
    got = recent(cluster.url, 20, [host])
    rows = recorded(cluster.csv[host])
    assert len(got) >= 50
    assert set(got["host"]) == {host}
    assert set(got["source"]) == {"replay"}
    assert got["ts_ns"].is_unique
    assert got["ts_ns"].is_monotonic_increasing  # scrape times, each scrape once
    # Every read row is one whole recorded row: all its columns from one tick.
    unmatched = [i for i, r in got.iterrows() if not any(same(r, row, COMPARED) for row in rows)]
    assert unmatched == []
    assert got["power_mw"].nunique() >= 10  # the replay moved on between scrapes


def test_plain_dcgm_exporter_series_are_converted(cluster: Cluster) -> None:
    got = recent(cluster.url, 20, ["dcgm-node"])
    assert len(got) >= 50
    assert set(got["gpu"]) == {0}  # the series with gpu="all" is not a GPU
    assert set(got["source"]) == {"dcgm"}
    columns = [col for col, _ in DCGM_FIELDS.values()]
    rows = recorded_rows(PHASES)
    unmatched = [i for i, r in got.iterrows() if not any(same(r, row, columns) for row in rows)]
    assert unmatched == []
    assert got["gpm_nvlink_rx_mib_s"].isna().all()  # a series it does not serve: NULL
    gpus = PrometheusTelemetry(cluster.url).gpus().set_index("host")
    assert gpus.loc["dcgm-node", "name"] == "NVIDIA H200"
    assert gpus.loc["dcgm-node", "mem_total_bytes"] == TOTAL_BYTES  # free + used + reserved
    assert gpus.loc["dcgm-node", "source"] == "dcgm"
    assert pd.isna(gpus.loc["dcgm-node", "power_limit_mw"])  # not in its default counters


def test_alerts_flag_the_trap_and_the_power_cap(cluster: Cluster) -> None:
    src = PrometheusTelemetry(cluster.url)
    found = {(a.host, a.kind): a.message for a in alerts(recent(cluster.url, 30), src.gpus())}
    assert "power cap" in found[("node-gemm", "throttling")]
    assert "PCIe copy" in found[("node-copy", "utilization-trap")]
    assert ("node-gemm", "utilization-trap") not in found


def test_buckets_hold_what_the_raw_samples_hold(cluster: Cluster) -> None:
    src = PrometheusTelemetry(cluster.url)
    end = time.time_ns() - 10**9
    start, bucket = end - 6 * 10**9, 2 * 10**9  # Prometheus has scraped for 10 s and more
    raw = src.samples(start, end, ["node-gemm"])
    # the first scrape in the window (every 0.1 s; a loaded machine misses some)
    assert raw["ts_ns"].min() < start + 1_000_000_000
    buckets = src.bucketed(start, end, bucket)
    buckets = buckets[buckets["host"] == "node-gemm"].set_index("ts_ns")
    assert list(buckets.index) == [start + k * bucket for k in range(3)]
    for t0, b in buckets.iterrows():
        inside = raw[(raw["ts_ns"] >= t0) & (raw["ts_ns"] < t0 + bucket)]
        # Prometheus' windows include both ends: a scrape on a boundary may count twice.
        assert abs(int(b["samples"]) - len(inside)) <= 1
        assert inside["power_mw"].min() - 1 <= b["power_mw"] <= inside["power_mw"].max() + 1
        mask = 0
        for m in inside["clocks_event_reasons"].dropna():
            mask |= int(m)
        assert mask & ~int(b["clocks_event_reasons"]) == 0  # every reason seen is in the OR
        assert int(b["util_gpu_max_pct"]) >= inside["util_gpu_pct"].max()


def test_power_throttling_found_on_prometheus_data(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The ResNet-50 run recorded on an H200 (0.31 s), moved to 3 s ago on host node-gemm,
    # whose agent Prometheus scraped replaying the power-capped GEMM rows.
    original = fixture("h200/resnet50_train_fp32.pt.trace.json.gz")
    first = Store(d := tmp_path / "scratch").query(
        "SELECT start_ns FROM ranks WHERE run_id = ?", [ingest([original], data_dir=d)]
    )["start_ns"][0]
    doc = json.loads(gzip.decompress(original.read_bytes()))
    doc["baseTimeNanoseconds"] = time.time_ns() - 3 * 10**9 - int(first)
    doc = {"host_name": "node-gemm", **doc}  # metadata is read before traceEvents
    moved = tmp_path / "resnet50_on_node_gemm.pt.trace.json.gz"
    moved.write_bytes(gzip.compress(json.dumps(doc).encode()))
    store_dir = tmp_path / "store"
    run_id = ingest([moved], data_dir=store_dir)
    monkeypatch.setenv(PROMETHEUS_URL_ENV, cluster.url)
    facts = gather(Store(store_dir), run_id)
    assert Store(store_dir).query("SELECT count(*) AS n FROM gpu_samples")["n"][0] == 0
    assert set(facts.telemetry["host"]) == {"node-gemm"}
    assert len(facts.telemetry) >= 2
    found = fire(facts, "power-throttling")
    assert found is not None
    assert "power cap" in found.evidence[0]
    assert "against a maximum of 1980 MHz" in found.evidence[1]  # the exported inventory


def test_every_failure_is_one_prometheus_error_line(cluster: Cluster) -> None:
    with pytest.raises(PrometheusError, match="expected a Prometheus URL"):
        PrometheusTelemetry("file:///etc/passwd")
    nobody = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(PrometheusError, match="cannot query"):
        PrometheusTelemetry(nobody).gpus()
    with socket.socket() as mute:  # accepts, never answers
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        url = f"http://127.0.0.1:{mute.getsockname()[1]}"
        with pytest.raises(PrometheusError, match="timed out") as e:
            PrometheusTelemetry(url, timeout_s=0.5).samples(0, 10**9)
    assert "\n" not in str(e.value)
    bad = cluster.url + "/api/v1/no-such"  # Prometheus answers 404 for what is not its API
    with pytest.raises(PrometheusError, match="HTTP 404") as e:
        PrometheusTelemetry(bad).gpus()
    assert "\n" not in str(e.value)


def _answer(values: list[list[object]], column: str = "power_mw", part: str = "v") -> bytes:
    series = {"metric": {"dash_col": column, "dash_part": part, "gpu": "0", "Hostname": "h"},
              "values": values}  # fmt: skip
    answer = {"status": "success", "data": {"resultType": "matrix", "result": [series]}}
    return json.dumps(answer).encode()  # NaN as Python's JSON writes it, as a server may


@contextmanager
def _server(body: bytes) -> Iterator[str]:
    """An HTTP server that answers every request with `body`: someone else's server, whose
    every byte a real Prometheus would never send."""

    class Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Answer) as server:
        Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()


@pytest.mark.parametrize("when", [1e308, math.nan, 2**70, -1e300])
def test_a_points_time_no_int64_holds_is_one_prometheus_error_line(when: float) -> None:
    """A random search found these (D106): 1e308 and NaN raised OverflowError and ValueError
    out of the time conversion, 2**70 and -1e300 gave times no int64 column holds."""
    with _server(_answer([[when, "1"]])) as url, pytest.raises(PrometheusError) as e:
        PrometheusTelemetry(url).samples(0, 10**18)
    assert str(e.value) == f"{url}: a point's time {str(when)[:40]} is out of range"


@pytest.mark.parametrize("stamp", ["1e306", "-5", "1e300"])
def test_a_scrape_time_no_int64_holds_is_no_sample(stamp: str) -> None:
    """timestamp()'s value is a series value: one that is no Unix time (1e306 overflowed the
    conversion) leaves its GPU without that scrape, or without a last sample time."""
    t = [[1.7e9, stamp]]
    tagged = json.loads(_answer(t, "power_mw", "t"))
    tagged["data"]["result"].append(json.loads(_answer([[1.7e9, "100"]]))["data"]["result"][0])
    with _server(json.dumps(tagged).encode()) as url:
        assert PrometheusTelemetry(url).samples(0, 10**19).empty
    with _server(_answer(t, "last_ns", "t")) as url:
        gpus = PrometheusTelemetry(url).gpus()
    assert gpus.empty or gpus["last_ns"].isna().all()


def test_labels_that_escape_a_lone_surrogate_are_shown_as_text() -> None:
    """JSON may escape a lone surrogate ("\\udcff"), which is no text: as a label it stopped
    the frame's construction (pandas' Arrow strings refuse it) with UnicodeEncodeError."""
    answer = json.loads(_answer([[1.7e9, "1.7e9"]], "power_mw", "t"))
    answer["data"]["result"] += json.loads(_answer([[1.7e9, "100"]]))["data"]["result"]
    for series in answer["data"]["result"]:
        series["metric"].update(Hostname="h\udcff", modelName="H\ud800")
    with _server(json.dumps(answer).encode()) as url:
        got = PrometheusTelemetry(url).samples(0, 10**19)
    assert got["host"].tolist() == ["h\ufffd"]
    assert got["power_mw"].tolist() == [100_000]  # served in W, as dcgm-exporter does
