"""A run of many ranks is written batch by batch, by worker processes side by side: the
same rows as one process writing them one batch after another, in the ranks' order, and a
bad rank file stops the run with nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import SAMPLES

from benchmarks.make_rank_run import make_run
from collectors.ingest import ingest, rank_jobs
from data import reads
from data.errors import TraceFormatError
from data.store import Store

DDP = SAMPLES / "ddp_gpt_bf16_2rank"
TABLES = ("gpu_events", "runtime_calls", "cpu_ops", "annotations", "collectives", "steps",
          "ranks", "devices")  # fmt: skip


def _contents(store: Path) -> dict[str, tuple[int, int]]:
    s = Store(store)
    out = {}
    for t in TABLES:
        sql = f"SELECT count(*), bit_xor(hash(t)) FROM (SELECT * EXCLUDE (run_id) FROM {t}) t"
        out[t] = s.con.execute(sql).fetchall()[0]
    return out


@pytest.fixture(scope="module")
def twelve(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 ranks relabelled from the 2-rank DDP recording (rank10 and rank11 sort after rank9
    only naturally)."""
    folder = tmp_path_factory.mktemp("ranks") / "run"
    make_run(folder, 12, sorted(DDP.iterdir()))
    return folder


def test_workers_write_what_one_process_writes_in_rank_order(
    twelve: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rank_jobs, "BATCH_FILES", 5)  # 3 batches: 5, 5 and 2 ranks
    parallel = ingest([twelve], data_dir=tmp_path / "a", jobs=2)
    ingest([twelve], data_dir=tmp_path / "b", jobs=1)
    assert _contents(tmp_path / "a") == _contents(tmp_path / "b")
    segments = sorted((tmp_path / "a/lake/gpu_events" / f"run_id={parallel}").iterdir())
    assert [p.name for p in segments] == [f"part-{b:06d}.parquet" for b in range(3)]
    s = Store(tmp_path / "a")
    ranks = reads.gpu_events(s, parallel)["rank"].to_numpy()
    assert list(ranks[np.r_[True, ranks[1:] != ranks[:-1]]]) == list(range(12))  # rank by rank
    run = s.run_summary(parallel)
    assert run["rank_count"] == 12
    assert (
        run["kernel_count"]
        == s.con.execute("SELECT count(*) FROM gpu_events WHERE kind = 'kernel'").fetchall()[0][0]
    )


def test_a_bad_rank_file_stops_the_run_and_names_it(twelve: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(twelve, folder)
    (folder / "rank7.pt.trace.json").write_bytes(b'{"traceEvents": [{"ph": "X", "ts": ')
    store = tmp_path / "store"
    with pytest.raises(TraceFormatError, match=r"rank7\.pt\.trace\.json"):
        ingest([folder], data_dir=store, jobs=2)
    lake = store / "lake"
    assert list((lake / "_staging").iterdir()) == []
    assert not any(p.name != "run_id=_empty" for p in (lake / "gpu_events").iterdir())


def test_two_files_of_one_rank_are_refused(twelve: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("rank3.pt.trace.json", "rank4.pt.trace.json"):
        shutil.copy(twelve / "rank3.pt.trace.json", folder / name)  # both say rank 3
    with pytest.raises(TraceFormatError, match=r"rank 3 .* is also the rank of"):
        ingest([folder], data_dir=tmp_path / "store", jobs=2)
    assert list((tmp_path / "store/lake/_staging").iterdir()) == []
