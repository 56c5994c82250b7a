"""A trace whose run, device, op and kernel names and tags hold Markdown, HTML and links
(tests/helpers/hostile.py MARKUP), read back from a real browser on every page: the text is
shown as written, no <img> or <a> element comes out of it, no alert runs, and the browser asks
nothing of any other origin (every request is logged; one elsewhere is refused and failed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import dashboard, launch, settle
from helpers.hostile import MARKUP, markup_trace
from helpers.paths import SAMPLES
from playwright import sync_api as playwright

from collectors.ingest import ingest
from data.demo import MARKER

pytestmark = pytest.mark.browser
PAGES = ("runs", "overview", "roofline", "bandwidth", "breakdown", "timeline",
         "recommendations", "compare", "report", "live", "upload")  # fmt: skip
# What the page would have made of MARKUP, had it rendered it: any of these is a failure.
MADE = """() => ({
  images: [...document.querySelectorAll('img')].map(i => i.getAttribute('src')),
  links: [...document.querySelectorAll('a')]
    .map(a => new URL(a.getAttribute('href') || a.getAttribute('xlink:href') || '#', location.href))
    .filter(u => u.origin !== location.origin).map(u => u.href),
  strong: [...document.querySelectorAll('strong, b')].map(e => e.textContent)
    .filter(t => t === 'bold'),
})"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    d = tmp_path_factory.mktemp("hostile-browser")
    run = ingest([markup_trace(d)], data_dir=d / "store", name=MARKUP, tags={"note": MARKUP})
    other = ingest([SAMPLES / "gpt_train_bf16.pt.trace.json.gz"], data_dir=d / "store",
                   name=f"{MARKUP} (2)")  # fmt: skip
    (d / "store" / MARKER).touch()
    return d / "store", run, other


@pytest.fixture(scope="module")
def browser_page(store: tuple[Path, str, str]) -> Iterator[tuple[Any, str, dict[str, list[str]]]]:
    with dashboard(store[0]) as url, playwright.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        seen: dict[str, list[str]] = {"elsewhere": [], "dialogs": []}

        def route(r: Any) -> None:
            if r.request.url.startswith(url) or r.request.url.startswith("ws://127.0.0.1"):
                r.continue_()
            else:
                seen["elsewhere"].append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
        yield page, url, seen
        browser.close()


def visible(page: Any, selector: str) -> list[str]:
    """The texts of the elements, as a reader sees them (word joiners are invisible); an SVG
    element (a chart's legend) has no innerText, only its text content."""
    found = page.locator(selector)
    texts = found.all_text_contents() if selector.startswith(".legend") else found.all_inner_texts()
    return [t.replace("\u2060", "") for t in texts]


def cells(page: Any) -> list[str]:
    """The texts of a table's cells: Streamlit draws tables on a canvas and keeps the cells
    as text in an accessible grid beside it, which is what a screen reader reads."""
    found = page.locator("table td, [role=gridcell]")
    found.first.wait_for(state="attached", timeout=60_000)
    return found.all_text_contents()  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", PAGES)
def test_every_page_shows_the_markup_as_text(
    name: str, store: tuple[Path, str, str], browser_page: Any
) -> None:
    page, url, seen = browser_page
    _, run, other = store
    for log in seen.values():
        log.clear()
    page.goto(f"{url}/{name}?run={run}&before={other}&after={run}")
    settle(page)
    assert page.get_by_test_id("stException").count() == 0
    made = page.evaluate(MADE)
    assert made == {"images": [], "links": [], "strong": []}, made
    assert seen == {"elsewhere": [], "dialogs": []}
    if name == "runs":  # a table: the run name and its tag as written, each once
        assert cells(page).count(MARKUP) == 2, cells(page)
    if name == "overview":
        assert visible(page, "h1")[0] == MARKUP
        assert any(t.startswith(f"{MARKUP} · 132 SMs") for t in visible(page, "p"))
        kernels = [c for c in cells(page) if c.startswith(f"{MARKUP} ")]
        assert len(kernels) == 6, cells(page)  # the top kernels, each name as written
    if name == "compare":  # the chart's legend names the runs (plotly reads tags there)
        page.locator(".legendtext").first.wait_for(timeout=60_000)
        assert f"after: {MARKUP}" in visible(page, ".legendtext")


def test_an_upload_named_with_markup_is_refused_as_text(browser_page: Any) -> None:
    page, url, seen = browser_page
    for log in seen.values():
        log.clear()
    page.goto(f"{url}/upload")
    settle(page)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        {"name": f"{MARKUP}.json", "mimeType": "application/json", "buffer": b"not json"}
    )
    page.get_by_test_id("stFileUploader").get_by_text(".json").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Ingest").click()
    page.get_by_test_id("stAlertContentError").wait_for(timeout=60_000)
    errors = visible(page, '[data-testid="stAlertContentError"]')
    assert [e.removeprefix("🚫").strip() for e in errors] == [
        f"{MARKUP}.json: not JSON (does not start with '{{' or '[')"
    ]
    assert page.evaluate(MADE) == {"images": [], "links": [], "strong": []}
    assert seen == {"elsewhere": [], "dialogs": []}
