"""A real Prometheus server (Debian's `prometheus`, `make install-dev` installs it) and
agents serving /metrics, as child processes of the test on 127.0.0.1."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

from helpers.paths import REPO

T = TypeVar("T")
SERVING = re.compile(r"serving /metrics on http://127\.0\.0\.1:(\d+)/metrics")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(probe: Callable[[], T | None], timeout_s: float, what: str) -> T:
    """probe() until it returns something other than None (or False), at most timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = probe()
        if got is not None and got is not False:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def agent(folder: Path, *args: str | Path) -> Iterator[int]:
    """`python -m collectors.nvml ARGS --prometheus-port 0` running; yields the port it
    logged. Stopped with SIGTERM at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / f"agent-{time.monotonic_ns()}.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "collectors.nvml", *map(str, args), "--prometheus-port", "0"],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:

        def port() -> int | None:
            if proc.poll() is not None:
                raise AssertionError(f"the agent exited {proc.returncode}: {log.read_text()}")
            found = SERVING.search(log.read_text())
            return int(found.group(1)) if found else None

        yield wait_for(port, 60, "the agent's /metrics")
    finally:
        _stop(proc)


@contextmanager
def prometheus(folder: Path, targets: list[str], scrape_interval: str) -> Iterator[str]:
    """A Prometheus server on a free loopback port scraping `targets` (host:port) every
    `scrape_interval`; yields its URL once it answers /-/ready."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("Debian's prometheus is not installed: run `make install-dev`")
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "prometheus.yml"
    config.write_text(
        "global:\n"
        f"  scrape_interval: {scrape_interval}\n"
        f"  scrape_timeout: {scrape_interval}\n"
        "scrape_configs:\n"
        "  - job_name: gpus\n"
        "    static_configs:\n"
        f"      - targets: [{', '.join(repr(t) for t in targets)}]\n"
    )
    port = free_port()
    with (folder / "prometheus.log").open("wb") as log:
        proc = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={folder / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=log, stderr=log,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(
                    f"prometheus exited: {(folder / 'prometheus.log').read_text()}"
                )
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                    return bool(r.status == 200)
            except OSError:
                return False

        wait_for(ready, 60, "prometheus to be ready")
        yield url
    finally:
        _stop(proc)
