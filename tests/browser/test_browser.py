"""The real thing: `streamlit run serve.py`, Debian's Chromium, a file upload through the page
(the timeline's zoom and links: tests/browser/test_explore_views.py).

Starts the server on a free loopback port with an empty store, so the first start ingests the
demo runs, then uploads a trace through the file input and waits for the new run's overview.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.browser import dashboard, launch, settle
from helpers.paths import TEST_DATA
from playwright import sync_api as playwright

TRACE = TEST_DATA / "cpu_mlp.pt.trace.json.gz"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("browser-store")


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[str]:
    with dashboard(data_dir) as url:
        yield url


def test_upload_through_the_browser_shows_the_new_overview(server: str, tmp_path: Path) -> None:
    with playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # First start: the demo runs are ingested, then the Runs page lists them.
        page.goto(server)
        page.get_by_text(re.compile(r"^\d+ runs? in ")).wait_for(timeout=120_000)
        settle(page)
        assert page.get_by_test_id("stException").count() == 0

        page.goto(f"{server}/upload")
        settle(page)
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(TRACE))
        # The uploader shows the name shortened in the middle ("cpu_mlp...ce.json.gz").
        page.get_by_test_id("stFileUploader").get_by_text("json.gz").wait_for(timeout=30_000)
        page.get_by_role("button", name="Ingest").click()
        page.get_by_text("Run cpu_mlp").wait_for(timeout=90_000)
        assert page.get_by_test_id("stException").count() == 0

        page.get_by_role("link", name="Open the overview").click()
        page.get_by_role("heading", name="cpu_mlp").wait_for(timeout=60_000)
        settle(page)
        assert page.get_by_text("CPU only").count() >= 1
        # Poll: under load the metrics can still be those of the previous render.
        deadline = time.monotonic() + 60
        metrics: list[str] = []
        while time.monotonic() < deadline:
            metrics = page.get_by_test_id("stMetricValue").all_inner_texts()
            if metrics[:2] == ["1", "3"]:
                break
            page.wait_for_timeout(500)
        assert metrics[:2] == ["1", "3"]  # one rank, three profiled steps
        assert page.get_by_test_id("stException").count() == 0
        page.screenshot(path=str(tmp_path / "overview.png"), full_page=True)
        browser.close()


def _demo_runs(page: object, server: str, data_dir: Path) -> object:
    """The store's runs once the first page load has ingested the demo runs."""
    from data.store import Store

    page.goto(server)  # type: ignore[attr-defined]
    page.get_by_text(re.compile(r"^\d+ runs? in ")).wait_for(timeout=120_000)  # type: ignore[attr-defined]
    return Store(data_dir).runs()


def test_report_downloads_open(server: str, data_dir: Path, tmp_path: Path) -> None:
    """The Report page's buttons download files a reader can open: the JSON parses and holds
    the ranked recommendations, the HTML carries its charts' library, the PDF is a PDF."""
    import json

    with playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        runs = _demo_runs(page, server, data_dir)
        run_id = runs[runs["name"] == "gpt_train_fp32_naive"]["run_id"].iloc[0]
        page.goto(f"{server}/report?run={run_id}")
        page.get_by_role("button", name="JSON").wait_for(timeout=120_000)
        settle(page)
        files = {}
        for label in ("JSON", "HTML (interactive, offline)", "PDF"):
            with page.expect_download(timeout=120_000) as dl:
                page.get_by_role("button", name=label).click()
            path = tmp_path / dl.value.suggested_filename
            dl.value.save_as(path)
            files[path.suffix] = path
        # One chart is drawn, the open tab's; another tab draws its own in its place.
        text = "els => els.map(e => e.textContent)"  # SVG text has no innerText
        x_titles = "g[class^='g-x'][class$='title'] text"
        drawn = page.get_by_test_id("stMain").locator(".js-plotly-plot")
        assert drawn.count() == 1
        assert drawn.first.locator(x_titles).evaluate_all(text)[0].startswith("arithmetic int")
        page.get_by_role("tab", name="Timeline snapshot").click()
        page.wait_for_function(
            "sel => [...document.querySelectorAll(sel)].some(e => e.textContent === 'ms')",
            arg=x_titles,
        )
        settle(page)
        assert drawn.count() == 1
        assert drawn.first.locator(x_titles).evaluate_all(text) == ["ms"]
        browser.close()
    doc = json.loads(files[".json"].read_text())
    assert doc["run"]["id"] == run_id
    savings = [r["est_saving_ms"] for r in doc["recommendations"]]
    assert savings
    assert savings == sorted(savings, reverse=True)
    html = files[".html"].read_text()
    assert 'id="recommendations"' in html
    assert len(html) > 3_000_000  # plotly.js inlined: opens offline (URLs: test_report_export)
    assert files[".pdf"].read_bytes().startswith(b"%PDF-")


def test_live_gpus_draws_the_demo_telemetry(server: str, data_dir: Path) -> None:
    """The Live page in Chromium on the demo telemetry (an H200 recording replayed with its
    recorded times): called old, not live, and every panel drawn as SVG lines (no WebGL
    context: D69) under the titles the figure gives them."""
    with playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        _demo_runs(page, server, data_dir)
        page.goto(f"{server}/live")
        settle(page, timeout_ms=120_000, stable_ms=250)
        chart = page.locator(".js-plotly-plot").first
        text = "els => els.map(e => e.textContent)"  # SVG text has no innerText
        titles = chart.locator("g[class^='g-y'][class$='title'] text").evaluate_all(text)
        lines = chart.locator(".scatterlayer path.js-line").count()
        gl = chart.locator("canvas").count()
        legend = chart.locator(".legendtext").evaluate_all(text)
        body = page.get_by_test_id("stMain").inner_text()
        browser.close()
    assert titles[:3] == ["SM activity %", "utilization.gpu %", "HBM bandwidth % of peak"]
    assert len(titles) == 9
    assert lines >= 9 * len(legend)  # a line per GPU in every panel
    assert gl == 0
    assert legend
    assert all(name.startswith("demo · GPU ") for name in legend)
    assert "Not live: the newest sample is" in body
