"""`ingest()`: parse every rank file, check the ranks and the content's hash, claim it, and
write the run into the lake (all or nothing)."""

from __future__ import annotations

import hashlib
import json
import math
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from collectors.ingest.inputs import expand_inputs, run_name
from collectors.ingest.lake_write import write_run
from collectors.parse import RankTrace, parse_trace
from data.errors import DashError, DuplicateTraceError, TraceFormatError
from data.lake_sweep import sweep_lake
from data.scratch import sweep_scratch
from data.store import DEFAULT_DATA_DIR, Store

StageProgress = Callable[[str, float], None]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


class _Background(threading.Thread):
    """Runs `work` beside the parse (hashlib, Parquet writes and DuckDB release the GIL)."""

    def __init__(self, work: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.work = work
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.work()
        except BaseException as e:  # re-raised in the caller's thread by result()
            self.error = e

    def result(self) -> Any:
        self.join()
        if self.error is not None:
            raise self.error
        return self.value


def ingest(
    paths: Sequence[Path | str],
    *,
    data_dir: Path | str = DEFAULT_DATA_DIR,
    name: str | None = None,
    tags: dict[str, Any] | None = None,
    include_python: bool = False,
    progress: StageProgress | None = None,
) -> str:
    """Ingest trace files as one run; returns the new run id.

    Raises TraceFormatError for unreadable input and DuplicateTraceError for content that is
    already in the store. Either way nothing is written.
    """
    report = progress or (lambda stage, frac: None)
    in_paths = [Path(p) for p in paths]
    _check_tags(tags or {})
    sweep_scratch()  # what killed ingests left in /tmp and /dev/shm
    with expand_inputs(in_paths) as labels:
        files = list(labels)
        # Hashing and opening the store (a new one writes an empty segment per table) run
        # beside the first file's parse, once its helper process is forked.
        hasher = _Background(lambda: [_sha256(f) for f in files])
        opener = _Background(lambda: Store(data_dir))

        def beside() -> None:
            hasher.start()
            opener.start()

        traces: list[RankTrace] = []
        try:
            for i, f in enumerate(files):

                def on_events(done: int, total: int, i: int = i) -> None:
                    report("parse", (i + done / max(total, 1)) / len(files))

                try:
                    trace = parse_trace(
                        f,
                        include_python=include_python,
                        progress=on_events,
                        beside=beside if i == 0 else None,
                    )
                except TraceFormatError as e:  # name the user's file, not a temporary copy
                    raise TraceFormatError(str(e).replace(str(f), labels[f])) from None
                except MemoryError:
                    raise DashError(f"{labels[f]}: not enough memory to parse it") from None
                if trace.events_total == 0:
                    raise TraceFormatError(
                        f"{labels[f]}: the trace has no events (empty traceEvents)"
                    )
                traces.append(trace)
        finally:  # a failed parse too: exiting mid-write would leave a half-made store
            for job in (hasher, opener):
                if job.ident is not None:
                    job.join()
        digests: list[str] = hasher.result()
        store: Store = opener.result()
        sweep_lake(store.lake.root)  # ... and in the lake
        _check_ranks(traces, labels)
        digest = hashlib.sha256("".join(sorted(digests)).encode()).hexdigest()
        what = str(in_paths[0]) if len(in_paths) == 1 else f"{in_paths[0]} (+{len(in_paths) - 1})"
        # Claimed first, looked up second: an ingest of the same content either holds the
        # claim now or released it after its runs row landed, so the lookup sees it.
        with store.lake.claim(digest, what):
            existing = store.find_by_sha256(digest)
            if existing:
                raise DuplicateTraceError(
                    f"{what}: already ingested as run {existing}", run_id=existing
                )
            run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
            run = {
                "run_id": run_id,
                "name": name or run_name(in_paths[0]),
                "source": json.dumps([str(p) for p in in_paths]),
                "source_sha256": digest,
                "tags": json.dumps(tags or {}),
            }
            report("link", 0.0)
            write_run(store.lake, run, traces, digests)
            report("commit", 1.0)
    store.close()
    return run_id


# Tags the analyses read as numbers (tokens/s, the step without the profiler).
NUMERIC_TAGS = ("tokens_per_step", "unprofiled_step_ms")


def _check_tags(tags: dict[str, Any]) -> None:
    for key in NUMERIC_TAGS:
        if key not in tags:
            continue
        try:
            ok = 0 < float(tags[key]) < math.inf
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise DashError(f"tag {key}={str(tags[key])[:80]!r}: expected a positive number")


def _check_ranks(traces: list[RankTrace], labels: dict[Path, str]) -> None:
    seen: dict[int, Path] = {}
    for t in traces:
        if t.rank in seen:
            raise TraceFormatError(
                f"{labels[t.path]}: rank {t.rank} ({t.rank_source}) is also the rank of "
                f"{labels[seen[t.rank]]}"
            )
        seen[t.rank] = t.path
