"""Read functions over the NVML/GPM telemetry (`gpu_samples`, `gpu_inventory`).

Times are Unix ns. Aggregation by time bucket happens in DuckDB, so a day of 1 s samples from
8 GPUs (691 200 rows) reaches a page as a few thousand rows. Every function returns a frame
with the documented columns, empty when there is no data.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store

# Metrics averaged per bucket (percentages, rates, power, temperatures, clocks).
AVG_METRICS = (
    "util_gpu_pct",
    "util_mem_pct",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "power_mw",
    "power_instant_mw",
    "temp_gpu_c",
    "temp_mem_c",
    "gpm_sm_util_pct",
    "gpm_sm_occupancy_pct",
    "gpm_dram_bw_util_pct",
    "gpm_tensor_util_pct",
    "gpm_fp16_util_pct",
    "gpm_fp32_util_pct",
    "gpm_pcie_rx_mib_s",
    "gpm_pcie_tx_mib_s",
    "gpm_nvlink_rx_mib_s",
    "gpm_nvlink_tx_mib_s",
)


def _query(store: Store, sql: str, params: list[Any] | None = None) -> pd.DataFrame:
    """store.query, retried when an agent merged away a segment the glob had listed."""
    for attempt in range(3):
        try:
            return store.query(sql, params)
        except duckdb.IOException:
            if attempt == 2:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")


def gpus(store: Store) -> pd.DataFrame:
    """One row per (host, gpu) with samples: host, gpu, first_ns, last_ns, samples, source
    (of the newest sample), name, mem_total_bytes, power_limit_mw, peak_hbm_bytes_per_s,
    unsupported (JSON list)."""
    return _query(
        store,
        """
        WITH s AS (
            SELECT host, gpu, min(ts_ns) AS first_ns, max(ts_ns) AS last_ns, count(*) AS samples,
                   arg_max(source, ts_ns) AS source
            FROM gpu_samples GROUP BY host, gpu),
        i AS (
            SELECT host, gpu, arg_max(name, ts_ns) AS name,
                   arg_max(mem_total_bytes, ts_ns) AS mem_total_bytes,
                   arg_max(power_limit_mw, ts_ns) AS power_limit_mw,
                   arg_max(peak_hbm_bytes_per_s, ts_ns) AS peak_hbm_bytes_per_s,
                   arg_max(unsupported, ts_ns) AS unsupported
            FROM gpu_inventory GROUP BY host, gpu)
        SELECT s.*, i.name, i.mem_total_bytes, i.power_limit_mw, i.peak_hbm_bytes_per_s,
               i.unsupported
        FROM s LEFT JOIN i USING (host, gpu) ORDER BY host, gpu
        """,
    )


def inventory(store: Store) -> pd.DataFrame:
    """The newest gpu_inventory row of each (host, gpu): the table's columns."""
    return _query(
        store,
        "SELECT * FROM gpu_inventory "
        "QUALIFY row_number() OVER (PARTITION BY host, gpu ORDER BY ts_ns DESC) = 1 "
        "ORDER BY host, gpu",
    )


def samples(
    store: Store, start_ns: int, end_ns: int, hosts: Sequence[str] | None = None
) -> pd.DataFrame:
    """Raw samples with start_ns <= ts_ns < end_ns (on `hosts`, when given): the gpu_samples
    columns, by host, gpu, time."""
    where = "ts_ns >= ? AND ts_ns < ?"
    params: list[Any] = [start_ns, end_ns]
    if hosts:
        where += f" AND host IN ({', '.join('?' * len(hosts))})"
        params += list(hosts)
    return _query(
        store, f"SELECT * FROM gpu_samples WHERE {where} ORDER BY host, gpu, ts_ns", params
    )


def bucketed(store: Store, start_ns: int, end_ns: int, bucket_ns: int) -> pd.DataFrame:
    """Samples in [start_ns, end_ns) per (host, gpu, bucket): host, gpu, ts_ns (bucket start),
    samples, replayed (any replayed sample), the mean of each AVG_METRICS column, and
    util_gpu_max_pct, sm_clock_min_mhz, mem_used_max_bytes, process_count_max,
    clocks_event_reasons (bitwise OR over the bucket)."""
    means = ", ".join(f"avg({m}) AS {m}" for m in AVG_METRICS)
    return _query(
        store,
        f"""
        SELECT host, gpu, (ts_ns - ?) // ? * ? + ? AS ts_ns, count(*) AS samples,
               bool_or(source = 'replay') AS replayed, {means},
               max(util_gpu_pct) AS util_gpu_max_pct, min(sm_clock_mhz) AS sm_clock_min_mhz,
               max(mem_used_bytes) AS mem_used_max_bytes,
               max(process_count) AS process_count_max,
               bit_or(clocks_event_reasons) AS clocks_event_reasons
        FROM gpu_samples WHERE ts_ns >= ? AND ts_ns < ?
        GROUP BY ALL ORDER BY host, gpu, ts_ns
        """,
        [start_ns, bucket_ns, bucket_ns, start_ns, start_ns, end_ns],
    )


def run_window(store: Store, run_id: str) -> tuple[int, int] | None:
    """A trace run's time span in Unix ns (ranks' base_time_ns + start/end), or None when
    the trace carries no baseTimeNanoseconds."""
    row = _query(
        store,
        "SELECT min(base_time_ns + start_ns) AS s, max(base_time_ns + end_ns) AS e "
        "FROM ranks WHERE run_id = ? AND base_time_ns IS NOT NULL",
        [run_id],
    ).iloc[0]
    if row.isna().any():
        return None
    return int(row["s"]), int(row["e"])


def run_hosts(store: Store, run_id: str) -> list[str]:
    """The host names a trace run's ranks carry (empty when the trace names none)."""
    return [
        str(h)
        for h in _query(
            store,
            "SELECT DISTINCT host_name FROM ranks WHERE run_id = ? AND host_name IS NOT NULL "
            "ORDER BY host_name",
            [run_id],
        )["host_name"]
    ]
