"""Operators, kernels and memory counted from a trace's raw JSON with the standard library.

Independent of the product's parser, its nesting (a plain stack per thread here, vectorised
searches there) and its SQL: what the Operators, Kernels and Memory pages show is checked
against these numbers.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
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
