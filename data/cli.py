"""What every command line shares: its result or its error as one line, and its exit status.

`run_command` runs a command's body. The body returns its result as JSON-ready fields; they
are shown as the command's text (`show`), or, with --json, printed as one JSON object on
standard output: `{"ok": true, ...fields}`. An error of the family (data.errors) or an
OSError becomes one `error: …` line on standard error, or with --json
`{"ok": false, "error": {"type": …, "message": …, …}}` on standard output, and exit status
2 (the error type's exit_status); Ctrl-C becomes one line and status 130. Any other
exception is a bug, reported the same way as one line naming its type (DASH_DEBUG=1 lets it
through with its traceback), so no command ends in a traceback. A usage error
(`CommandParser`) is one line too. No command prints an error itself, so data.cli_child can
rebuild every error a child reports, by type.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from data.errors import DashError, error_json, error_line, error_text

EXIT_ERROR = 2  # the family's default; DashError.exit_status
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it

Result = Mapping[str, Any]
DEBUG_ENV = "DASH_DEBUG"  # set to 1: unexpected errors end in their traceback


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are reported like every other error: one
    `error:` line (with --json, one JSON object) and exit status 2, not a usage block."""

    json_line = False  # set by parse_command

    def error(self, message: str) -> NoReturn:
        e = DashError(f"{message} (see {self.prog} --help)")
        sys.exit(_fail(e, EXIT_ERROR, self.json_line))


def parse_command(ap: CommandParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed arguments of a command (sys.argv's when `argv` is None)."""
    ap.json_line = "--json" in (sys.argv[1:] if argv is None else argv)
    return ap.parse_args(argv)


def add_json_flag(ap: argparse.ArgumentParser) -> None:
    """The --json option of a command that reports through run_command."""
    ap.add_argument(
        "--json",
        action="store_true",
        help="print the result, or the error, as one JSON line on standard output",
    )


def run_command(
    body: Callable[[], Result],
    *,
    json_line: bool = False,
    show: Callable[[Result], None] | None = None,
    interrupted: str = "interrupted",
) -> int:
    """A command's exit status: `body` runs; its result goes to `show` (text), or with
    `json_line` to standard output as one JSON line. `interrupted` is what Ctrl-C says."""
    if (
        json_line
        and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        and threading.current_thread() is threading.main_thread()
    ):
        # data.cli_child stops a child with SIGINT (an ingest then discards its staging); a
        # dashboard started in the background (`nohup … &`) hands SIGINT down ignored, and a
        # given-up ingest would commit anyway.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = body()
        if json_line:
            _print_json({"ok": True, **result})
        elif show is not None:
            show(result)
    except (DashError, OSError) as e:
        return _fail(e, e.exit_status if isinstance(e, DashError) else EXIT_ERROR, json_line)
    except KeyboardInterrupt:
        return _fail(KeyboardInterrupt(interrupted), EXIT_INTERRUPTED, json_line)
    except MemoryError:
        return _fail(MemoryError("out of memory"), EXIT_ERROR, json_line)
    except Exception as e:
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        bug = DashError(
            f"unexpected {type(e).__name__}: {error_text(e)} ({DEBUG_ENV}=1 shows where)"
        )
        return _fail(bug, EXIT_ERROR, json_line)
    return 0


def write_output(data: str | bytes, output: Path | None) -> int:
    """Text or bytes to the file `output`, else to standard output as they are; the bytes
    written."""
    raw = data.encode() if isinstance(data, str) else data
    if output:
        output.write_bytes(raw)
    else:
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
    return len(raw)


def cli_output(
    produce: Callable[[], str | bytes], output: Path | None, *, json_line: bool = False
) -> int:
    """A command's exit status: what `produce` returns goes to `output` (else standard
    output, bytes as they are); errors are reported as run_command reports them. With
    `json_line` the result is `{"ok": true, "output": FILE, "bytes": N}`, after the data
    when there is no output file."""

    def body() -> Result:
        written = write_output(produce(), output)
        return {"output": str(output) if output else None, "bytes": written}

    return run_command(body, json_line=json_line)


def _fail(e: BaseException, status: int, json_line: bool) -> int:
    if json_line:
        _print_json({"ok": False, "error": error_json(e)})
    else:
        print(error_line(e), file=sys.stderr)
    return status


def _print_json(obj: Mapping[str, Any]) -> None:
    print(json.dumps(obj, ensure_ascii=False, default=str), flush=True)
