"""Writing one run into the lake: the parsed tables with their rank, linked in an in-memory
DuckDB, copied to Parquet in the staging folder, the ranks/devices/runs rows, the commit."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import duckdb
import pyarrow as pa

from collectors.ingest.link_sql import AFTER_GPU_LINK, GPU_LINK_SQL, STEPS_SQL
from collectors.parse import RankTrace, metadata_json
from data.errors import StoreError
from data.lake import Lake
from data.schema import SCHEMA_VERSION, TABLES, arrow_schema

_DEVICE_FIELDS = {
    "device_id": "id", "name": "name", "total_global_mem_bytes": "totalGlobalMem",
    "compute_major": "computeMajor", "compute_minor": "computeMinor", "num_sms": "numSms",
    "max_threads_per_block": "maxThreadsPerBlock",
    "max_threads_per_sm": "maxThreadsPerMultiprocessor", "regs_per_block": "regsPerBlock",
    "regs_per_sm": "regsPerMultiprocessor", "warp_size": "warpSize",
    "shared_mem_per_block_bytes": "sharedMemPerBlock",
    "shared_mem_per_sm_bytes": "sharedMemPerMultiprocessor",
    "shared_mem_per_block_optin_bytes": "sharedMemPerBlockOptin",
}  # fmt: skip
_DEVICE_TYPES = {"name": str}  # every other field is an int (range checked by the parser)


def _with_rank(table: pa.Table, rank: int) -> pa.Table:
    return table.append_column("rank", pa.array([rank] * table.num_rows, pa.int32()))


def write_run(lake: Lake, run: dict[str, Any], traces: list[RankTrace], digests: list[str]) -> None:
    """Stage every table of the run and commit it (`runs` last); any failure discards it."""
    run_id = run["run_id"]
    lake.stage_dir(run_id)
    try:
        raw = {
            f"raw_{table}": _concat(
                [_with_rank(t.tables[table], t.rank) for t in traces if table in t.tables], table
            )
            for table in _PARSED
        }
        raw["raw_ranks"] = _ranks_table(traces, digests)
        raw["raw_devices"] = _devices_table(traces)
        con = _connect(duckdb.connect(":memory:"), raw)
        con.execute(STEPS_SQL)

        def write(tables: Sequence[str], link: str = "") -> None:
            cursor = _connect(con.cursor(), raw)  # a connection per thread
            try:
                if link:
                    cursor.execute(link)
                for table in tables:
                    if table == "runs":
                        cursor.register("raw_runs", _run_row(cursor, run, traces))
                    _copy(cursor, lake, run_id, table)
            finally:
                cursor.close()

        # cpu_ops, the biggest write, needs only the steps: it is written while the GPU
        # activity is linked and written beside it.
        rest = sorted((t for t in TABLES if t not in AFTER_GPU_LINK), key="cpu_ops".__ne__)
        with ThreadPoolExecutor(2) as pool:
            jobs = [pool.submit(write, rest), pool.submit(write, AFTER_GPU_LINK, GPU_LINK_SQL)]
            for job in jobs:
                job.result()
        con.close()
        lake.commit(run_id)
    except BaseException:
        lake.discard(run_id)
        raise


_PARSED = ("gpu_events", "runtime_calls", "cpu_ops", "annotations", "collectives",
           "memory_events", "python_functions")  # fmt: skip


def _connect(con: duckdb.DuckDBPyConnection, raw: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """`con` with the raw tables registered (a registration is seen by its connection only)."""
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET preserve_insertion_order = false")
    for name, table in raw.items():
        con.register(name, table)
    return con


def _copy(con: duckdb.DuckDBPyConnection, lake: Lake, run_id: str, table: str) -> None:
    """Write one table of the run as Parquet into the staging folder. The path goes through
    DuckDB's relation API, never into SQL text; a write that fails (a full or read-only
    disk) is a StoreError naming the file."""
    src = "raw_runs" if table == "runs" else f"linked_{table}"
    cols = ", ".join(
        f'CAST("{c.name}" AS {_duck_type(c.type)}) AS "{c.name}"'
        for c in TABLES[table]
        if c.name != "run_id"
    )
    # Time order lets window queries skip row groups; cpu_ops are looked up by id, and
    # sorting their wide JSON columns was 0.3 s of a 360 MB ingest.
    order = " ORDER BY rank, ts_ns" if table in _TIME_SORTED else ""
    target = lake.staged_file(run_id, table)
    try:
        con.sql(f"SELECT {cols} FROM {src}{order}").write_parquet(str(target), compression="zstd")
    except duckdb.IOException as e:
        raise StoreError(f"{target}: cannot write: {_reason(e)}") from None


def _reason(e: duckdb.Error) -> str:
    """What went wrong in a DuckDB I/O error: the OS's words for its errno when it carries
    one (its message is a JSON blob around them), else its first line."""
    errno = _ERRNO.search(str(e))
    return os.strerror(int(errno.group(1))) if errno else str(e).splitlines()[0]


_ERRNO = re.compile(r'"errno"\s*:\s*"(\d+)"')


# Tables written in (rank, ts_ns) order.
_TIME_SORTED = {"gpu_events", "runtime_calls", "annotations", "steps", "collectives"}

# Columns the link step computes; the parser does not produce them.
_DERIVED = {
    "gpu_events": {"op_external_id", "launch_api", "launch_ts_ns", "step"},
    "runtime_calls": {"step"},
    "cpu_ops": {"step"},
}


def _concat(parts: list[pa.Table], table: str) -> pa.Table:
    derived = _DERIVED.get(table, set()) | {"run_id"}  # run_id comes from the partition
    schema = pa.schema([f for f in arrow_schema(table) if f.name not in derived])
    if not parts:
        return schema.empty_table()
    cast = [p.select(schema.names).cast(schema) for p in parts]
    return pa.concat_tables(cast)


def _duck_type(t: pa.DataType) -> str:
    return {pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.float64(): "DOUBLE",
            pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN"}[t]  # fmt: skip


def _ranks_table(traces: list[RankTrace], digests: list[str]) -> pa.Table:
    rows = []
    for t, digest in zip(traces, digests, strict=True):
        meta = t.metadata
        rows.append({
            "rank": t.rank, "world_size": t.world_size, "rank_source": t.rank_source,
            "file_name": t.path.name, "file_bytes": t.file_bytes, "file_sha256": digest,
            "host_name": meta.get("host_name") if isinstance(meta.get("host_name"), str) else None,
            "backend": (t.distributed_info or {}).get("backend"),
            "distributed_info": metadata_json(t.distributed_info) if t.distributed_info else None,
            "trace_metadata": metadata_json(meta),
            "base_time_ns": t.base_time_ns,
            "events_total": t.events_total, "events_malformed": t.malformed,
            "events_skipped": t.events_skipped,
            "malformed_examples": metadata_json(t.malformed_examples),
            "category_counts": metadata_json(dict(t.category_counts)),
        })  # fmt: skip
    schema = pa.schema(
        [f for f in arrow_schema("ranks") if f.name not in ("run_id", "start_ns", "end_ns")]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def _devices_table(traces: list[RankTrace]) -> pa.Table:
    schema = arrow_schema("devices").remove(0)
    rows = []
    for t in traces:
        for d in t.devices:
            row: dict[str, Any] = {"rank": t.rank}
            for col, key in _DEVICE_FIELDS.items():
                v = d.get(key)
                row[col] = v if type(v) is _DEVICE_TYPES.get(col, int) else None
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


def _run_row(
    con: duckdb.DuckDBPyConnection, run: dict[str, Any], traces: list[RankTrace]
) -> pa.Table:
    kernels, device = con.execute(
        "SELECT (SELECT count(*) FROM linked_gpu_events WHERE kind = 'kernel'), "
        "(SELECT d.name FROM linked_devices d ORDER BY "
        " d.device_id IN (SELECT device FROM linked_gpu_events) DESC, d.rank, d.device_id LIMIT 1)"
    ).fetchall()[0]
    row = {
        **run,
        "ingested_at_ns": time.time_ns(),
        "rank_count": len(traces),
        "device_name": device,
        "events_total": sum(t.events_total for t in traces),
        "events_malformed": sum(t.malformed for t in traces),
        "kernel_count": kernels,
        "schema_version": SCHEMA_VERSION,
    }
    return pa.Table.from_pylist([row], schema=arrow_schema("runs"))
