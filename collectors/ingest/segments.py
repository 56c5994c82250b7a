"""Writing a staged table as Parquet through DuckDB, and where each segment goes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb
import pyarrow as pa

from data.errors import StoreError
from data.schema import TABLES


def batch_segment(stage: Path, table: str, batch: int) -> Path:
    """One batch of ranks' segment of a table. Batches hold consecutive rank files and are
    numbered in the files' order, so the names' order is the files' order."""
    folder = stage / table
    folder.mkdir(exist_ok=True)
    return folder / f"part-{batch:06d}.parquet"


def run_segment(stage: Path, table: str) -> Path:
    """The one segment of a table the run writes as a whole (ranks, devices, runs)."""
    folder = stage / table
    folder.mkdir(exist_ok=True)
    return folder / "data.parquet"


def connect(con: duckdb.DuckDBPyConnection, raw: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """`con` with the raw tables registered (a registration is seen by its connection only)."""
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET preserve_insertion_order = false")
    for name, table in raw.items():
        con.register(name, table)
    return con


def copy_table(con: duckdb.DuckDBPyConnection, target: Path, table: str, src: str) -> None:
    """Write `src` as `table`'s Parquet segment at `target`. The path goes through DuckDB's
    relation API, never into SQL text; a write that fails (a full or read-only disk) is a
    StoreError naming the file."""
    cols = ", ".join(
        f'CAST("{c.name}" AS {_duck_type(c.type)}) AS "{c.name}"'
        for c in TABLES[table]
        if c.name != "run_id"
    )
    # Time order lets window queries skip row groups; cpu_ops are looked up by id, and
    # sorting their wide JSON columns was 0.3 s of a 360 MB ingest.
    order = " ORDER BY rank, ts_ns" if table in _TIME_SORTED else ""
    try:
        con.sql(f"SELECT {cols} FROM {src}{order}").write_parquet(str(target), compression="zstd")
    except duckdb.IOException as e:
        raise StoreError(f"{target}: cannot write: {_reason(e)}") from None


# Tables written in (rank, ts_ns) order.
_TIME_SORTED = {"gpu_events", "runtime_calls", "annotations", "steps", "collectives"}


def _reason(e: duckdb.Error) -> str:
    """What went wrong in a DuckDB I/O error: the OS's words for its errno when it carries
    one (its message is a JSON blob around them), else its first line."""
    errno = _ERRNO.search(str(e))
    return os.strerror(int(errno.group(1))) if errno else str(e).splitlines()[0]


_ERRNO = re.compile(r'"errno"\s*:\s*"(\d+)"')


def _duck_type(t: pa.DataType) -> str:
    return {pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.float64(): "DOUBLE",
            pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN"}[t]  # fmt: skip
