"""Reads for the Memory page: the caching allocator's events (profile_memory=True) per device.

Each allocator event carries the allocator's allocated and reserved totals after it, so the
curves need no running sum; they are bucketed in DuckDB (the largest value per bucket, so a
peak is never averaged away). An allocation is alive from its event to the next event at the
same address (its free).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store

_DEVICE = "run_id = $run AND rank = $rank AND device_type = $type AND device_id = $id"


def memory_devices(store: Store, run_id: str) -> pd.DataFrame:
    """One row per (rank, device_type, device_id) with allocator events: events,
    allocations, frees, allocated_bytes and freed_bytes (sums), peak_allocated_bytes,
    peak_reserved_bytes, peak_ts_ns (first event at the allocated peak), first_ns, last_ns,
    total_memory_bytes (the device's memory from deviceProperties; NULL for the CPU or
    without them)."""
    return store.query(
        """
        SELECT m.rank, m.device_type, m.device_id, count(*) AS events,
               count(*) FILTER (WHERE m.bytes > 0) AS allocations,
               count(*) FILTER (WHERE m.bytes < 0) AS frees,
               coalesce(sum(m.bytes) FILTER (WHERE m.bytes > 0), 0) AS allocated_bytes,
               coalesce(-sum(m.bytes) FILTER (WHERE m.bytes < 0), 0) AS freed_bytes,
               max(m.total_allocated_bytes) AS peak_allocated_bytes,
               max(m.total_reserved_bytes) AS peak_reserved_bytes,
               first(m.ts_ns ORDER BY m.total_allocated_bytes DESC, m.ts_ns) AS peak_ts_ns,
               min(m.ts_ns) AS first_ns, max(m.ts_ns) AS last_ns,
               any_value(d.total_global_mem_bytes) AS total_memory_bytes
        FROM memory_events m
        LEFT JOIN devices d ON d.run_id = m.run_id AND d.rank = m.rank
             AND d.device_id = m.device_id AND m.device_type = 1
        WHERE m.run_id = $run
        GROUP BY m.rank, m.device_type, m.device_id
        ORDER BY m.rank, m.device_type DESC, m.device_id
        """,
        {"run": run_id},
    )


def memory_series(store: Store, run_id: str, t0_ns: int, bucket_ns: int) -> pd.DataFrame:
    """Allocated and reserved bytes over time per device: rank, device_type, device_id,
    bucket (from t0_ns, of bucket_ns), ts_ns (the bucket's start), allocated_bytes and
    reserved_bytes (the largest value after any event in the bucket)."""
    return store.query(
        """
        SELECT rank, device_type, device_id, (ts_ns - $t0) // $b AS bucket,
               $t0 + ((ts_ns - $t0) // $b) * $b AS ts_ns,
               max(total_allocated_bytes) AS allocated_bytes,
               max(total_reserved_bytes) AS reserved_bytes
        FROM memory_events WHERE run_id = $run
        GROUP BY ALL ORDER BY rank, device_type, device_id, bucket
        """,
        {"run": run_id, "t0": t0_ns, "b": bucket_ns},
    )


def alive_at(
    store: Store, run_id: str, rank: int, device_type: int, device_id: int, t_ns: int
) -> pd.DataFrame:
    """The allocations alive at t_ns on one device, grouped by the op that made them (the
    innermost CPU op around the allocation event, not counting aten::empty*, which every
    op that makes a tensor calls; NULL outside any op): op, allocations, bytes,
    largest_bytes; most bytes first."""
    return store.query(
        f"""
        WITH m AS (
            SELECT ts_ns, addr, bytes,
                   lead(ts_ns) OVER (PARTITION BY addr ORDER BY ts_ns, bytes) AS next_ns
            FROM memory_events WHERE {_DEVICE}
        ), alive AS (
            SELECT row_number() OVER () AS i, ts_ns, bytes FROM m
            WHERE bytes > 0 AND ts_ns <= $t AND (next_ns IS NULL OR next_ns > $t)
        ), owner AS (
            SELECT a.i, any_value(a.bytes) AS bytes, arg_max(o.name, o.ts_ns) AS op
            FROM alive a LEFT JOIN cpu_ops o
              ON o.run_id = $run AND o.rank = $rank AND o.ts_ns <= a.ts_ns
             AND a.ts_ns < o.ts_ns + greatest(o.dur_ns, 1)
             AND o.name NOT LIKE 'ProfilerStep#%' AND NOT starts_with(o.name, 'aten::empty')
            GROUP BY a.i
        )
        SELECT op, count(*) AS allocations, sum(bytes) AS bytes, max(bytes) AS largest_bytes
        FROM owner GROUP BY op ORDER BY bytes DESC
        """,
        {"run": run_id, "rank": rank, "type": device_type, "id": device_id, "t": t_ns},
    )


def stack_at(store: Store, run_id: str, rank: int, t_ns: int) -> pd.DataFrame:
    """The CPU slices (ops, annotations, nn.Module ranges) open at t_ns on a rank, outermost
    first per thread: tid, kind, name, ts_ns, dur_ns."""
    return store.query(
        """
        SELECT tid, 'op' AS kind, name, ts_ns, dur_ns FROM cpu_ops
        WHERE run_id = $run AND rank = $rank AND ts_ns <= $t AND $t < ts_ns + dur_ns
        UNION ALL
        SELECT tid, 'annotation', name, ts_ns, dur_ns FROM annotations
        WHERE run_id = $run AND rank = $rank AND kind = 'cpu'
          AND ts_ns <= $t AND $t < ts_ns + dur_ns
        UNION ALL
        SELECT tid, 'module', name, ts_ns, dur_ns FROM python_functions
        WHERE run_id = $run AND rank = $rank AND starts_with(name, 'nn.Module: ')
          AND ts_ns <= $t AND $t < ts_ns + dur_ns
        ORDER BY tid, ts_ns, dur_ns DESC
        """,
        {"run": run_id, "rank": rank, "t": t_ns},
    )
