"""A run of more ranks than analysis.rank_sample.MAX_ANALYSED_RANKS is analysed on a sample
of its ranks that keeps the straggler and the slowest step, and every view says so (the
limit lowered so a 12-rank run of the eight real H200 DDP rank traces counts as many)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.pages import dashboard_store, open_page
from helpers.raw_trace import raw_rank

from analysis import rank_sample
from analysis.facts import gather
from analysis.report.document import report_json
from analysis.report.sections import summary_lines
from benchmarks.make_rank_run import make_run
from collectors.ingest import ingest
from data.store import RANKED_TABLES, Store

REPO = Path(__file__).resolve().parents[2]
# Four configurations (default buckets, GPU-bound, one bucket, P2P off): ranks that differ
# more than a real job's.
SOURCES = sorted((REPO / "tests/data").glob("ddp_*_2rank/rank*.pt.trace.json.gz"))
RANKS, SAMPLE = 12, 6


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    assert len(SOURCES) == 8
    folder = tmp_path_factory.mktemp("ranks") / "run"
    make_run(folder, RANKS, SOURCES)
    d = tmp_path_factory.mktemp("store")
    return folder, d, ingest([folder], data_dir=d)


def _report(d: Path, run_id: str, size: int) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rank_sample, "MAX_ANALYSED_RANKS", size)
        return report_json(gather(Store(d), run_id))


@pytest.fixture(scope="module")
def reports(mixed: tuple[Path, Path, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    _, d, run_id = mixed
    return _report(d, run_id, RANKS), _report(d, run_id, SAMPLE)


def test_a_store_of_some_ranks_holds_those_ranks_only(mixed: tuple[Path, Path, str]) -> None:
    _, d, run_id = mixed
    whole, some = Store(d), Store(d).of_ranks([7, 2])
    assert some.ranks == (2, 7)
    for table in RANKED_TABLES:
        sql = f"SELECT count(*) FROM {table} WHERE run_id = ? AND rank IN (2, 7)"
        expected = whole.con.execute(sql, [run_id]).fetchall()[0][0]
        got = some.con.execute(f"SELECT rank, count(*) FROM {table} GROUP BY rank").fetchall()
        assert {r for r, _ in got} <= {2, 7}, table
        assert sum(n for _, n in got) == expected, table
    assert some.run_summary(run_id)["rank_count"] == RANKS  # the runs row is whole


def test_a_run_of_many_ranks_is_reported_from_its_sample(
    mixed: tuple[Path, Path, str], reports: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    folder, _, _ = mixed
    every, sample = reports
    assert "analysed_ranks" not in every["run"]
    chosen = sample["run"]["analysed_ranks"]
    assert chosen["of"] == RANKS
    assert len(chosen["ranks"]) == SAMPLE
    assert [c["rank"] for c in chosen["chosen_by"]] == chosen["ranks"]
    assert [r["rank"] for r in sample["metrics"]["per_rank"]] == chosen["ranks"]
    # The run's kernel count is the whole run's, counted from the JSON files themselves.
    kernels = sum(raw_rank(p).kernels for p in folder.iterdir())
    assert sample["metrics"]["overall"]["kernel_count"] == kernels
    assert every["metrics"]["overall"]["kernel_count"] == kernels
    assert sample["metrics"]["overall"]["kernel_time_ms"] == pytest.approx(
        every["metrics"]["overall"]["kernel_time_ms"]
    )


def test_the_sample_keeps_the_straggler_and_the_slowest_step(
    reports: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    every, sample = reports
    ranks = sample["run"]["analysed_ranks"]["ranks"]
    slowest = max(every["metrics"]["per_rank"], key=lambda r: r["step_time_ms"])
    assert slowest["rank"] in ranks
    assert every["breakdown"]["straggler_rank"] in ranks
    assert sample["breakdown"]["straggler_rank"] == every["breakdown"]["straggler_rank"]
    # The straggler finding names the same rank, its saving from the same rank's steps.
    strag = {d["id"]: d for d in every["recommendations"]}["straggler"]
    strag_s = {d["id"]: d for d in sample["recommendations"]}["straggler"]
    assert strag_s["evidence"][0].split()[1] == strag["evidence"][0].split()[1]
    assert strag_s["est_saving_ms"] == pytest.approx(strag["est_saving_ms"], rel=0.25)


def test_the_summary_and_the_pages_say_which_ranks(
    mixed: tuple[Path, Path, str], reports: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    _, d, run_id = mixed
    _, sample = reports
    line = f"come from {SAMPLE} of its {RANKS} ranks: most time outside communication "
    assert any(line in s for s in summary_lines(sample))
    with dashboard_store(d), pytest.MonkeyPatch.context() as mp:
        mp.setattr(rank_sample, "MAX_ANALYSED_RANKS", SAMPLE)
        at = open_page("pages/recommendations.py", run_id)
    assert any(f"{SAMPLE} of its {RANKS} ranks" in c.value for c in at.caption)


def test_the_operators_page_nests_the_sampled_ranks_ops(
    mixed: tuple[Path, Path, str], reports: tuple[dict[str, Any], dict[str, Any]]
) -> None:
    """Its GPU time comes from the sample's facts, so its ops are the same ranks' (nesting
    every rank's took 13.9 s at 512)."""
    _, d, run_id = mixed
    ranks = reports[1]["run"]["analysed_ranks"]["ranks"]
    sql = "SELECT count(*) FROM cpu_ops WHERE run_id = ? AND rank IN ({})"
    con = Store(d).con
    sampled = con.execute(sql.format(", ".join(map(str, ranks))), [run_id]).fetchall()[0][0]
    every = con.execute(sql.format(", ".join(map(str, range(RANKS)))), [run_id]).fetchall()[0][0]
    assert 0 < sampled < every
    with dashboard_store(d), pytest.MonkeyPatch.context() as mp:
        mp.setattr(rank_sample, "MAX_ANALYSED_RANKS", SAMPLE)
        at = open_page("pages/operators.py", run_id)
    counts = [c.value.split()[0] for c in at.caption if " op calls, " in c.value]
    assert counts == [f"{sampled:,}"]


def test_a_sample_smaller_than_its_ends_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        rank_sample.choose(None, 2)  # type: ignore[arg-type]
