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


def new_trace(path: Path, meta: dict[str, Any]) -> RankTrace:
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


def _rank_of(path: Path, dist: dict[str, Any] | None) -> tuple[int, str]:
    if dist and isinstance(dist.get("rank"), int):
        return dist["rank"], "distributedInfo"
    m = _RANK_IN_NAME.search(path.name)
    if m:
        return int(m.group(1)), "file name"
    return 0, "default"
