"""Per-rank views of a run's frames: each rank's rows found in one pass, and the spread of a
per-rank value (min / median / max and the outlier ranks) for runs with many ranks."""

from __future__ import annotations

import numpy as np
import pandas as pd


def rank_positions(frame: pd.DataFrame) -> dict[int, np.ndarray]:
    """Each rank's row positions in `frame` (a `rank` column), ranks in order. One grouping
    pass: a boolean mask per rank costs ranks × rows (the 2000-rank report took 86 s)."""
    if frame.empty:
        return {}
    groups = frame.groupby("rank", sort=True).indices
    ranks = np.asarray(list(groups), dtype=np.int64)  # a float column too (NaN rows left out)
    return {
        int(r): np.asarray(p, dtype=np.int64) for r, p in zip(ranks, groups.values(), strict=True)
    }


def rows_of(frame: pd.DataFrame, positions: dict[int, np.ndarray], rank: int) -> pd.DataFrame:
    """`frame`'s rows of one rank (none when the rank has no rows there)."""
    return frame.iloc[positions.get(rank, np.empty(0, dtype=np.int64))]


def spread(values: pd.Series, outliers: int = 3) -> dict[str, object]:
    """min, median, max of a per-rank value (indexed by rank) and the ranks furthest from
    the median, farthest first: what a page shows instead of one row per rank."""
    v = values.dropna()
    if v.empty:
        return {"min": None, "median": None, "max": None, "outliers": []}
    median = float(v.median())
    far = (v - median).abs().sort_values(ascending=False, kind="stable")
    return {
        "min": float(v.min()),
        "median": median,
        "max": float(v.max()),
        "outliers": [int(r) for r in far.index[:outliers] if far[r] > 0],
    }
