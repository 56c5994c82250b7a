"""A batch of a run's ranks into the staging folder: their parsed tables linked in one
in-memory DuckDB and written as the batch's Parquet segments, so an ingest holds one batch
per worker, whatever the rank count."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from collectors.ingest.link_sql import AFTER_GPU_LINK, GPU_LINK_SQL, STEPS_SQL, SUMMARY_SQL
from collectors.ingest.segments import batch_segment, connect, copy_table
from collectors.parse import RankTrace
from data.schema import TABLES, arrow_schema

# Tables a rank's parse gives; ranks, devices and runs are the run's own rows (lake_write).
PARSED = ("gpu_events", "runtime_calls", "cpu_ops", "annotations", "collectives",
          "memory_events", "python_functions")  # fmt: skip
RANK_TABLES = (*PARSED, "steps")

# Columns the link step computes; the parser does not produce them.
_DERIVED = {
    "gpu_events": {"op_external_id", "launch_api", "launch_ts_ns", "step"},
    "runtime_calls": {"step"},
    "cpu_ops": {"step"},
}


@dataclass
class RankDone:
    """What the run's rows need of one written rank (its tables are on disk, not here)."""

    trace: RankTrace  # with tables emptied
    digest: str
    start_ns: int | None = None
    end_ns: int | None = None
    kernel_count: int = 0
    devices_used: list[int] = field(default_factory=list)


def write_ranks(
    stage: Path, batch: int, traces: list[RankTrace], digests: list[str]
) -> list[RankDone]:
    """Link parsed ranks (every join is within a rank) and write them as batch number
    `batch`'s segments into the run's staging folder `stage`; their tables are let go."""
    raw = {f"raw_{t}": _raw_table(traces, t) for t in PARSED}
    for t in traces:
        t.tables = {}
    has_rows = {t: raw[f"raw_{t}"].num_rows > 0 for t in PARSED}
    con = connect(duckdb.connect(":memory:"), raw)
    try:
        con.execute(STEPS_SQL)

        def write(tables: Sequence[str], link: str = "") -> None:
            cursor = connect(con.cursor(), raw)  # a connection per thread
            try:
                if link:
                    cursor.execute(link)
                for table in tables:
                    if has_rows.get(table, True):  # no segment for what no rank has
                        target = batch_segment(stage, table, batch)
                        copy_table(cursor, target, table, f"linked_{table}")
            finally:
                cursor.close()

        # cpu_ops, the biggest write, needs only the steps: it is written while the GPU
        # activity is linked and written beside it.
        rest = sorted((t for t in RANK_TABLES if t not in AFTER_GPU_LINK), key="cpu_ops".__ne__)
        with ThreadPoolExecutor(2) as pool:
            jobs = [pool.submit(write, rest), pool.submit(write, AFTER_GPU_LINK, GPU_LINK_SQL)]
            for job in jobs:
                job.result()
        summary = {row[0]: row[1:] for row in con.execute(SUMMARY_SQL).fetchall()}
    finally:
        con.close()
    done = []
    for t, digest in zip(traces, digests, strict=True):
        start, end, kernels, devices = summary.get(t.rank, (None, None, 0, None))
        done.append(RankDone(t, digest, start, end, kernels or 0, sorted(devices or [])))
    return done


def _raw_table(traces: list[RankTrace], table: str) -> pa.Table:
    """The ranks' parsed table with its rank column, in the schema's columns that the link
    does not compute (empty when no rank has such events)."""
    derived = _DERIVED.get(table, set()) | {"run_id"}  # run_id comes from the partition
    schema = pa.schema([f for f in arrow_schema(table) if f.name not in derived])
    parts = []
    for t in traces:
        part = t.tables.get(table)
        if part is not None:
            part = part.append_column("rank", pa.array([t.rank] * part.num_rows, pa.int32()))
            parts.append(part.select(schema.names).cast(schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()


assert set(RANK_TABLES) | {"ranks", "devices", "runs"} == set(TABLES)
