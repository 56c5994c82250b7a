"""Reads for the roofline and bandwidth analyses: launching ops, tiled GEMMs, ceilings.

Only the columns the analyses use travel to pandas; the ops are those that launched GPU work
(a semi-join in DuckDB), not every op of the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from data.store import Store


def launching_ops(store: Store, run_id: str) -> pd.DataFrame:
    """The CPU ops that launched GPU work: rank, external_id, signature (one id per distinct
    name + shapes + dtypes + scalars + strides), name, input_dims, input_types,
    concrete_inputs, input_strides (JSON text as recorded). Each distinct signature's text
    is read once and shared by its rows."""
    launching = """
        SELECT rank, external_id, name, input_dims, input_types, concrete_inputs, input_strides
        FROM cpu_ops
        WHERE run_id = ? AND (rank, external_id) IN (
            SELECT DISTINCT rank, op_external_id FROM gpu_events
            WHERE run_id = ? AND op_external_id IS NOT NULL)
    """
    # Signatures in the order of their first op: a hash aggregate's order changes with the
    # segments' layout, and a rule quoting the first softmax quoted another after an ingest
    # change (fusion-compile-bert-sdpa-after's report).
    sigs = store.query(
        f"""
        SELECT name, input_dims, input_types, concrete_inputs, input_strides,
               list(rank ORDER BY rank, external_id) AS ranks,
               list(external_id ORDER BY rank, external_id) AS ids
        FROM ({launching}) GROUP BY ALL
        ORDER BY ranks[1], ids[1]
        """,
        [run_id, run_id],
    )
    counts = sigs["ids"].map(len).to_numpy(dtype=np.int64)  # int even when empty (CPU-only)
    signature = np.repeat(np.arange(len(sigs)), counts)
    ops = pd.DataFrame(
        {
            "rank": _concat_ints(sigs["ranks"]),
            "external_id": _concat_ints(sigs["ids"]),
            "signature": signature,
        }
    )
    text = sigs.drop(columns=["ranks", "ids"]).iloc[signature].reset_index(drop=True)
    return pd.concat([ops, text], axis=1)


def tiled_gemm_launches(store: Store, run_id: str) -> pd.DataFrame:
    """Launches of cuBLAS's tiled `sm*_xmma_gemm_*tilesize*` kernels with what their occupancy
    depends on: rank, op_external_id, name, grid_x/y/z, threads, registers_per_thread,
    shared_mem_bytes, and their device's num_sms, regs_per_sm, shared_mem_per_sm_bytes,
    max_threads_per_sm (analysis.gemm_traffic). Launches with any of these missing are left out."""
    return store.query(
        """
        SELECT g.rank, g.op_external_id, g.name, g.grid_x, g.grid_y, g.grid_z,
               g.block_x * g.block_y * g.block_z AS threads, g.registers_per_thread,
               g.shared_mem_bytes, d.num_sms, d.regs_per_sm, d.shared_mem_per_sm_bytes,
               d.max_threads_per_sm
        FROM gpu_events g
        JOIN (SELECT rank, any_value(num_sms) AS num_sms, any_value(regs_per_sm) AS regs_per_sm,
                     any_value(shared_mem_per_sm_bytes) AS shared_mem_per_sm_bytes,
                     any_value(max_threads_per_sm) AS max_threads_per_sm
              FROM devices WHERE run_id = ? GROUP BY rank) d USING (rank)
        WHERE g.run_id = ? AND g.kind = 'kernel' AND g.name LIKE 'sm%xmma_gemm%tilesize%'
          AND g.op_external_id IS NOT NULL
          AND g.grid_x IS NOT NULL AND g.block_x IS NOT NULL
          AND g.registers_per_thread IS NOT NULL AND g.shared_mem_bytes IS NOT NULL
          AND d.num_sms IS NOT NULL AND d.regs_per_sm IS NOT NULL
          AND d.shared_mem_per_sm_bytes IS NOT NULL AND d.max_threads_per_sm IS NOT NULL
        """,
        [run_id, run_id],
    )


def _concat_ints(lists: pd.Series) -> np.ndarray:
    """One int64 array from a column of DuckDB lists."""
    parts = [np.asarray(v, dtype=np.int64) for v in lists]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def ceilings(store: Store, device_name: str | None) -> pd.DataFrame:
    """Latest measured ceiling per metric for a device name: metric, value, source, host,
    measured_at_ns (empty when the device was never calibrated)."""
    return store.query(
        """
        SELECT metric, value, source, host, measured_at_ns FROM ceilings
        WHERE device_name = ?
        QUALIFY row_number() OVER (PARTITION BY metric ORDER BY measured_at_ns DESC) = 1
        ORDER BY metric
        """,
        [device_name or ""],
    )


def time_bases(store: Store, run_id: str) -> pd.DataFrame:
    """rank, base_time_ns (add to trace ts_ns for Unix ns; NULL when the trace has none)."""
    return store.query(
        "SELECT rank, base_time_ns FROM ranks WHERE run_id = ? ORDER BY rank", [run_id]
    )
