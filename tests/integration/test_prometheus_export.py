"""The agent's /metrics on a recording made on a real H200: dcgm-exporter's names, units and
labels, the newest tick in every scrape, whole ticks while scrapes hammer it, and one error
line for a port it cannot have. Values are checked against the CSV read here with `csv`."""

from __future__ import annotations

import csv
import json
import socket
import threading
import urllib.request
from pathlib import Path

from helpers.cli import run_module
from helpers.paths import SAMPLES
from prometheus_client.parser import text_string_to_metric_families

from collectors.nvml import NvmlSampler
from collectors.nvml_prometheus import serve
from collectors.nvml_source import ReplaySource

PHASES = SAMPLES / "nvml_phases_h200.csv"
INVENTORY = json.loads(PHASES.with_name("nvml_phases_h200.inventory.json").read_text())[0]
MIB = 2**20


def csv_rows() -> list[dict[str, str]]:
    with PHASES.open(newline="") as fh:
        return list(csv.DictReader(fh))


def scrape(port: int) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """{name: {sorted labels: value}} of one /metrics answer, parsed by prometheus_client."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family.name
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def only(values: dict[tuple[tuple[str, str], ...], float]) -> float:
    assert len(values) == 1, values
    return next(iter(values.values()))


def sampler(tmp_path: Path, loop: bool = False) -> tuple[NvmlSampler, int]:
    s = NvmlSampler(tmp_path, host="node-7", source=ReplaySource([PHASES], loop=loop))
    s.open()
    return s, serve(s, "127.0.0.1", 0)


def test_metrics_have_dcgm_names_units_labels_and_the_newest_tick(tmp_path: Path) -> None:
    s, port = sampler(tmp_path)
    assert scrape(port) == {}  # before the first tick: nothing, not zeros
    raw = csv_rows()
    for k in range(3):
        s.tick()
        got = scrape(port)
        row = raw[k]  # the replay plays the recorded rows in order, one per tick
        labels = next(iter(got["DCGM_FI_DEV_GPU_UTIL"]))
        assert dict(labels) == {
            "gpu": "0",
            "UUID": INVENTORY["uuid"],
            "modelName": "NVIDIA H200",
            "Hostname": "node-7",
            "DCGM_FI_DRIVER_VERSION": INVENTORY["driver_version"],
            "dash_source": "replay",
        }
        assert only(got["DCGM_FI_DEV_GPU_UTIL"]) == int(row["util_gpu_pct"])
        assert only(got["DCGM_FI_DEV_SM_CLOCK"]) == int(row["sm_clock_mhz"])
        assert only(got["DCGM_FI_DEV_POWER_USAGE"]) == int(row["power_mw"]) / 1000  # W
        assert only(got["DCGM_FI_DEV_FB_USED"]) == int(row["mem_used_bytes"]) / MIB  # MiB
        assert only(got["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"]) == int(row["clocks_event_reasons"])
        assert only(got["DASH_FI_DEV_PROCESS_COUNT"]) == int(row["process_count"])
        assert only(got["DCGM_FI_DEV_FB_TOTAL"]) == INVENTORY["mem_total_bytes"] / MIB
        assert only(got["DCGM_FI_DEV_ENFORCED_POWER_LIMIT"]) == 700.0
        assert only(got["DASH_FI_DEV_PEAK_HBM_BANDWIDTH"]) == 2 * 3201e6 * 6016 / 8
        if row["gpm_sm_util_pct"]:  # a ratio, as DCGM_FI_PROF_* are
            assert only(got["DCGM_FI_PROF_SM_ACTIVE"]) == float(row["gpm_sm_util_pct"]) / 100
            assert only(got["DCGM_FI_PROF_PCIE_RX_BYTES"]) == float(row["gpm_pcie_rx_mib_s"]) * MIB
        else:  # the first tick: GPM had no previous snapshot, so there is no series
            assert "DCGM_FI_PROF_SM_ACTIVE" not in got
        assert "DCGM_FI_PROF_NVLINK_RX_BYTES" not in got  # NULL on this GPU: never a 0
    s.close()


def test_every_scrape_sees_one_whole_tick_while_ticks_run(tmp_path: Path) -> None:
    s, port = sampler(tmp_path, loop=True)
    raw = csv_rows()
    # (power, SM clock, utilization) of each recorded row: a scrape mixing two ticks would
    # pair one row's power with another's clock.
    recorded = {
        (int(r["power_mw"]) / 1000, int(r["sm_clock_mhz"]), int(r["util_gpu_pct"])) for r in raw
    }
    s.tick()
    stop = threading.Event()
    seen: list[tuple[float, float, float]] = []

    def hammer() -> None:
        while not stop.is_set():
            got = scrape(port)
            seen.append(
                (
                    only(got["DCGM_FI_DEV_POWER_USAGE"]),
                    only(got["DCGM_FI_DEV_SM_CLOCK"]),
                    only(got["DCGM_FI_DEV_GPU_UTIL"]),
                )
            )

    thread = threading.Thread(target=hammer)
    thread.start()
    while len(seen) < 50:  # ticks as fast as they go, the recording over and over
        s.tick()
    stop.set()
    thread.join()
    assert len(seen) >= 20
    assert set(seen) <= recorded
    assert len(set(seen)) >= 5  # the scrapes followed the ticks
    s.close()


def test_a_port_it_cannot_have_is_one_line_and_status_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run_module("collectors.nvml", "--replay", PHASES, "--loop", "--data", tmp_path,
                       "--prometheus-port", port, timeout=60)  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.splitlines()[-1] == (
        f"error: --prometheus-address 127.0.0.1 port {port}: Address already in use"
    )
    assert not any(line.startswith("Traceback") for line in r.stderr.splitlines())
    for args, message in (
        (["--prometheus-port", "70000"], "error: --prometheus-port 70000: not a TCP port"),
        (["--prometheus-port", "0", "--prometheus-address", "no-such-host.invalid"],
         "error: --prometheus-address no-such-host.invalid port 0: "),
        (["--prometheus-port", "0", "--keep-time"], "error: --keep-time writes the recording"),
    ):  # fmt: skip
        r = run_module("collectors.nvml", "--replay", PHASES, "--data", tmp_path, *args)
        assert r.returncode == 2, r.stderr
        errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, r.stderr
        assert errors[0].startswith(message), errors[0]
        assert "Traceback" not in r.stderr
