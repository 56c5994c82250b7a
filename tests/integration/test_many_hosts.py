"""Many hosts, one lake: two agents (replay mode, different host names) and two ingests write
one store folder at the same time while the dashboard's code reads it.

The agents' own count of what they wrote (their --json result) and a sequential ingest of the
same traces into another store are the independent checks: nothing lost, nothing torn, no
lock error, and both hosts visible to the Live page's reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from helpers.paths import REPO, SAMPLES

from collectors.ingest import ingest
from data.store import Store
from data.telemetry_source import LakeTelemetry

RECORDINGS = {
    "node-a": SAMPLES / "nvml_phases_h200.csv",
    "node-b": SAMPLES / "gpt_train_bf16.nvml.csv",
}
TRACES = [SAMPLES / "gpt_train_bf16.pt.trace.json.gz", SAMPLES / "decode_b1_eager.pt.trace.json.gz"]


def test_two_agents_and_two_ingests_into_one_lake_while_the_dashboard_reads(
    tmp_path: Path,
) -> None:
    data = tmp_path / "shared"
    owner = Store(data, owner=True)  # the dashboard's process
    lake = LakeTelemetry(owner)
    errors: list[BaseException] = []
    hosts_seen: list[set[str]] = []
    stop = threading.Event()

    def dashboard() -> None:
        while not stop.is_set():
            try:
                gpus = lake.gpus()
                hosts_seen.append(set(gpus["host"]))
                if len(gpus):
                    end = int(gpus["last_ns"].max()) + 1
                    lake.bucketed(end - 60 * 10**9, end, 10**9)
                    lake.samples(end - 10 * 10**9, end)
                owner.runs()
            except BaseException as e:  # a lock error above all
                errors.append(e)
                return
            time.sleep(0.05)

    reader = threading.Thread(target=dashboard, daemon=True)
    reader.start()
    agents = {
        host: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "collectors.nvml",
                "--replay",
                str(csv),
                "--loop",
                "--interval",
                "0.1",
                "--duration",
                "6",
                "--host",
                host,
                "--data",
                str(data),
                "--json",
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for host, csv in RECORDINGS.items()
    }
    time.sleep(1)  # the agents are writing segments when the ingests start
    ingests = [
        subprocess.Popen(
            [sys.executable, "-m", "collectors.ingest", str(t), "--data", str(data), "--json"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for t in TRACES
    ]
    children = [*agents.items(), *zip(map(str, TRACES), ingests, strict=True)]
    done = {name: (*p.communicate(timeout=180), p.returncode) for name, p in children}
    time.sleep(0.3)  # a few reads after the last write
    stop.set()
    reader.join(timeout=60)

    assert not errors, [repr(e) for e in errors]
    for name, (_, err, code) in done.items():
        assert code == 0, f"{name}: exit {code}: {err}"
        assert "Could not set lock" not in err
    assert len(hosts_seen) >= 20  # the dashboard read all along
    # No lost rows: what each agent says it wrote is what the lake holds for its host.
    written = {host: json.loads(done[host][0])["samples"] for host in agents}
    assert all(n >= 30 for n in written.values()), written
    held = owner.query("SELECT host, count(*) AS n FROM gpu_samples GROUP BY host")
    assert dict(zip(held["host"], held["n"], strict=True)) == written
    assert {"node-a", "node-b"} == set(lake.gpus()["host"])
    end = int(lake.gpus()["last_ns"].max()) + 1
    assert set(lake.samples(end - 60 * 10**9, end)["host"]) == {"node-a", "node-b"}
    # Both runs whole: the same tables as a sequential ingest of the same files.
    run_ids = [json.loads(done[str(t)][0])["run_id"] for t in TRACES]
    alone = tmp_path / "alone"
    for t in TRACES:
        ingest([t], data_dir=alone)
    sequential = Store(alone)
    for run_id, trace in zip(run_ids, TRACES, strict=True):
        name = trace.name.removesuffix(".pt.trace.json.gz")
        for table in ("gpu_events", "cpu_ops", "runtime_calls", "steps"):
            sql = f"SELECT count(*) AS n FROM {table} WHERE run_id = ?"
            other = sequential.resolve_run(name)
            assert owner.query(sql, [run_id])["n"][0] == sequential.query(sql, [other])["n"][0]
    owner.close()
