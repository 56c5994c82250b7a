"""Reading a trace file (gzip or plain) and its document's top level: the metadata keys, and
the events array cut into slices at the commas between events, without decoding it first."""

from __future__ import annotations

import ctypes
import gzip
import mmap
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from collectors.parse.events import RAWS, short_error
from data.errors import TraceFormatError

CHUNK_BYTES = 8 << 20  # events are decoded a slice of the file at a time
Progress = Callable[[int, int], None]


def read_bytes(path: Path) -> bytes | mmap.mmap:
    """The decompressed bytes of a trace file (gzip by magic number, not by name)."""
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


def _gunzip(fh: Any, path: Path) -> bytes:
    try:
        # In one piece: GzipFile.read() joins small chunks that stay in the heap after (270 MB
        # for the 360 MB benchmark trace), and a forked helper would count them again.
        data = gzip.decompress(fh.read())
    except EOFError:
        raise TraceFormatError(f"{path}: truncated gzip (the file ends mid-stream)") from None
    except (OSError, zlib.error) as e:
        raise TraceFormatError(f"{path}: corrupt gzip: {e}") from None
    if not data:
        raise TraceFormatError(f"{path}: empty file inside the gzip")
    return data


class _Doc(msgspec.Struct):
    """The top level: events as raw values, plus the metadata keys Kineto writes anywhere."""

    traceEvents: list[msgspec.Raw] | None = None
    deviceProperties: Any = None
    distributedInfo: Any = None
    baseTimeNanoseconds: Any = None
    traceName: Any = None
    displayTimeUnit: Any = None


_DOC = msgspec.json.Decoder(_Doc | list[msgspec.Raw])
_HEADER = msgspec.json.Decoder(dict[str, Any])
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*')
# Between two events: group 1 is the comma. The same bytes inside a string or a nested value
# make a slice that is not valid JSON; decoding catches that (see entry._parse_slices).
_BETWEEN_EVENTS = re.compile(rb"\}\s*(,)\s*\{")
_NEAR_END = 1 << 20  # the header and the keys after traceEvents are looked for this close


def top_level(path: Path, buf: bytes | mmap.mmap) -> tuple[dict[str, Any], list[msgspec.Raw]]:
    head = bytes(buf[:64]).lstrip()
    if head[:1] not in (b"{", b"["):
        if b"\x00" in bytes(buf[:4096]):
            raise TraceFormatError(f"{path}: binary data, not a JSON trace")
        raise TraceFormatError(f"{path}: not JSON (does not start with '{{' or '[')")
    try:
        top = _DOC.decode(buf)
    except msgspec.ValidationError as e:
        raise TraceFormatError(f"{path}: not a trace: {short_error(e)}") from None
    except msgspec.DecodeError as e:
        raise TraceFormatError(f"{path}: not valid JSON: {short_error(e)}") from None
    if isinstance(top, list):  # Chrome's "JSON array" form: events only
        return {}, top
    if top.traceEvents is None:
        raise TraceFormatError(f"{path}: no 'traceEvents' list; is this a torch.profiler export?")
    meta = _header(buf)[0]
    for key in _Doc.__struct_fields__[1:]:
        if getattr(top, key) is not None:
            meta[key] = getattr(top, key)
    return meta, top.traceEvents


def _header(buf: bytes | mmap.mmap) -> tuple[dict[str, Any], int]:
    """Every top-level key written before traceEvents (versions, flags, user metadata), and
    the offset of the traceEvents value (-1 if not found).

    Kineto writes its metadata first; reading only that prefix avoids a second pass over the
    events. Keys after traceEvents are covered by _Doc's fields.
    """
    m = _EVENTS_KEY.search(buf, 0, min(len(buf), _NEAR_END))
    if m is None:
        return {}, -1
    prefix = bytes(buf[: m.start()]).rstrip().rstrip(b",")
    try:
        return _HEADER.decode(prefix + b"}"), m.end()
    except (msgspec.DecodeError, msgspec.ValidationError):
        return {}, -1


def slicing(buf: bytes | mmap.mmap) -> tuple[dict[str, Any], list[int]] | None:
    """The metadata and the cuts of the events array (see _cuts), found without decoding the
    events; None when this quick look cannot vouch for the document's shape (the whole
    document is then decoded, which also gives the exact error for a broken file)."""
    first = len(buf[:64]) - len(bytes(buf[:64]).lstrip())
    if buf[first : first + 1] == b"[":  # Chrome's "JSON array" form: events only
        close = buf.rfind(b"]")
        if close <= first or bytes(buf[close + 1 :]).strip():
            return None
        return {}, _cuts(buf, first, close)
    meta, start = _header(buf)
    if start < 0 or buf[start : start + 1] != b"[":
        return None
    # The array ends at a ']' after which the rest closes the document's object, and before
    # which the last slice is a JSON array (a ']' closing a later key's list is not).
    end, lowest = len(buf), max(start, len(buf) - _NEAR_END)
    while (close := buf.rfind(b"]", lowest, end)) > start:
        end = close
        try:
            tail = _HEADER.decode(b'{"":0' + bytes(buf[close + 1 :]))
            cuts = _cuts(buf, start, close)
            RAWS.decode(_slice(buf, cuts[-2], cuts[-1]))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        for key in _Doc.__struct_fields__[1:]:
            if tail.get(key) is not None:
                meta[key] = tail[key]
        return meta, cuts
    return None


def _cuts(buf: bytes | mmap.mmap, start: int, close: int) -> list[int]:
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


def _slice(buf: bytes | mmap.mmap, a: int, b: int) -> bytearray:
    """The events between cuts a and b as a JSON array of their own, in one copy."""
    with memoryview(buf) as view:
        out = bytearray(view[a : b + 1])
    out[0], out[-1] = 0x5B, 0x5D  # "[" and "]" over the commas around the slice
    return out


def slices(
    buf: bytes | mmap.mmap, cuts: list[int], take: Callable[[], int], progress: Progress | None
) -> Iterator[tuple[int, bytearray]]:
    """The slices this process takes, with their index (they are handed out in order, so
    the index taken tells how far the whole parse is)."""
    while (index := take()) < len(cuts) - 1:
        yield index, _slice(buf, cuts[index], cuts[index + 1])
        if progress is not None:
            progress(cuts[index + 1] - cuts[0], cuts[-1] - cuts[0])


class NotSliceable(Exception):
    """A slice of the events array is not valid JSON: the cuts were wrong or the file is."""


def _address(raw: msgspec.Raw) -> int:
    return int(np.frombuffer(raw, dtype=np.uint8).ctypes.data)


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
