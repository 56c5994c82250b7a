"""The project's command lines as the tests run them: `python -m MODULE ARGS` from the repo
root in a child process, and what a store's lake holds afterwards."""

from __future__ import annotations

import subprocess
import sys
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


def lake_files(data_dir: Path) -> set[str]:
    """Every file and folder under a store's lake (relative paths): staging leftovers included."""
    lake = Path(data_dir) / "lake"
    return {str(p.relative_to(lake)) for p in lake.rglob("*")} if lake.exists() else set()
