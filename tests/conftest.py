"""Pytest fixtures and hooks shared by the whole suite; the helpers are in tests/helpers/."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import FIXTURES, FIXTURES_ENV, fixture
from helpers.report import CPU_TRACE, NAIVE, report

from collectors.ingest import ingest

# ------------------------------------------------------------------ the shared fixtures


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop the run before it starts when the shared fixtures are not there: a third of the
    suite reads them, and a run without them would test far less than it says."""
    missing = [top for top in ("h200", "foreign") if not (FIXTURES / top).is_dir()]
    if missing:
        where = f"${FIXTURES_ENV}" if os.environ.get(FIXTURES_ENV) else "../shared/fixtures"
        raise pytest.UsageError(
            f"the shared fixtures are missing: no {' or '.join(f'{m}/' for m in missing)} in "
            f"{FIXTURES} ({where}); put them there or set {FIXTURES_ENV}=/path/to/fixtures"
        )


# ------------------------------------------- the report's stores (its formats and its page)


@pytest.fixture(scope="session")
def naive(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(store folder, run id) of the H200 fp32 GPT-2 training run, alone in its store."""
    d = tmp_path_factory.mktemp("report_naive")
    run_id = ingest([fixture(NAIVE)], data_dir=d)
    return d, run_id


@pytest.fixture(scope="session")
def naive_files(naive: tuple[Path, str]) -> dict[str, bytes]:
    """Each format written by the CLI, end to end: text formats with -o, the PDF's bytes to
    standard output."""
    d = naive[0]
    out: dict[str, bytes] = {}
    for fmt in ("json", "md", "html"):
        path = d / f"report.{fmt}"
        proc = report("train_gpt2_fp32_naive", "--format", fmt, "-o", path, "--data", d)
        assert proc.returncode == 0, proc.stderr.decode()
        assert proc.stdout == b""
        out[fmt] = path.read_bytes()
    proc = report("train_gpt2_fp32_naive", "--format", "pdf", "--data", d)
    assert proc.returncode == 0, proc.stderr.decode()
    out["pdf"] = proc.stdout
    return out


@pytest.fixture(scope="session")
def naive_doc(naive_files: dict[str, bytes]) -> dict[str, Any]:
    return dict(json.loads(naive_files["json"]))


@pytest.fixture(scope="session")
def cpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(store folder, run id) of the CPU-only trace, alone in its store."""
    d = tmp_path_factory.mktemp("report_cpu")
    return d, ingest([CPU_TRACE], data_dir=d)
