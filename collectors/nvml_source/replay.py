"""Recordings: `ReplaySource` plays back CSVs recorded on a real GPU (the shared H200
fixtures, data/samples, tests/data), so the dashboard can be shown and tested without one."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from collectors.nvml_source.protocol import INVENTORY, METRICS, ReplayFinished
from data.errors import RecordingFormatError
from data.schema import arrow_schema
from data.valid_text import valid_text

# Column names of the recordings in ../shared/fixtures/h200 -> ours. data/samples and
# tests/data already use ours. Columns we do not know (legacy PCIe KB/s, phase) are ignored.
ALIASES = {
    "ts_unix_ns": "ts_ns",
    "clock_sm_mhz": "sm_clock_mhz",
    "clock_mem_mhz": "mem_clock_mhz",
    "temp_c": "temp_gpu_c",
    "throttle_reasons": "clocks_event_reasons",
    "gpm_sm_util": "gpm_sm_util_pct",
    "gpm_sm_occupancy": "gpm_sm_occupancy_pct",
    "gpm_dram_bw_util": "gpm_dram_bw_util_pct",
    "gpm_any_tensor_util": "gpm_tensor_util_pct",
    "gpm_fp16_util": "gpm_fp16_util_pct",
    "gpm_fp32_util": "gpm_fp32_util_pct",
}
_INT_COLS = {c for c in METRICS if not c.startswith("gpm_") and c != "processes"} | {"ts_ns", "gpu"}
# The range of each integer column, from its Arrow type (int32 or int64).
_INT_RANGE = {
    f.name: (-(2 ** (f.type.bit_width - 1)), 2 ** (f.type.bit_width - 1) - 1)
    for f in arrow_schema("gpu_samples")
    if f.name in _INT_COLS
}


def read_recording(path: Path) -> list[dict[str, Any]]:
    """A recorded CSV as rows of our columns: gpu, ts_ns (if recorded) and METRICS.

    Empty cells are None (a metric that was not available then), never 0.
    """
    try:
        with path.open(newline="") as fh:
            reader = csv.DictReader(fh)
            header = {h: ALIASES.get(h, h) for h in reader.fieldnames or []}
            known = {h: c for h, c in header.items() if c in METRICS or c in ("ts_ns", "gpu")}
            if not any(c in METRICS for c in known.values()):
                raise RecordingFormatError(
                    f"{path}: no known telemetry column (expected e.g. util_gpu_pct, power_mw)"
                )
            rows = [_typed(path, n, raw, known) for n, raw in enumerate(reader, start=2)]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise RecordingFormatError(f"{path}: cannot read ({e})") from None
    if not rows:
        raise RecordingFormatError(f"{path}: no samples")
    return rows


def _typed(path: Path, line: int, raw: dict[str, str], known: dict[str, str]) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(METRICS)
    row["gpu"] = 0
    for h, col in known.items():
        text = (raw.get(h) or "").strip()
        if not text:
            continue
        if col == "processes":  # text (a JSON list of [pid, bytes]), shown as written
            row[col] = text
            continue
        try:
            value = float(text) if col not in _INT_COLS else _int(text)
        except ValueError:
            raise RecordingFormatError(f"{path}:{line}: {h}={text!r} is not a number") from None
        if isinstance(value, float) and math.isinf(value):
            raise RecordingFormatError(f"{path}:{line}: {h}={text!r} is not a finite number")
        low, high = _INT_RANGE.get(col, (-math.inf, math.inf))
        if isinstance(value, int) and not low <= value <= high:
            raise RecordingFormatError(f"{path}:{line}: {h}={text!r} is out of range")
        row[col] = None if isinstance(value, float) and math.isnan(value) else value
    return row


def _int(text: str) -> int:
    """An integer cell; exact for ns timestamps (a float would round them to 256 ns).
    Raises ValueError for anything but a whole number ("3201.0" is one; "inf" is not)."""
    try:
        return int(text)
    except ValueError:
        number = float(text)  # "3201.0"
        if not number.is_integer():  # nan, inf and 1.5 too
            raise ValueError(text) from None
        return int(number)


_INVENTORY_SCHEMA = pa.schema([f for f in arrow_schema("gpu_inventory") if f.name in INVENTORY])


def _sidecar_inventory(path: Path) -> dict[int, dict[str, Any]]:
    """`<name>.inventory.json` beside a recording: the recorded GPUs' gpu_inventory rows,
    each a JSON object with an int `gpu` and values the inventory's columns can hold."""
    side = path.with_name(path.name.removesuffix(".csv") + ".inventory.json")
    if not side.is_file():
        return {}
    try:
        rows = json.loads(side.read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise RecordingFormatError(f"{side}: cannot read ({str(e)[:200]})") from None
    if not isinstance(rows, list) or not all(
        isinstance(r, dict) and type(r.get("gpu")) is int for r in rows
    ):
        raise RecordingFormatError(f"{side}: expected a JSON list of objects with an int 'gpu'")
    for r in rows:
        try:
            pa.Table.from_pylist([{c: r.get(c) for c in INVENTORY}], _INVENTORY_SCHEMA)
        # UnicodeEncodeError: a string escaping a lone surrogate ("\udcff"), not text
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, UnicodeError) as e:
            raise RecordingFormatError(f"{side}: gpu {r['gpu']}: {str(e)[:200]}") from None
    return {r["gpu"]: r for r in rows}


class ReplaySource:
    """Plays recorded samples back, one recorded row per GPU per tick.

    By default the rows are stamped with the time they are played (the Live page then shows
    them as current, labelled as replayed); with `keep_time` they keep their recorded Unix
    times (to line a recording up with the trace recorded beside it).
    """

    kind = "replay"

    def __init__(
        self,
        paths: list[Path],
        *,
        gpus: list[int] | None = None,
        loop: bool = False,
        keep_time: bool = False,
    ) -> None:
        if keep_time and loop:
            raise RecordingFormatError("a replay that keeps recorded times cannot loop")
        self.keep_time, self.loop = keep_time, loop
        self._rows: dict[int, list[dict[str, Any]]] = {}
        self._inventory: dict[int, dict[str, Any]] = {}
        named: set[int] = set()
        for path in paths:
            rows = read_recording(Path(path))
            if keep_time and any(r.get("ts_ns") is None for r in rows):
                raise RecordingFormatError(f"{path}: no timestamp column to keep")
            side = _sidecar_inventory(Path(path))
            for r in rows:
                self._rows.setdefault(r["gpu"], []).append(r)
            # The first recording with an inventory names a GPU, else the first recording:
            # the demo replays its telemetry without one beside the H200 phases with one.
            for g in {r["gpu"] for r in rows} - named:
                if g in side:
                    self._inventory[g] = side[g]
                    named.add(g)
                else:
                    self._inventory.setdefault(
                        g, {"name": valid_text(f"replay of {Path(path).name}")}
                    )
        if gpus is not None:
            missing = [g for g in gpus if g not in self._rows]
            if missing:
                raise RecordingFormatError(f"GPUs {missing}: not in the recording(s)")
            self._rows = {g: self._rows[g] for g in gpus}
        self._next: dict[int, Iterator[dict[str, Any]]] = {
            g: iter(rows) for g, rows in self._rows.items()
        }

    def gpu_indices(self) -> list[int]:
        return sorted(self._rows)

    def inventory(self, gpu: int) -> dict[str, Any]:
        inv = self._inventory[gpu]
        return {c: inv.get(c) for c in INVENTORY}

    def sample(self, gpu: int) -> dict[str, Any]:
        row = next(self._next[gpu], None)
        if row is None:
            if not self.loop:
                raise ReplayFinished
            self._next[gpu] = iter(self._rows[gpu])
            row = next(self._next[gpu])
        out = {c: row[c] for c in METRICS}
        if self.keep_time:
            out["ts_ns"] = row["ts_ns"]
        return out

    def close(self) -> None:
        pass
