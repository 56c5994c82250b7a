"""The Live GPUs page reading a real Prometheus server ($DASH_PROMETHEUS_URL or its sidebar
field) that scrapes a stand-in dcgm-exporter serving the pinned-copy phase of a real H200
recording, under a host label and a model name that are hostile Markdown and HTML."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.dcgm_exporter import recorded_rows, serve_dcgm_exporter
from helpers.nvml_phases import phase_csv
from helpers.pages import chart_specs, dashboard_store, open_page
from helpers.prometheus import prometheus, wait_for

from analysis.telemetry import gpu_label
from data.reads_prometheus import PrometheusTelemetry
from data.telemetry_source import PROMETHEUS_URL_ENV
from pages._ui import md

HOST = "evil**node**:red[x]"  # label values are user text: Markdown, a directive, HTML
MODEL = "<b>NVIDIA</b> H200 $x$"


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    d = tmp_path_factory.mktemp("live-prometheus")
    copy = phase_csv(d, "h2d_pinned")
    # dcgm-exporter's main branch spells the host label `hostname` (#655)
    gpu = {"gpu": "0", "UUID": "GPU-1", "modelName": MODEL, "hostname": HOST}
    port = serve_dcgm_exporter(recorded_rows(copy), [gpu], 150_754_820_096)
    with prometheus(d / "prometheus", [f"127.0.0.1:{port}"], "200ms") as url:

        def scraped() -> bool:
            gpus = PrometheusTelemetry(url).gpus()
            return len(gpus) == 1 and int(gpus["samples"].iloc[0]) >= 20

        wait_for(scraped, 120, "20 scrapes")
        (d / "store").mkdir()
        with dashboard_store(d / "store"):
            yield url


def test_live_page_reads_prometheus_and_escapes_its_labels(
    prometheus_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PROMETHEUS_URL_ENV, prometheus_url)
    at = open_page("pages/live.py")
    assert not at.error, [e.value for e in at.error]
    assert at.sidebar.text_input[0].value == prometheus_url
    headers = [m.value.split(" · _newest")[0] for m in at.markdown if m.value.startswith("**evil")]
    assert headers == [f"**{md(gpu_label(HOST, 0))}** · {md(MODEL)}"]
    trap = [w.value for w in at.warning if "utilization-trap" in w.value]
    assert len(trap) == 1
    assert trap[0].startswith(f"**{md(gpu_label(HOST, 0))}**")
    assert "PCIe copy" in trap[0]
    assert not any(w.value.startswith("Replayed data") for w in at.warning)  # dcgm, not replay
    captions = [c.value for c in at.caption]
    assert any("from Prometheus at" in c for c in captions), captions
    assert chart_specs(at)


def test_a_bad_prometheus_url_is_one_error_box(
    prometheus_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PROMETHEUS_URL_ENV, raising=False)
    at = open_page("pages/live.py")
    assert "No GPU telemetry yet in the local store" in at.info[0].value  # empty lake
    at.sidebar.text_input[0].set_value("ftp://prometheus:9090").run()
    assert len(at.error) == 1
    assert "expected a Prometheus URL" in at.error[0].value
    assert not at.exception
