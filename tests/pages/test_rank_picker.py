"""Runs of many ranks: a rank picker and the spread over ranks instead of a row, bar or lane
per rank on Breakdown and Overview (the threshold lowered so the real 2-rank DDP recording
counts as many)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.pages import dashboard_store, open_page
from helpers.paths import SAMPLES

from collectors.ingest import ingest
from pages import _ui


@pytest.fixture(scope="module")
def ddp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    d = tmp_path_factory.mktemp("store")
    run_id = ingest([SAMPLES / "ddp_gpt_bf16_2rank"], data_dir=d)
    with dashboard_store(d), pytest.MonkeyPatch.context() as mp:
        mp.setattr(_ui, "MANY_RANKS", 1)
        yield run_id


def test_breakdown_draws_the_picked_rank_and_the_spread(ddp: str) -> None:
    at = open_page("pages/breakdown.py", ddp)
    picker = at.selectbox[0]
    assert picker.label == "Rank (of 2)"
    assert any(h.value == f"Per step, rank {picker.value}" for h in at.subheader)
    assert any("GPU busy across the 2 ranks" in m.value for m in at.markdown)
    other = 1 - picker.value
    picker.set_value(other).run()
    assert any(h.value == f"Per step, rank {other}" for h in at.subheader)


def test_overview_lists_the_spread_and_one_rank(ddp: str) -> None:
    at = open_page("pages/overview.py", ddp)
    assert at.selectbox[0].label == "Rank (of 2)"
    frames = [f.value for f in at.dataframe]
    spread = next(f for f in frames if "per rank" in f.columns)
    assert list(spread["per rank"]) == ["kernels", "events", "malformed"]
    ranks = next(f for f in frames if "rank from" in f.columns)
    assert list(ranks["rank"]) == [at.selectbox[0].value]
