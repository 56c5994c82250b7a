"""An independent raw-JSON counter: what a trace file holds, read with the standard library.

It reads a trace with gzip + json only (numbers as decimal.Decimal), so what it finds owes
nothing to the product's parser (msgspec + Arrow).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from helpers.traces import TraceRun

KERNEL_CATS = ("kernel", "Kernel")
MEMCPY_CATS = ("gpu_memcpy", "Memcpy")
MEMSET_CATS = ("gpu_memset", "Memset")
# Host-side API calls that can launch GPU work (cuda_sync events launch nothing).
LAUNCH_CATS = ("cuda_runtime", "Runtime", "cuda_driver")
# CPU-side categories in which Kineto writes its ProfilerStep#N ranges.
CPU_STEP_CATS = ("user_annotation", "cpu_op", "Operator")
CPU_OP_CATS = ("cpu_op", "Operator")
_STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


def load_trace_json(path: Path) -> Any:
    """The trace document, numbers with a fraction as exact Decimals."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        return json.load(fh, parse_float=Decimal)


def trace_events(doc: Any) -> list[Any]:
    return doc["traceEvents"] if isinstance(doc, dict) else doc


@dataclass
class RawRank:
    """What one trace file holds, counted from its JSON with the standard library."""

    file_name: str
    rank: int
    events: int = 0
    kernels: int = 0
    kernel_dur_ns: int = 0
    kernel_ts_min_ns: int | None = None
    kernel_ts_sum_ns: int = 0
    memcpy: int = 0
    memcpy_dur_ns: int = 0
    memset: int = 0
    steps: set[int] = field(default_factory=set)
    # kernels per name of the (earliest) runtime/driver call sharing their correlation id;
    # None counts kernels with no such call
    kernel_launch_api: Counter[str | None] = field(default_factory=Counter)
    record_shapes: bool = False
    # canonical JSON of each CPU op's "Input Dims" value, with multiplicity
    input_dims: Counter[str] = field(default_factory=Counter)
    device_names: list[str] = field(default_factory=list)


def _ns(v: Any) -> int:
    """µs (int or Decimal, as written) -> integer ns, exactly; refuses sub-ns values."""
    assert isinstance(v, int | Decimal), v
    assert not isinstance(v, bool), v
    ns = Decimal(v) * 1000
    assert ns == ns.to_integral_value(), f"{v} µs is not a whole number of ns"
    return int(ns)


def raw_rank(path: Path) -> RawRank:
    doc = load_trace_json(path)
    events = trace_events(doc)
    meta = doc if isinstance(doc, dict) else {}
    dist = meta.get("distributedInfo")
    if isinstance(dist, dict) and isinstance(dist.get("rank"), int):
        rank = dist["rank"]
    elif m := _RANK_IN_NAME.search(path.name):
        rank = int(m.group(1))
    else:
        rank = 0
    out = RawRank(path.name, rank, len(events), record_shapes=bool(meta.get("record_shapes")))
    out.device_names = [d.get("name") for d in meta.get("deviceProperties") or []]
    launches: dict[int, tuple[int, str]] = {}  # correlation -> (ts_ns, name) of earliest call
    kernel_corr: list[Any] = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        args = e.get("args") or {}
        if cat in KERNEL_CATS:
            out.kernels += 1
            out.kernel_dur_ns += _ns(e["dur"])
            ts = _ns(e["ts"])
            out.kernel_ts_sum_ns += ts
            out.kernel_ts_min_ns = (
                ts if out.kernel_ts_min_ns is None else min(out.kernel_ts_min_ns, ts)
            )
            kernel_corr.append(args.get("correlation"))
        elif cat in MEMCPY_CATS:
            out.memcpy += 1
            out.memcpy_dur_ns += _ns(e["dur"])
        elif cat in MEMSET_CATS:
            out.memset += 1
        elif cat in LAUNCH_CATS and args.get("correlation") is not None:
            c, ts = args["correlation"], _ns(e["ts"])
            if c not in launches or (ts, e["name"]) < launches[c]:
                launches[c] = (ts, e["name"])
        if cat in CPU_STEP_CATS and (m := _STEP_NAME.match(str(e.get("name")))):
            out.steps.add(int(m.group(1)))
        if cat in CPU_OP_CATS and "Input Dims" in args:
            out.input_dims[json.dumps(args["Input Dims"], default=str)] += 1
    for c in kernel_corr:
        out.kernel_launch_api[launches[c][1] if c in launches else None] += 1
    return out


def raw_run(paths: tuple[Path, ...]) -> list[RawRank]:
    """Raw counts per rank file of one run (a folder = its trace files)."""
    return [raw_rank(f) for f in TraceRun("", paths).files]
