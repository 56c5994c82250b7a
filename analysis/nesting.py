"""How a thread's CPU slices nest: parent, depth and subtree of each slice, vectorised.

A thread's slices (operators, user annotations, nn.Module ranges) are properly nested
intervals: sorted by start, longer first, a slice's ancestors are exactly the slices open at
its start. So, per thread, depth = slices started before it − slices ended by its start, the
parent is the last earlier slice one level up, and the subtree is the run of later slices
that start before its end. numpy does each in one pass: a Python stack over the 390 k slices
of the benchmark run cost 0.6 s, this costs 0.05 s. Zero-length slices count as 1 ns long, so
that a slice ending where the next starts is never its parent.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

NEST_COLUMNS = ["parent", "depth", "subtree_end"]


def nest_order(slices: pd.DataFrame, thread: list[str]) -> np.ndarray:
    """Row positions in nesting order: by thread, start, then longer first (ties: `kind`
    'annotation' and 'module' before 'op', so a scope encloses the op that fills it)."""
    inner = (slices["kind"].astype(str) == "op").to_numpy() if "kind" in slices else None
    keys = [
        -slices["dur_ns"].to_numpy(np.int64),
        slices["ts_ns"].to_numpy(np.int64),
        *[_ints(slices[c]) for c in reversed(thread)],
    ]
    if inner is not None:
        keys.insert(0, inner)
    return np.lexsort(keys)


def _ints(col: pd.Series) -> np.ndarray:
    """A thread column as int64, a missing value as -1 (pid and tid are nullable)."""
    return col.to_numpy(dtype=np.int64, na_value=-1)


def nest(slices: pd.DataFrame, thread: list[str]) -> pd.DataFrame:
    """Parent, depth and subtree of each slice, for slices already in `nest_order`.

    Args:
        slices: ts_ns, dur_ns and the `thread` columns (e.g. rank, pid, tid), sorted.
        thread: the columns that name a thread.
    Returns NEST_COLUMNS, one row per slice (same index): parent (position of the enclosing
    slice, -1 at the top), depth (0 at the top), subtree_end (the slice and its descendants
    are positions [i, subtree_end)).
    """
    n = len(slices)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    sub_end = np.arange(1, n + 1, dtype=np.int64)
    if n:
        ts = slices["ts_ns"].to_numpy(np.int64)
        end = ts + np.maximum(slices["dur_ns"].to_numpy(np.int64), 1)
        # Sorted by thread: a thread starts where any thread column changes.
        change = np.zeros(n - 1, dtype=bool)
        for c in thread:
            change |= np.diff(_ints(slices[c])) != 0
        bounds = np.concatenate([[0], np.flatnonzero(change) + 1, [n]])
        starts, stops = bounds[:-1], bounds[1:]
        for lo, hi in zip(starts, stops, strict=True):
            p, d, s = _nest_thread(ts[lo:hi], end[lo:hi])
            parent[lo:hi] = np.where(p >= 0, p + lo, -1)
            depth[lo:hi], sub_end[lo:hi] = d, s + lo
    return pd.DataFrame(
        {"parent": parent, "depth": depth, "subtree_end": sub_end}, index=slices.index
    )


def _nest_thread(ts: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(ts)
    pos = np.arange(n, dtype=np.int64)
    # Slices after i start at or after ts_i and last at least 1 ns: none has ended by ts_i.
    ended = np.searchsorted(np.sort(end), ts, side="right")
    depth = pos - ended
    # The parent: the last earlier slice one level up (key depth·n + position, sorted).
    key = depth * n + pos
    order = np.argsort(key, kind="stable")
    at = np.searchsorted(key[order], (depth - 1) * n + pos) - 1
    cand = order[np.clip(at, 0, None)]
    parent = np.where((depth > 0) & (at >= 0) & (depth[cand] == depth - 1), cand, -1)
    subtree_end = np.maximum(np.searchsorted(ts, end, side="left"), pos + 1)
    return parent, depth, subtree_end


def nearest(parent: np.ndarray, is_scope: np.ndarray) -> np.ndarray:
    """For each slice, the position of its nearest ancestor that `is_scope` (not itself),
    -1 when none: pointer jumping, log2(depth) vectorised rounds."""
    n = len(parent)
    # up[i]: i itself when it is a scope, else its parent (or -1 at the top).
    up = np.where(is_scope, np.arange(n), parent)
    while True:
        safe = np.where(up >= 0, up, 0)
        nxt = np.where((up >= 0) & ~is_scope[safe], up[safe], up)
        nxt = np.where(up >= 0, nxt, -1)
        if np.array_equal(nxt, up):
            break
        up = nxt
    safe_parent = np.where(parent >= 0, parent, 0)
    return np.where(parent >= 0, up[safe_parent], -1)


def subtree_sums(values: np.ndarray, subtree_end: np.ndarray) -> np.ndarray:
    """Each slice's value plus its descendants' (slices in nesting order)."""
    cs = np.concatenate([[0.0], np.cumsum(values, dtype=np.float64)])
    sums: np.ndarray = cs[subtree_end] - cs[np.arange(len(values))]
    return sums
