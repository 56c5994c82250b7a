"""One error family for every layer: a message that names the input and what was wrong.

A command reports an error as one line (`error_line`) or, with --json, as one JSON object
(`error_json`); `error_from_json` rebuilds the typed error on the other side of a process
boundary, so no caller has to read an error's wording.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from data.valid_text import valid_text


class DashError(Exception):
    """Base of every error the product reports to a user (CLI: one line, UI: an error box)."""

    exit_status: ClassVar[int] = 2  # what a command exits with for it
    fields: ClassVar[tuple[str, ...]] = ()  # attributes error_json carries beside the message


class TraceFormatError(DashError):
    """A trace file that cannot be read as a torch.profiler / Kineto trace."""


class DuplicateTraceError(DashError):
    """The same trace content was already ingested: `run_id` is the run that holds it (None
    while another ingest of it is still running)."""

    fields = ("run_id",)

    def __init__(self, message: str, *, run_id: str | None) -> None:
        super().__init__(message)
        self.run_id = run_id


class SchemaVersionError(DashError):
    """The store on disk was written by another schema version."""


class RunNotFoundError(DashError):
    """A run id or name that the store does not hold."""


class NvmlUnavailableError(DashError):
    """No NVML: the library, the driver or the requested GPU is not there."""


class AllGpusLostError(DashError):
    """Every GPU an agent sampled stopped answering; what it sampled before is written."""

    exit_status = 1  # the agent ran; 2 means it could not start


class CudaUnavailableError(DashError):
    """A command that needs a CUDA GPU (and torch) ran where there is none."""


class RecordingFormatError(DashError):
    """A recorded telemetry CSV that cannot be replayed."""


class StoreError(DashError):
    """The store folder cannot be used: read-only, full, or held by another process."""


def file_error(e: OSError, path: object) -> OSError:
    """The error as one that names `path` (Arrow's and a buffered write's name no file)."""
    return OSError(e.errno, e.strerror or str(e), str(path))


class PrometheusError(DashError):
    """A Prometheus endpoint that cannot be served (the agent's /metrics) or queried (a
    Prometheus server the dashboard reads), or an answer that is not what the API returns."""


def error_text(e: BaseException) -> str:
    """What a command says about an error it reports, on one line (a file error names the
    file; a line break or control character inside, from a file name say, is escaped)."""
    if isinstance(e, OSError) and e.filename:
        text = f"{e.filename}: {e.strerror}"
    else:
        text = str(e) or type(e).__name__
    return valid_text(text).translate(_ONE_LINE)


# C0 controls, DEL and the Unicode line breaks, as Python writes them in a repr.
_ONE_LINE = {c: repr(chr(c))[1:-1] for c in [*range(0x20), 0x7F, 0x85, 0x2028, 0x2029]}


def error_line(e: BaseException) -> str:
    """The one line a command prints for an error it reports."""
    return f"error: {error_text(e)}"


def error_json(e: BaseException) -> dict[str, Any]:
    """The error as a JSON object: its type's name, error_text, and the type's fields."""
    out: dict[str, Any] = {"type": type(e).__name__, "message": error_text(e)}
    if isinstance(e, DashError):
        out.update((name, getattr(e, name)) for name in e.fields)
    return out


def error_from_json(obj: Mapping[str, Any]) -> DashError:
    """The error an error_json object stands for: the family's type of that name, else (an
    OSError, say) a plain DashError with the message."""
    message = str(obj.get("message") or "unknown error")
    kind = _FAMILY.get(str(obj.get("type")), DashError)
    if not all(name in obj for name in kind.fields):
        return DashError(message)
    return kind(message, **{name: obj[name] for name in kind.fields})


def _family(kind: type[DashError]) -> dict[str, type[DashError]]:
    out = {kind.__name__: kind} if kind.__module__ == __name__ else {}
    for sub in kind.__subclasses__():
        out.update(_family(sub))
    return out


_FAMILY = _family(DashError)
