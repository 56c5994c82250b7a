"""The NVML/GPM agent: `python -m collectors.nvml` streams every GPU's telemetry into the lake.

One tick reads each GPU once (collectors.nvml_source) and buffers the rows; about once a
second the buffer becomes one immutable segment of `gpu_samples` (lake/gpu_samples/host=…/),
so a `kill -9` loses at most the last second and a restart simply adds new segments to the
same host/gpu series. The agent merges its own segments as it goes (data.compaction). Each
start stores the GPUs' static facts once in `gpu_inventory`.

Each tick also swaps in an immutable snapshot of its rows (`latest`), which
`--prometheus-port` serves as /metrics in dcgm-exporter's names (collectors.nvml_prometheus)
without the scrape ever holding up a tick.

`NvmlSampler` is also the library entry point (e.g. for a torch.profiler hook):
``s = NvmlSampler(Path("data/local")); s.start(); …; s.stop()``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import FrameType, MappingProxyType
from typing import Any

import pyarrow as pa

from collectors.nvml_prometheus import TickSnapshot, serve
from collectors.nvml_source import (
    GpuLostError,
    NvmlSource,
    PynvmlSource,
    ReplayFinished,
    ReplaySource,
)
from data.cli import CommandParser, Result, add_json_flag, parse_command, run_command
from data.compaction import compact_segments, repair_merges
from data.errors import AllGpusLostError, DashError, PrometheusError
from data.lake import LAKE_FOLDER, Lake
from data.lake_sweep import sweep_lake
from data.schema import arrow_schema
from data.scratch import sweep_scratch
from data.valid_text import valid_text

log = logging.getLogger("collectors.nvml")

MIN_INTERVAL_S = 0.1  # GPM compares two snapshots and needs ~100 ms between them
MAX_INTERVAL_S = 3600.0  # an agent that samples less often than hourly watches nothing
FLUSH_EVERY_NS = 1_000_000_000
# The last stretch before a tick is polled, not slept: 5 % of a core at the 0.1 s interval.
WAKE_SPIN_S = 0.005
MERGE_FANIN = 60  # 60 one-second segments -> one minute segment -> 60 of those -> one hour
DEFAULT_DATA_DIR = Path("data/local")  # data.store's default, without importing duckdb


class NvmlSampler:
    """Samples GPUs every `interval_s` into `<data_dir>/lake` (a background thread).

    `start()` raises data.errors.NvmlUnavailableError when NVML or a requested GPU is
    missing; `stop()` writes what is buffered. `source` replaces the real GPUs (replay).
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        interval_s: float = 1.0,
        gpus: list[int] | None = None,
        host: str | None = None,
        tags: dict[str, str] | None = None,
        source: NvmlSource | None = None,
    ) -> None:
        if not MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:  # nan and inf fail too
            raise DashError(
                f"interval {interval_s} s: expected {MIN_INTERVAL_S} to {MAX_INTERVAL_S:.0f} s "
                f"(GPM needs at least {MIN_INTERVAL_S} s between samples)"
            )
        self.lake = Lake(Path(data_dir) / LAKE_FOLDER)
        self.interval_s = interval_s
        self.host = host or socket.gethostname()
        self.tags = {valid_text(k): valid_text(v) for k, v in (tags or {}).items()}
        self._gpus_wanted = gpus
        self._source = source
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rows: list[dict[str, Any]] = []
        self._last_flush_ns = 0
        self._levels: list[list[Path]] = [[], []]  # this agent's 1 s and 1 min segments
        self.agent_id = ""
        self.gpus: list[int] = []
        self.samples_written = 0
        # Read by the /metrics thread: replaced whole, never changed in place.
        self.latest: TickSnapshot | None = None
        self.inventory_by_gpu: Mapping[int, Mapping[str, Any]] = MappingProxyType({})

    # ---------------------------------------------------------------- lifecycle

    def open(self) -> None:
        """Open the source (NVML unless one was given) and store the inventory."""
        if self._source is None:
            self._source = PynvmlSource(self._gpus_wanted, warn=log.warning)
        self.gpus = self._source.gpu_indices()
        start_ns = time.time_ns()
        self.agent_id = f"{os.getpid()}-{start_ns}"
        rows = [
            {
                **self._source.inventory(g),
                "gpu": g,
                "ts_ns": start_ns,
                "source": self._source.kind,
                "agent_id": self.agent_id,
                "tags": json.dumps(self.tags, sort_keys=True),
            }
            for g in self.gpus
        ]
        schema = arrow_schema("gpu_inventory").remove(0)
        self.lake.write_segment("gpu_inventory", self.host, pa.Table.from_pylist(rows, schema))
        self.inventory_by_gpu = MappingProxyType(
            {row["gpu"]: MappingProxyType(row) for row in rows}
        )
        partition = self.lake.segment_path("gpu_samples", self.host).parent
        if repaired := repair_merges(partition):
            log.info("finished %d merge(s) a previous agent left half done", repaired)
        if swept := sweep_lake(self.lake.root).total() + sweep_scratch():
            log.info("removed %d leftover(s) of killed ingests and agents", swept)
        self._last_flush_ns = time.monotonic_ns()

    def start(self) -> None:
        """Open and sample in a background thread until stop()."""
        self.open()
        self._thread = threading.Thread(target=self.run_loop, name="nvml-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the loop and write what is buffered."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.close()

    def close(self) -> None:
        """Write what is buffered and release the source."""
        self.flush()
        if self._source is not None:
            self._source.close()

    def request_stop(self) -> None:
        """Ask the loop to end after the current tick (signal handlers)."""
        self._stop.set()

    # ---------------------------------------------------------------- the loop

    def run_loop(self, duration_s: float | None = None) -> None:
        """Tick every interval (on a fixed schedule: a slow tick is not made up) until
        stop, the duration, the end of a replay, or the loss of every GPU."""
        t0 = time.monotonic()
        end = t0 + duration_s if duration_s is not None else float("inf")
        k = 0
        while not self._stop.is_set() and self.gpus:
            try:
                self.tick()
            except ReplayFinished:
                break
            k += 1
            now = time.monotonic()
            k = max(k, int((now - t0) / self.interval_s) + 1)  # skip ticks we overran
            due = t0 + k * self.interval_s
            if due >= end:
                break
            self._wait_until(due)

    def _wait_until(self, due: float) -> None:
        """Sleep until WAKE_SPIN_S before the tick, then poll the clock: the reads that follow
        a VM's wake-up from a full sleep cost up to 4 ms on the H200 (p99 of 80 ticks), after
        a 5 ms poll 0.64 ms (tools/nvml_tick_wake.py, docs/decisions.md D21). Replays sleep."""
        spin = WAKE_SPIN_S if self._source is not None and self._source.kind == "nvml" else 0.0
        left = due - time.monotonic()
        if left > spin and self._stop.wait(left - spin):
            return
        while time.monotonic() < due and not self._stop.is_set():
            pass

    def drain(self) -> None:
        """Write every remaining replayed row now (recorded times: no pacing)."""
        while self.gpus:
            try:
                self.tick()
            except ReplayFinished:
                return

    def tick(self) -> None:
        """Read every GPU once; write a segment when a second has passed."""
        assert self._source is not None, "open() first"
        rows: list[Mapping[str, Any]] = []
        for g in list(self.gpus):
            t = time.perf_counter_ns()
            ts = time.time_ns()
            try:
                row = self._source.sample(g)
            except GpuLostError as e:
                log.error("%s; the other GPUs go on", e)
                self.gpus.remove(g)
                continue
            row.setdefault("ts_ns", ts)
            row.update(
                gpu=g,
                source=self._source.kind,
                agent_id=self.agent_id,
                sample_cost_ns=time.perf_counter_ns() - t,
            )
            self._rows.append(row)
            rows.append(MappingProxyType(row))
        if rows:  # one reference swap: a scrape sees the whole tick or the one before
            self.latest = TickSnapshot(time.time_ns(), tuple(rows))
        if time.monotonic_ns() - self._last_flush_ns >= FLUSH_EVERY_NS:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one segment, merging old segments when due."""
        self._last_flush_ns = time.monotonic_ns()
        if not self._rows:
            return
        table = pa.Table.from_pylist(self._rows, arrow_schema("gpu_samples").remove(0))
        self._levels[0].append(self.lake.write_segment("gpu_samples", self.host, table))
        self.samples_written += len(self._rows)
        self._rows = []
        for level in (0, 1):
            if len(self._levels[level]) >= MERGE_FANIN:
                merged = compact_segments(self.lake, "gpu_samples", self.host, self._levels[level])
                self._levels[level] = []
                if level == 0:
                    self._levels[1].append(merged)


# ------------------------------------------------------------------------------- CLI


def _gpu_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected GPU indices like 0,1") from None


def _seconds(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a number of seconds from `low` (excluded when 0) to `high`."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (low <= value <= high and (low > 0 or value > 0)):  # nan, inf, out of range
            raise argparse.ArgumentTypeError(f"{text!r}: expected seconds, {low:g} to {high:g}")
        return value

    return parse


def _tag(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE")
    return key, value


def _open_sampler(args: argparse.Namespace) -> NvmlSampler:
    """The sampler the command line asks for, opened (its inventory written)."""
    source: NvmlSource | None = None
    if args.replay:
        source = ReplaySource(args.replay, gpus=args.gpus, loop=args.loop, keep_time=args.keep_time)
    elif args.loop or args.keep_time:
        raise DashError("--loop and --keep-time need --replay")
    if args.keep_time and args.prometheus_port is not None:
        raise PrometheusError(
            "--keep-time writes the recording at once: there is no newest tick to serve"
        )
    sampler = NvmlSampler(
        args.data,
        interval_s=MIN_INTERVAL_S if args.keep_time else args.interval,
        gpus=args.gpus,
        host=args.host,
        tags=dict(args.tag),
        source=source,
    )
    sampler.open()
    return sampler


def _sample(sampler: NvmlSampler, args: argparse.Namespace) -> Result:
    """Sample until the duration, the end of the replay, SIGTERM or Ctrl-C; what was written."""
    sampled = list(sampler.gpus)
    if args.prometheus_port is not None:
        port = serve(sampler, args.prometheus_address, args.prometheus_port)
        log.info("serving /metrics on http://%s:%d/metrics", args.prometheus_address, port)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        sampler.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    what = f"replay of {len(args.replay)} file(s)" if args.replay else "NVML"
    log.info(
        "sampling GPUs %s (%s) every %.3g s as host %s into %s",
        sampler.gpus,
        what,
        sampler.interval_s,
        sampler.host,
        args.data,
    )
    if args.keep_time:
        sampler.drain()
    else:
        sampler.run_loop(args.duration)
    sampler.close()
    log.info("wrote %d samples", sampler.samples_written)
    if not sampler.gpus:
        raise AllGpusLostError("every GPU was lost")
    return {"host": sampler.host, "gpus": sampled, "samples": sampler.samples_written}


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = CommandParser(
        prog="python -m collectors.nvml",
        description="Stream NVML/GPM telemetry of this node's GPUs into the store "
        "(one segment a second). --replay plays back CSVs recorded on a real GPU instead.",
    )
    ap.add_argument(
        "--interval",
        type=_seconds(MIN_INTERVAL_S, MAX_INTERVAL_S),
        default=1.0,
        help=f"seconds between samples (default 1, {MIN_INTERVAL_S} to {MAX_INTERVAL_S:.0f})",
    )
    ap.add_argument(
        "--duration",
        type=_seconds(0, 1e9),
        default=None,
        help="stop after this many seconds",
    )
    ap.add_argument("--gpus", type=_gpu_list, default=None, help="GPU indices, e.g. 0,1")
    ap.add_argument("--host", default=None, help="host name to store (default: this host's)")
    ap.add_argument("--tag", type=_tag, action="append", default=[], help="KEY=VALUE metadata")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="store folder")
    ap.add_argument("--replay", type=Path, nargs="+", metavar="CSV", help="replay recordings")
    ap.add_argument("--loop", action="store_true", help="replay: start again at the end")
    ap.add_argument(
        "--keep-time", action="store_true", help="replay: keep the recorded times and write at once"
    )
    ap.add_argument(
        "--prometheus-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve the newest sample of every GPU on http://ADDRESS:PORT/metrics in "
        "dcgm-exporter's names (0: any free port, logged)",
    )
    ap.add_argument(
        "--prometheus-address",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address /metrics listens on (default 127.0.0.1; 0.0.0.0 for every interface)",
    )
    add_json_flag(ap)
    args = parse_command(ap, argv)
    logging.basicConfig(format="%(levelname)s: %(message)s", level=logging.INFO)

    return run_command(lambda: _sample(_open_sampler(args), args), json_line=args.json)


if __name__ == "__main__":
    sys.exit(main())
