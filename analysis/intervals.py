"""Unions of time intervals, in integer ns: the one implementation every analysis uses."""

from __future__ import annotations

import numpy as np


def islands(ts_ns: np.ndarray, dur_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of intervals [ts, ts+dur) as disjoint sorted islands: (start, end, first).

    `first` is, per island, the position (in `ts_ns`) of the interval that opens it.
    """
    if len(ts_ns) == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    order = np.argsort(ts_ns, kind="stable")
    start = ts_ns[order].astype(np.int64)
    end = start + dur_ns[order].astype(np.int64)
    reach = np.maximum.accumulate(end)
    # A new island starts where an interval begins after everything before it ended.
    new = np.empty(len(start), dtype=bool)
    new[0] = True
    new[1:] = start[1:] > reach[:-1]
    idx = np.flatnonzero(new)
    island_end = np.append(reach[idx[1:] - 1], reach[-1])
    return start[idx], island_end, order[idx]


def covered_before(start: np.ndarray, end: np.ndarray, points: np.ndarray) -> np.ndarray:
    """For disjoint sorted islands: covered length in (-inf, p) for each point p."""
    cum = np.concatenate([[0], np.cumsum(end - start)])
    k = np.searchsorted(end, points, side="right")  # islands that ended by p
    partial = np.zeros(len(points), dtype=np.int64)
    inside = k < len(start)
    partial[inside] = np.maximum(points[inside] - start[k[inside]], 0)
    return np.asarray(cum[k] + partial, dtype=np.int64)
