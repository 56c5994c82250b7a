"""Operators, kernels and memory counted from a trace's raw JSON with the standard library.

Independent of the product's parser, its nesting (a plain stack per thread here, vectorised
searches there) and its SQL: what the Operators, Kernels and Memory pages show is checked
against these numbers.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from helpers.raw_trace import (
    CPU_OP_CATS,
    KERNEL_CATS,
    LAUNCH_CATS,
    MEMCPY_CATS,
    MEMSET_CATS,
    load_trace_json,
    trace_events,
)

GPU_CATS = KERNEL_CATS + MEMCPY_CATS + MEMSET_CATS


def _ns(v: Any) -> int:
    return int(Decimal(v) * 1000)


@dataclass
class RawOps:
    """Per (op name, Input Dims as canonical JSON): calls, CPU total and self ns, and the GPU
    ns of the activities each call launched itself (its External id, else its launch call's)."""

    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    cpu_total_ns: Counter[tuple[str, str]] = field(default_factory=Counter)
    cpu_self_ns: Counter[tuple[str, str]] = field(default_factory=Counter)
    gpu_ns: Counter[tuple[str, str]] = field(default_factory=Counter)
    # kernel name -> (count, total ns) of the GPU activities launched per op key
    kernels: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)
    kernel_ns: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    # kernel name -> launches per (grid, block) as the store writes them ('[x, y, z]')
    kernel_configs: dict[str, Counter[tuple[str, str]]] = field(
        default_factory=lambda: defaultdict(Counter)
    )


def dims_key(dims: Any) -> str:
    """Input Dims as the store keeps them (JSON text); '' when absent."""
    return "" if dims is None else json.dumps(dims, separators=(", ", ": "))


def raw_ops(path: Path) -> RawOps:
    events = [e for e in trace_events(load_trace_json(path)) if isinstance(e, dict)]
    out = RawOps()
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") in CPU_OP_CATS]
    ops = [e for e in ops if not str(e.get("name")).startswith("ProfilerStep#")]
    by_ext: dict[int, tuple[str, str]] = {}
    for e in ops:
        key = (str(e["name"]), dims_key((e.get("args") or {}).get("Input Dims")))
        out.calls[key] += 1
        out.cpu_total_ns[key] += _ns(e["dur"])
        ext = (e.get("args") or {}).get("External id")
        if ext is not None:
            by_ext.setdefault(int(ext), key)
    # CPU self time: a stack of open slices per thread; annotations nest like ops.
    nested = [
        e
        for e in events
        if e.get("ph") == "X" and e.get("cat") in (*CPU_OP_CATS, "user_annotation")
    ]
    by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for e in nested:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    for slices in by_thread.values():
        slices.sort(key=lambda e: (_ns(e["ts"]), -_ns(e["dur"])))
        stack: list[tuple[int, dict[str, Any], list[int]]] = []
        for e in [*slices, None]:
            ts = _ns(e["ts"]) if e is not None else None
            while stack and (ts is None or stack[-1][0] <= ts):
                _, done, child = stack.pop()
                if done.get("cat") in CPU_OP_CATS and not done["name"].startswith("ProfilerStep#"):
                    key = (str(done["name"]), dims_key((done.get("args") or {}).get("Input Dims")))
                    out.cpu_self_ns[key] += max(_ns(done["dur"]) - child[0], 0)
                if stack:
                    stack[-1][2][0] += _ns(done["dur"])
            if e is not None:
                stack.append((ts + max(_ns(e["dur"]), 1), e, [0]))
    # GPU time: each activity to its op, by its own External id, else its launch call's.
    launch_ext = {
        (e.get("args") or {}).get("correlation"): (e.get("args") or {}).get("External id")
        for e in events
        if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS
    }
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in GPU_CATS:
            continue
        args = e.get("args") or {}
        if e.get("cat") in KERNEL_CATS:
            out.kernel_ns[str(e["name"])].append(_ns(e["dur"]))
            config = (dims_key(args.get("grid")), dims_key(args.get("block")))
            out.kernel_configs[str(e["name"])][config] += 1
        ext = args.get("External id")
        if ext is None or int(ext) not in by_ext:
            ext = launch_ext.get(args.get("correlation"))
        key = by_ext.get(int(ext)) if ext is not None else None
        if key is None:
            continue
        out.gpu_ns[key] += _ns(e["dur"])
        out.kernels.setdefault(key, Counter())[str(e["name"])] += 1
    return out


@dataclass
class RawMemory:
    """One device's allocator events ('[memory]' instant events) counted from the raw JSON."""

    allocations: int
    frees: int
    first_ns: int  # the first allocator event of any device
    peak_allocated: int
    peak_ns: int  # first event at the allocated peak
    peak_reserved: int
    # the allocations alive at peak_ns by the innermost op around them (aten::empty* skipped)
    alive_by_op: Counter[str | None]


def raw_memory(path: Path, device_type: int = 1, device_id: int = 0) -> RawMemory:
    events = [e for e in trace_events(load_trace_json(path)) if isinstance(e, dict)]
    every = [e for e in events if e.get("name") == "[memory]"]
    mem = [
        e
        for e in every
        if (e.get("args") or {}).get("Device Type") == device_type
        and (e.get("args") or {}).get("Device Id") == device_id
    ]
    mem.sort(key=lambda e: _ns(e["ts"]))
    peak = max(mem, key=lambda e: e["args"]["Total Allocated"])
    top = peak["args"]["Total Allocated"]
    peak_ns = min(_ns(e["ts"]) for e in mem if e["args"]["Total Allocated"] == top)
    live: dict[int, tuple[int, int]] = {}  # addr -> (ts, bytes) of its open allocation
    for e in sorted(mem, key=lambda e: (_ns(e["ts"]), e["args"]["Bytes"])):
        if _ns(e["ts"]) > peak_ns:
            break
        addr, size = e["args"]["Addr"], e["args"]["Bytes"]
        if size > 0:
            live[addr] = (_ns(e["ts"]), size)
        else:
            live.pop(addr, None)
    ops = [
        (_ns(e["ts"]), _ns(e["ts"]) + max(_ns(e["dur"]), 1), str(e["name"]))
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") in CPU_OP_CATS
        and not str(e["name"]).startswith(("ProfilerStep#", "aten::empty"))
    ]
    ops.sort()
    starts = [o[0] for o in ops]
    by_op: Counter[str | None] = Counter()
    for ts, size in live.values():
        # the latest-starting op that contains ts: walk back from the last start <= ts
        i = bisect.bisect_right(starts, ts) - 1
        while i >= 0 and not ops[i][1] > ts:
            i -= 1
        by_op[ops[i][2] if i >= 0 else None] += size
    return RawMemory(
        allocations=sum(1 for e in mem if e["args"]["Bytes"] > 0),
        frees=sum(1 for e in mem if e["args"]["Bytes"] < 0),
        first_ns=min(_ns(e["ts"]) for e in every),
        peak_allocated=peak["args"]["Total Allocated"],
        peak_ns=peak_ns,
        peak_reserved=max(e["args"]["Total Reserved"] for e in mem),
        alive_by_op=by_op,
    )


@dataclass
class RawLink:
    """A GPU activity's launch call and op, found in the raw JSON by correlation and External
    id."""

    kernel: str
    launch: str | None
    op: str | None
    op_dims: str


def raw_link(path: Path, correlation: int) -> RawLink:
    events = [e for e in trace_events(load_trace_json(path)) if isinstance(e, dict)]
    xs = [e for e in events if e.get("ph") == "X"]
    kernel = next(
        e for e in xs
        if e.get("cat") in GPU_CATS and (e.get("args") or {}).get("correlation") == correlation
    )  # fmt: skip
    launch = next(
        (e for e in xs if e.get("cat") in LAUNCH_CATS
         and (e.get("args") or {}).get("correlation") == correlation),
        None,
    )  # fmt: skip
    ext = (kernel.get("args") or {}).get("External id")
    if ext is None and launch is not None:
        ext = (launch.get("args") or {}).get("External id")
    op = next(
        (e for e in xs
         if e.get("cat") in CPU_OP_CATS and (e.get("args") or {}).get("External id") == ext),
        None,
    )  # fmt: skip
    return RawLink(
        kernel=str(kernel["name"]),
        launch=None if launch is None else str(launch["name"]),
        op=None if op is None else str(op["name"]),
        op_dims="" if op is None else dims_key((op.get("args") or {}).get("Input Dims")),
    )


def raw_name_matches(path: Path, needle: str) -> int:
    """Slices (GPU activities, CPU ops, annotations, runtime calls, python functions) whose
    name contains `needle`, any case: what the timeline's search counts."""
    cats = (*GPU_CATS, *CPU_OP_CATS, *LAUNCH_CATS, "cuda_sync", "user_annotation")
    events = [e for e in trace_events(load_trace_json(path)) if isinstance(e, dict)]
    return sum(
        1
        for e in events
        if e.get("ph") == "X" and e.get("cat") in cats and needle.lower() in str(e["name"]).lower()
    )


@cache
def raw_op_kernels(path: Path) -> dict[int, Counter[str]]:
    """Per op call (External id), the GPU activities it launched, by name: its External id on
    the activity, else on the activity's launch call."""
    events = [e for e in trace_events(load_trace_json(path)) if isinstance(e, dict)]
    xs = [e for e in events if e.get("ph") == "X"]
    launch_ext = {
        (e.get("args") or {}).get("correlation"): (e.get("args") or {}).get("External id")
        for e in xs
        if e.get("cat") in LAUNCH_CATS
    }
    out: dict[int, Counter[str]] = defaultdict(Counter)
    for e in xs:
        if e.get("cat") not in GPU_CATS:
            continue
        args = e.get("args") or {}
        ext = args.get("External id")
        if ext is None:
            ext = launch_ext.get(args.get("correlation"))
        if ext is not None:
            out[int(ext)][str(e["name"])] += 1
    return dict(out)
