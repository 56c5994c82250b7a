"""One error family for every layer: a message that names the input and what was wrong."""

from __future__ import annotations


class DashError(Exception):
    """Base of every error the product reports to a user (CLI: one line, UI: an error box)."""


class TraceFormatError(DashError):
    """A trace file that cannot be read as a torch.profiler / Kineto trace."""


class DuplicateTraceError(DashError):
    """The same trace content was already ingested: `run_id` is the run that holds it (None
    while another ingest of it is still running)."""

    def __init__(self, message: str, *, run_id: str | None) -> None:
        super().__init__(message)
        self.run_id = run_id


class SchemaVersionError(DashError):
    """The store on disk was written by another schema version."""


class RunNotFoundError(DashError):
    """A run id or name that the store does not hold."""


class NvmlUnavailableError(DashError):
    """No NVML: the library, the driver or the requested GPU is not there."""


class CudaUnavailableError(DashError):
    """A command that needs a CUDA GPU (and torch) ran where there is none."""


class RecordingFormatError(DashError):
    """A recorded telemetry CSV that cannot be replayed."""


def error_line(e: Exception) -> str:
    """The one line a command prints for an error it reports (a file error names the file)."""
    if isinstance(e, OSError) and e.filename:
        return f"error: {e.filename}: {e.strerror}"
    return f"error: {e}"
