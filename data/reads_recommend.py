"""Reads for the recommendation rules: host syncs, launch calls, copies, annotations, memory.

Each returns only the columns a rule uses; the rules themselves are in analysis/rules_*.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store


def host_syncs(store: Store, run_id: str) -> pd.DataFrame:
    """Runtime calls that block the host until the GPU is done (…Synchronize; not
    cudaEventQuery, which only polls) and the CPU op around each: rank, step, name, ts_ns,
    dur_ns, op (the innermost CPU op that contains the call, if any)."""
    return store.query(
        """
        SELECT s.rank, s.step, s.name, s.ts_ns, s.dur_ns,
               (SELECT arg_min(o.name, o.dur_ns) FROM cpu_ops o
                 WHERE o.run_id = s.run_id AND o.rank = s.rank AND o.tid = s.tid
                   AND o.ts_ns <= s.ts_ns AND o.ts_ns + o.dur_ns >= s.ts_ns + s.dur_ns
                   AND o.name NOT LIKE 'ProfilerStep#%') AS op
        FROM runtime_calls s
        WHERE s.run_id = ? AND s.call_kind = 'sync' AND s.name LIKE '%Synchronize%'
        ORDER BY s.rank, s.ts_ns
        """,
        [run_id],
    )


def launch_calls(store: Store, run_id: str) -> pd.DataFrame:
    """Kernel and graph launch calls per rank and step: rank, step, call_kind, calls,
    cpu_ns (summed duration of the calls)."""
    return store.query(
        """
        SELECT rank, step, call_kind, count(*) AS calls, sum(dur_ns) AS cpu_ns
        FROM runtime_calls
        WHERE run_id = ? AND call_kind IN ('launch', 'graph_launch')
        GROUP BY ALL ORDER BY rank, step, call_kind
        """,
        [run_id],
    )


def memcpys(store: Store, run_id: str) -> pd.DataFrame:
    """Every memcpy: rank, step, memcpy_kind, src_memory, dst_memory, bytes, dur_ns, ts_ns."""
    return store.query(
        """
        SELECT rank, step, memcpy_kind, src_memory, dst_memory, bytes, dur_ns, ts_ns
        FROM gpu_events WHERE run_id = ? AND kind = 'memcpy' ORDER BY rank, ts_ns
        """,
        [run_id],
    )


def ranges(store: Store, run_id: str) -> pd.DataFrame:
    """CPU-side named ranges (record_function annotations and CPU ops whose name is a range,
    e.g. `enumerate(DataLoader)#…`, `Optimizer.step#…`): rank, step, kind (cpu/gpu), name,
    ts_ns, dur_ns. ProfilerStep ranges are left out (the steps table has them)."""
    return store.query(
        """
        SELECT rank, NULL::INTEGER AS step, kind, name, ts_ns, dur_ns FROM annotations
        WHERE run_id = $run AND name NOT LIKE 'ProfilerStep#%'
        UNION ALL
        SELECT rank, step, 'cpu' AS kind, name, ts_ns, dur_ns FROM cpu_ops
        WHERE run_id = $run AND name LIKE '%#%' AND name NOT LIKE 'ProfilerStep#%'
        ORDER BY rank, ts_ns
        """,
        {"run": run_id},
    )


def memory_peaks(store: Store, run_id: str) -> pd.DataFrame:
    """Per rank and device: peak allocated and reserved bytes from the allocator events
    (profile_memory=True), with the device's memory: rank, device_id, peak_allocated_bytes,
    peak_reserved_bytes, total_memory_bytes (NULL without deviceProperties)."""
    return store.query(
        """
        SELECT m.rank, m.device_id, max(m.total_allocated_bytes) AS peak_allocated_bytes,
               max(m.total_reserved_bytes) AS peak_reserved_bytes,
               any_value(d.total_global_mem_bytes) AS total_memory_bytes
        FROM memory_events m
        LEFT JOIN devices d ON d.run_id = m.run_id AND d.rank = m.rank
                            AND d.device_id = m.device_id
        WHERE m.run_id = ? AND m.device_type = 1
        GROUP BY ALL ORDER BY m.rank, m.device_id
        """,
        [run_id],
    )


def shaped_ops(store: Store, run_id: str, names: tuple[str, ...]) -> pd.DataFrame:
    """CPU ops of the given names with their shapes: rank, step, external_id, name, ts_ns,
    dur_ns, input_dims, input_types (JSON text as recorded)."""
    marks = ", ".join("?" for _ in names)
    return store.query(
        f"SELECT rank, step, external_id, name, ts_ns, dur_ns, input_dims, input_types "
        f"FROM cpu_ops WHERE run_id = ? AND name IN ({marks}) ORDER BY rank, ts_ns",
        [run_id, *names],
    )


def backward_op_count(store: Store, run_id: str) -> int:
    """CPU ops of the autograd engine (a training step ran a backward pass)."""
    rows = store.rows(
        "SELECT count(*) AS n FROM cpu_ops WHERE run_id = ? "
        "AND (name LIKE 'autograd::engine::evaluate_function:%' OR name LIKE '%Backward0')",
        [run_id],
    )
    return int(rows[0]["n"])


def collectives(store: Store, run_id: str) -> pd.DataFrame:
    """Collective kernels and ops: the `collectives` table's columns for one run."""
    return store.query(
        "SELECT * EXCLUDE (run_id) FROM collectives WHERE run_id = ? ORDER BY rank, ts_ns",
        [run_id],
    )


def allocator_calls(store: Store, run_id: str) -> pd.DataFrame:
    """Device-memory allocations and frees that reached the driver (the caching allocator
    grew or gave memory back): rank, step, name, ts_ns, dur_ns."""
    return store.query(
        """
        SELECT rank, step, name, ts_ns, dur_ns FROM runtime_calls
        WHERE run_id = ? AND regexp_matches(name, '^(cuda|hip)(Malloc|Free)(Async)?$')
        ORDER BY rank, ts_ns
        """,
        [run_id],
    )
