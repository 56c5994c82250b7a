"""Merging a stream table's small segments into one, so readers open few files.

An agent writes one segment a second (86 400 a day per host); DuckDB opens every file a glob
matches, so a day of one-second files would take minutes to read. The agent merges its own
segments as it goes (60 one-second files into a minute file, 60 of those into an hour file).

The merged file is renamed into place before the small ones are removed, so a reader never
misses rows; a query that lists files in that ~10 ms window may count a minute twice
(averages and maxima unchanged) or find a listed file gone, which data.reads_telemetry
retries (docs/decisions.md D8). A merge first writes a manifest naming its output and inputs,
so a merge cut short by `kill -9` (output in place, inputs not yet removed) is finished by
repair_merges when the agent starts again, instead of leaving those rows in the table twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from data.lake import Lake


def compact_segments(lake: Lake, table: str, host: str, paths: Sequence[Path]) -> Path:
    """Write the rows of `paths` (segments of one table and host) as one segment, then
    remove them; returns the new segment's path."""
    # ParquetFile, not read_table: the latter would add `host` from the hive path.
    merged = pa.concat_tables(pq.ParquetFile(p).read() for p in paths)
    out = lake.segment_path(table, host)
    manifest = out.with_name(f".merge-{out.stem}.json")
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text(json.dumps({"output": out.name, "inputs": [p.name for p in paths]}))
    os.replace(tmp, manifest)
    lake.write_segment(table, host, merged, out)
    _finish(manifest)
    return out


def _finish(manifest: Path) -> None:
    """Remove a merge's inputs if its output is in place, then the manifest itself."""
    spec = json.loads(manifest.read_text())
    if (manifest.parent / spec["output"]).exists():
        for name in spec["inputs"]:
            (manifest.parent / name).unlink(missing_ok=True)
    manifest.unlink()


def repair_merges(partition: Path) -> int:
    """Finish the merges a killed agent left in a partition folder; returns how many.

    A merge whose output never landed is dropped: its inputs still hold every row.
    """
    manifests = sorted(partition.glob(".merge-*.json")) if partition.is_dir() else []
    for manifest in manifests:
        _finish(manifest)
    return len(manifests)
