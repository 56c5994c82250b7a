"""The torch.profiler hook: a real model under torch.profiler, straight into a real store:
each cycle a run, the handler alone, NVML samples, failures that leave training alone, DDP
ranks and traces recorded on H200s (its timing of the unprofiled steps and its traces-only
mode: test_torch_profiler_unprofiled.py).

CPU tests run a small MLP with the CPU build of torch (requirements-dev); the GPU test
ingests traces that tools/verify_profiler_gpu.py recorded through the hook on H200s.
"""

from __future__ import annotations

import datetime
import json
import logging
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import REPO, TEST_DATA
from helpers.raw_trace import raw_rank

torch = pytest.importorskip("torch")

from helpers.training import RUN, make_model, train  # noqa: E402

from collectors.ingest import ingest  # noqa: E402
from collectors.torch_profiler import (  # noqa: E402
    DashboardTraceHandler,
    profile_to_dashboard,
)
from data.errors import NvmlUnavailableError  # noqa: E402
from data.store import Store  # noqa: E402

GPU_FIXTURES = TEST_DATA / "profiler_hook_gpu"
NVML_RECORDING = REPO / "data" / "samples" / "gpt_train_bf16.nvml.csv"


def schedule() -> Any:
    return torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)


def test_each_cycle_becomes_a_run_with_steps_shapes_and_tags(tmp_path: Path) -> None:
    data = tmp_path / "store"
    with profile_to_dashboard(
        RUN,
        data_dir=data,
        schedule=schedule(),
        unprofiled_steps=1,  # the schedule's one wait step is enough: not shifted
        tokens_per_step=32,
        tags={"team": "perf"},
    ) as prof:
        assert train(prof, 10) == 10
    h = prof.dashboard
    assert h.errors == []
    assert [u.count if u else 0 for u in h.unprofiled] == [1, 1]  # each cycle's wait step
    assert len(h.run_ids) == 2
    assert len(h.holdup_s) == 2  # one export per cycle on the training thread
    assert [f.relative_to(h.folder).as_posix() for f in h.trace_files] == [
        "cycle1/rank0.pt.trace.json.gz",
        "cycle2/rank0.pt.trace.json.gz",
    ]
    assert h.folder.parent == data / "traces" / RUN  # the files are kept beside the store

    store = Store(data)
    runs = store.rows("SELECT * FROM runs ORDER BY ingested_at_ns")
    assert [r["run_id"] for r in runs] == h.run_ids
    assert {r["name"] for r in runs} == {RUN}
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    for cycle, (run, trace) in enumerate(zip(runs, h.trace_files, strict=True), start=1):
        tags = json.loads(run["tags"])
        assert tags["torch_version"] == torch.__version__
        assert tags["world_size"] == "1"
        assert tags["tokens_per_step"] == "32"
        assert tags["team"] == "perf"
        assert tags["cycle"] == str(cycle)
        assert tags["session"] == h.session
        assert tags.get("git_commit") == (commit or None)
        assert "cuda_version" not in tags  # a CPU build has none
        # what the store holds is what the kept file holds (standard-library count)
        raw = raw_rank(trace)
        steps = store.rows("SELECT step FROM steps WHERE run_id = ?", [run["run_id"]])
        assert {s["step"] for s in steps} == raw.steps
        assert raw.record_shapes
        dims = store.rows(
            "SELECT input_dims FROM cpu_ops WHERE run_id = ? AND name = 'aten::addmm'",
            [run["run_id"]],
        )
        assert dims, "no aten::addmm recorded"
        assert [[10], [32, 128], [128, 10], [], []] in [json.loads(d["input_dims"]) for d in dims]
    # cycle k holds ProfilerStep#(4k-2) and #(4k-1): wait, warmup, then two active steps
    assert raw_rank(h.trace_files[0]).steps == {2, 3}
    assert raw_rank(h.trace_files[1]).steps == {6, 7}


def test_handler_on_a_plain_profile_in_a_thread(tmp_path: Path) -> None:
    """The handler alone, as any torch.profiler user's on_trace_ready; no schedule: one cycle."""
    handler = DashboardTraceHandler("plain", data_dir=tmp_path / "store", ingest_in="thread")
    with torch.profiler.profile(on_trace_ready=handler, record_shapes=True) as prof:
        train(prof, 3)
    handler.close()
    assert handler.errors == []
    assert len(handler.run_ids) == 1
    summary = Store(tmp_path / "store").run_summary(handler.run_ids[0])
    assert summary["name"] == "plain"
    assert summary["tags"]["cycle"] == "1"
    assert summary["rank_count"] == 1


def test_nvml_samples_are_linked_to_the_run(tmp_path: Path) -> None:
    """Samples recorded on an H200 replayed through the agent's sampler, tagged with the run."""
    replay = pytest.importorskip("collectors.nvml_source").ReplaySource([NVML_RECORDING])
    data = tmp_path / "store"
    with profile_to_dashboard(
        "with-nvml",
        data_dir=data,
        nvml=True,
        nvml_interval_s=0.1,
        nvml_source=replay,
        ingest_in="thread",
    ) as prof:
        train(prof, 3)
    h = prof.dashboard
    assert h.errors == []
    store = Store(data)
    inv = store.rows("SELECT agent_id, tags FROM gpu_inventory")
    assert [json.loads(r["tags"]) for r in inv] == [{"run": "with-nvml", "session": h.session}]
    linked = store.rows(
        "SELECT count(*) AS n FROM gpu_samples WHERE agent_id = ?", [inv[0]["agent_id"]]
    )
    assert linked[0]["n"] >= 1
    assert store.run_summary(h.run_ids[0])["tags"]["session"] == h.session


def test_nvml_unavailable_is_reported_once_and_profiling_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    nvml = pytest.importorskip("collectors.nvml_source")
    try:
        nvml.PynvmlSource().close()
        pytest.skip("this machine has NVML: nothing to be unavailable")
    except NvmlUnavailableError:
        pass
    with (
        caplog.at_level(logging.WARNING),
        profile_to_dashboard(
            "no-nvml", data_dir=tmp_path / "store", nvml=True, ingest_in="thread"
        ) as prof,
    ):
        assert train(prof, 3) == 3
    h = prof.dashboard
    assert len(h.run_ids) == 1  # the trace still made its run
    assert len(h.errors) == 1
    assert h.errors[0].startswith("NVML sampling unavailable: ")
    assert sum("NVML sampling" in r.getMessage() for r in caplog.records) == 1


def test_unwritable_store_training_goes_on_trace_kept_reported_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    not_a_folder = tmp_path / "store"
    not_a_folder.write_text("a file where the store should be")
    with (
        caplog.at_level(logging.WARNING),
        profile_to_dashboard(
            RUN, data_dir=not_a_folder, trace_dir=tmp_path / "traces", schedule=schedule()
        ) as prof,
    ):
        assert train(prof, 10) == 10
    h = prof.dashboard
    assert h.run_ids == []
    assert len(h.errors) == 2  # both cycles failed to ingest...
    assert all("ingest of" in e for e in h.errors), h.errors
    warnings = [r for r in caplog.records if r.name == "collectors.torch_profiler"]
    assert len(warnings) == 1  # ...and the user read about it once
    assert "training goes on" in warnings[0].getMessage()
    assert len(h.trace_files) == 2
    for f in h.trace_files:
        assert raw_rank(f).steps  # kept, complete and readable


def test_corrupt_trace_in_the_run_folder_fails_ingest_not_training(tmp_path: Path) -> None:
    data, session = tmp_path / "store", "fixed-session"
    cycle_dir = data / "traces" / RUN / session / "cycle1"
    cycle_dir.mkdir(parents=True)
    (cycle_dir / "rank7.pt.trace.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    with profile_to_dashboard(
        RUN, data_dir=data, session=session, schedule=schedule(), ingest_in="thread"
    ) as prof:
        assert train(prof, 10) == 10
    h = prof.dashboard
    assert len(h.errors) == 1, h.errors
    assert "rank7" in h.errors[0]
    assert len(h.run_ids) == 1  # cycle 2 was not affected
    assert (cycle_dir / "rank0.pt.trace.json.gz").is_file()
    assert Store(data).run_summary(h.run_ids[0])["tags"]["cycle"] == "2"


def test_nvml_needs_the_store(tmp_path: Path) -> None:
    with (
        pytest.raises(ValueError, match="needs ingest=True"),
        profile_to_dashboard(RUN, ingest=False, trace_dir=tmp_path, nvml=True),
    ):
        pass


def _ddp_rank(rank: int, world: int, port: int, data: str, model_seed: int) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=180),  # the barrier below fails, not hangs
    )
    torch.set_num_threads(1)
    torch.manual_seed(model_seed)
    try:
        ddp = torch.nn.parallel.DistributedDataParallel(make_model()[0])
        with profile_to_dashboard(
            "ddp-cpu",
            data_dir=data,
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
            unprofiled_steps=1,
            rank_wait_s=60,
        ) as prof:
            train(prof, 5, model=ddp)
        Path(data, f"rank{rank}.json").write_text(
            json.dumps({"run_ids": prof.dashboard.run_ids, "errors": prof.dashboard.errors})
        )
        # Neither rank tears gloo down while the other may still talk to it: one clean-checkout
        # run saw a rank abort in teardown ("terminate called without an active exception").
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_ddp_ranks_make_one_run(tmp_path: Path) -> None:
    data = tmp_path / "store"
    data.mkdir()
    torch.multiprocessing.spawn(_ddp_rank, args=(2, _free_port(), str(data), 0), nprocs=2)
    results = [json.loads((data / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["errors"] for r in results] == [[], []]
    assert results[1]["run_ids"] == []  # only rank 0 ingests
    (run_id,) = results[0]["run_ids"]
    store = Store(data)
    assert [r["run_id"] for r in store.rows("SELECT run_id FROM runs")] == [run_id]
    summary = store.run_summary(run_id)
    assert summary["rank_count"] == 2
    assert summary["tags"]["world_size"] == "2"
    ranks = store.rows("SELECT rank, world_size, rank_source FROM ranks ORDER BY rank")
    assert ranks == [
        {"rank": 0, "world_size": 2, "rank_source": "distributedInfo"},
        {"rank": 1, "world_size": 2, "rank_source": "distributedInfo"},
    ]
    steps = store.rows("SELECT rank, step FROM steps ORDER BY rank, step")
    assert steps == [{"rank": r, "step": s} for r in (0, 1) for s in (2, 3)]
    comms = store.rows(
        "SELECT DISTINCT rank FROM cpu_ops WHERE name = 'c10d::allreduce_' ORDER BY rank"
    )
    assert comms == [{"rank": 0}, {"rank": 1}]  # DDP's gradient all-reduce, on both ranks


def test_gpu_traces_from_the_hook_ingest_with_their_ranks_and_kernels(tmp_path: Path) -> None:
    """Traces the hook wrote on H200s (tools/verify_profiler_gpu.py): 1 GPU and 2-rank DDP."""
    data = tmp_path / "store"
    single = GPU_FIXTURES / "single_cycle1_rank0.pt.trace.json.gz"
    ddp = GPU_FIXTURES / "ddp_2rank"
    store = Store(data)
    one = store.run_summary(ingest([single], data_dir=data))
    raw = raw_rank(single)
    assert (one["rank_count"], one["kernel_count"]) == (1, raw.kernels)
    assert one["device_name"] == "NVIDIA H200"
    assert raw.kernels > 0
    two = store.run_summary(ingest([ddp], data_dir=data))
    raws = [raw_rank(f) for f in sorted(ddp.iterdir())]
    assert [r.rank for r in raws] == [0, 1]
    assert two["rank_count"] == 2
    per_rank = store.rows(
        "SELECT rank, count(*) AS n FROM gpu_events WHERE run_id = ? AND kind = 'kernel' "
        "GROUP BY rank ORDER BY rank",
        [two["run_id"]],
    )
    assert per_rank == [{"rank": r.rank, "n": r.kernels} for r in raws]
    nccl = store.rows(
        "SELECT DISTINCT rank FROM collectives WHERE run_id = ? AND source = 'kernel'",
        [two["run_id"]],
    )
    assert sorted(r["rank"] for r in nccl) == [0, 1]  # NCCL all-reduce kernels on both ranks
