"""The parent's side of the command lines: run one in a child process, get back its typed
result, or the typed error it reported (data.errors.error_from_json), never its wording.

The child is `python -m MODULE ARGS --json`, run from the project root: data imports nothing
of collectors, a module name is all it needs. Its standard output is one JSON line
(data.cli); with --progress-json its standard error carries progress lines, handed to
`on_progress` as they come. `ingest_child` and `resolve_trace` are the ingest's client: the
dashboard's Upload page and demo set, and a report or comparison given a trace path.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from data.errors import DashError, DuplicateTraceError, error_from_json

REPO = Path(__file__).resolve().parents[1]
StageProgress = Callable[[str, float], None]  # stage ("parse", "link", "commit"), fraction
_STOP_WAIT_S = 10  # a child asked to stop (Ctrl-C) gets this long to clean up


@dataclass(frozen=True, slots=True)
class IngestResult:
    """A run that `python -m collectors.ingest` wrote: its id and name, and its counts."""

    run_id: str
    name: str
    ranks: int
    kernels: int
    events: int
    malformed: int


def run_child(
    module: str, *args: str, on_progress: StageProgress | None = None, cwd: Path = REPO
) -> dict[str, Any]:
    """Run `python -m <module> <args> --json` (with --progress-json when `on_progress` is
    given) and return the fields of its result. Raises the error it reports, rebuilt by
    type, or a DashError naming the module when it ends without a result."""
    # The flags first: after "--" (ingest_child) every argument is a path.
    cmd = [sys.executable, "-m", module, "--json"]
    if on_progress is not None:
        cmd.append("--progress-json")
    for a in args:
        if "\0" in a:  # the OS cannot pass it
            raise DashError(f"{a[:80]!r}: holds a NUL character")
    cmd += args
    last_line = ""  # what a child that crashed said last
    with subprocess.Popen(
        cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace"
    ) as proc:
        stdout, stderr = proc.stdout, proc.stderr
        assert stdout is not None
        assert stderr is not None
        try:
            for line in stderr:
                progress = _progress(line)
                if progress is None:
                    last_line = line.strip() or last_line
                elif on_progress is not None:
                    on_progress(*progress)
            reply = _reply(stdout.read())
        except BaseException:
            _stop(proc)  # the caller gave up (a rerun, Ctrl-C): no orphan ingest goes on
            raise
    status = proc.returncode
    if reply is None:
        said = f": {last_line}" if last_line else ""
        raise DashError(f"{module} exited with status {status} and no result{said}")
    if reply.get("ok") is not True:
        raise error_from_json(reply.get("error") or {})
    return {k: v for k, v in reply.items() if k != "ok"}


def ingest_child(
    paths: Sequence[Path | str],
    *,
    data_dir: Path | str,
    name: str | None = None,
    tags: Mapping[str, str] | None = None,
    include_python: bool = False,
    on_progress: StageProgress | None = None,
) -> IngestResult:
    """Ingest traces as one run in a child process (`python -m collectors.ingest`); the new
    run. Raises its typed errors: TraceFormatError, DuplicateTraceError (with the run_id
    that holds the content), SchemaVersionError, …; DashError for an OSError or a crash."""
    # `--name=VALUE` and "--" before the paths: a name or path starting with "-" is a value.
    args = [f"--data={data_dir}"]
    if name:
        args.append(f"--name={name}")
    args += [f"--tag={key}={value}" for key, value in (tags or {}).items()]
    if include_python:
        args.append("--python-functions")
    r = run_child("collectors.ingest", *args, "--", *map(str, paths), on_progress=on_progress)
    return IngestResult(
        run_id=str(r["run_id"]), name=str(r["name"]), ranks=int(r["ranks"]),
        kernels=int(r["kernels"]), events=int(r["events"]), malformed=int(r["malformed"]),
    )  # fmt: skip


def resolve_trace(path: Path | str, *, data_dir: Path | str) -> str:
    """The run id of a trace file: ingested now (in a child process), or the run that
    already holds the same content."""
    try:
        return ingest_child([path], data_dir=data_dir).run_id
    except DuplicateTraceError as e:
        if e.run_id is None:  # another ingest of it has not committed yet
            raise
        return e.run_id


def _progress(line: str) -> tuple[str, float] | None:
    """(stage, fraction) of a --progress-json line; None for any other line."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if isinstance(msg, dict) and "stage" in msg and "fraction" in msg:
        return str(msg["stage"]), float(msg["fraction"])
    return None


def _reply(stdout: str) -> dict[str, Any] | None:
    """The JSON object on the last line of a child's standard output, if there is one."""
    lines = stdout.strip().splitlines()
    try:
        reply = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def _stop(proc: subprocess.Popen[str]) -> None:
    """Ctrl-C for the child (an ingest then discards its staging folder), else a kill."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
