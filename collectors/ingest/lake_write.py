"""The run's own rows (ranks, devices, runs) from its written ranks, and the commit: the
ranks' segments are already in the staging folder (collectors.ingest.rank_write)."""

from __future__ import annotations

import time
from typing import Any

import duckdb
import pyarrow as pa

from collectors.ingest.rank_write import RankDone
from collectors.ingest.segments import connect, copy_table, run_segment
from collectors.parse import metadata_json
from data.lake import Lake
from data.schema import SCHEMA_VERSION, arrow_schema
from data.valid_text import valid_text

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


def commit_run(lake: Lake, run: dict[str, Any], ranks: list[RankDone]) -> None:
    """Write the run's ranks, devices and runs rows beside its staged ranks and commit it
    (`runs` last). The caller discards the staging folder if this fails."""
    stage = lake.staging / run["run_id"]
    devices = _devices_table(ranks)
    raw = {
        "linked_ranks": _ranks_table(ranks),
        "linked_devices": devices,
        "raw_runs": _run_row(run, ranks, devices),
    }
    con = connect(duckdb.connect(":memory:"), raw)
    try:
        for table, src in (("ranks", "linked_ranks"), ("devices", "linked_devices")):
            copy_table(con, run_segment(stage, table), table, src)
        copy_table(con, run_segment(stage, "runs"), "runs", "raw_runs")
    finally:
        con.close()
    lake.commit(run["run_id"])


def _ranks_table(ranks: list[RankDone]) -> pa.Table:
    rows = []
    for done in ranks:
        t, meta = done.trace, done.trace.metadata
        rows.append({
            "rank": t.rank, "world_size": t.world_size, "rank_source": t.rank_source,
            "file_name": valid_text(t.path.name), "file_bytes": t.file_bytes,
            "file_sha256": done.digest,
            "host_name": _text(meta.get("host_name")),
            "backend": _text((t.distributed_info or {}).get("backend")),
            "distributed_info": metadata_json(t.distributed_info) if t.distributed_info else None,
            "trace_metadata": metadata_json(meta),
            "base_time_ns": t.base_time_ns,
            "events_total": t.events_total, "events_malformed": t.malformed,
            "events_skipped": t.events_skipped,
            "malformed_examples": metadata_json(t.malformed_examples),
            "category_counts": metadata_json(dict(t.category_counts)),
            "start_ns": done.start_ns, "end_ns": done.end_ns,
        })  # fmt: skip
    schema = pa.schema([f for f in arrow_schema("ranks") if f.name != "run_id"])
    return pa.Table.from_pylist(rows, schema=schema)


def _text(value: Any) -> str | None:
    """A metadata value for a text column: a string as written, anything else none."""
    return value if isinstance(value, str) else None


def _devices_table(ranks: list[RankDone]) -> pa.Table:
    schema = arrow_schema("devices").remove(0)
    rows = []
    for done in ranks:
        for d in done.trace.devices:
            row: dict[str, Any] = {"rank": done.trace.rank}
            for col, key in _DEVICE_FIELDS.items():
                v = d.get(key)
                row[col] = v if type(v) is _DEVICE_TYPES.get(col, int) else None
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


def _run_row(run: dict[str, Any], ranks: list[RankDone], devices: pa.Table) -> pa.Table:
    used = {d for done in ranks for d in done.devices_used}

    # The device the run's GPU work ran on, else the first listed (by rank, then id).
    def order(d: dict[str, Any]) -> tuple[int, int, int]:
        uid = d["device_id"]
        return (0 if uid in used else 1 if uid is not None else 2, d["rank"], uid or 0)

    listed = sorted(devices.select(["rank", "device_id", "name"]).to_pylist(), key=order)
    traces = [done.trace for done in ranks]
    row = {
        **run,
        "ingested_at_ns": time.time_ns(),
        "rank_count": len(ranks),
        "device_name": listed[0]["name"] if listed else None,
        "events_total": sum(t.events_total for t in traces),
        "events_malformed": sum(t.malformed for t in traces),
        "kernel_count": sum(done.kernel_count for done in ranks),
        "schema_version": SCHEMA_VERSION,
    }
    return pa.Table.from_pylist([row], schema=arrow_schema("runs"))
