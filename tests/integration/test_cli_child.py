"""data.cli_child: a command line in a child process, its result and its errors typed.

The dashboard (pages/_ui.py) and a report given a trace path go through this client; it
reads the child's JSON line, never an error's wording.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from helpers.cli import lake_files
from helpers.paths import SAMPLES

from data.cli_child import IngestResult, ingest_child, resolve_trace, run_child
from data.errors import CudaUnavailableError, DashError, DuplicateTraceError, TraceFormatError
from data.store import Store

SMALL = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"
OTHER = SAMPLES / "decode_b1_eager.pt.trace.json.gz"
PHASES = SAMPLES / "nvml_phases_h200.csv"


def test_a_new_run_with_its_progress_then_the_same_trace_again(tmp_path: Path) -> None:
    d = tmp_path / "store"
    stages: list[str] = []
    run = ingest_child(
        [SMALL],
        data_dir=d,
        name="nightly",
        tags={"commit": "abc"},
        on_progress=lambda stage, fraction: stages.append(stage),
    )
    summary = Store(d).run_summary(run.run_id)
    assert run == IngestResult(
        run_id=run.run_id, name="nightly", ranks=1, kernels=summary["kernel_count"],
        events=summary["events_total"], malformed=0,
    )  # fmt: skip
    assert summary["tags"] == {"commit": "abc"}
    assert stages[0] == "parse"
    assert stages[-1] == "commit"

    with pytest.raises(DuplicateTraceError) as dup:
        ingest_child([SMALL], data_dir=d)
    assert dup.value.run_id == run.run_id
    assert str(dup.value) == f"{SMALL}: already ingested as run {run.run_id}"
    assert resolve_trace(SMALL, data_dir=d) == run.run_id  # a report on that trace: that run
    assert resolve_trace(OTHER, data_dir=d) != run.run_id  # a new trace: ingested now
    assert len(Store(d).runs()) == 2


def test_bad_input_comes_back_as_its_type(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text("not a trace")
    with pytest.raises(TraceFormatError, match=r"notes\.json: not JSON"):
        ingest_child([bad], data_dir=tmp_path / "store")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    with pytest.raises(DashError, match=str(not_a_folder)) as e:  # an OSError in the child
        ingest_child([SMALL], data_dir=not_a_folder)
    assert type(e.value) is DashError


def test_the_other_collectors_answer_the_same_way(tmp_path: Path) -> None:
    d = str(tmp_path / "store")
    played = run_child("collectors.nvml", "--replay", str(PHASES), "--keep-time", "--data", d)
    assert played["gpus"] == [0]
    assert played["samples"] == len(Store(d).query("SELECT * FROM gpu_samples"))
    imported = run_child(
        "collectors.calibrate", "--import", str(SAMPLES / "ceilings_h200.json"), "--data", d
    )
    assert imported["device"] == "NVIDIA H200"
    with pytest.raises(CudaUnavailableError):
        run_child("collectors.calibrate", "--data", d)


def test_a_child_without_a_result_is_a_dash_error() -> None:
    with pytest.raises(DashError, match=r"collectors\.no_such_module exited with status 1"):
        run_child("collectors.no_such_module")


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_a_caller_that_gives_up_stops_the_ingest(tmp_path: Path, sigint: str) -> None:
    # "ignored": a dashboard started in the background (`nohup streamlit run app.py &`)
    # hands SIGINT down to its children ignored; a given-up ingest committed there anyway.
    d = tmp_path / "store"
    ingest_child([SMALL], data_dir=d)
    before = lake_files(d)

    def give_up(stage: str, fraction: float) -> None:
        raise RuntimeError("the page was left")

    handler = signal.signal(
        signal.SIGINT, signal.SIG_IGN if sigint == "ignored" else signal.default_int_handler
    )
    try:
        with pytest.raises(RuntimeError, match="the page was left"):
            ingest_child([OTHER], data_dir=d, on_progress=give_up)
    finally:
        signal.signal(signal.SIGINT, handler)
    assert lake_files(d) == before  # no run, no staging folder, no claim
    assert len(Store(d).runs()) == 1
