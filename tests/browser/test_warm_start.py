"""`streamlit run serve.py`, the server `make demo` starts, warms the pages as it starts (D99):
on a store with the demo set its log says so and the first page opened shows the newest run's
ranking; on a store it cannot read, the server still answers and the page says what is wrong."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from helpers.browser import dashboard, launch, settle
from helpers.cli import run_module
from playwright import sync_api as playwright

from data import demo
from data.store import DATABASE_FILE

pytestmark = pytest.mark.browser


def log_line(log: Path, text: str, timeout_s: float = 120) -> str:
    """The first line of the server's log holding `text`, once written."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        lines = [ln for ln in log.read_text().splitlines() if text in ln]
        if lines:
            return lines[0]
        time.sleep(0.2)
    pytest.fail(f"no {text!r} in the server's log: {log.read_text()[-2000:]}")


def page_text(url: str) -> str:
    with playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        settle(page)
        assert page.get_by_test_id("stException").count() == 0
        text = page.inner_text('[data-testid="stMain"]')
        browser.close()
    return text


def test_the_server_runs_the_newest_runs_rules_before_the_first_visit(tmp_path: Path) -> None:
    # GIVEN a store with the demo set, as make demo leaves it
    loaded = run_module("data.demo", "--data", tmp_path, timeout=300)
    assert loaded.returncode == 0, loaded.stderr
    with dashboard(tmp_path) as url:
        # WHEN the server starts THEN it says it has warmed up, with the store's runs
        line = log_line(tmp_path / "server.log", "warmed up in")
        assert f"({len(demo.traces())} runs)" in line
        # AND the first page opened shows the newest run's ranking
        shown = page_text(f"{url}/recommendations")
    assert "Median step" in shown
    assert "Export this as a report" in shown


def test_a_store_the_warm_up_cannot_read_leaves_the_server_up(tmp_path: Path) -> None:
    # GIVEN a store whose database file is not a DuckDB file
    (tmp_path / demo.MARKER).touch()
    (tmp_path / DATABASE_FILE).write_bytes(b"\x00not a database" * 512)
    with dashboard(tmp_path) as url:
        # WHEN the server starts THEN the warm-up stops with one line naming the file
        line = log_line(tmp_path / "server.log", "warm-up stopped")
        assert DATABASE_FILE in line
        assert "Traceback" not in (tmp_path / "server.log").read_text()
        # AND the page opened says what is wrong, naming the file
        shown = page_text(f"{url}/runs")
    assert DATABASE_FILE in shown
    assert "not a valid DuckDB database" in shown
