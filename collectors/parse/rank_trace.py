"""`RankTrace`: what one parsed trace file holds, and which rank the file is."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

MAX_EXAMPLES = 5
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
I32_RANGE = (-(2**31), 2**31 - 1)
I64_RANGE = (-(2**63), 2**63 - 1)
# deviceProperties keys stored in 32-bit columns (data.schema "devices"); the rest are 64-bit.
_DEVICE_I32 = ("id", "computeMajor", "computeMinor", "numSms", "maxThreadsPerBlock",
               "maxThreadsPerMultiprocessor", "regsPerBlock", "regsPerMultiprocessor",
               "warpSize")  # fmt: skip


@dataclass
class RankTrace:
    """One parsed trace file: metadata plus Arrow tables (no run_id/rank columns yet)."""

    path: Path
    file_bytes: int
    rank: int
    rank_source: str
    world_size: int | None
    base_time_ns: int | None  # baseTimeNanoseconds, when it is an int64
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


def new_trace(path: Path, meta: dict[str, Any], notes: list[str] | None = None) -> RankTrace:
    """The trace of one file before its events: its metadata (the top-level keys), checked.
    `notes` are problems already found in the metadata; an integer out of its column's
    range is left out and noted too, each as one malformed event."""
    problems = list(notes or [])
    dist = meta.pop("distributedInfo", None)
    dist = dist if isinstance(dist, dict) else None
    devices = meta.pop("deviceProperties", None)
    devices = devices if isinstance(devices, list) else []  # a scalar has no devices to list
    devices = [_checked_device(d, problems) for d in devices if isinstance(d, dict)]
    rank, rank_source = _rank_of(path, dist, problems)
    world = _checked(dist.get("world_size") if dist else None, "world_size", I32_RANGE, problems)
    base = _checked(meta.get("baseTimeNanoseconds"), "baseTimeNanoseconds", I64_RANGE, problems)
    trace = RankTrace(
        path=path, file_bytes=path.stat().st_size, rank=rank, rank_source=rank_source,
        world_size=world, base_time_ns=base, metadata=meta, distributed_info=dist,
        devices=devices, tables={}, category_counts=Counter(),
    )  # fmt: skip
    for problem in problems:
        trace.note_malformed(problem)
    return trace


def _checked(value: Any, what: str, bounds: tuple[int, int], problems: list[str]) -> int | None:
    """An int metadata value within `bounds`; anything else is None (out of range: noted)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if not bounds[0] <= value <= bounds[1]:
        problems.append(f"metadata {what}={str(value)[:40]}: out of range, left out")
        return None
    return value


def _checked_device(device: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    out = dict(device)
    for key, value in device.items():
        bounds = I32_RANGE if key in _DEVICE_I32 else I64_RANGE
        if isinstance(value, int) and _checked(value, f"deviceProperties.{key}", bounds,
                                               problems) is None:  # fmt: skip
            out[key] = None
    return out


def _rank_of(path: Path, dist: dict[str, Any] | None, problems: list[str]) -> tuple[int, str]:
    if dist and _checked(dist.get("rank"), "rank", I32_RANGE, problems) is not None:
        return dist["rank"], "distributedInfo"
    m = _RANK_IN_NAME.search(path.name)
    if m and int(m.group(1)) <= I32_RANGE[1]:
        return int(m.group(1)), "file name"
    return 0, "default"
