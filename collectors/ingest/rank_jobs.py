"""Reading a run's rank files in batches of consecutive files: each batch parsed, linked and
written into the staging folder on its own, by worker processes side by side (`--jobs`) or
in this process one after another. What the ingest holds is one batch per worker, whatever
the rank count."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from collectors.ingest.rank_write import RankDone, write_ranks
from collectors.parse import RankTrace, parse_trace
from collectors.parse.helper import die_with_parent
from data.errors import DashError, TraceFormatError

# A batch is linked and written in one go (per rank, DuckDB's fixed costs were 0.3 s against
# a 0.23 s parse of an 8.6 MB rank); its size bounds what a worker holds.
BATCH_FILES = 16
BATCH_BYTES = 64 << 20  # of files on disk: 7 ranks of 8.6 MB peaked at 352 MB in a worker


def batches(files: Sequence[Path]) -> list[list[int]]:
    """The files' indices cut into batches of consecutive files."""
    out: list[list[int]] = []
    size = 0
    for i, f in enumerate(files):
        n = f.stat().st_size
        if not out or len(out[-1]) >= BATCH_FILES or size + n > BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(i)
        size += n
    return out


def default_jobs() -> int:
    """One worker per core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def parse_rank(
    path: Path,
    label: str,
    include_python: bool,
    *,
    progress: Callable[[int, int], None] | None = None,
    beside: Callable[[], None] | None = None,
    helper: bool = True,
) -> RankTrace:
    """One rank file parsed; errors name the user's file (`label`), not a temporary copy."""
    try:
        trace = parse_trace(
            path, include_python=include_python, progress=progress, beside=beside, helper=helper
        )
    except TraceFormatError as e:
        raise TraceFormatError(str(e).replace(str(path), label)) from None
    except MemoryError:
        raise DashError(f"{label}: not enough memory to parse it") from None
    if trace.events_total == 0:
        raise TraceFormatError(f"{label}: the trace has no events (empty traceEvents)")
    return trace


def _batch(
    batch: int, paths: list[Path], labels: list[str], stage: Path, include_python: bool
) -> list[RankDone]:
    """A worker's task: parse, hash and write one batch of rank files."""
    traces = [
        parse_rank(p, label, include_python, helper=False)
        for p, label in zip(paths, labels, strict=True)
    ]
    return write_ranks(stage, batch, traces, [sha256_file(p) for p in paths])


def _worker_start(parent: int) -> None:
    die_with_parent(parent)  # a killed ingest takes its workers with it


def parallel_ranks(
    files: Sequence[Path],
    labels: dict[Path, str],
    stage: Path,
    jobs: int,
    include_python: bool,
    done: Callable[[int], None],
) -> list[RankDone]:
    """Every file written as its rank by `jobs` worker processes, in the files' order;
    `done(n)` after each batch, with the files done so far. The first failure stops the
    rest and is raised here."""
    # spawn, not fork: the caller has DuckDB's and the store's threads running.
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        jobs, mp_context=ctx, initializer=_worker_start, initargs=(os.getpid(),)
    )
    try:
        futures = []
        for b, indices in enumerate(batches(files)):
            paths = [files[i] for i in indices]
            args = (b, paths, [labels[p] for p in paths], stage, include_python)
            futures.append(pool.submit(_batch, *args))
        finished = 0
        for f in _as_done(futures):
            finished += len(f.result())
            done(finished)
        return [rank for f in futures for rank in f.result()]
    except BrokenProcessPool:
        raise DashError(f"{stage.name}: a rank worker process died") from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _as_done(futures: list[Future[list[RankDone]]]) -> Iterator[Future[list[RankDone]]]:
    """The futures as they finish; the first that failed raises its error at once."""
    pending = set(futures)
    while pending:
        finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
        for f in finished:
            f.result()  # raises
            yield f
