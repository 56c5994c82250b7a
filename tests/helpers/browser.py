"""The dashboard in a real browser: `streamlit run app.py` on a free loopback port, Debian's
Chromium through Playwright, and the waits that tell a finished page from a running one."""

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
def dashboard(data: Path) -> Iterator[str]:
    """The dashboard serving store `data` until the block ends; yields its URL."""
    port = free_port()
    log = (data / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1"],
        cwd=REPO, env={**os.environ, "DASH_DATA": str(data)}, stdout=log,
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


def settle(page: Any, timeout_ms: int = 90_000) -> None:
    """Wait until the script run has finished (not just started)."""
    page.wait_for_timeout(500)
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
        state="attached", timeout=timeout_ms
    )


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
