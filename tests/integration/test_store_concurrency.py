"""Ingest processes and dashboard reads at the same time: no lock errors, no lost or torn rows.

The dashboard process owns `<data>/dashboard.duckdb`; `python -m collectors.ingest` processes
write Parquet segments into the lake meanwhile. Reader threads query the owner's views the
whole time. At the end the store must hold exactly what a sequential ingest of the same files
produces.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from helpers.paths import REPO, SAMPLES, fixture

from collectors.ingest import ingest
from data.lake import Lake
from data.schema import SCHEMA_VERSION, TABLES
from data.store import Store

INPUTS: list[Path] = [
    *sorted(SAMPLES.glob("*.json.gz")),
    SAMPLES / "ddp_gpt_bf16_2rank",
    fixture("h200/microops.pt.trace.json.gz"),
    fixture("foreign/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"),
]

READ_QUERIES = [
    "SELECT run_id, name, rank_count, kernel_count FROM runs ORDER BY ingested_at_ns DESC",
    *[f"SELECT run_id, count(*) FROM {t} GROUP BY run_id" for t in TABLES],
    "SELECT g.run_id, count(*) FROM gpu_events g JOIN cpu_ops c ON g.run_id = c.run_id "
    "AND g.rank = c.rank AND g.op_external_id = c.external_id GROUP BY g.run_id",
]
# A run visible in `runs` must be complete: its kernels are all there already.
TORN_READ_QUERY = (
    "SELECT r.run_id, r.kernel_count, "
    "(SELECT count(*) FROM gpu_events g WHERE g.run_id = r.run_id AND g.kind = 'kernel') AS n "
    "FROM runs r"
)


def counts_by_content(store: Store) -> dict[str, dict[str, int]]:
    """{source_sha256: {table: rows}}: comparable across stores (run ids differ)."""
    sha = {r["run_id"]: r["source_sha256"] for r in store.rows("SELECT * FROM runs")}
    out: dict[str, dict[str, int]] = {s: dict.fromkeys(TABLES, 0) for s in sha.values()}
    for table in TABLES:
        for row in store.rows(f"SELECT run_id, count(*) AS n FROM {table} GROUP BY run_id"):
            out[sha[row["run_id"]]][table] = row["n"]
    return out


def test_concurrent_ingests_and_dashboard_reads(tmp_path: Path) -> None:
    assert len(INPUTS) >= 4
    data = tmp_path / "shared_store"
    owner = Store(data, owner=True)  # the dashboard's own database file
    assert (data / "dashboard.duckdb").exists()
    assert owner.rows("SELECT count(*) AS n FROM runs") == [{"n": 0}]

    errors: list[BaseException] = []
    torn: list[tuple[str, int, int]] = []
    in_flight = threading.Event()
    stop = threading.Event()
    counters = {"total": 0, "during_ingest": 0}
    lock = threading.Lock()

    def reader(offset: int) -> None:
        i = offset
        while not stop.is_set():
            sql = READ_QUERIES[i % len(READ_QUERIES)]
            i += 1
            busy = in_flight.is_set()
            try:
                if i % 5 == 0:
                    owner.runs()  # the dashboard's pandas path
                else:
                    owner.rows(sql)
                torn.extend(
                    (row["run_id"], row["kernel_count"], row["n"])
                    for row in owner.rows(TORN_READ_QUERY)
                    if row["kernel_count"] != row["n"]
                )
            except BaseException as e:  # every error is a failure, lock errors above all
                errors.append(e)
                return
            with lock:
                counters["total"] += 1
                counters["during_ingest"] += busy and in_flight.is_set()
            time.sleep(0.05)  # a dashboard rerun rate, not a busy loop that starves the ingests

    threads = [threading.Thread(target=reader, args=(k,), daemon=True) for k in range(3)]
    in_flight.set()
    for t in threads:
        t.start()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "collectors.ingest", str(p), "--data", str(data)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in INPUTS
    ]
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=180)
            results.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        in_flight.clear()
    # a few more reads after the last commit, then stop
    time.sleep(0.3)
    stop.set()
    for t in threads:
        t.join(timeout=60)

    assert not errors, [repr(e) for e in errors]
    assert not any("Could not set lock" in err for _, _, err in results)
    for (code, _, err), path in zip(results, INPUTS, strict=True):
        assert code == 0, f"{path}: exit {code}: {err}"
    assert counters["during_ingest"] >= 20, counters
    assert not torn, f"runs visible before their kernels: {torn[:5]}"

    run_ids = {out.strip().splitlines()[-1] for _, out, _ in results}
    assert len(run_ids) == len(INPUTS)
    # the owner sees every new run on its open connection, without being reopened
    assert {r["run_id"] for r in owner.rows("SELECT run_id FROM runs")} == run_ids
    concurrent = counts_by_content(owner)
    owner.close()

    seq_dir = tmp_path / "sequential_store"
    for p in INPUTS:
        ingest([p], data_dir=seq_dir)
    seq = Store(seq_dir)
    try:
        sequential = counts_by_content(seq)
    finally:
        seq.close()
    assert concurrent == sequential
    assert all(c["gpu_events"] > 0 for c in sequential.values())


def _open_fresh_lakes(dirs: list[str], barrier: Any, errors: Any) -> None:
    """Child process: open each fresh lake at the same moment as the other children."""
    from data.lake import Lake

    for d in dirs:
        try:
            barrier.wait(timeout=60)
            Lake(Path(d))
        except BaseException as e:
            errors.put(f"{d}: {type(e).__name__}: {e}")
    errors.put(None)


def test_processes_opening_a_new_store_at_once(tmp_path: Path) -> None:
    """Agents and ingests start without coordination, often on a store folder nobody has
    used yet: creating the lake layout must be safe when several processes do it at once.

    A few rounds start from empty folders; most start from a layout whose _meta.json is not
    written yet (the state another process is in mid-initialisation), where the processes
    meet at the last step at once. This is a race: with the bug present it fails in nearly
    every run (not provably every run); without it, never."""
    n_procs, fresh_rounds, meta_rounds = 4, 4, 40
    template = tmp_path / "template" / "lake"
    Lake(template)
    (template / "_meta.json").unlink()
    dirs = [str(tmp_path / f"fresh{i}" / "lake") for i in range(fresh_rounds)]
    for i in range(meta_rounds):
        shutil.copytree(template, tmp_path / f"nometa{i}" / "lake")
        dirs.append(str(tmp_path / f"nometa{i}" / "lake"))
    ctx = multiprocessing.get_context("fork")  # the children need no DuckDB, only the lake
    barrier, errors = ctx.Barrier(n_procs), ctx.Queue()
    procs = [
        ctx.Process(target=_open_fresh_lakes, args=(dirs, barrier, errors)) for _ in range(n_procs)
    ]
    for p in procs:
        p.start()
    failures: list[str] = []
    done = 0
    while done < n_procs:
        msg = errors.get(timeout=120)
        if msg is None:
            done += 1
        else:
            failures.append(msg)
    for p in procs:
        p.join(timeout=60)
    assert failures == [], f"{len(failures)} failed opens, e.g. {failures[:2]}"
    for d in dirs:  # each lake ended up complete and valid
        meta = json.loads((Path(d) / "_meta.json").read_text())
        assert meta == {"schema_version": SCHEMA_VERSION}
        assert sorted(
            p.parent.parent.name for p in Path(d).glob("*/run_id=_empty/data.parquet")
        ) == sorted(TABLES)
    store = Store(Path(dirs[-1]).parent)
    try:
        assert store.checksums()["runs"] == (0, 0)
    finally:
        store.close()
