"""Reads for the Kernels page: each kernel name's launch configuration, in DuckDB.

A kernel name is launched with one grid and block as a rule, several when its shapes vary
(a GEMM's grid follows M and N): the most frequent configuration is read with the number of
distinct ones, so the page never pulls a row per launch for this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store


def launch_configs(store: Store, run_id: str) -> pd.DataFrame:
    """One row per kernel name: name, grid and block (the most frequent, as '[x, y, z]' text;
    NULL when the trace records none), configs (distinct grid and block pairs),
    registers_per_thread (the most frequent), shared_mem_bytes (the largest),
    occupancy_pct (Kineto's estimated achieved occupancy, weighted by time; NULL when never
    recorded)."""
    return store.query(
        """
        WITH k AS (
            SELECT name, dur_ns, est_occupancy_pct, registers_per_thread, shared_mem_bytes,
                   CASE WHEN grid_x IS NOT NULL
                        THEN format('[{}, {}, {}]', grid_x, grid_y, grid_z) END AS grid,
                   CASE WHEN block_x IS NOT NULL
                        THEN format('[{}, {}, {}]', block_x, block_y, block_z) END AS block
            FROM gpu_events WHERE run_id = ? AND kind = 'kernel'
        ), cfg AS (
            SELECT name, grid, block, count(*) AS n FROM k GROUP BY ALL
        ), top AS (
            SELECT name, arg_max(grid, n) AS grid, arg_max(block, n) AS block,
                   count(*) AS configs
            FROM cfg GROUP BY name
        )
        SELECT top.*, s.registers_per_thread, s.shared_mem_bytes, s.occupancy_pct
        FROM top JOIN (
            SELECT name, mode(registers_per_thread) AS registers_per_thread,
                   max(shared_mem_bytes) AS shared_mem_bytes,
                   sum(est_occupancy_pct * dur_ns) FILTER (WHERE est_occupancy_pct IS NOT NULL)
                     / sum(dur_ns) FILTER (WHERE est_occupancy_pct IS NOT NULL) AS occupancy_pct
            FROM k GROUP BY name
        ) s USING (name)
        """,
        [run_id],
    )
