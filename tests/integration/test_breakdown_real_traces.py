"""The breakdown's invariants on every shared fixture: shares that add up to the ns, windows
that tile, and a two-rank NCCL run (its definitions are in tests/unit/test_breakdown.py)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.stores import fixture_run
from helpers.traces import fixture_runs

from analysis import breakdown as bd
from data import reads

PARTS = ["compute_ns", "comm_ns", "memcpy_ns", "memset_ns", "idle_ns"]
REAL = [r.label for r in fixture_runs()]


@pytest.mark.parametrize("label", REAL)
def test_real_trace_shares_add_up_to_the_ns(label: str) -> None:
    s, run = fixture_run(label)
    ev, st = reads.gpu_events(s, run), reads.steps(s, run)
    per = bd.breakdown(ev, st)
    if ev.empty:
        assert per.empty
        return
    assert (per[PARTS].sum(axis=1) == per["window_ns"]).all()
    assert (
        per["host_wait_ns"] + per["kernel_wait_ns"] + per["idle_other_ns"] == per["idle_ns"]
    ).all()
    assert (per.drop(columns=["rank", "step"]).to_numpy() >= 0).all()
    for _, r in per.groupby("rank"):  # windows tile: each starts where the previous ended
        assert (r["start_ns"].to_numpy()[1:] == r["end_ns"].to_numpy()[:-1]).all()
    # Every GPU activity of a step-less rank, and all the launched work of the steps, is
    # inside the windows: the busy time equals the union of the events inside them.
    ts = ev["ts_ns"].to_numpy(np.int64)
    inside = (ts >= per["start_ns"].min()) & (ts + ev["dur_ns"].to_numpy() <= per["end_ns"].max())
    if not st.empty:
        assert inside[ev["step"].notna().to_numpy()].all()


def test_real_two_rank_nccl_run() -> None:
    s, run = fixture_run("foreign/hta/trace_filter/")
    ev = reads.gpu_events(s, run)
    per = bd.breakdown(ev, reads.steps(s, run))
    assert sorted(per["rank"].unique()) == [0, 1]
    assert (per["comm_total_ns"] > 0).all()
    assert (per["comm_overlapped_ns"] <= per["comm_total_ns"]).all()
    sh = bd.shares(per)
    assert sh["comm_pct"].iloc[-1] > 5  # NCCL kernels are a real share of this run
    _, straggler = bd.rank_spread(sh, per)
    assert straggler in (0, 1)
