"""The ingest command line: --help, the run id alone on the last stdout line, --name, --json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.paths import SAMPLES, fixture

from collectors.ingest import ingest
from data.errors import RunNotFoundError
from data.store import Store

SAMPLE = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"
RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


def test_help_exits_zero() -> None:
    r = run_cli("--help")
    assert r.returncode == 0, r.stderr
    assert "usage:" in r.stdout
    for option in ("--data", "--name", "--tag", "--json", "paths"):
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
        other = fixture("h200/microops.pt.trace.json.gz")
        later = ingest([other], data_dir=d, name="nightly-bf16")
        assert later != run_id
        assert store.resolve_run("nightly-bf16") == later
        assert store.resolve_run(run_id) == run_id
        with pytest.raises(RunNotFoundError):
            store.resolve_run("no-such-run")
    finally:
        store.close()


def test_json_gives_the_run_or_the_error_as_one_line(tmp_path: Path) -> None:
    d = tmp_path / "store"
    r = run_cli(SAMPLE, "--data", d, "--json")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("\n") == 1, r.stdout
    reply = json.loads(r.stdout)
    run_id = reply["run_id"]
    assert RUN_ID.match(run_id), run_id
    summary = Store(d).run_summary(run_id)
    assert reply == {
        "ok": True, "run_id": run_id, "name": "gpt_train_bf16", "ranks": 1,
        "kernels": summary["kernel_count"], "events": summary["events_total"], "malformed": 0,
    }  # fmt: skip

    again = run_cli(SAMPLE, "--data", d, "--json")
    assert again.returncode == 2
    assert json.loads(again.stdout) == {
        "ok": False,
        "error": {
            "type": "DuplicateTraceError",
            "message": f"{SAMPLE}: already ingested as run {run_id}",
            "run_id": run_id,
        },
    }
    assert "error" not in again.stderr  # the error is on stdout, once

    bad = tmp_path / "notes.json"
    bad.write_text("this is a plain text file, not a trace\n")
    r = run_cli(bad, "--data", d, "--json")
    assert r.returncode == 2
    assert r.stdout.count("\n") == 1
    error = json.loads(r.stdout)["error"]
    assert error["type"] == "TraceFormatError"
    assert error["message"].startswith(f"{bad}: not JSON")


def test_without_json_a_duplicate_is_one_error_line(tmp_path: Path) -> None:
    d = tmp_path / "store"
    run_id = ingest([SAMPLE], data_dir=d)
    r = run_cli(SAMPLE, "--data", d)
    assert r.returncode == 2
    assert r.stdout == ""
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {SAMPLE}: already ingested as run {run_id}"]
    assert r.stderr.splitlines()[-1] == errors[0]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_store_folder_that_is_a_file_is_one_error(tmp_path: Path, as_json: bool) -> None:
    not_a_folder = tmp_path / "store"
    not_a_folder.write_text("")
    r = run_cli(SAMPLE, "--data", not_a_folder, *(["--json"] if as_json else []))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr, r.stderr
    if as_json:
        message = json.loads(r.stdout)["error"]["message"]
    else:
        assert r.stdout == ""
        message = r.stderr.splitlines()[-1].removeprefix("error: ")
        assert r.stderr.count("error:") == 1
    assert message.startswith(str(not_a_folder)), message
