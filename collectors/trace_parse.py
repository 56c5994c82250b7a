"""Parse one torch.profiler (Kineto) trace file into Arrow tables, fast and exactly.

How: the file is read once (gzip or plain). The events array is found and cut into slices
of about CHUNK_BYTES at the commas between events, without decoding it first; each slice is
decoded on its own into typed structs with the cyclic GC off (it makes decoding super-linear
on big traces), by this process and, for a big file, a forked helper. A bad cut (inside a
string, say) makes a slice invalid JSON, never wrong events; such a document, and one whose
shape the quick look cannot vouch for, is decoded the general way: split into raw values
first. Timestamps keep their decimal text until they
become integer nanoseconds, so no event is shifted by float rounding. Event `args` are
decoded per category in one call per chunk. An event whose fields are invalid is counted
(with an example) and, where it has no usable time, left out; nothing is dropped silently.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import gzip
import itertools
import json
import mmap
import multiprocessing
import os
import re
import shutil
import tempfile
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from data.errors import TraceFormatError

CHUNK_BYTES = 8 << 20  # events are decoded a slice of the file at a time
CHUNK_EVENTS = 65536  # the same, where the document had to be split into values first
PARALLEL_MIN_BYTES = 64 << 20  # below this a helper process costs more than it saves
MAX_EXAMPLES = 5
Progress = Callable[[int, int], None]

# Event categories, today's names and the 2021 ones, to the bucket that stores them.
_CATEGORY_BUCKET = {
    "kernel": "kernel", "Kernel": "kernel",
    "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
    "gpu_memset": "memset", "Memset": "memset",
    "cuda_runtime": "runtime", "Runtime": "runtime",
    "cuda_driver": "driver",
    "cuda_sync": "sync",
    "cpu_op": "cpu_op", "Operator": "cpu_op",
    "user_annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
    "python_function": "python",
}  # fmt: skip


# The default of raw fields, one shared value: a default_factory made decoding cpu_op args
# 25 % slower (a new object per absent field).
_ABSENT = msgspec.Raw()


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str | None = None
    tid: int | str | None = None
    ts: msgspec.Raw = _ABSENT
    dur: float | None = None
    args: msgspec.Raw = _ABSENT


def _f(key: str) -> Any:
    return msgspec.field(name=key, default=None)


def _raw(key: str) -> Any:
    """A field kept as raw JSON text (msgspec.Raw allows no None; empty means absent)."""
    return msgspec.field(name=key, default=_ABSENT)


class _GpuArgs(msgspec.Struct, gc=False):
    external_id: int | None = _f("External id")
    external_id_legacy: int | None = _f("external id")
    device: int | None = None
    stream: int | str | None = None
    correlation: int | None = None
    registers: int | None = _f("registers per thread")
    shared_memory: int | None = _f("shared memory")
    blocks_per_sm: float | None = _f("blocks per SM")
    warps_per_sm: float | None = _f("warps per SM")
    grid: list[int] | None = None
    block: list[int] | None = None
    occupancy: float | None = _f("est. achieved occupancy %")
    bytes: int | None = None
    graph_id: int | None = _f("graph id")
    graph_node_id: int | None = _f("graph node id")
    collective_name: str | None = _f("Collective name")
    dtype: str | None = None
    in_nelems: int | None = _f("In msg nelems")
    out_nelems: int | None = _f("Out msg nelems")
    group_size: int | None = _f("Group size")
    pg_name: str | None = _f("Process Group Name")
    pg_desc: str | None = _f("Process Group Description")
    pg_ranks: msgspec.Raw = _raw("Process Group Ranks")
    in_split: msgspec.Raw = _raw("In split size")
    out_split: msgspec.Raw = _raw("Out split size")


class _RuntimeArgs(msgspec.Struct, gc=False):
    correlation: int | None = None
    external_id: int | None = _f("External id")
    external_id_legacy: int | None = _f("external id")
    cbid: int | None = None


class _OpArgs(msgspec.Struct, gc=False):
    external_id: int | None = _f("External id")
    external_id_legacy: int | None = _f("external id")
    record_function_id: int | None = _f("Record function id")
    sequence_number: int | None = _f("Sequence number")
    fwd_thread_id: int | None = _f("Fwd thread id")
    input_dims: msgspec.Raw = _raw("Input Dims")
    input_types: msgspec.Raw = _raw("Input type")
    input_strides: msgspec.Raw = _raw("Input Strides")
    concrete_inputs: msgspec.Raw = _raw("Concrete Inputs")
    collective_name: str | None = _f("Collective name")
    dtype: str | None = None
    in_nelems: int | None = _f("In msg nelems")
    out_nelems: int | None = _f("Out msg nelems")
    group_size: int | None = _f("Group size")
    pg_name: str | None = _f("Process Group Name")
    pg_desc: str | None = _f("Process Group Description")
    pg_ranks: msgspec.Raw = _raw("Process Group Ranks")
    in_split: msgspec.Raw = _raw("In split size")
    out_split: msgspec.Raw = _raw("Out split size")


class _MemoryArgs(msgspec.Struct, gc=False):
    device_type: int | None = _f("Device Type")
    device_id: int | None = _f("Device Id")
    addr: int | None = _f("Addr")
    bytes: int | None = _f("Bytes")
    total_allocated: int | None = _f("Total Allocated")
    total_reserved: int | None = _f("Total Reserved")


class _PythonArgs(msgspec.Struct, gc=False):
    python_id: int | None = _f("Python id")
    python_parent_id: int | None = _f("Python parent id")


_ArgsT = TypeVar("_ArgsT", bound=msgspec.Struct)
_Parts = dict[str, list[tuple[int, pa.Table]]]  # table -> (chunk index, rows)


@dataclass
class RankTrace:
    """One parsed trace file: metadata plus Arrow tables (no run_id/rank columns yet)."""

    path: Path
    file_bytes: int
    rank: int
    rank_source: str
    world_size: int | None
    metadata: dict[str, Any]
    distributed_info: dict[str, Any] | None
    devices: list[dict[str, Any]]
    tables: dict[str, pa.Table]
    category_counts: Counter[str]
    events_total: int = 0
    events_skipped: int = 0
    malformed: int = 0
    malformed_examples: list[str] = field(default_factory=list)

    def note_malformed(self, what: str, count: int = 1) -> None:
        """Count invalid events and keep the first few descriptions."""
        self.malformed += count
        if len(self.malformed_examples) < MAX_EXAMPLES:
            self.malformed_examples.append(what)


# ---------------------------------------------------------------------------- reading


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
_EVENTS = msgspec.json.Decoder(list[_Event])
_EVENT = msgspec.json.Decoder(_Event)
_RAWS = msgspec.json.Decoder(list[msgspec.Raw])
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*')
# Between two events: group 1 is the comma. The same bytes inside a string or a nested value
# make a slice that is not valid JSON; decoding catches that (see _parse_slices).
_BETWEEN_EVENTS = re.compile(rb"\}\s*(,)\s*\{")
_NEAR_END = 1 << 20  # the header and the keys after traceEvents are looked for this close


def _top_level(path: Path, buf: bytes | mmap.mmap) -> tuple[dict[str, Any], list[msgspec.Raw]]:
    head = bytes(buf[:64]).lstrip()
    if head[:1] not in (b"{", b"["):
        if b"\x00" in bytes(buf[:4096]):
            raise TraceFormatError(f"{path}: binary data, not a JSON trace")
        raise TraceFormatError(f"{path}: not JSON (does not start with '{{' or '[')")
    try:
        top = _DOC.decode(buf)
    except msgspec.ValidationError as e:
        raise TraceFormatError(f"{path}: not a trace: {_short(e)}") from None
    except msgspec.DecodeError as e:
        raise TraceFormatError(f"{path}: not valid JSON: {_short(e)}") from None
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


def _slicing(buf: bytes | mmap.mmap) -> tuple[dict[str, Any], list[int]] | None:
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
            _RAWS.decode(_slice(buf, cuts[-2], cuts[-1]))
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


def _short(e: Exception) -> str:
    return str(e).splitlines()[0][:200]


# ------------------------------------------------------------------------ conversions


def _exact_ns(raws: Sequence[msgspec.Raw]) -> tuple[np.ndarray, np.ndarray]:
    """µs timestamps as written (e.g. b'5127903468908.233') -> (int64 ns, valid mask)."""
    n = len(raws)
    lens = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    if n and lens.min() > 0:
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        text = pa.Array.from_buffers(
            pa.large_string(), n, [None, pa.py_buffer(offsets.data), pa.py_buffer(b"".join(raws))]
        )
        try:
            dec = pc.cast(text, pa.decimal128(24, 3))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        else:
            # The unscaled value of a decimal with 3 fractional digits is the ns count.
            data = dec.buffers()[1]
            assert data is not None
            ns = np.frombuffer(memoryview(data), dtype=np.int64)[::2].copy()
            return ns, np.ones(n, dtype=bool)
    out = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    for i, raw in enumerate(raws):
        try:
            out[i] = int(Decimal(bytes(raw).decode()) * 1000)
            ok[i] = True
        except (InvalidOperation, ValueError, UnicodeDecodeError):
            pass
    return out, ok


def _dur_ns(durs: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    arr = np.array([np.nan if d is None else d for d in durs], dtype=np.float64)
    ok = np.isfinite(arr) & (arr >= 0)
    return np.rint(np.where(ok, arr, 0.0) * 1000.0).astype(np.int64), ok


def _as_int(v: Any) -> int | None:
    """pid/tid/stream come as ints, digit strings, 'stream 7' or '0x0'."""
    if type(v) is int:
        return v
    if isinstance(v, str):
        s = v.strip().rsplit(" ", 1)[-1]
        try:
            return int(s, 0)
        except ValueError:
            return None
    return None


def _ints(values: list[Any]) -> pa.Array[Any]:
    try:
        return pa.array(values, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # strings such as 'stream 7'
        return pa.array([_as_int(v) for v in values], pa.int64())


def _raw_text(values: Sequence[msgspec.Raw]) -> pa.Array[Any]:
    """Raw JSON values -> a string column (empty Raw -> NULL), without per-value copies."""
    n = len(values)
    lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    valid = lens > 0
    mask = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little").data)
    arr = pa.Array.from_buffers(
        pa.large_string(), n, [mask, pa.py_buffer(offsets.data), pa.py_buffer(b"".join(values))]
    )
    return arr.cast(pa.string())


def _decode_args(
    trace: RankTrace, events: list[_Event], kind: type[_ArgsT], label: str
) -> list[_ArgsT]:
    decoder = msgspec.json.Decoder(list[kind])  # type: ignore[valid-type]
    raws: list[msgspec.Raw | bytes] = list(map(_ARGS, events))
    if not all(raws):  # an event without args
        raws = [raw or b"{}" for raw in raws]
    try:
        return decoder.decode(b"[" + b",".join(raws) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    one = msgspec.json.Decoder(kind)
    out: list[_ArgsT] = []
    for e, raw in zip(events, raws, strict=True):
        try:
            out.append(one.decode(raw))
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            trace.note_malformed(f"{label} {e.name[:60]!r}: args {_short(err)}")
            out.append(kind())
    return out


# ------------------------------------------------------------------------- the parse


_PH, _ARGS, _FIRST = attrgetter("ph"), attrgetter("args"), itemgetter(0)
_MEMCPY = re.compile(r"Memcpy (\w+)(?: \((\w+) -> (\w+)\))?")


class _Builder:
    """Accumulates one file's events, bucket by bucket, chunk by chunk."""

    def __init__(self, trace: RankTrace, include_python: bool) -> None:
        self.trace = trace
        self.include_python = include_python
        self.parts: _Parts = {}
        self.index = 0

    def add_chunk(self, index: int, events: list[_Event]) -> None:
        self.index = index
        # Grouped on `cat` alone: a (ph, cat) key per event made grouping twice as slow.
        by_cat: defaultdict[str, list[_Event]] = defaultdict(list)
        for e in events:
            by_cat[e.cat].append(e)
        buckets: dict[str, list[_Event]] = {}
        memory: list[_Event] = []
        for cat, in_cat in by_cat.items():
            phs = list(map(_PH, in_cat))
            same = phs.count(phs[0]) == len(phs)  # as a rule; Counter is slower
            for ph, count in ({phs[0]: len(phs)} if same else Counter(phs)).items():
                group = (
                    in_cat
                    if count == len(in_cat)
                    else list(itertools.compress(in_cat, map(ph.__eq__, phs)))
                )
                self.trace.category_counts[f"{ph}/{cat}"] += count
                bucket = _CATEGORY_BUCKET.get(cat) if ph == "X" else None
                if bucket is not None and (bucket != "python" or self.include_python):
                    buckets.setdefault(bucket, []).extend(group)
                elif ph in ("i", "I"):
                    mem = [e for e in group if e.name == "[memory]"]
                    memory.extend(mem)
                    self.trace.events_skipped += count - len(mem)
                else:
                    self.trace.events_skipped += count
        gpu = [self._gpu(buckets.get(k, []), k) for k in ("kernel", "memcpy", "memset")]
        self._add("gpu_events", pa.concat_tables(gpu))
        calls = [self._runtime(buckets.get(k, []), k) for k in ("runtime", "driver", "sync")]
        self._add("runtime_calls", pa.concat_tables(calls))
        self._add("cpu_ops", self._cpu_ops(buckets.get("cpu_op", [])))
        ann = [
            self._annotations(buckets.get(bucket, []), kind)
            for bucket, kind in (("user_annotation", "cpu"), ("gpu_user_annotation", "gpu"))
        ]
        self._add("annotations", pa.concat_tables(ann))
        self._add("memory_events", self._memory(memory))
        if self.include_python:
            self._add("python_functions", self._python(buckets.get("python", [])))

    def _add(self, table: str, part: pa.Table) -> None:
        if part.num_rows:
            self.parts.setdefault(table, []).append((self.index, part))

    def _timed(
        self, events: list[_Event], label: str
    ) -> tuple[list[_Event], np.ndarray, np.ndarray]:
        """Keep events with a valid ts and dur; count the others."""
        ts, ok_ts = _exact_ns([e.ts for e in events])
        dur, ok_dur = _dur_ns([e.dur for e in events])
        ok = ok_ts & ok_dur
        if not ok.all():
            bad = np.flatnonzero(~ok)
            e = events[bad[0]]
            what = "ts" if not ok_ts[bad[0]] else "dur"
            self.trace.note_malformed(f"{label} {e.name[:60]!r}: invalid {what}", len(bad))
            keep = np.flatnonzero(ok)
            events = [events[i] for i in keep]
            ts, dur = ts[keep], dur[keep]
        return events, ts, dur

    def _gpu(self, events: list[_Event], kind: str) -> pa.Table:
        events, ts, dur = self._timed(events, kind)
        args = _decode_args(self.trace, events, _GpuArgs, kind)
        grid = [a.grid if a.grid and len(a.grid) == 3 else (None, None, None) for a in args]
        block = [a.block if a.block and len(a.block) == 3 else (None, None, None) for a in args]
        names = [e.name for e in events]
        if kind == "memcpy":
            parsed = [_MEMCPY.match(n) for n in names]
            mk = [m.group(1) if m else None for m in parsed]
            src = [m.group(2) if m else None for m in parsed]
            dst = [m.group(3) if m else None for m in parsed]
        else:
            mk = src = dst = [None] * len(events)
        stream = [
            a.stream if a.stream is not None else e.tid for a, e in zip(args, events, strict=True)
        ]
        device = [
            a.device if a.device is not None else e.pid for a, e in zip(args, events, strict=True)
        ]
        cols: dict[str, pa.Array[Any]] = {
            "kind": pa.array([kind] * len(events), pa.string()),
            "name": pa.array(names, pa.string()),
            "device": pa.array([_as_int(d) for d in device], pa.int32()),
            "stream": _ints(stream),
            "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
            "correlation": pa.array([a.correlation for a in args], pa.int64()),
            "external_id": pa.array([_ext(a) for a in args], pa.int64()),
            "grid_x": pa.array([g[0] for g in grid], pa.int32()),
            "grid_y": pa.array([g[1] for g in grid], pa.int32()),
            "grid_z": pa.array([g[2] for g in grid], pa.int32()),
            "block_x": pa.array([b[0] for b in block], pa.int32()),
            "block_y": pa.array([b[1] for b in block], pa.int32()),
            "block_z": pa.array([b[2] for b in block], pa.int32()),
            "registers_per_thread": pa.array([a.registers for a in args], pa.int32()),
            "shared_mem_bytes": pa.array([a.shared_memory for a in args], pa.int64()),
            "blocks_per_sm": pa.array([a.blocks_per_sm for a in args], pa.float64()),
            "warps_per_sm": pa.array([a.warps_per_sm for a in args], pa.float64()),
            "est_occupancy_pct": pa.array([a.occupancy for a in args], pa.float64()),
            "bytes": pa.array([a.bytes for a in args], pa.int64()),
            "memcpy_kind": pa.array(mk, pa.string()),
            "src_memory": pa.array(src, pa.string()),
            "dst_memory": pa.array(dst, pa.string()),
            "graph_id": pa.array([a.graph_id for a in args], pa.int64()),
            "graph_node_id": pa.array([a.graph_node_id for a in args], pa.int64()),
        }  # fmt: skip
        table = pa.table(cols)
        comm = [i for i, a in enumerate(args) if a.collective_name is not None]
        if comm:
            self._add(
                "collectives",
                _collectives(
                    "kernel",
                    [events[i] for i in comm],
                    [args[i] for i in comm],
                    ts[comm],
                    dur[comm],
                ),
            )
        return table

    def _runtime(self, events: list[_Event], category: str) -> pa.Table:
        events, ts, dur = self._timed(events, category)
        args = _decode_args(self.trace, events, _RuntimeArgs, category)
        names = [e.name for e in events]
        return pa.table({
            "category": pa.array([category] * len(events), pa.string()),
            "call_kind": pa.array([_call_kind(n, category) for n in names], pa.string()),
            "name": pa.array(names, pa.string()),
            "pid": _ints([e.pid for e in events]), "tid": _ints([e.tid for e in events]),
            "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
            "correlation": pa.array([a.correlation for a in args], pa.int64()),
            "external_id": pa.array([_ext(a) for a in args], pa.int64()),
            "cbid": pa.array([a.cbid for a in args], pa.int32()),
        })  # fmt: skip

    def _cpu_ops(self, events: list[_Event]) -> pa.Table:
        events, ts, dur = self._timed(events, "cpu_op")
        args = _decode_args(self.trace, events, _OpArgs, "cpu_op")
        comm = [i for i, a in enumerate(args) if a.collective_name is not None]
        if comm:
            self._add(
                "collectives",
                _collectives(
                    "cpu_op",
                    [events[i] for i in comm],
                    [args[i] for i in comm],
                    ts[comm],
                    dur[comm],
                ),
            )
        return pa.table({
            "name": pa.array([e.name for e in events], pa.string()),
            "pid": _ints([e.pid for e in events]), "tid": _ints([e.tid for e in events]),
            "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
            "external_id": pa.array([_ext(a) for a in args], pa.int64()),
            "record_function_id": pa.array([a.record_function_id for a in args], pa.int64()),
            "sequence_number": pa.array([a.sequence_number for a in args], pa.int64()),
            "fwd_thread_id": pa.array([a.fwd_thread_id for a in args], pa.int64()),
            "input_dims": _raw_text([a.input_dims for a in args]),
            "input_types": _raw_text([a.input_types for a in args]),
            "input_strides": _raw_text([a.input_strides for a in args]),
            "concrete_inputs": _raw_text([a.concrete_inputs for a in args]),
        })  # fmt: skip

    def _annotations(self, events: list[_Event], kind: str) -> pa.Table:
        events, ts, dur = self._timed(events, f"{kind} annotation")
        args = _decode_args(self.trace, events, _RuntimeArgs, "annotation")
        return pa.table({
            "kind": pa.array([kind] * len(events), pa.string()),
            "name": pa.array([e.name for e in events], pa.string()),
            "pid": _ints([e.pid for e in events]), "tid": _ints([e.tid for e in events]),
            "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
            "external_id": pa.array([_ext(a) for a in args], pa.int64()),
        })  # fmt: skip

    def _memory(self, events: list[_Event]) -> pa.Table:
        ts, ok = _exact_ns([e.ts for e in events])
        if not ok.all():
            self.trace.note_malformed("[memory]: invalid ts", int((~ok).sum()))
            keep = np.flatnonzero(ok)
            events, ts = [events[i] for i in keep], ts[keep]
        args = _decode_args(self.trace, events, _MemoryArgs, "[memory]")
        return pa.table({
            "ts_ns": pa.array(ts),
            "device_type": pa.array([a.device_type for a in args], pa.int32()),
            "device_id": pa.array([a.device_id for a in args], pa.int32()),
            "addr": pa.array([a.addr for a in args], pa.int64()),
            "bytes": pa.array([a.bytes for a in args], pa.int64()),
            "total_allocated_bytes": pa.array([a.total_allocated for a in args], pa.int64()),
            "total_reserved_bytes": pa.array([a.total_reserved for a in args], pa.int64()),
        })  # fmt: skip

    def _python(self, events: list[_Event]) -> pa.Table:
        events, ts, dur = self._timed(events, "python_function")
        args = _decode_args(self.trace, events, _PythonArgs, "python_function")
        return pa.table({
            "name": pa.array([e.name for e in events], pa.string()),
            "pid": _ints([e.pid for e in events]), "tid": _ints([e.tid for e in events]),
            "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
            "python_id": pa.array([a.python_id for a in args], pa.int64()),
            "python_parent_id": pa.array([a.python_parent_id for a in args], pa.int64()),
        })  # fmt: skip


def _ext(a: _GpuArgs | _RuntimeArgs | _OpArgs) -> int | None:
    return a.external_id if a.external_id is not None else a.external_id_legacy


def _call_kind(name: str, category: str) -> str:
    if category == "sync" or "Synchronize" in name or "EventQuery" in name:
        return "sync"
    if "GraphLaunch" in name:
        return "graph_launch"
    if "LaunchKernel" in name or "LaunchCooperativeKernel" in name or name == "cuLaunchKernelEx":
        return "launch"
    if "Memcpy" in name or "memcpy" in name:
        return "memcpy"
    if "Memset" in name or "memset" in name:
        return "memset"
    return "other"


def _collectives(
    source: str,
    events: list[_Event],
    args: Sequence[_GpuArgs | _OpArgs],
    ts: np.ndarray,
    dur: np.ndarray,
) -> pa.Table:
    return pa.table({
        "source": pa.array([source] * len(events), pa.string()),
        "name": pa.array([e.name for e in events], pa.string()),
        "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
        "external_id": pa.array([_ext(a) for a in args], pa.int64()),
        "correlation": pa.array([getattr(a, "correlation", None) for a in args], pa.int64()),
        "collective_name": pa.array([a.collective_name for a in args], pa.string()),
        "dtype": pa.array([a.dtype for a in args], pa.string()),
        "in_msg_nelems": pa.array([a.in_nelems for a in args], pa.int64()),
        "out_msg_nelems": pa.array([a.out_nelems for a in args], pa.int64()),
        "group_size": pa.array([a.group_size for a in args], pa.int32()),
        "pg_name": pa.array([a.pg_name for a in args], pa.string()),
        "pg_desc": pa.array([a.pg_desc for a in args], pa.string()),
        "pg_ranks": _raw_text([_unquote(a.pg_ranks) for a in args]),
        "in_split_size": _raw_text([_unquote(a.in_split) for a in args]),
        "out_split_size": _raw_text([_unquote(a.out_split) for a in args]),
    })  # fmt: skip


def _unquote(raw: msgspec.Raw) -> msgspec.Raw:
    """NCCL args hold lists as JSON strings ('[0, 1]'); store the list itself."""
    if not len(raw) or bytes(raw)[:1] != b'"':
        return raw
    return msgspec.Raw(msgspec.json.decode(raw).encode())


def _rank_of(path: Path, dist: dict[str, Any] | None) -> tuple[int, str]:
    if dist and isinstance(dist.get("rank"), int):
        return dist["rank"], "distributedInfo"
    m = _RANK_IN_NAME.search(path.name)
    if m:
        return int(m.group(1)), "file name"
    return 0, "default"


def parse_trace(
    path: Path,
    *,
    include_python: bool = False,
    progress: Progress | None = None,
    beside: Callable[[], None] | None = None,
) -> RankTrace:
    """Parse one trace file. Raises TraceFormatError if it is not a readable trace.

    `beside` is called once, as soon as the helper process (if any) is forked: the place to
    start threads that should run during the parse (forking while threads run is unsafe).
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
        slicing = _slicing(buf)
        if slicing is not None:
            with contextlib.suppress(_NotSliceable):
                return _parse_slices(path, buf, *slicing, include_python, progress, started)
        started()
        return _parse_whole(path, buf, include_python, progress)
    finally:
        if isinstance(buf, mmap.mmap):
            with contextlib.suppress(BufferError):  # a value still views the map; GC closes it
                buf.close()
        if gc_was_enabled:
            gc.enable()


class _NotSliceable(Exception):
    """A slice of the events array is not valid JSON: the cuts were wrong or the file is."""


def _new_trace(path: Path, meta: dict[str, Any]) -> RankTrace:
    dist = meta.pop("distributedInfo", None)
    dist = dist if isinstance(dist, dict) else None
    devices = meta.pop("deviceProperties", None) or []
    rank, rank_source = _rank_of(path, dist)
    world = dist.get("world_size") if dist else None
    return RankTrace(
        path=path, file_bytes=path.stat().st_size, rank=rank, rank_source=rank_source,
        world_size=world if isinstance(world, int) else None, metadata=meta,
        distributed_info=dist, devices=[d for d in devices if isinstance(d, dict)],
        tables={}, category_counts=Counter(),
    )  # fmt: skip


def _parse_slices(
    path: Path,
    buf: bytes | mmap.mmap,
    meta: dict[str, Any],
    cuts: list[int],
    include_python: bool,
    progress: Progress | None,
    started: Callable[[], None],
) -> RankTrace:
    """The fast path: the events array is cut into byte slices, each decoded on its own (no
    pass over the whole document first). For a big file a helper process decodes slices too;
    each process takes the next slice not yet taken, so neither waits on the other while
    there is work left, whatever else runs beside it."""
    trace = _new_trace(path, meta)
    helper = None
    take: Callable[[], int] = itertools.count().__next__
    if _worth_a_helper(buf) and len(cuts) > 2:
        take = _SharedCounter()
        helper = _Helper.start(path, buf, cuts, take, include_python)
    started()
    try:
        try:
            parts = _build(trace, _slices(buf, cuts, take, progress), include_python)
        except msgspec.DecodeError:
            raise _NotSliceable from None
        if helper:
            helper.merge_into(trace, parts)
        trace.tables = _in_order(parts)
        return trace
    finally:
        if helper:
            helper.close()


def _parse_whole(
    path: Path, buf: bytes | mmap.mmap, include_python: bool, progress: Progress | None
) -> RankTrace:
    """The general path: the whole document split into raw values, one process."""
    meta, raws = _top_level(path, buf)
    trace = _new_trace(path, meta)
    total = len(raws)

    def chunks() -> Iterator[tuple[int, bytearray]]:
        for index, at in enumerate(range(0, total, CHUNK_EVENTS)):
            yield index, _as_array(raws[at : at + CHUNK_EVENTS])
            if progress is not None:
                progress(min(at + CHUNK_EVENTS, total), total)

    trace.tables = _in_order(_build(trace, chunks(), include_python))
    return trace


def _slices(
    buf: bytes | mmap.mmap, cuts: list[int], take: Callable[[], int], progress: Progress | None
) -> Iterator[tuple[int, bytearray]]:
    """The slices this process takes, with their index (they are handed out in order, so
    the index taken tells how far the whole parse is)."""
    while (index := take()) < len(cuts) - 1:
        yield index, _slice(buf, cuts[index], cuts[index + 1])
        if progress is not None:
            progress(cuts[index + 1] - cuts[0], cuts[-1] - cuts[0])


def _build(
    trace: RankTrace, chunks: Iterable[tuple[int, bytearray]], include_python: bool
) -> _Parts:
    builder = _Builder(trace, include_python)
    for index, chunk in chunks:
        builder.add_chunk(index, _decode_chunk(trace, chunk))
    return builder.parts


def _in_order(parts: _Parts) -> dict[str, pa.Table]:
    """Each table's parts in chunk order: the rows come out as one process would give them."""
    return {t: pa.concat_tables([p for _, p in sorted(ps, key=_FIRST)]) for t, ps in parts.items()}


def _worth_a_helper(buf: bytes | mmap.mmap) -> bool:
    return len(buf) >= PARALLEL_MIN_BYTES and (os.cpu_count() or 1) >= 2 and hasattr(os, "fork")


class _SharedCounter:
    """0, 1, 2, ... across this process and the processes it forks."""

    def __init__(self) -> None:
        self.value = multiprocessing.get_context("fork").Value("q", 0)

    def __call__(self) -> int:
        with self.value.get_lock():
            index: int = self.value.value
            self.value.value = index + 1
        return index


class _Helper:
    """A forked child that decodes slices of a big trace beside this process.

    Decoding holds the GIL, so the second core needs a second process. It is forked once the
    events array is cut (fork shares the buffer without a copy). The child's Arrow tables
    come back as IPC files in a folder in shared memory that the parent maps (a pipe would
    copy them twice and make the parent wait on the transfer); the folder is removed
    whatever happens.
    """

    def __init__(self, proc: Any, recv: Any, folder: str) -> None:
        self.proc, self.recv, self.folder = proc, recv, folder

    @classmethod
    def start(
        cls,
        path: Path,
        buf: bytes | mmap.mmap,
        cuts: list[int],
        take: _SharedCounter,
        include_python: bool,
    ) -> _Helper:
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        folder = tempfile.mkdtemp(prefix="trace-parse-", dir=shm)
        ctx = multiprocessing.get_context("fork")
        recv, send = ctx.Pipe(duplex=False)
        args = (send, path, buf, cuts, take, include_python, folder)
        proc = ctx.Process(target=_child, args=args, daemon=True)
        proc.start()
        send.close()
        return cls(proc, recv, folder)

    def merge_into(self, trace: RankTrace, parts: _Parts) -> None:
        status, payload = self.recv.recv()
        if status == "not sliceable":
            raise _NotSliceable
        if status != "ok":
            raise RuntimeError(f"{trace.path}: parse helper failed: {payload}")
        files, counts, total, skipped, malformed, examples = payload
        for table, (file, sizes) in files.items():
            # Memory-mapped Arrow IPC: the child's tables arrive without a copy.
            with pa.memory_map(file) as source:
                whole = pa.ipc.open_file(source).read_all()
            at = 0
            for index, rows in sizes:
                parts.setdefault(table, []).append((index, whole.slice(at, rows)))
                at += rows
        trace.category_counts.update(counts)
        trace.events_total += total
        trace.events_skipped += skipped
        trace.malformed += malformed
        trace.malformed_examples = (trace.malformed_examples + examples)[:MAX_EXAMPLES]

    def close(self) -> None:
        self.recv.close()
        if self.proc.is_alive():  # the parent failed first (e.g. not a trace): stop the child
            self.proc.terminate()
        self.proc.join()
        shutil.rmtree(self.folder, ignore_errors=True)  # mapped tables stay readable


def _child(
    send: Any, path: Path, buf: bytes | mmap.mmap, cuts: list[int], take: _SharedCounter,
    include_python: bool, folder: str,
) -> None:  # fmt: skip
    trace = _new_trace(path, {})
    try:
        files = {}
        for table, parts in _build(trace, _slices(buf, cuts, take, None), include_python).items():
            file = os.path.join(folder, f"{table}.arrow")
            whole = pa.concat_tables([p for _, p in parts])
            with pa.OSFile(file, "wb") as sink, pa.ipc.new_file(sink, whole.schema) as w:
                w.write_table(whole)
            files[table] = (file, [(index, p.num_rows) for index, p in parts])
        result = (files, trace.category_counts, trace.events_total, trace.events_skipped,
                  trace.malformed, trace.malformed_examples)  # fmt: skip
        send.send(("ok", result))
    except msgspec.DecodeError:
        with contextlib.suppress(OSError):
            send.send(("not sliceable", None))
    except BaseException as e:  # the parent owns the error message
        with contextlib.suppress(OSError):
            send.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        send.close()


def _address(raw: msgspec.Raw) -> int:
    return int(np.frombuffer(raw, dtype=np.uint8).ctypes.data)


def _as_array(raws: list[msgspec.Raw]) -> bytearray:
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


def _decode_chunk(trace: RankTrace, chunk: bytearray) -> list[_Event]:
    """A JSON array of events; an invalid event is counted and left out. Raises
    msgspec.DecodeError if the chunk is not a JSON array."""
    try:
        events = _EVENTS.decode(chunk)
    except msgspec.ValidationError:
        pass
    else:
        trace.events_total += len(events)
        return events
    raws = _RAWS.decode(chunk)
    trace.events_total += len(raws)
    out: list[_Event] = []
    for raw in raws:
        try:
            out.append(_EVENT.decode(raw))
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            trace.note_malformed(f"event {bytes(raw)[:80]!r}: {_short(err)}")
    return out


def metadata_json(value: Any) -> str:
    """Compact JSON for metadata columns."""
    return json.dumps(value, separators=(",", ":"), default=str)
