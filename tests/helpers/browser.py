"""The dashboard in a real browser: `streamlit run serve.py` (as `make demo` starts it) on a free
loopback port, Debian's Chromium through Playwright, and the waits that tell a finished page
from a running one."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import REPO

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def dashboard(data: Path, script: Path | str = "serve.py", cwd: Path = REPO) -> Iterator[str]:
    """The dashboard (or another Streamlit `script`) of the checkout `cwd` serving store
    `data` until the block ends; yields its URL."""
    port = free_port()
    log = (data / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1"],
        cwd=cwd, env={**os.environ, "DASH_DATA": str(data)}, stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"streamlit did not start: {(data / 'server.log').read_text()[-2000:]}")
        time.sleep(0.3)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def launch(p: Any) -> Any:
    """Debian's Chromium, headless, with nothing that reaches the network."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Debian chromium is not installed at {CHROMIUM}: run `make chromium`")
    return p.chromium.launch(executable_path=CHROMIUM, args=ARGS)


# True when everything the page shows is drawn: the script run has ended, no spinner or
# placeholder, every Plotly chart on screen (st.plotly_chart's or pages/_chart.py's) has its
# SVG, every table on screen its canvas (a closed expander's draw when opened) and every
# timeline component its window.
RENDERED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stSpinner"]')) return false;
  const shown = (sel) => [...document.querySelectorAll(sel)].filter((e) => e.checkVisibility());
  if (shown('[data-testid="stSkeleton"]').length) return false;  // an element not yet sent
  for (const c of shown('[data-testid="stPlotlyChart"], .dash-chart'))
    if (!c.querySelector('.main-svg')) return false;
  for (const d of shown('[data-testid="stDataFrame"]'))
    if (!d.querySelector('canvas')) return false;
  for (const f of document.querySelectorAll('iframe[title*="_timeline_component"]'))
    if (!(f.contentWindow && f.contentWindow.timeline && f.contentWindow.timeline.args))
      return false;
  return true;
}"""
STABLE_MS = 600  # a first visit reruns once (pages/_ui.py): one finished run is not the end


def settle(page: Any, timeout_ms: int = 90_000, stable_ms: int = STABLE_MS) -> float:
    """Wait until the page has been fully drawn for `stable_ms` (a click's rerun has that
    long to start; a page that refreshes itself every second needs less). Returns when that
    began, in seconds of the page's clock (performance.now(), zero at the navigation)."""
    page.evaluate("window.__since = null")
    page.wait_for_function(
        f"""() => {{ const now = performance.now();
             if (!({RENDERED})()) {{ window.__since = null; return false; }}
             if (window.__since === null) window.__since = now;
             return now - window.__since > {stable_ms}; }}""",
        timeout=timeout_ms,
        polling=50,
    )
    return float(page.evaluate("window.__since")) / 1e3


def grid_rows(page: Any, index: int = 0) -> list[list[str]]:
    """The rows of the `index`-th st.dataframe as its accessible grid holds them: the rows
    and columns on screen, raw values (the grid draws on a canvas; this table mirrors it)."""
    grid = page.get_by_test_id("stDataFrame").nth(index)
    grid.locator('[role="gridcell"]').first.wait_for(state="attached", timeout=30_000)
    rows = grid.locator('[role="row"]').evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('[role=gridcell]')].map(c => c.textContent))"
    )
    return [r for r in rows if r]


def grid_header(page: Any, index: int = 0) -> list[str]:
    """The column labels of the `index`-th st.dataframe."""
    grid = page.get_by_test_id("stDataFrame").nth(index)
    grid.locator('[role="columnheader"]').first.wait_for(state="attached", timeout=30_000)
    heads = grid.locator('[role="columnheader"]')
    return list(heads.evaluate_all("hs => hs.map(h => h.textContent)"))


def component_frame(page: Any) -> Any:
    """The timeline component's frame, once it has drawn its first window."""
    page.frame_locator('iframe[title="pages._timeline_component.timeline"]').locator(
        "#status"
    ).wait_for(timeout=60_000)
    frame = next(f for f in page.frames if "_timeline_component" in f.url)
    frame.wait_for_function("window.timeline && window.timeline.args !== null", timeout=60_000)
    return frame
