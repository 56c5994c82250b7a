"""Runs of many ranks: a rank picker and the spread over ranks instead of a row, bar or lane
per rank on Breakdown and Overview, the picked ranks' lanes on the Timeline (the threshold
lowered so the real 2-rank DDP recording counts as many)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.pages import dashboard_store, open_page, timeline_payload
from helpers.paths import SAMPLES
from helpers.raw_ops import raw_name_matches
from helpers.raw_trace import raw_rank

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


def test_timeline_draws_the_picked_ranks_only(ddp: str) -> None:
    at = open_page("pages/timeline.py", ddp)
    picker = at.multiselect[0]
    assert picker.label == "Ranks (of 2)"
    assert picker.value == [0]  # the first ranks, at most MANY_RANKS (here 1)
    assert {lane["rank"] for lane in timeline_payload(at)["lanes"]} == {0}
    picker.set_value([1]).run()
    p = timeline_payload(at)
    assert {lane["rank"] for lane in p["lanes"]} == {1}
    # the window was read for rank 1 alone: its GPU activities, counted from its JSON
    rank1 = SAMPLES / "ddp_gpt_bf16_2rank" / "rank1.pt.trace.json.gz"
    raw = raw_rank(rank1)
    assert f"{raw.kernels + raw.memcpy + raw.memset:,} GPU activities" in p["status"]
    drawn = [i for part in ("cpu", "gpu", "grid") if p[part] for i in p[part]["lane"]]
    assert drawn
    assert set(drawn) <= set(range(len(p["lanes"])))
    # a search counts rank 1's slices only
    at.text_input[0].set_value("nccl").run()
    assert at.selectbox[0].label.startswith(f"{raw_name_matches(rank1, 'nccl'):,} slices match")
