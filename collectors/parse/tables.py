"""The Arrow tables of a trace: one builder fills them category by category, chunk by chunk."""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from operator import attrgetter, itemgetter
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from collectors.parse.columns import dur_ns, exact_ns, ints, raw_text
from collectors.parse.events import (
    Event,
    GpuArgs,
    MemoryArgs,
    OpArgs,
    PythonArgs,
    RuntimeArgs,
    decode_args,
    decode_chunk,
)
from collectors.parse.rank_trace import RankTrace

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

Parts = dict[str, list[tuple[int, pa.Table]]]  # table -> (chunk index, rows)
_PH, _FIRST = attrgetter("ph"), itemgetter(0)
_MEMCPY = re.compile(r"Memcpy (\w+)(?: \((\w+) -> (\w+)\))?")


class _Builder:
    """Accumulates one file's events, bucket by bucket, chunk by chunk."""

    def __init__(self, trace: RankTrace, include_python: bool) -> None:
        self.trace = trace
        self.include_python = include_python
        self.parts: Parts = {}
        self.index = 0

    def add_chunk(self, index: int, events: list[Event]) -> None:
        self.index = index
        # Grouped on `cat` alone: a (ph, cat) key per event made grouping twice as slow.
        by_cat: defaultdict[str, list[Event]] = defaultdict(list)
        for e in events:
            by_cat[e.cat].append(e)
        buckets: dict[str, list[Event]] = {}
        memory: list[Event] = []
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

    def _timed(self, events: list[Event], label: str) -> tuple[list[Event], np.ndarray, np.ndarray]:
        """Keep events with a valid ts and dur; count the others."""
        ts, ok_ts = exact_ns([e.ts for e in events])
        dur, ok_dur = dur_ns([e.dur for e in events])
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

    def _ints(self, values: list[Any], label: str, what: str, bits: int = 64) -> pa.Array[Any]:
        """An integer column; a value out of its range is NULL and counted."""
        column, bad = ints(values, bits)
        if bad:
            self.trace.note_malformed(f"{label}: {what} out of the {bits}-bit range", bad)
        return column

    def _pid_tid(self, events: list[Event], label: str) -> dict[str, pa.Array[Any]]:
        return {
            "pid": self._ints([e.pid for e in events], label, "pid"),
            "tid": self._ints([e.tid for e in events], label, "tid"),
        }

    def _gpu(self, events: list[Event], kind: str) -> pa.Table:
        events, ts, dur = self._timed(events, kind)
        args = decode_args(self.trace, events, GpuArgs, kind)
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
            "device": self._ints(device, kind, "device", 32),
            "stream": self._ints(stream, kind, "stream"),
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

    def _runtime(self, events: list[Event], category: str) -> pa.Table:
        events, ts, dur = self._timed(events, category)
        args = decode_args(self.trace, events, RuntimeArgs, category)
        names = [e.name for e in events]
        return pa.table({
            "category": pa.array([category] * len(events), pa.string()),
            "call_kind": pa.array([_call_kind(n, category) for n in names], pa.string()),
            "name": pa.array(names, pa.string()),
            **self._pid_tid(events, category),
            "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
            "correlation": pa.array([a.correlation for a in args], pa.int64()),
            "external_id": pa.array([_ext(a) for a in args], pa.int64()),
            "cbid": pa.array([a.cbid for a in args], pa.int32()),
        })  # fmt: skip

    def _cpu_ops(self, events: list[Event]) -> pa.Table:
        events, ts, dur = self._timed(events, "cpu_op")
        args = decode_args(self.trace, events, OpArgs, "cpu_op")
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
            **self._pid_tid(events, "cpu_op"),
            "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
            "external_id": pa.array([_ext(a) for a in args], pa.int64()),
            "record_function_id": pa.array([a.record_function_id for a in args], pa.int64()),
            "sequence_number": pa.array([a.sequence_number for a in args], pa.int64()),
            "fwd_thread_id": pa.array([a.fwd_thread_id for a in args], pa.int64()),
            "input_dims": raw_text([a.input_dims for a in args]),
            "input_types": raw_text([a.input_types for a in args]),
            "input_strides": raw_text([a.input_strides for a in args]),
            "concrete_inputs": raw_text([a.concrete_inputs for a in args]),
        })  # fmt: skip

    def _annotations(self, events: list[Event], kind: str) -> pa.Table:
        events, ts, dur = self._timed(events, f"{kind} annotation")
        args = decode_args(self.trace, events, RuntimeArgs, "annotation")
        return pa.table({
            "kind": pa.array([kind] * len(events), pa.string()),
            "name": pa.array([e.name for e in events], pa.string()),
            **self._pid_tid(events, f"{kind} annotation"),
            "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
            "external_id": pa.array([_ext(a) for a in args], pa.int64()),
        })  # fmt: skip

    def _memory(self, events: list[Event]) -> pa.Table:
        ts, ok = exact_ns([e.ts for e in events])
        if not ok.all():
            self.trace.note_malformed("[memory]: invalid ts", int((~ok).sum()))
            keep = np.flatnonzero(ok)
            events, ts = [events[i] for i in keep], ts[keep]
        args = decode_args(self.trace, events, MemoryArgs, "[memory]")
        return pa.table({
            "ts_ns": pa.array(ts),
            "device_type": pa.array([a.device_type for a in args], pa.int32()),
            "device_id": pa.array([a.device_id for a in args], pa.int32()),
            "addr": pa.array([a.addr for a in args], pa.int64()),
            "bytes": pa.array([a.bytes for a in args], pa.int64()),
            "total_allocated_bytes": pa.array([a.total_allocated for a in args], pa.int64()),
            "total_reserved_bytes": pa.array([a.total_reserved for a in args], pa.int64()),
        })  # fmt: skip

    def _python(self, events: list[Event]) -> pa.Table:
        events, ts, dur = self._timed(events, "python_function")
        args = decode_args(self.trace, events, PythonArgs, "python_function")
        return pa.table({
            "name": pa.array([e.name for e in events], pa.string()),
            **self._pid_tid(events, "python_function"),
            "ts_ns": pa.array(ts), "dur_ns": pa.array(dur),
            "python_id": pa.array([a.python_id for a in args], pa.int64()),
            "python_parent_id": pa.array([a.python_parent_id for a in args], pa.int64()),
        })  # fmt: skip


def _ext(a: GpuArgs | RuntimeArgs | OpArgs) -> int | None:
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
    events: list[Event],
    args: Sequence[GpuArgs | OpArgs],
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
        "pg_ranks": raw_text([_unquote(a.pg_ranks) for a in args]),
        "in_split_size": raw_text([_unquote(a.in_split) for a in args]),
        "out_split_size": raw_text([_unquote(a.out_split) for a in args]),
    })  # fmt: skip


def _unquote(raw: msgspec.Raw) -> msgspec.Raw:
    """NCCL args hold lists as JSON strings ('[0, 1]'); store the list itself."""
    if not len(raw) or bytes(raw)[:1] != b'"':
        return raw
    return msgspec.Raw(msgspec.json.decode(raw).encode())


def build(trace: RankTrace, chunks: Iterable[tuple[int, bytearray]], include_python: bool) -> Parts:
    builder = _Builder(trace, include_python)
    for index, chunk in chunks:
        builder.add_chunk(index, decode_chunk(trace, chunk))
    return builder.parts


def in_order(parts: Parts) -> dict[str, pa.Table]:
    """Each table's parts in chunk order: the rows come out as one process would give them."""
    return {t: pa.concat_tables([p for _, p in sorted(ps, key=_FIRST)]) for t, ps in parts.items()}
