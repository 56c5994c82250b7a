"""Reads for the Breakdown and Timeline pages: step marks, bucketed lanes, a window of kernels.

The timeline's level of detail is decided in DuckDB: zoomed out, a page gets one row per
(rank, stream, time bucket), never the raw kernels; zoomed in, the kernels of a window with
their op, shapes and launch configuration, at most `limit` of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store


def step_marks(store: Store, run_id: str) -> pd.DataFrame:
    """Every ProfilerStep range, CPU ops and CPU/GPU annotations: rank, name, ts_ns, dur_ns."""
    return store.query(
        """
        SELECT rank, name, ts_ns, dur_ns FROM cpu_ops
        WHERE run_id = $run AND name LIKE 'ProfilerStep#%'
        UNION ALL
        SELECT rank, name, ts_ns, dur_ns FROM annotations
        WHERE run_id = $run AND name LIKE 'ProfilerStep#%'
        """,
        {"run": run_id},
    )


def lanes(store: Store, run_id: str) -> pd.DataFrame:
    """One row per (rank, stream) with GPU activity: rank, stream, events, first_ns, last_ns
    (end of the last activity)."""
    return store.query(
        """
        SELECT rank, stream, count(*) AS events, min(ts_ns) AS first_ns,
               max(ts_ns + dur_ns) AS last_ns
        FROM gpu_events WHERE run_id = ? GROUP BY rank, stream ORDER BY rank, stream
        """,
        [run_id],
    )


def buckets(
    store: Store,
    run_id: str,
    t0_ns: int,
    t1_ns: int,
    bucket_ns: int,
    ranks: list[int] | None = None,
) -> pd.DataFrame:
    """Busy time per (rank, stream, bucket) over [t0, t1): rank, stream, bucket (0-based),
    busy_ns (time covered, an event split across the buckets it spans), events (events
    starting in the bucket), top_name (the kernel with the most time in the bucket); of
    `ranks` only, when given."""
    return store.query(
        """
        WITH ev AS (
            SELECT rank, stream, name, greatest(ts_ns, $t0) AS s,
                   least(ts_ns + dur_ns, $t1) AS e
            FROM gpu_events
            WHERE run_id = $run AND ts_ns < $t1 AND ts_ns + dur_ns > $t0
              AND ($ranks IS NULL OR list_contains($ranks, rank))
        ), spans AS (
            SELECT *, (s - $t0) // $b AS b0, (e - 1 - $t0) // $b AS b1 FROM ev WHERE e > s
        ), cells AS (
            SELECT rank, stream, name, b0 = b AS first, b,
                   least(e, $t0 + (b + 1) * $b) - greatest(s, $t0 + b * $b) AS cover
            FROM spans, unnest(range(b0, b1 + 1)) AS r(b)
        )
        SELECT rank, stream, b AS bucket, sum(cover) AS busy_ns,
               count(*) FILTER (WHERE first) AS events, arg_max(name, cover) AS top_name
        FROM cells GROUP BY rank, stream, b ORDER BY rank, stream, b
        """,
        {"run": run_id, "t0": t0_ns, "t1": t1_ns, "b": bucket_ns, "ranks": ranks},
    )


def window_count(
    store: Store, run_id: str, t0_ns: int, t1_ns: int, ranks: list[int] | None = None
) -> int:
    """GPU activities that overlap [t0, t1) (of `ranks` only, when given)."""
    rows = store.rows(
        "SELECT count(*) AS n FROM gpu_events "
        "WHERE run_id = $run AND ts_ns < $t1 AND ts_ns + dur_ns > $t0 "
        "AND ($ranks IS NULL OR list_contains($ranks, rank))",  # the picked ranks (NULL: all)
        {"run": run_id, "t0": t0_ns, "t1": t1_ns, "ranks": ranks},
    )
    return int(rows[0]["n"])


def window_events(
    store: Store,
    run_id: str,
    t0_ns: int,
    t1_ns: int,
    limit: int,
    ranks: list[int] | None = None,
) -> pd.DataFrame:
    """The GPU activities overlapping [t0, t1) (of `ranks` only, when given), longest first,
    at most `limit`: rank, stream, kind, name, ts_ns, dur_ns, grid (text), block (text),
    est_occupancy_pct, op_name, input_dims (the launching op's shapes, JSON), step,
    correlation."""
    return store.query(
        """
        WITH g AS (
            SELECT * FROM gpu_events
            WHERE run_id = $run AND ts_ns < $t1 AND ts_ns + dur_ns > $t0
              AND ($ranks IS NULL OR list_contains($ranks, rank))
            ORDER BY dur_ns DESC LIMIT $limit
        ), o AS (
            SELECT rank, external_id, any_value(name) AS name, any_value(input_dims) AS input_dims
            FROM cpu_ops
            WHERE run_id = $run AND external_id IN (SELECT op_external_id FROM g)
            GROUP BY rank, external_id
        )
        SELECT g.rank, g.stream, g.kind, g.name, g.ts_ns, g.dur_ns,
               CASE WHEN g.grid_x IS NOT NULL
                    THEN format('[{}, {}, {}]', g.grid_x, g.grid_y, g.grid_z) END AS grid,
               CASE WHEN g.block_x IS NOT NULL
                    THEN format('[{}, {}, {}]', g.block_x, g.block_y, g.block_z) END AS block,
               g.est_occupancy_pct, o.name AS op_name, o.input_dims, g.step, g.correlation
        FROM g LEFT JOIN o ON o.rank = g.rank AND o.external_id = g.op_external_id
        ORDER BY g.rank, g.stream, g.ts_ns
        """,
        {"run": run_id, "t0": t0_ns, "t1": t1_ns, "limit": limit, "ranks": ranks},
    )
