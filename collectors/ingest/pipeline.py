"""`ingest()`: parse and write every rank file into the run's staging folder, check the ranks
and the content's hash, claim it, and commit the run into the lake (all or nothing)."""

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
from collectors.ingest.lake_write import commit_run
from collectors.ingest.rank_jobs import (
    batches,
    parallel_ranks,
    parse_rank,
    sha256_file,
)
from collectors.ingest.rank_write import RankDone, write_ranks
from collectors.parse import RankTrace
from data.errors import DashError, DuplicateTraceError, TraceFormatError
from data.lake import LAKE_FOLDER
from data.lake_sweep import sweep_lake
from data.scratch import sweep_scratch
from data.store import DEFAULT_DATA_DIR, Store
from data.valid_text import valid_text

StageProgress = Callable[[str, float], None]


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
    jobs: int = 1,
) -> str:
    """Ingest trace files as one run; returns the new run id. With `jobs` > 1 that many
    worker processes parse the rank files side by side (spawned: like any spawning library,
    a calling script needs its `if __name__ == "__main__":` guard, so the API defaults to
    this process and the command line to the cores). A single file uses its own helper.

    Raises TraceFormatError for unreadable input and DuplicateTraceError for content that is
    already in the store. Either way nothing is written.
    """
    report = progress or (lambda stage, frac: None)
    in_paths = [Path(p) for p in paths]
    _check_tags(tags or {})
    sweep_scratch()  # what killed ingests left in /tmp and /dev/shm
    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    with expand_inputs(in_paths) as labels:
        files = list(labels)
        workers = min(jobs, len(files))
        if workers > 1:
            store = _open_swept(data_dir)
            stage = store.lake.stage_dir(run_id)
            try:
                ranks = parallel_ranks(
                    files, labels, stage, workers, include_python,
                    lambda n: report("parse", n / len(files)),
                )  # fmt: skip
                _commit(store, run_id, _run(name, in_paths, tags), ranks, labels, report)
            except BaseException:
                store.lake.discard(run_id)
                raise
        else:
            store = _one_by_one(run_id, files, labels, data_dir, name, in_paths, tags,
                                include_python, report)  # fmt: skip
    store.close()
    return run_id


def _open_swept(data_dir: Path | str) -> Store:
    """The store, opened once what killed writers left in its lake is gone: its views read
    every segment's schema, and a half-written orphan segment would fail them."""
    sweep_lake(Path(data_dir) / LAKE_FOLDER)
    return Store(data_dir)


def _one_by_one(
    run_id: str,
    files: list[Path],
    labels: dict[Path, str],
    data_dir: Path | str,
    name: str | None,
    in_paths: list[Path],
    tags: dict[str, Any] | None,
    include_python: bool,
    report: StageProgress,
) -> Store:
    """The ranks in this process, one after another; a big file has the parse's helper."""
    # Hashing and opening the store (a new one writes an empty segment per table) run
    # beside the first file's parse, once its helper process is forked.
    hasher = _Background(lambda: [sha256_file(f) for f in files])
    opener = _Background(lambda: _open_swept(data_dir))

    def beside() -> None:
        hasher.start()
        opener.start()

    store: Store | None = None
    ranks: list[RankDone] = []
    try:
        for b, indices in enumerate(batches(files)):
            traces = []
            for i in indices:

                def on_events(done: int, total: int, i: int = i) -> None:
                    report("parse", (i + done / max(total, 1)) / len(files))

                f = files[i]
                first = beside if i == 0 else None
                traces.append(
                    parse_rank(f, labels[f], include_python, progress=on_events, beside=first)
                )
            if store is None:
                store = opener.result()
                store.lake.stage_dir(run_id)
            # The digests are filled in below, once the hashing thread is done.
            ranks += write_ranks(store.lake.staging / run_id, b, traces, [""] * len(traces))
        digests: list[str] = hasher.result()
        for rank, digest in zip(ranks, digests, strict=True):
            rank.digest = digest
        report("link", 0.0)
        assert store is not None
        _commit(store, run_id, _run(name, in_paths, tags), ranks, labels, report)
    except BaseException:
        if store is not None:
            store.lake.discard(run_id)
        raise
    finally:  # a failed parse too: exiting mid-write would leave a half-made store
        for job in (hasher, opener):
            if job.ident is not None:
                job.join()
    return store


def _run(name: str | None, in_paths: list[Path], tags: dict[str, Any] | None) -> dict[str, Any]:
    """The run's row; its text as valid UTF-8 (a name or tag can come from undecodable bytes)."""
    return {
        "name": valid_text(name or run_name(in_paths[0])),
        "source": json.dumps([valid_text(str(p)) for p in in_paths]),
        "tags": json.dumps({valid_text(k): _tag_value(v) for k, v in (tags or {}).items()}),
    }


def _tag_value(value: Any) -> Any:
    return valid_text(value) if isinstance(value, str) else value


def _commit(
    store: Store,
    run_id: str,
    run: dict[str, Any],
    ranks: list[RankDone],
    labels: dict[Path, str],
    report: StageProgress,
) -> None:
    """Check the ranks and the content, then commit the staged run under the content's
    claim (nothing is visible before the commit's last rename)."""
    _check_ranks([r.trace for r in ranks], labels)
    digest = hashlib.sha256("".join(sorted(r.digest for r in ranks)).encode()).hexdigest()
    in_paths = json.loads(run["source"])
    what = in_paths[0] if len(in_paths) == 1 else f"{in_paths[0]} (+{len(in_paths) - 1})"
    # Claimed first, looked up second: an ingest of the same content either holds the
    # claim now or released it after its runs row landed, so the lookup sees it.
    with store.lake.claim(digest, what):
        existing = store.find_by_sha256(digest)
        if existing:
            raise DuplicateTraceError(
                f"{what}: already ingested as run {existing}", run_id=existing
            )
        commit_run(store.lake, {"run_id": run_id, **run, "source_sha256": digest}, ranks)
        report("commit", 1.0)


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
