"""`parse_trace`: one trace file through the sliced path (with a helper process for a big
file), else through the general one, the whole document split into raw values first."""

from __future__ import annotations

import contextlib
import gc
import itertools
import mmap
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from collectors.parse.document import (
    Buffer,
    Metadata,
    NotSliceable,
    Progress,
    as_array,
    read_bytes,
    slices,
    slicing,
    top_level,
)
from collectors.parse.helper import Helper, SharedCounter, worth_a_helper
from collectors.parse.rank_trace import RankTrace, new_trace
from collectors.parse.tables import build, in_order
from data.errors import TraceFormatError

CHUNK_EVENTS = 65536  # events per chunk where the document had to be split into values first


def parse_trace(
    path: Path,
    *,
    include_python: bool = False,
    progress: Progress | None = None,
    beside: Callable[[], None] | None = None,
    helper: bool = True,
) -> RankTrace:
    """Parse one trace file. Raises TraceFormatError if it is not a readable trace.

    `beside` is called once, as soon as the helper process (if any) is forked: the place to
    start threads that should run during the parse (forking while threads run is unsafe).
    `helper=False` keeps a big file's parse in this process (ranks parsed in parallel
    already use every core).
    """
    path = Path(path)
    buf = read_bytes(path)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    pending = [beside] if beside else []

    def started() -> None:
        while pending:
            pending.pop()()

    try:
        sliced = slicing(path, buf)
        if sliced is not None:
            with contextlib.suppress(NotSliceable):
                return _parse_slices(path, buf, *sliced, include_python, progress, started, helper)
        started()
        return _parse_whole(path, buf, include_python, progress)
    except RecursionError:  # msgspec's guard against a stack overflow, at Python's limit
        raise TraceFormatError(
            f"{path}: JSON nested deeper than {sys.getrecursionlimit()} levels"
        ) from None
    finally:
        if isinstance(buf, mmap.mmap):
            with contextlib.suppress(BufferError):  # a value still views the map; GC closes it
                buf.close()
        if gc_was_enabled:
            gc.enable()


def _parse_slices(
    path: Path,
    buf: Buffer,
    meta: Metadata,
    cuts: list[int],
    include_python: bool,
    progress: Progress | None,
    started: Callable[[], None],
    use_helper: bool,
) -> RankTrace:
    """The fast path: the events array is cut into byte slices, each decoded on its own (no
    pass over the whole document first). For a big file a helper process decodes slices too;
    each process takes the next slice not yet taken, so neither waits on the other while
    there is work left, whatever else runs beside it."""
    trace = new_trace(path, *meta)
    helper = None
    take: Callable[[], int] = itertools.count().__next__
    if use_helper and worth_a_helper(buf) and len(cuts) > 2:
        take = SharedCounter()
        helper = Helper.start(path, buf, cuts, take, include_python)
    started()
    try:
        try:
            parts = build(trace, slices(buf, cuts, take, progress), include_python)
        except msgspec.DecodeError:
            raise NotSliceable from None
        if helper:
            helper.merge_into(trace, parts)
        trace.tables = in_order(parts)
        return trace
    finally:
        if helper:
            helper.close()


def _parse_whole(
    path: Path, buf: Buffer, include_python: bool, progress: Progress | None
) -> RankTrace:
    """The general path: the whole document split into raw values, one process."""
    meta, raws = top_level(path, buf)
    trace = new_trace(path, *meta)
    total = len(raws)

    def chunks() -> Iterator[tuple[int, bytearray]]:
        for index, at in enumerate(range(0, total, CHUNK_EVENTS)):
            yield index, as_array(raws[at : at + CHUNK_EVENTS])
            if progress is not None:
                progress(min(at + CHUNK_EVENTS, total), total)

    trace.tables = in_order(build(trace, chunks(), include_python))
    return trace
