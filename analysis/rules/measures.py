"""Measurements several rules share: GPU idle time inside host ranges, host-wait gaps, the
kernels inside GPU-side ranges, the kernels or ops with the most time."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pandas as pd

from analysis.facts import Facts
from analysis.intervals import covered_before, islands
from analysis.ranks import rank_positions

_Span = tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def per_rank(facts: Facts, rows: pd.DataFrame) -> Iterator[_Span]:
    """For each rank of `rows` (rank, ts_ns, dur_ns): rank, the rows' positions, the GPU's
    busy islands on that rank (starts, ends), and the rows' starts and ends."""
    t0 = rows["ts_ns"].to_numpy(np.int64)
    t1 = t0 + rows["dur_ns"].to_numpy(np.int64)
    events = facts.events
    at = facts.memo("events_by_rank", lambda: rank_positions(events))
    ts, dur = events["ts_ns"].to_numpy(np.int64), events["dur_ns"].to_numpy(np.int64)
    for r, idx in rank_positions(rows).items():
        mine = at.get(r, np.empty(0, dtype=np.int64))
        s, e, _ = islands(ts[mine], dur[mine])
        yield r, idx, s, e, t0[idx], t1[idx]


def idle_within(facts: Facts, rows: pd.DataFrame) -> np.ndarray:
    """For each row (rank, ts_ns, dur_ns): GPU idle time inside [ts, ts + dur)."""
    out = np.zeros(len(rows), dtype=np.int64)
    for _, idx, s, e, a, b in per_rank(facts, rows):
        out[idx] = (b - a) - (covered_before(s, e, b) - covered_before(s, e, a))
    return out


def host_wait_gaps(facts: Facts) -> pd.DataFrame:
    """Idle gaps the host caused, per rank: rank, start_ns, gap_ns. A gap is host-wait when
    the GPU work that ends it was launched after the gap began (nothing was queued), as in
    analysis.breakdown."""
    parts = []
    for rank, ev in facts.events.groupby("rank"):
        s, e, first = islands(ev["ts_ns"].to_numpy(np.int64), ev["dur_ns"].to_numpy(np.int64))
        if len(s) < 2:
            continue
        launch = ev["launch_ts_ns"].to_numpy()[first[1:]]
        waited = pd.notna(launch) & (launch.astype(float) > e[:-1])
        parts.append(
            pd.DataFrame({"rank": rank, "start_ns": e[:-1][waited],
                          "gap_ns": (s[1:] - e[:-1])[waited]})
        )  # fmt: skip
    if not parts:
        return pd.DataFrame({"rank": [], "start_ns": [], "gap_ns": []})
    return pd.concat(parts, ignore_index=True)


def top_names(rows: pd.DataFrame, col: str, n: int) -> tuple[str, ...]:
    """The n values of `col` (op_name, name) with the most GPU time in `rows`."""
    by = rows.groupby(col, observed=True)["dur_ns"].sum()
    return tuple(str(x) for x in by.nlargest(n).index)


def names_matching(names: pd.Series, pattern: re.Pattern[str]) -> pd.Series:
    """Whether each name matches `pattern`, each distinct name tested once (GPU event names
    are categoricals: a run has a few hundred of them over a million rows)."""
    if isinstance(names.dtype, pd.CategoricalDtype):
        hit = [c for c in names.cat.categories if pattern.search(str(c))]
        return names.isin(hit)
    return names.astype(str).str.contains(pattern)


def kernels_in_ranges(facts: Facts, prefix: str) -> np.ndarray:
    """Mask over facts.kernels: the kernel runs inside a GPU-side range named prefix…."""
    return facts.memo(f"in_ranges:{prefix}", lambda: _kernels_in_ranges(facts, prefix))


def _kernels_in_ranges(facts: Facts, prefix: str) -> np.ndarray:
    r = facts.ranges
    r = r[(r["kind"] == "gpu") & r["name"].str.startswith(prefix)]
    k = facts.kernels
    mask = np.zeros(len(k), dtype=bool)
    kernels_at = rank_positions(k)  # each rank's kernels, not a mask over all per rank
    all_ts = k["ts_ns"].to_numpy(np.int64)
    for rank, rr in r.groupby("rank"):
        sel = kernels_at.get(int(str(rank)), np.empty(0, dtype=np.int64))
        ts = all_ts[sel]
        starts = np.sort(rr["ts_ns"].to_numpy(np.int64))
        ends = (rr["ts_ns"] + rr["dur_ns"]).to_numpy(np.int64)[np.argsort(rr["ts_ns"].to_numpy())]
        i = np.searchsorted(starts, ts, side="right") - 1
        mask[sel] = (i >= 0) & (ts < ends[np.maximum(i, 0)])
    return mask
