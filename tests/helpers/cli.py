"""The project's command lines as the tests run them: `python -m MODULE ARGS` from the repo
root in a child process (with its peak memory: run_measured), and what a store holds
afterwards."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.paths import REPO


def run_module(
    module: str, *args: str | Path, timeout: float = 120, text: bool = True
) -> subprocess.CompletedProcess[Any]:
    """`python -m MODULE ARGS` from the repo root, output captured (as text unless told)."""
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=text,
        timeout=timeout,
        check=False,
    )


def run_cli(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m collectors.ingest ARGS` from the repo root, output captured as text."""
    return run_module("collectors.ingest", *args, timeout=timeout)


def one_line(stderr: str) -> str:
    """The one error line of a command's standard error (the rest may only be progress)."""
    *progress, last = stderr.splitlines() or [""]
    assert all(re.fullmatch(r"(parse|link|commit): \d+%", p) for p in progress), stderr
    assert last.startswith("error: "), stderr
    return last


def lake_files(data_dir: Path) -> set[str]:
    """Every file and folder under a store's lake (relative paths): staging leftovers included."""
    lake = Path(data_dir) / "lake"
    return {str(p.relative_to(lake)) for p in lake.rglob("*")} if lake.exists() else set()


@dataclass(frozen=True)
class Measured:
    """A finished command: its exit status, output and peak resident memory."""

    status: int
    stdout: str
    stderr: str
    peak_rss_bytes: int


# Runs the command and writes its peak RSS (kB) into the file argv[1]. A process's ru_maxrss
# keeps the high-water mark of the process it was spawned from (Linux folds it in at exec),
# so the command is started from this small interpreter, not from the test's big one.
_MEASURE = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(
    module: str, *args: str | Path, env: dict[str, str] | None = None, timeout: float = 300
) -> Measured:
    """`python -m MODULE ARGS` from the repo root, with its peak memory: the ru_maxrss of
    the command and of every process it waited for (its parse helper, say)."""
    with tempfile.NamedTemporaryFile("r", suffix=".maxrss") as peak:
        proc = subprocess.run(
            [sys.executable, "-c", _MEASURE, peak.name, sys.executable, "-m", module,
             *map(str, args)],
            cwd=REPO, env={**os.environ, **(env or {})}, capture_output=True, text=True,
            errors="replace", timeout=timeout, check=False,
        )  # fmt: skip
        kb = int(peak.read() or 0)
    return Measured(proc.returncode, proc.stdout, proc.stderr, kb * 1024)


def store_snapshot(data_dir: Path) -> tuple[dict[str, tuple[int, int]], set[str]]:
    """(Store.checksums() of every table, every path under the lake) of the store in
    `data_dir`: any change to its rows or its files changes one of them."""
    from data.store import Store

    store = Store(data_dir)
    try:
        return store.checksums(), lake_files(data_dir)
    finally:
        store.close()
