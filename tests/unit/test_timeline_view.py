"""The explorable timeline's budget, lanes, nesting and links, on small hand-built frames."""

from __future__ import annotations

import pandas as pd

from analysis.timeline import MAX_SHAPES
from analysis.timeline_budget import PIXELS, plan
from analysis.timeline_view import _Strings, cpu_slices, lane_table, links, step_lines


def test_the_budget_keeps_every_window_within_the_cap() -> None:
    # a small window: everything, exactly
    assert plan(0, 10**6, 500, 900, 900, 2).exact
    # too many CPU slices: the ones a pixel long, every kernel, no grid
    b = plan(0, 2 * 10**9, 5_000, 400_000, 3_000, 2)
    assert (b.exact, b.buckets, b.gpu_limit, b.cpu_limit) == (False, 0, 5_000, 3_000)
    assert b.min_dur_ns == 2 * 10**9 // PIXELS
    # far too many of both: a grid behind the longest of each, within the cap
    b = plan(0, 10**10, 100_000, 500_000, 40_000, 4)
    assert b.buckets * 4 + b.gpu_limit + b.cpu_limit <= MAX_SHAPES
    assert b.buckets > 0
    assert b.cpu_limit > 0
    assert b.gpu_limit > 0


def test_lanes_put_each_ranks_threads_above_its_streams() -> None:
    threads = pd.DataFrame({"rank": [0, 1, 0], "pid": [1, 1, 1], "tid": [10, 30, 20]})
    streams = pd.DataFrame({"rank": [1, 0, 0], "stream": [7, 13, 7]})
    lanes = lane_table(threads, streams)
    assert lanes["key"].tolist() == [
        "cpu:0:1:10", "cpu:0:1:20", "gpu:0:7", "gpu:0:13", "cpu:1:1:30", "gpu:1:7",
    ]  # fmt: skip
    assert lanes["label"].iloc[2] == "rank 0 · stream 7"


def cpu_window() -> pd.DataFrame:
    return pd.DataFrame({
        "kind": ["runtime", "op", "annotation"], "rank": [0, 0, 0], "pid": [1, 1, 1],
        "tid": [10, 10, 10], "ts_ns": [2_500, 2_000, 1_000], "dur_ns": [100, 1_000, 5_000],
        "name": ["cudaLaunchKernel", "aten::mm", "ProfilerStep#3"], "link": [77, 5, None],
    })  # fmt: skip


def test_cpu_slices_nest_on_their_thread() -> None:
    lanes = lane_table(pd.DataFrame({"rank": [0], "pid": [1], "tid": [10]}),
                       pd.DataFrame({"rank": [0], "stream": [7]}))  # fmt: skip
    s = _Strings()
    c = cpu_slices(cpu_window(), lanes, 1_000, s)
    names = [s.table()[i] for i in c["name"]]
    assert names == ["ProfilerStep#3", "aten::mm", "cudaLaunchKernel"]
    assert c["depth"] == [0, 1, 2]
    assert c["ts"] == [0.0, 1.0, 1.5]  # µs from the origin
    assert c["link"] == [-1, 5, 77]


def test_links_draw_an_arrow_from_the_launch_to_its_kernel() -> None:
    lanes = lane_table(pd.DataFrame({"rank": [0], "pid": [1], "tid": [10]}),
                       pd.DataFrame({"rank": [0], "stream": [7]}))  # fmt: skip
    cpu = cpu_slices(cpu_window(), lanes, 0, _Strings())
    linked = pd.DataFrame({
        "role": ["op", "launch", "kernel"], "lane": ["cpu", "cpu", "gpu"], "rank": [0, 0, 0],
        "pid": [1, 1, 0], "tid": [10, 10, 7], "ts_ns": [2_000, 2_500, 9_000],
        "dur_ns": [1_000, 100, 400],
    })  # fmt: skip
    boxes, flows = links(linked, lanes, cpu, 0)
    assert [b["depth"] for b in boxes] == [1, 2, 0]  # the loaded slices' depths
    assert flows == [{"from_lane": 0, "from_ts": 2.5, "from_depth": 2, "to_lane": 1,
                      "to_ts": 9.0}]  # fmt: skip


def test_a_step_is_marked_once_per_rank() -> None:
    marks = pd.DataFrame({"rank": [0, 0, 0], "name": ["ProfilerStep#3"] * 2 + ["ProfilerStep#4"],
                          "ts_ns": [5_000, 4_000, 9_000]})  # fmt: skip
    assert step_lines(marks, 0) == [
        {"rank": 0, "ts": 4.0, "label": "step 3"}, {"rank": 0, "ts": 9.0, "label": "step 4"},
    ]  # fmt: skip
