"""The real thing: `streamlit run app.py`, Debian's Chromium, a file upload through the page.

Starts the server on a free loopback port with an empty store, so the first start ingests the
demo runs, then uploads a trace through the file input and waits for the new run's overview.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.browser import dashboard_server, launch, require_chromium, settle
from helpers.paths import TEST_DATA
from playwright import sync_api as playwright

TRACE = TEST_DATA / "cpu_mlp.pt.trace.json.gz"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module", autouse=True)
def chromium_installed() -> None:
    require_chromium()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("browser-store")


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[str]:
    with dashboard_server(data_dir) as url:
        yield url


def test_upload_through_the_browser_shows_the_new_overview(server: str, tmp_path: Path) -> None:
    with playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # First start: the demo runs are ingested, then the Runs page lists them.
        page.goto(server)
        page.get_by_text("run(s) in").wait_for(timeout=120_000)
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
    page.get_by_text("run(s) in").wait_for(timeout=120_000)  # type: ignore[attr-defined]
    return Store(data_dir).runs()


def _window_ms(page: object) -> list[float]:
    texts = page.get_by_test_id("stSliderThumbValue").all_inner_texts()  # type: ignore[attr-defined]
    return [float(t.replace(",", "")) for t in texts]


def test_box_select_on_the_timeline_zooms_the_window(server: str, data_dir: Path) -> None:
    with playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        runs = _demo_runs(page, server, data_dir)
        run_id = runs[runs["device_name"].notna()]["run_id"].iloc[0]
        page.goto(f"{server}/timeline?run={run_id}")
        page.get_by_test_id("stSliderThumbValue").first.wait_for(timeout=90_000)
        settle(page)
        whole = _window_ms(page)
        assert whole[0] == 0.0
        drag = page.locator(".nsewdrag").first
        drag.wait_for(timeout=30_000)
        box = drag.bounding_box()
        y = box["y"] + box["height"] / 2
        x0, x1 = box["x"] + 0.3 * box["width"], box["x"] + 0.5 * box["width"]
        page.mouse.move(x0, y)
        page.mouse.down()
        page.mouse.move(x1, y, steps=12)
        page.mouse.up()
        deadline = time.monotonic() + 60
        window = whole
        while time.monotonic() < deadline and window == whole:
            page.wait_for_timeout(500)
            window = _window_ms(page)
        # The box spans 30 %..50 % of the plot's width: the window follows it.
        span = whole[1] - whole[0]
        assert window[0] == pytest.approx(0.3 * span, abs=0.05 * span)
        assert window[1] == pytest.approx(0.5 * span, abs=0.05 * span)
        assert page.get_by_test_id("stException").count() == 0
        browser.close()


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
