"""Reads for the timeline's CPU threads and its links: slices of a window, the launch and op
of a kernel (and the kernels of an op), and a search by name.

A CPU slice is an operator, a user annotation, an nn.Module or python_function range, or a
runtime call (the cudaLaunchKernel under the op that launched a kernel). Zoomed out, a window
holds far more slices than a chart may draw: DuckDB returns the longest ones that are at
least `min_dur_ns` long (about a pixel), never the raw rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store

# Every CPU slice of a run with one set of columns: kind, rank, pid, tid, ts_ns, dur_ns, name,
# link (External id of an op or annotation, correlation of a runtime call).
_SLICES = """
    SELECT 'op' AS kind, rank, pid, tid, ts_ns, dur_ns, name, external_id AS link
    FROM cpu_ops WHERE run_id = $run
    UNION ALL
    SELECT 'annotation', rank, pid, tid, ts_ns, dur_ns, name, external_id
    FROM annotations WHERE run_id = $run AND kind = 'cpu'
    UNION ALL
    SELECT CASE WHEN starts_with(name, 'nn.Module: ') THEN 'module' ELSE 'python' END,
           rank, pid, tid, ts_ns, dur_ns, name, NULL
    FROM python_functions WHERE run_id = $run
    UNION ALL
    SELECT 'runtime', rank, pid, tid, ts_ns, dur_ns, name, correlation
    FROM runtime_calls WHERE run_id = $run
"""

_PICKED = "($ranks IS NULL OR list_contains($ranks, rank))"  # the picked ranks (NULL: all)


def threads(store: Store, run_id: str) -> pd.DataFrame:
    """One row per (rank, pid, tid) with CPU slices: rank, pid, tid, slices, first_ns,
    last_ns (end of the last slice)."""
    return store.query(
        f"""
        SELECT rank, pid, tid, count(*) AS slices, min(ts_ns) AS first_ns,
               max(ts_ns + dur_ns) AS last_ns
        FROM ({_SLICES}) GROUP BY ALL ORDER BY rank, min(ts_ns), pid, tid
        """,
        {"run": run_id},
    )


def window_slice_counts(
    store: Store,
    run_id: str,
    t0_ns: int,
    t1_ns: int,
    min_dur_ns: int,
    ranks: list[int] | None = None,
) -> tuple[int, int]:
    """(all CPU slices, those at least `min_dur_ns` long) that overlap [t0, t1) (of `ranks`
    only, when given)."""
    row = store.query(
        f"""
        SELECT count(*) AS n, count(*) FILTER (WHERE dur_ns >= $min) AS long FROM ({_SLICES})
        WHERE ts_ns < $t1 AND ts_ns + dur_ns > $t0 AND {_PICKED}
        """,
        {"run": run_id, "t0": t0_ns, "t1": t1_ns, "min": min_dur_ns, "ranks": ranks},
    ).iloc[0]
    return int(row["n"]), int(row["long"])


def window_slices(
    store: Store,
    run_id: str,
    t0_ns: int,
    t1_ns: int,
    min_dur_ns: int,
    limit: int,
    ranks: list[int] | None = None,
) -> pd.DataFrame:
    """The CPU slices at least `min_dur_ns` long overlapping [t0, t1) (of `ranks` only, when
    given), the longest `limit`: kind, rank, pid, tid, ts_ns, dur_ns, name (categorical),
    link."""
    return store.query(
        f"""
        SELECT * FROM ({_SLICES})
        WHERE ts_ns < $t1 AND ts_ns + dur_ns > $t0 AND dur_ns >= $min AND {_PICKED}
        ORDER BY dur_ns DESC LIMIT $limit
        """,
        {"run": run_id, "t0": t0_ns, "t1": t1_ns, "min": min_dur_ns, "limit": limit,
         "ranks": ranks},
        categorical=("name",),
    )  # fmt: skip


def kernel_links(store: Store, run_id: str, rank: int, correlation: int) -> pd.DataFrame:
    """What a GPU activity (or a runtime call) of one correlation is linked to, one row each:
    role ('kernel', 'launch' or 'op'), lane ('gpu' or 'cpu'), rank, pid, tid (stream for
    the kernel), ts_ns, dur_ns, name, input_dims (the op's shapes)."""
    return store.query(
        """
        WITH g AS (SELECT * FROM gpu_events
                   WHERE run_id = $run AND rank = $rank AND correlation = $c)
        SELECT 'kernel' AS role, 'gpu' AS lane, rank, device AS pid, stream AS tid, ts_ns,
               dur_ns, name, NULL AS input_dims FROM g
        UNION ALL
        SELECT 'launch', 'cpu', rank, pid, tid, ts_ns, dur_ns, name, NULL FROM runtime_calls
        WHERE run_id = $run AND rank = $rank AND correlation = $c
        UNION ALL
        SELECT 'op', 'cpu', o.rank, o.pid, o.tid, o.ts_ns, o.dur_ns, o.name, o.input_dims
        FROM cpu_ops o WHERE o.run_id = $run AND o.rank = $rank
          AND o.external_id IN (SELECT op_external_id FROM g)
        ORDER BY role DESC, ts_ns
        """,
        {"run": run_id, "rank": rank, "c": correlation},
    )


def op_kernels(store: Store, run_id: str, rank: int, external_id: int, limit: int) -> pd.DataFrame:
    """The GPU activities an op launched, first `limit` by time: rank, device, stream,
    correlation, ts_ns, dur_ns, name."""
    return store.query(
        """
        SELECT rank, device, stream, correlation, ts_ns, dur_ns, name FROM gpu_events
        WHERE run_id = $run AND rank = $rank AND op_external_id = $ext
        ORDER BY ts_ns LIMIT $limit
        """,
        {"run": run_id, "rank": rank, "ext": external_id, "limit": limit},
    )


def search(
    store: Store, run_id: str, needle: str, limit: int, ranks: list[int] | None = None
) -> pd.DataFrame:
    """Slices whose name contains `needle` (any case), GPU activities and CPU slices (of
    `ranks` only, when given), first `limit` by time: lane ('gpu' or 'cpu'), kind, rank, pid,
    tid (stream on the GPU), ts_ns, dur_ns, name, link (correlation of a GPU activity or
    runtime call, External id of an op), matches (how many there are in all)."""
    return store.query(
        f"""
        WITH hits AS (
            SELECT 'gpu' AS lane, kind::VARCHAR AS kind, rank, device AS pid, stream AS tid,
                   ts_ns, dur_ns, name, correlation AS link
            FROM gpu_events WHERE run_id = $run AND contains(lower(name), lower($q))
            UNION ALL
            SELECT 'cpu', kind, rank, pid, tid, ts_ns, dur_ns, name, link
            FROM ({_SLICES}) WHERE contains(lower(name), lower($q))
        )
        SELECT *, count(*) OVER () AS matches FROM hits WHERE {_PICKED}
        ORDER BY ts_ns LIMIT $limit
        """,
        {"run": run_id, "q": needle, "limit": limit, "ranks": ranks},
    )
