"""Merging a stream table's small segments into one, so readers open few files.

An agent writes one segment a second (86 400 a day per host); DuckDB opens every file a glob
matches, so a day of one-second files would take minutes to read. The agent merges its own
segments as it goes (60 one-second files into a minute file, 60 of those into an hour file).

The merged file is renamed into place before the small ones are removed, so a reader never
misses rows; a query that lists files in that ~10 ms window may count a minute twice
(averages and maxima unchanged) or find a listed file gone, which data.reads_telemetry
retries (docs/decisions.md D8).
"""

from __future__ import annotations

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
    out = lake.write_segment(table, host, merged)
    for p in paths:
        p.unlink(missing_ok=True)
    return out
