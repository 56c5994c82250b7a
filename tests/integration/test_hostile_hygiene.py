"""Crash hygiene: what a kill -9 leaves is removed by the next ingest or agent start, and a
claim is never left empty or stuck.

The kills are real: an ingest of an archive holding a 131 MB trace is killed while its parse
helper's shared-memory folder exists, a second one while its staging folder is being written.
The one state a kill cannot be timed to hit (between two renames of a commit, ~1 ms) is made
by doing that rename by hand on the killed ingest's staging folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.cli import lake_files, run_cli, run_module, store_snapshot
from helpers.paths import REPO, SAMPLES, fixture

from data.errors import DuplicateTraceError
from data.lake import Lake
from data.lake_locks import claim
from data.owner import Owner, me
from data.scratch import SHARED_MEMORY

BIG = fixture("h200/hf_llama_generate_b4.pt.trace.json.gz")  # 131 MB expanded: a helper forks
SMALL = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"
OTHER = SAMPLES / "decode_b1_eager.pt.trace.json.gz"
RECORDING = SAMPLES / "gpt_train_bf16.nvml.csv"


def _wait_for(found: Callable[[], object], what: str, timeout: float = 120) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := found():
            return value
        time.sleep(0.01)
    pytest.fail(f"timed out waiting for {what}")


def _scratch(pid: int) -> list[Path]:
    """The scratch folders (data.scratch) of process `pid`."""
    bases = {Path(tempfile.gettempdir()), SHARED_MEMORY}
    return sorted(p for b in bases for p in b.glob(f"*-{pid}.*-*") if p.is_dir())


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _running(pid: int) -> bool:
    """Whether the process runs (a zombie, dead but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(proc.stdout)


def _ingest(archive: Path, store: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "collectors.ingest", str(archive), "--data", str(store)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_leftovers_of_killed_ingests_are_removed_by_the_next(tmp_path: Path) -> None:
    archive = tmp_path / "llama.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as zf:
        zf.write(BIG, "run/rank0.pt.trace.json.gz")
    store = tmp_path / "store"
    assert run_cli(SMALL, "--data", store).returncode == 0
    kept = store_snapshot(store)[0]

    # 1. killed during the parse: its unpacked archive and the helper's tables stay behind
    a = _ingest(archive, store)
    _wait_for(
        lambda: [p for p in _scratch(a.pid) if p.parent == SHARED_MEMORY] and _children(a.pid),
        "the parse helper",
    )
    helpers = _children(a.pid)
    _kill(a)
    left_a = _scratch(a.pid)
    assert {p.name.split("-")[0] for p in left_a} == {"ingest", "trace"}, left_a
    # the helper dies with its parent (PR_SET_PDEATHSIG) instead of running on
    _wait_for(lambda: not any(_running(h) for h in helpers), "the helper's end", 10)

    # 2. killed while its run is staged: a staging folder stays behind ...
    b = _ingest(archive, store)
    staging = store / "lake" / "_staging"
    # cpu_ops is the first table written: stopped there, the run is far from its commit,
    # and its content is not claimed yet (the claim spans the check and the commit only)
    staged = _wait_for(lambda: list(staging.glob("*/cpu_ops")), "the staging folder")
    b.send_signal(signal.SIGSTOP)
    _kill(b)
    run_dir = staged[0].parent  # type: ignore[index]
    claims = [p for p in (store / "lake" / "_locks").iterdir() if not p.name.startswith(".")]
    assert claims == []
    # ... and, had the kill come between the commit's first two renames, this orphan
    orphan = store / "lake" / "cpu_ops" / f"run_id={run_dir.name}"
    os.replace(run_dir / "cpu_ops", orphan)
    left_b = _scratch(b.pid)
    assert left_b
    assert not any(p.exists() for p in left_a)  # b's start removed a's

    # 3. the next ingest removes them all, keeps every run, and can take the trace again
    assert run_cli(archive, "--data", store).returncode == 0
    assert not any(p.exists() for p in [*left_b, run_dir, orphan, *claims])
    assert [f for f in lake_files(store) if f.startswith("_staging/")] == []
    assert [f for f in lake_files(store) if f.startswith("_locks/")] == ["_locks/.mutex"]
    after = store_snapshot(store)[0]
    assert after["runs"][0] == kept["runs"][0] + 1


def test_a_half_written_orphan_segment_does_not_fail_the_next_ingest(tmp_path: Path) -> None:
    # What the kill test above makes when its SIGSTOP lands inside the cpu_ops write (a loaded
    # machine): the store's views read every segment's schema, so the lake is swept first.
    store = tmp_path / "store"
    assert run_cli(SMALL, "--data", store).returncode == 0
    kept = store_snapshot(store)[0]
    segment = next((store / "lake" / "cpu_ops").glob("run_id=2*/*.parquet")).read_bytes()
    orphan = store / "lake" / "cpu_ops" / "run_id=20260101-000000-dead00"
    orphan.mkdir()
    (orphan / "b0000.parquet").write_bytes(segment[: len(segment) // 2])
    got = run_cli(OTHER, "--data", store)
    assert got.returncode == 0, got.stderr
    assert not orphan.exists()
    assert store_snapshot(store)[0]["runs"][0] == kept["runs"][0] + 1


def test_agent_start_removes_what_a_killed_ingest_left(tmp_path: Path) -> None:
    store = tmp_path / "store"
    lake = Lake(store / "lake")
    dead = Owner(me().host, _dead_pid(), "")
    staged = lake.staging / "20260101-000000-dead00"
    (staged / "runs").mkdir(parents=True)
    (staged / ".owner").write_text(dead.text())
    (lake.locks / ("f" * 64)).write_text("")  # an empty claim: written by a version before
    scratch = Path(tempfile.mkdtemp(prefix=f"ingest-{dead.tag()}-"))
    got = run_module(
        "collectors.nvml", "--replay", RECORDING, "--keep-time", "--data", store, "--json"
    )
    assert got.returncode == 0, got.stderr
    assert not staged.exists()
    assert not (lake.locks / ("f" * 64)).exists()
    assert not scratch.exists()


@pytest.mark.parametrize(
    ("text", "what"),
    [("", "empty"), ("garbage", "garbled"), (None, "a dead owner")],
)
def test_a_stale_claim_is_taken_over(tmp_path: Path, text: str | None, what: str) -> None:
    lake = Lake(tmp_path / "lake")
    lock = lake.locks / "abc"
    lock.write_text(Owner(me().host, _dead_pid(), "").text() if text is None else text)
    with claim(lake.locks, "abc", "t.json"):
        assert lock.read_text() == me().text()
    assert not lock.exists()


def test_a_live_claim_is_refused_with_its_owner(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    with (
        claim(lake.locks, "abc", "t.json"),
        pytest.raises(DuplicateTraceError) as e,
        claim(lake.locks, "abc", "t.json"),
    ):
        pytest.fail("claimed twice")
    assert "t.json: the same trace is being ingested right now" in str(e.value)
    assert f"pid {os.getpid()}" in str(e.value)
    assert e.value.run_id is None


_CLAIMER = """
import sys
from pathlib import Path
from data.errors import DuplicateTraceError
from data.lake_locks import claim
print("ready", flush=True)
sys.stdin.readline()  # all start together
try:
    with claim(Path(sys.argv[1]), "abc", "t.json"):
        print("claimed", flush=True)
        sys.stdin.readline()  # held until every claimer has said how it went
except DuplicateTraceError:
    print("refused", flush=True)
"""


def _say(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def _hear(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def test_one_of_many_takes_over_a_stale_claim(tmp_path: Path) -> None:
    lake = Lake(tmp_path / "lake")
    (lake.locks / "abc").write_text(Owner(me().host, _dead_pid(), "").text())
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CLAIMER, str(lake.locks)],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    assert [_hear(p) for p in procs] == ["ready"] * 4
    for p in procs:
        _say(p, "go")
    said = sorted(_hear(p) for p in procs)
    for p in procs:  # only now may the one that claimed let go
        p.communicate(timeout=60)
    assert said == ["claimed", "refused", "refused", "refused"]


def test_cleanup_leaves_a_live_ingest_alone(tmp_path: Path) -> None:
    """A staging folder and claim of a running process (this one) survive a sweep."""
    from data.lake_sweep import sweep_lake

    lake = Lake(tmp_path / "lake")
    staged = lake.stage_dir("20260101-000000-live00")
    (staged / "gpu_events").mkdir()
    orphan_like = lake.root / "gpu_events" / "run_id=20260101-000000-live00"
    orphan_like.mkdir()
    with claim(lake.locks, "abc", "t.json"):
        assert sweep_lake(lake.root).total() == 0
        assert staged.exists()
        assert orphan_like.exists()
        assert (lake.locks / "abc").exists()
    shutil.rmtree(staged)
    assert sweep_lake(lake.root).orphans == 1
