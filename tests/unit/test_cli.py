"""data.cli and the error family's JSON: one error line or one JSON line, and the exit status.

Every command line reports through data.cli.run_command, so these cases hold for all of them;
the CLI tests (test_ingest_cli, test_nvml_agent, test_calibrate) check the real commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from data import errors
from data.cli import DEBUG_ENV, cli_output, run_command
from data.errors import (
    AllGpusLostError,
    DashError,
    DuplicateTraceError,
    TraceFormatError,
    error_from_json,
    error_json,
    error_line,
)


def family() -> list[type[DashError]]:
    """Every error type of data.errors, the base included."""
    out, todo = [], [DashError]
    while todo:
        kind = todo.pop()
        out.append(kind)
        todo += kind.__subclasses__()
    return [k for k in out if k.__module__ == errors.__name__]


def example(kind: type[DashError]) -> DashError:
    if kind is DuplicateTraceError:
        return DuplicateTraceError("t.json: already ingested as run r1", run_id="r1")
    return kind(f"t.json: a {kind.__name__}")


@pytest.mark.parametrize("kind", family(), ids=lambda k: k.__name__)
def test_every_error_type_survives_a_json_line(kind: type[DashError]) -> None:
    # GIVEN an error as a child prints it WHEN the parent rebuilds it THEN same type and text
    e = example(kind)
    back = error_from_json(json.loads(json.dumps(error_json(e))))
    assert type(back) is kind
    assert str(back) == str(e)
    assert {f: getattr(back, f) for f in kind.fields} == {f: getattr(e, f) for f in kind.fields}


def test_duplicate_carries_the_existing_run_id() -> None:
    e = DuplicateTraceError("t.json: already ingested as run 20260101-000000-abcdef", run_id="x")
    assert e.run_id == "x"
    assert error_json(e) == {"type": "DuplicateTraceError", "message": str(e), "run_id": "x"}


def test_unknown_types_become_dash_errors() -> None:
    for obj in (
        {"type": "FileNotFoundError", "message": "x.json: No such file or directory"},
        {"type": "DuplicateTraceError", "message": "no run_id field"},
        {"type": "KeyboardInterrupt", "message": "interrupted"},
    ):
        back = error_from_json(obj)
        assert type(back) is DashError
        assert str(back) == obj["message"]
    assert str(error_from_json({})) == "unknown error"


def test_a_file_error_names_the_file() -> None:
    e = FileNotFoundError(2, "No such file or directory", "/tmp/x.json")
    assert error_line(e) == "error: /tmp/x.json: No such file or directory"
    assert error_json(e) == {
        "type": "FileNotFoundError",
        "message": "/tmp/x.json: No such file or directory",
    }


def _raise(e: BaseException) -> Any:
    def body() -> Any:
        raise e

    return body


@pytest.mark.parametrize(
    ("error", "status", "line"),
    [
        (TraceFormatError("t.json: not JSON"), 2, "error: t.json: not JSON"),
        (NotADirectoryError(20, "Not a directory", "/d/x"), 2, "error: /d/x: Not a directory"),
        (AllGpusLostError("every GPU was lost"), 1, "error: every GPU was lost"),
        (KeyboardInterrupt(), 130, "error: stopped; nothing was written"),
    ],
)  # fmt: skip
def test_errors_become_one_line_and_a_status(
    capsys: pytest.CaptureFixture[str], error: BaseException, status: int, line: str
) -> None:
    assert run_command(_raise(error), interrupted="stopped; nothing was written") == status
    out, err = capsys.readouterr()
    assert (out, err) == ("", line + "\n")
    assert (
        run_command(_raise(error), json_line=True, interrupted="stopped; nothing was written")
        == status
    )
    out, err = capsys.readouterr()
    assert err == ""
    reply = json.loads(out)
    assert reply["ok"] is False
    assert "error: " + reply["error"]["message"] == line


def test_a_bug_is_one_line_and_its_traceback_on_request(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    assert run_command(_raise(ZeroDivisionError("a\nbug"))) == 2
    assert capsys.readouterr() == (
        "",
        "error: unexpected ZeroDivisionError: a\\nbug (DASH_DEBUG=1 shows where)\n",
    )
    assert run_command(_raise(MemoryError()), json_line=True) == 2
    reply = json.loads(capsys.readouterr().out)
    assert reply["error"] == {"type": "MemoryError", "message": "out of memory"}
    monkeypatch.setenv(DEBUG_ENV, "1")
    with pytest.raises(ZeroDivisionError):
        run_command(_raise(ZeroDivisionError("a bug")))


def test_the_result_as_text_or_as_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    shown: list[Any] = []
    assert run_command(lambda: {"run_id": "r1", "ranks": 2}, show=shown.append) == 0
    assert shown == [{"run_id": "r1", "ranks": 2}]
    assert capsys.readouterr() == ("", "")
    assert run_command(lambda: {"run_id": "r1", "ranks": 2}, json_line=True, show=shown.append) == 0
    assert capsys.readouterr().out == '{"ok": true, "run_id": "r1", "ranks": 2}\n'
    assert len(shown) == 1  # --json replaces the text


def test_cli_output_to_a_file_or_stdout(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert cli_output(lambda: "µs\n", tmp_path / "r.md") == 0
    assert (tmp_path / "r.md").read_text() == "µs\n"
    assert cli_output(lambda: b"%PDF-1.4", None) == 0
    assert capsysbinary.readouterr().out == b"%PDF-1.4"
    assert cli_output(lambda: "x", tmp_path / "r.json", json_line=True) == 0
    assert json.loads(capsysbinary.readouterr().out) == {
        "ok": True,
        "output": str(tmp_path / "r.json"),
        "bytes": 1,
    }
    assert cli_output(lambda: "x", tmp_path / "no such folder" / "r.md") == 2
    err = capsysbinary.readouterr().err.decode()
    assert err == f"error: {tmp_path / 'no such folder' / 'r.md'}: No such file or directory\n"
