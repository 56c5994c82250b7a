"""What killed writers leave in a lake, removed by the next ingest or agent start.

A `kill -9` during an ingest leaves its staging folder (`_staging/<id>`, with its owner in
`.owner`), its claim (`_locks/<hash>`), temporary files (`.<name>.<pid>.<start>.<tid>.tmp`)
and, when it came during the commit, the table folders already renamed into place
(`<table>/run_id=<id>`) of a run whose `runs` row never landed: invisible, and never
removed before. Each is removed only when its owner is dead (data.owner): an orphan table
folder counts as a leftover only while no live staging folder of that run exists, and the
commit renames `runs` last and removes its staging folder after, so a run being committed
right now is never touched.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from data.lake_locks import remove_stale_claims
from data.owner import owner_of_tag, read_owner
from data.schema import STREAM_TABLES, TABLES

_TMP = re.compile(r"\..+\.(\d+\.\d+)\.\d+\.tmp")  # data.lake.tmp_path's names
_PARTITION = "run_id="


@dataclass(frozen=True, slots=True)
class Swept:
    """What one sweep removed."""

    staging: int = 0
    orphans: int = 0
    claims: int = 0
    temporary: int = 0

    def total(self) -> int:
        return self.staging + self.orphans + self.claims + self.temporary


def sweep_lake(root: Path) -> Swept:
    """Remove what dead writers left in the lake at `root`; what was removed."""
    staging, locks = root / "_staging", root / "_locks"
    live: set[str] = set()
    dead_staging = 0
    for folder in _entries(staging):
        if folder.name.startswith("."):
            continue  # being created (a temporary name): the temporary files' sweep
        owner = read_owner(folder / ".owner")
        if owner is not None and owner.alive():
            live.add(folder.name)
        else:
            shutil.rmtree(folder, ignore_errors=True)
            dead_staging += 1
    orphans = 0
    for table in TABLES:
        for part in _entries(root / table):
            run_id = part.name.removeprefix(_PARTITION)
            if not part.name.startswith(_PARTITION) or run_id == "_empty" or run_id in live:
                continue
            # In this order: a commit renames `runs` into place before it removes its staging
            # folder, so a run with neither is not being committed.
            if (staging / run_id).exists() or (root / "runs" / part.name).exists():
                continue
            shutil.rmtree(part, ignore_errors=True)
            orphans += 1
    claims = remove_stale_claims(locks) if locks.is_dir() else 0
    temporary = sum(_remove_dead_tmp(d) for d in _tmp_folders(root))
    return Swept(dead_staging, orphans, claims, temporary)


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def _tmp_folders(root: Path) -> list[Path]:
    """Where data.lake writes temporary files: the root, _staging, _locks, every table's
    partitions."""
    out = [root, root / "_staging", root / "_locks"]
    for table in (*TABLES, *STREAM_TABLES):
        out += [p for p in _entries(root / table) if p.is_dir()]
    return out


def _remove_dead_tmp(folder: Path) -> int:
    removed = 0
    for path in _entries(folder):
        m = _TMP.fullmatch(path.name)
        owner = owner_of_tag(m.group(1)) if m else None
        if owner is not None and not owner.alive():
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed += 1
    return removed
