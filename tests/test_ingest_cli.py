"""The ingest command line: --help, the run id alone on the last stdout line, --name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import HAVE_FIXTURES, SAMPLES, fixture, run_cli

from collectors.ingest import ingest
from data.errors import RunNotFoundError
from data.store import Store

SAMPLE = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"
RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


def test_help_exits_zero() -> None:
    r = run_cli("--help")
    assert r.returncode == 0, r.stderr
    assert "usage:" in r.stdout
    for option in ("--data", "--name", "--tag", "paths"):
        assert option in r.stdout, r.stdout
    assert r.stderr == ""


def test_cli_ingest_prints_run_id_last_and_resolves_by_name(tmp_path: Path) -> None:
    d = tmp_path / "store"
    r = run_cli(SAMPLE, "--data", d, "--name", "nightly-bf16", "--tag", "commit=abc123")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines == [lines[-1]], f"stdout holds more than the run id: {r.stdout!r}"
    run_id = lines[-1]
    assert RUN_ID.match(run_id), run_id
    assert r.stderr.strip(), "progress and the summary belong on stderr"
    assert run_id not in r.stderr.splitlines()

    store = Store(d)
    try:
        runs = store.runs()
        assert list(runs["run_id"]) == [run_id]
        assert list(runs["name"]) == ["nightly-bf16"]
        assert json.loads(runs["tags"].iloc[0]) == {"commit": "abc123"}
        assert json.loads(runs["source"].iloc[0]) == [str(SAMPLE)]
        assert runs["kernel_count"].iloc[0] > 0
        assert store.resolve_run("nightly-bf16") == run_id
        assert store.resolve_run(run_id) == run_id

        # a later run of the same name wins the name; the old id still resolves
        other = (
            fixture("h200/microops.pt.trace.json.gz")
            if HAVE_FIXTURES
            else SAMPLES / "gpt_train_fp32_naive.pt.trace.json.gz"
        )
        later = ingest([other], data_dir=d, name="nightly-bf16")
        assert later != run_id
        assert store.resolve_run("nightly-bf16") == later
        assert store.resolve_run(run_id) == run_id
        with pytest.raises(RunNotFoundError):
            store.resolve_run("no-such-run")
    finally:
        store.close()
