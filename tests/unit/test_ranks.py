"""analysis.ranks: each rank's rows in one pass, and the spread pages show for many ranks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.ranks import rank_positions, rows_of, spread


def test_rank_positions_are_each_ranks_rows_in_order() -> None:
    frame = pd.DataFrame({"rank": [2.0, 0.0, np.nan, 2.0, 1.0], "v": range(5)})
    at = rank_positions(frame)
    assert list(at) == [0, 1, 2]  # NaN rank (a run's overall row) left out
    assert rows_of(frame, at, 2)["v"].tolist() == [0, 3]
    assert rows_of(frame, at, 5).empty


def test_spread_names_the_ranks_furthest_from_the_median() -> None:
    per_rank = pd.Series([50.0, 51.0, 49.0, 12.0, 50.0, 70.0], index=[0, 1, 2, 3, 4, 5])
    got = spread(per_rank, outliers=2)
    assert (got["min"], got["median"], got["max"]) == (12.0, 50.0, 70.0)
    assert got["outliers"] == [3, 5]
    # no rank differs from the median: no outliers
    assert spread(pd.Series([1.0, 1.0]))["outliers"] == []
    assert spread(pd.Series([], dtype=float))["median"] is None
