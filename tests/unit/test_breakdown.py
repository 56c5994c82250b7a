"""The breakdown's definitions on tiny hand-built frames (its invariants on real traces are in
tests/integration/test_breakdown_real_traces.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import breakdown as bd


def events(*rows: tuple[object, ...]) -> pd.DataFrame:
    """(kind, name, ts_ns, dur_ns, launch_ts_ns[, rank, step, stream]) rows."""
    full = [(*r, *(0, 1, 7)[len(r) - 5 :]) for r in rows]
    return pd.DataFrame(
        full, columns=["kind", "name", "ts_ns", "dur_ns", "launch_ts_ns", "rank", "step", "stream"]
    )


def steps(*rows: tuple[int, ...]) -> pd.DataFrame:
    """(rank, step, ts_ns, dur_ns, gpu_start_ns, gpu_end_ns) rows."""
    cols = ["rank", "step", "ts_ns", "dur_ns", "gpu_start_ns", "gpu_end_ns"]
    return pd.DataFrame(list(rows), columns=cols)


def test_priority_compute_comm_memcpy_memset() -> None:
    ev = events(
        ("kernel", "gemm", 0, 100, 0),
        ("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 50, 100, 0),
        ("memcpy", "Memcpy DtoD (Device -> Device)", 140, 60, 0),
        ("memset", "Memset (Device)", 190, 20, 0),
    )
    row = bd.breakdown(ev, steps((0, 1, 0, 10, 0, 210))).iloc[0]
    assert row["window_ns"] == 210
    assert (row["compute_ns"], row["comm_ns"], row["memcpy_ns"], row["memset_ns"]) == (
        100,
        50,
        50,
        10,
    )
    assert row["idle_ns"] == 0
    assert (row["comm_total_ns"], row["comm_overlapped_ns"]) == (100, 50)


def test_idle_split_host_wait_kernel_wait_other() -> None:
    ev = events(
        ("kernel", "a", 0, 100, 0),
        ("kernel", "b", 110, 90, 20),  # queued early, 10 ns gap: kernel wait
        ("kernel", "c", 100_000, 100, 90_000),  # launched after b ended: host wait 99 800 ns
        ("kernel", "d", 200_000, 50, 50_000),  # queued long before, 99 900 ns gap: other
    )
    row = bd.breakdown(ev, steps((0, 1, 0, 5, 0, 200_050))).iloc[0]
    assert row["idle_ns"] == 10 + 99_800 + 99_900
    assert (row["host_wait_ns"], row["kernel_wait_ns"], row["idle_other_ns"]) == (
        99_800,
        10,
        99_900,
    )


def test_kernel_wait_threshold_is_a_parameter() -> None:
    ev = events(("kernel", "a", 0, 100, 0), ("kernel", "b", 110, 90, 20))
    row = bd.breakdown(ev, steps((0, 1, 0, 5, 0, 200)), kernel_wait_max_ns=5).iloc[0]
    assert (row["kernel_wait_ns"], row["idle_other_ns"]) == (0, 10)


def test_step_windows_tile_when_the_cpu_runs_ahead() -> None:
    # Step 2's CPU starts (at 50) long before step 1's GPU work ends (at 1000).
    ev = events(
        ("kernel", "a", 100, 900, 10, 0, 1),
        ("kernel", "b", 1000, 500, 60, 0, 2),
    )
    st = steps((0, 1, 0, 50, 100, 1000), (0, 2, 50, 50, 1000, 1500))
    per = bd.breakdown(ev, st)
    assert per[["start_ns", "end_ns"]].to_numpy().tolist() == [[0, 1000], [1000, 1500]]
    assert per["compute_ns"].tolist() == [900, 500]
    # The 100 ns before the first kernel: nothing queued yet (launch at 10 > gap start 0).
    assert per["host_wait_ns"].tolist() == [10 * 0 + 100, 0]


def test_a_step_without_gpu_work_is_host_wait() -> None:
    ev = events(("kernel", "a", 0, 100, 0, 0, 1), ("kernel", "b", 500, 100, 450, 0, 3))
    st = steps((0, 1, 0, 10, 0, 100), (0, 2, 20, 300, None, None), (0, 3, 400, 10, 500, 600))
    per = bd.breakdown(ev, st.astype({"gpu_start_ns": "Int64", "gpu_end_ns": "Int64"}))
    assert per[["start_ns", "end_ns"]].to_numpy().tolist() == [[0, 100], [100, 320], [320, 600]]
    assert per["host_wait_ns"].tolist() == [0, 220, 180]


def test_a_rank_without_steps_is_one_window() -> None:
    ev = events(("kernel", "a", 1000, 100, 900, 4), ("kernel", "b", 1300, 100, 950, 4))
    per = bd.breakdown(ev, steps())
    assert len(per) == 1
    assert pd.isna(per["step"].iloc[0])
    assert (per["start_ns"].iloc[0], per["end_ns"].iloc[0], per["idle_ns"].iloc[0]) == (
        1000,
        1400,
        200,
    )
    assert per["kernel_wait_ns"].iloc[0] == 200  # b was queued (at 950) before the gap


def test_shares_spread_and_straggler() -> None:
    ev = events(
        ("kernel", "gemm", 0, 100, 0, 0),
        ("kernel", "ncclKernel_AllReduce", 100, 100, 0, 0),
        ("kernel", "gemm", 0, 180, 0, 1),
        ("kernel", "ncclKernel_AllReduce", 180, 20, 0, 1),
    )
    st = steps((0, 1, 0, 1, 0, 200), (1, 1, 0, 1, 0, 200))
    per = bd.breakdown(ev, st)
    sh = bd.shares(per)
    assert sh["compute_pct"].tolist() == [50.0, 90.0, 70.0]  # rank 0, rank 1, overall
    assert sh["comm_pct"].tolist() == [50.0, 10.0, 30.0]
    assert sh["gpu_busy_pct"].tolist() == [100.0, 100.0, 100.0]
    spread, straggler = bd.rank_spread(sh, per)
    assert straggler == 1  # rank 0 waits in its all-reduce for rank 1
    comm = spread.set_index("metric").loc["comm_pct"]
    assert (comm["min"], comm["max"], comm["max_rank"]) == (10.0, 50.0, 0)


def test_launch_stats() -> None:
    ev = events(
        ("kernel", "a", 1000, 5_000, 0),
        ("kernel", "b", 9000, 20_000, 1000),
        ("memcpy", "Memcpy", 9000, 20, 0),
    )
    ls = bd.launch_stats(ev).iloc[0]
    assert (ls["kernel_count"], ls["short_kernel_count"]) == (2, 1)
    assert (ls["launch_delay_p50_ns"], ls["launch_delay_max_ns"]) == (4500.0, 8000.0)


def test_hta_mapping_rounds_to_whole_us() -> None:
    ev = events(("kernel", "a", 1500, 900, 0), ("kernel", "b", 3000, 2000, 0))
    marks = pd.DataFrame({"rank": [0], "name": ["ProfilerStep#1"], "ts_ns": [0], "dur_ns": [1]})
    h = bd.hta_comparable(ev, marks).iloc[0]
    # a -> [2 µs, 2 µs): nothing; b stays [3, 5) µs; window [2, 5) µs.
    assert h["kernel_time_ns"] == 3000
    assert h["idle_pct"] == pytest.approx(100 / 3)
    exact = bd.hta_comparable(ev, marks, hta_rounding=False).iloc[0]
    assert exact["kernel_time_ns"] == 3500
