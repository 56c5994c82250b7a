"""The dashboard in a real browser: `streamlit run app.py` on a free loopback port, Debian's
Chromium through Playwright, and a wait for a script run to finish."""

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


def require_chromium() -> None:
    """Debian's Chromium (`make chromium` installs it): without it every browser test fails."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Debian chromium is not installed at {CHROMIUM}: run `make chromium`")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def dashboard_server(data: Path) -> Iterator[str]:
    """The dashboard serving the store in `data` (its log in data/server.log); its URL."""
    port = _free_port()
    log = (data / "server.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
            "--server.headless", "true", "--server.address", "127.0.0.1",
        ],
        cwd=REPO,
        env={**os.environ, "DASH_DATA": str(data)},
        stdout=log,
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


def settle(page: Any) -> None:
    """Wait until the script run has finished (not just started)."""
    page.wait_for_timeout(500)
    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
        state="attached", timeout=90_000
    )


def launch(p: Any) -> Any:
    """Debian's Chromium, headless, with nothing of its own going to the network."""
    return p.chromium.launch(
        executable_path=CHROMIUM,
        args=[
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    )
