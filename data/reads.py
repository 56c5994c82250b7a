"""Read functions the pages use: SQL over the store's views, one DataFrame each.

Every function returns a frame with the documented columns, empty (not None) when the run
has no such data. Aggregation happens in DuckDB so pages never pull raw events they do not
draw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store


def ranks(store: Store, run_id: str) -> pd.DataFrame:
    """One row per rank: rank, world_size, rank_source, file_name, file_bytes, start_ns,
    end_ns, events_total, events_malformed, events_skipped, malformed_examples,
    kernel_count, device_name."""
    # Each rank's counts from one GROUP BY each: a count per rank (a correlated subquery)
    # scanned the run's GPU events once per rank (512 ranks: 0.47 s).
    return store.query(
        """
        WITH k AS (SELECT rank, count(*) AS n FROM gpu_events
                   WHERE run_id = $run AND kind = 'kernel' GROUP BY rank),
             d AS (SELECT rank, any_value(name) AS name FROM devices
                   WHERE run_id = $run GROUP BY rank)
        SELECT r.rank, r.world_size, r.rank_source, r.file_name, r.file_bytes, r.start_ns,
               r.end_ns, r.events_total, r.events_malformed, r.events_skipped,
               r.malformed_examples, coalesce(k.n, 0) AS kernel_count, d.name AS device_name
        FROM ranks r LEFT JOIN k USING (rank) LEFT JOIN d USING (rank)
        WHERE r.run_id = $run ORDER BY r.rank
        """,
        {"run": run_id},
    )


def rank_load(store: Store, run_id: str) -> pd.DataFrame:
    """One row per rank and kernel name: rank, steps (its ProfilerSteps; 1 without),
    step_ms (their mean; its trace's span without steps), name, count, total_ns. What a
    sample of a run's ranks is chosen by (analysis.rank_sample): a GROUP BY over the
    kernels, names left to the analysis to classify."""
    return store.query(
        """
        WITH s AS (SELECT rank, count(*) AS steps, avg(dur_ns) AS step_ns FROM steps
                   WHERE run_id = $run GROUP BY rank),
             k AS (SELECT rank, name, count(*) AS count, sum(dur_ns) AS total_ns
                   FROM gpu_events WHERE run_id = $run AND kind = 'kernel' GROUP BY rank, name)
        SELECT r.rank, coalesce(s.steps, 1) AS steps,
               coalesce(s.step_ns, r.end_ns - r.start_ns) / 1e6 AS step_ms,
               k.name, coalesce(k.count, 0) AS count, coalesce(k.total_ns, 0) AS total_ns
        FROM ranks r LEFT JOIN s USING (rank) LEFT JOIN k USING (rank)
        WHERE r.run_id = $run ORDER BY r.rank, k.name
        """,
        {"run": run_id},
    )


def devices(store: Store, run_id: str) -> pd.DataFrame:
    """The run's deviceProperties rows: the `devices` table's columns."""
    return store.query("SELECT * FROM devices WHERE run_id = ? ORDER BY rank, device_id", [run_id])


def steps(store: Store, run_id: str) -> pd.DataFrame:
    """ProfilerSteps: rank, step, ts_ns, dur_ns, gpu_start_ns, gpu_end_ns, kernel_count,
    kernel_time_ns, gpu_busy_ns."""
    return store.query(
        "SELECT * EXCLUDE (run_id) FROM steps WHERE run_id = ? ORDER BY rank, step", [run_id]
    )


def kernel_totals(store: Store, run_id: str) -> pd.DataFrame:
    """Kernels grouped by name: name, count, total_ns, mean_ns, max_ns, min_ns (all ranks)."""
    return store.query(
        """
        SELECT name, count(*) AS count, sum(dur_ns) AS total_ns, avg(dur_ns) AS mean_ns,
               max(dur_ns) AS max_ns, min(dur_ns) AS min_ns
        FROM gpu_events WHERE run_id = ? AND kind = 'kernel'
        GROUP BY name ORDER BY total_ns DESC
        """,
        [run_id],
    )


def gpu_events(store: Store, run_id: str) -> pd.DataFrame:
    """Every kernel, memcpy and memset, by rank, then time: rank, step,
    kind (categorical), name (categorical, categories sorted), stream, ts_ns, dur_ns,
    op_external_id, launch_ts_ns, bytes (memcpy/memset), dtod (a device-to-device memcpy),
    est_occupancy_pct, from_graph (replayed by a CUDA graph).

    The order is asked for, to the last tie: a run's segments are read in parallel, and a
    scan of several keeps no order between them. Two kernels of one rank may start in the
    same nanosecond on two streams; left to the scan, their order changed kernel-fusion's
    chains and its saving (5.3243 or 5.3246 ms on ddp_gpu_bound_2rank, ingest to ingest).

    Names travel through Arrow as a dictionary (one Python string per distinct name):
    turning every row's name into a Python string cost 0.6 s of 0.8 s on the benchmark run.
    """
    return store.query(
        """
        SELECT rank, step, CAST(kind AS ENUM('kernel', 'memcpy', 'memset')) AS kind, name,
               stream, ts_ns, dur_ns, op_external_id, launch_ts_ns, bytes,
               coalesce(memcpy_kind = 'DtoD', false) AS dtod, est_occupancy_pct,
               coalesce(graph_id IS NOT NULL OR launch_api LIKE '%Graph%', false) AS from_graph
        FROM gpu_events WHERE run_id = ? ORDER BY rank, ts_ns, stream, dur_ns
        """,
        [run_id],
        categorical=("name",),
    )
