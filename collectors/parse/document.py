"""Reading a trace file (gzip or plain) and its document's top level: the metadata keys, and
the events array cut into slices at the commas between events, without decoding it first."""

from __future__ import annotations

import ctypes
import mmap
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
import numpy as np

from collectors.parse.events import RAWS, short_error
from collectors.parse.expansion import expanded_cap_bytes, gunzip
from collectors.parse.utf8 import is_utf8, replaced
from data.errors import TraceFormatError

CHUNK_BYTES = 8 << 20  # events are decoded a slice of the file at a time
Buffer = bytes | bytearray | mmap.mmap  # a trace's decompressed bytes
Progress = Callable[[int, int], None]


def read_bytes(path: Path) -> Buffer:
    """The decompressed bytes of a trace file (gzip by magic number, not by name; at most
    collectors.parse.expansion's cap)."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(2)
            if magic == b"\x1f\x8b":
                fh.seek(0)
                return _gunzip(fh, path)
            if path.stat().st_size == 0:
                raise TraceFormatError(f"{path}: empty file")
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise TraceFormatError(f"{path}: cannot read: {e.strerror or e}") from None


def _gunzip(fh: BinaryIO, path: Path) -> mmap.mmap:
    """The decompressed bytes in a nameless temporary file, mapped like a plain trace: its
    pages live in the page cache, so the parse lets each slice's pages go once copied, as
    for a plain file (D74). In memory, the buffer was private to the process and a forked
    helper counted all of it too (1.47 GB summed RSS on the 425 MB benchmark)."""
    # TemporaryFile has no name on Linux (O_TMPFILE): a killed ingest leaves nothing behind.
    with tempfile.TemporaryFile(prefix="trace-gunzip-") as out:
        try:
            size = gunzip(fh, path, expanded_cap_bytes(), out)
        except EOFError:
            raise TraceFormatError(f"{path}: truncated gzip (the file ends mid-stream)") from None
        except zlib.error as e:
            raise TraceFormatError(f"{path}: corrupt gzip: {e}") from None
        if not size:
            raise TraceFormatError(f"{path}: empty file inside the gzip")
        out.flush()
        return mmap.mmap(out.fileno(), 0, access=mmap.ACCESS_READ)


# Top-level keys that are metadata wherever they are; other keys count only before the events
# (Kineto writes its metadata first, and the quick look reads no further than that).
_ANYWHERE = ("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "traceName",
             "displayTimeUnit")  # fmt: skip
_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw] | list[msgspec.Raw])
_VALUE = msgspec.json.Decoder()
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*')
# Between two events: group 1 is the comma. The same bytes inside a string or a nested value
# make a slice that is not valid JSON; decoding catches that (see entry._parse_slices).
_BETWEEN_EVENTS = re.compile(rb"\}\s*(,)\s*\{")
_NEAR_END = 1 << 20  # the header and the keys after traceEvents are looked for this close
# What lies between two top-level values: a separator and one key. More than that is a
# member that a later one of the same key hid (a dict keeps one value per key).
_BEFORE_VALUE = re.compile(rb'\s*[{,]\s*"(?:[^"\\]|\\.)*"\s*:\s*')
_AFTER_LAST = re.compile(rb"\s*\}\s*")
_KEY = re.compile(rb'\s*[{,]\s*("(?:[^"\\]|\\.)*")')

Metadata = tuple[dict[str, Any], list[str]]  # top-level keys, and what was wrong in them


def top_level(path: Path, buf: Buffer) -> tuple[Metadata, list[msgspec.Raw]]:
    head = bytes(buf[:64]).lstrip()
    if head[:1] not in (b"{", b"["):
        if b"\x00" in bytes(buf[:4096]):
            raise TraceFormatError(f"{path}: binary data, not a JSON trace")
        raise TraceFormatError(f"{path}: not JSON (does not start with '{{' or '[')")
    try:
        top = _TOP.decode(buf)
        if isinstance(top, list):  # Chrome's "JSON array" form: events only
            return ({}, []), top
        events = top.get("traceEvents")
        if events is None or bytes(events) == b"null":
            raise TraceFormatError(
                f"{path}: no 'traceEvents' list; is this a torch.profiler export?"
            )
        raws = RAWS.decode(events)
    except msgspec.ValidationError as e:
        raise TraceFormatError(f"{path}: not a trace: {short_error(e)}") from None
    except msgspec.DecodeError as e:
        raise TraceFormatError(f"{path}: not valid JSON: {short_error(e)}") from None
    return _metadata(path, buf, top), raws


def _metadata(path: Path, doc: Buffer, top: dict[str, msgspec.Raw]) -> Metadata:
    """The metadata of a document's top-level members (`top`, decoded from `doc`): every key
    before traceEvents and the _ANYWHERE ones after it. Raises TraceFormatError for a key
    written twice; a value that is not UTF-8 is repaired and noted."""
    _check_unique_keys(path, doc, top)
    events_at = _address(top["traceEvents"])
    meta: dict[str, Any] = {}
    after: dict[str, Any] = {}
    notes: list[str] = []
    for key, raw in top.items():
        if key == "traceEvents" or (_address(raw) > events_at and key not in _ANYWHERE):
            continue
        text = bytes(raw)
        if not is_utf8(text):
            text = replaced(text)
            notes.append(f"metadata {key[:60]!r}: invalid UTF-8 replaced with U+FFFD")
        (meta if _address(raw) < events_at else after)[key] = _VALUE.decode(text)
    # in _ANYWHERE's order, as the metadata has always been written (trace_metadata's text)
    meta.update((key, after[key]) for key in _ANYWHERE if after.get(key) is not None)
    return meta, notes


def _check_unique_keys(path: Path, doc: Buffer, top: dict[str, msgspec.Raw]) -> None:
    """Refuse a document whose top level names a key twice: decoded as a dict, only one of
    them survives, silently (two traceEvents lists: one run's events or the other's)."""
    base = _address_of(doc)
    at = 0
    for start, size in sorted((_address(raw) - base, len(raw)) for raw in top.values()):
        if not _BEFORE_VALUE.fullmatch(doc, at, start):
            key = _KEY.match(doc, at, start)
            name = msgspec.json.decode(key.group(1)) if key else "?"
            raise TraceFormatError(f"{path}: duplicate top-level key {name!r}")
        at = start + size
    if top and not _AFTER_LAST.fullmatch(doc, at):
        raise TraceFormatError(f"{path}: duplicate top-level key (after the last one)")


def slicing(path: Path, buf: Buffer) -> tuple[Metadata, list[int]] | None:
    """The metadata and the cuts of the events array (see _cuts), found without decoding the
    events; None when this quick look cannot vouch for the document's shape (the whole
    document is then decoded, which also gives the exact error for a broken file)."""
    first = len(buf[:64]) - len(bytes(buf[:64]).lstrip())
    if buf[first : first + 1] == b"[":  # Chrome's "JSON array" form: events only
        close = buf.rfind(b"]")
        if close <= first or bytes(buf[close + 1 :]).strip():
            return None
        return ({}, []), _cuts(buf, first, close)
    m = _EVENTS_KEY.search(buf, 0, min(len(buf), _NEAR_END))
    if m is None or buf[m.end() : m.end() + 1] != b"[":
        return None
    start = m.end()
    # The array ends at a ']' after which the rest closes the document's object, and before
    # which the last slice is a JSON array (a ']' closing a later key's list is not).
    end, lowest = len(buf), max(start, len(buf) - _NEAR_END)
    while (close := buf.rfind(b"]", lowest, end)) > start:
        end = close
        try:
            _MEMBERS.decode(b'{"":0' + bytes(buf[close + 1 :]))
            cuts = _cuts(buf, start, close)
            RAWS.decode(_slice(buf, cuts[-2], cuts[-1]))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        # The document with its events left out: the same top-level keys, a few kB.
        rest = bytes(buf[:start]) + b"[]" + bytes(buf[close + 1 :])
        try:
            top = _MEMBERS.decode(rest)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        return _metadata(path, rest, top), cuts
    return None


def _cuts(buf: Buffer, start: int, close: int) -> list[int]:
    """Offsets that cut the events array into slices of about CHUNK_BYTES: its '[', the
    commas between events that follow every CHUNK_BYTES, and its ']'."""
    cuts = [start]
    while (pos := max(cuts[-1] + 1, start + len(cuts) * CHUNK_BYTES)) < close:
        m = _BETWEEN_EVENTS.search(buf, pos, close)
        if m is None:
            break
        cuts.append(m.start(1))
    cuts.append(close)
    return cuts


def _slice(buf: Buffer, a: int, b: int) -> bytearray:
    """The events between cuts a and b as a JSON array of their own, in one copy."""
    with memoryview(buf) as view:
        out = bytearray(view[a : b + 1])
    out[0], out[-1] = 0x5B, 0x5D  # "[" and "]" over the commas around the slice
    return out


def slices(
    buf: Buffer, cuts: list[int], take: Callable[[], int], progress: Progress | None
) -> Iterator[tuple[int, bytearray]]:
    """The slices this process takes, with their index (they are handed out in order, so
    the index taken tells how far the whole parse is)."""
    while (index := take()) < len(cuts) - 1:
        chunk = _slice(buf, cuts[index], cuts[index + 1])
        _let_go(buf, cuts[index], cuts[index + 1])
        yield index, chunk
        if progress is not None:
            progress(cuts[index + 1] - cuts[0], cuts[-1] - cuts[0])


def _let_go(buf: Buffer, a: int, b: int) -> None:
    """Unmap the whole pages of a copied slice from a file's map: the page cache keeps them
    (a later read faults them back), but this process and a forked helper, which both map
    the file, stop counting 425 MB between them (issue 15: peak memory 1.13 GB -> under 1 GB).
    A gzip trace is decompressed into a temporary file and mapped the same way (D74)."""
    if isinstance(buf, mmap.mmap):
        start = -(-a // mmap.PAGESIZE) * mmap.PAGESIZE
        end = b // mmap.PAGESIZE * mmap.PAGESIZE
        if end > start:
            buf.madvise(mmap.MADV_DONTNEED, start, end - start)


class NotSliceable(Exception):
    """A slice of the events array is not valid JSON: the cuts were wrong or the file is."""


def _address(raw: msgspec.Raw) -> int:
    return int(np.frombuffer(raw, dtype=np.uint8).ctypes.data)


def _address_of(buf: Buffer) -> int:
    """Where a buffer's first byte is (an empty one has none: 0)."""
    return int(np.frombuffer(buf, dtype=np.uint8).ctypes.data) if len(buf) else 0


def as_array(raws: list[msgspec.Raw]) -> bytearray:
    """Consecutive elements of one JSON array as a JSON array of their own, in one copy.

    The raw values view the file's buffer back to back (only commas and whitespace between
    them), so the chunk is one slice of it with its outer bytes made brackets; joining the
    values instead copies every byte twice.
    """
    start = _address(raws[0]) - 1
    size = _address(raws[-1]) + len(raws[-1]) + 1 - start
    out = bytearray(size)
    ctypes.memmove((ctypes.c_char * size).from_buffer(out), start, size)
    out[0], out[-1] = 0x5B, 0x5D  # "[" and "]" over the separators around the slice
    return out
