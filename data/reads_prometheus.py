"""Telemetry read from a Prometheus server: the agent's series or a plain dcgm-exporter's.

`PrometheusTelemetry` answers the same reads as the lake (data.telemetry_source) with the
same frame columns and types, so analysis and pages do not care where samples came from.
Everything is one request per read (POST, with a timeout): /api/v1/query_range with the
columns of a read joined into one PromQL expression by `or`, each tagged with a `dash_col`
label, or /api/v1/query of one range vector for raw samples. Names and units:
data.prometheus_names; series are converted back to our units (ratios to %, MiB to bytes, W to
mW, B/s to MiB/s: column = series × scale).

- Raw samples: up to EXACT_SPAN_NS, one range vector of every sample series' name, each
  scrape at its own time (D68). Longer: per column `last_over_time(M[S])` at step S keeps a
  scrape a step, and `timestamp(M)` beside it gives the scrape's own time (D23), with S the
  span / 10 000 (Prometheus answers at most 11 000 points a series).
- Buckets: `avg_over_time` / `max_over_time` / `min_over_time` / `count_over_time` at step =
  the bucket, and the clock-event mask OR-ed bit by bit (`M % 2b >= bool b` over a subquery).
- Every byte of an answer is someone else's text: data.prometheus_api checks its shape; label
  values stay plain strings (never Markdown or HTML: the pages escape them); a series whose
  `gpu` label is not a small integer, or that is a MIG instance, is not read; a value that
  does not fit its column is NULL.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from data.errors import PrometheusError
from data.prometheus_api import (
    DEFAULT_TIMEOUT_S,
    Point,
    checked_url,
    query_range,
    query_samples,
    time_ns,
)
from data.prometheus_names import (
    FB_PARTS,
    HOST_LABELS,
    INVENTORY_SERIES,
    SAMPLE_SERIES,
    SOURCE_LABEL,
    Series,
)
from data.reads_telemetry import AVG_METRICS
from data.schema import BOOL, F64, I32, I64, STR, arrow_schema

if TYPE_CHECKING:
    import pandas as pd

MAX_POINTS = 10_000  # below Prometheus' 11 000 points per series of one query_range
MIN_STEP_MS = 100  # the agent's shortest interval
# Raw reads up to this span take every scrape (a range vector): 24 series at 0.1 s a GPU are
# about 3 MB of answer a GPU, far below MAX_ANSWER_BYTES; longer ones a grid of MAX_POINTS.
EXACT_SPAN_NS = 300 * 10**9
GPU_LOOKBACK = "1h"  # gpus(): samples counted over this; a GPU needs one in the last 5 min
CLOCK_BITS = (0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100)  # nvmlClocksEventReason*
_GPU_LABEL = re.compile(r"[0-9]{1,4}")

BY_COLUMN: dict[str, Series] = {s.column: s for s in (*SAMPLE_SERIES, *INVENTORY_SERIES)}
_BY_NAME: dict[str, str] = {n: s.column for s in SAMPLE_SERIES for n in s.names}
# Series that say a GPU is there (the first that has a sample counts), in dcgm-exporter's
# default counters as in the agent's.
PRESENCE = ("sm_clock_mhz", "util_gpu_pct", "mem_used_bytes")

_BUCKET_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("host", STR), ("gpu", I32), ("ts_ns", I64), ("samples", I64), ("replayed", BOOL),
    *[(m, F64) for m in AVG_METRICS],
    ("util_gpu_max_pct", I32), ("sm_clock_min_mhz", I32), ("mem_used_max_bytes", I64),
    ("process_count_max", I32), ("clocks_event_reasons", I64),
]  # fmt: skip
BUCKET_SCHEMA = pa.schema(_BUCKET_COLUMNS)  # data.reads_telemetry.bucketed's columns
_GPUS_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("host", STR), ("gpu", I32), ("first_ns", I64), ("last_ns", I64), ("samples", I64),
    ("source", STR), ("name", STR), ("mem_total_bytes", I64), ("power_limit_mw", I64),
    ("peak_hbm_bytes_per_s", F64), ("unsupported", STR),
]  # fmt: skip
GPUS_SCHEMA = pa.schema(_GPUS_COLUMNS)  # data.reads_telemetry.gpus's columns


class PrometheusTelemetry:
    """The telemetry reads over a Prometheus server's HTTP API at `url`."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.url = checked_url(url)
        self.timeout_s = timeout_s
        self.label = f"Prometheus at {self.url}"

    # ------------------------------------------------------------------ the four reads

    def samples(
        self, start_ns: int, end_ns: int, hosts: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """Raw samples with start_ns <= ts_ns < end_ns (on `hosts`, when given): the
        gpu_samples columns, by host, gpu, time; ts_ns is the scrape's time."""
        rows: dict[tuple[str, int, int], dict[str, Any]] = {}
        if 0 < end_ns - start_ns <= EXACT_SPAN_NS:
            rows = self._scrapes(start_ns, end_ns)
        elif end_ns > start_ns:
            step_ms = max(MIN_STEP_MS, math.ceil((end_ns - start_ns) / 1e6 / MAX_POINTS))
            window = f"[{step_ms}ms]"
            clauses = []
            for s in SAMPLE_SERIES:
                sel = _selector(s)
                clauses.append(_tag(f"last_over_time({sel}{window})", s.column, "v"))
                clauses.append(
                    _tag(f"timestamp({sel}) and last_over_time({sel}{window})", s.column, "t")
                )
            points = self._query(clauses, start_ns + step_ms * 10**6, end_ns, step_ms)
            rows = _raw_rows(points, start_ns, end_ns)
        wanted = set(hosts) if hosts else None
        table = _table(
            [r for k, r in sorted(rows.items()) if wanted is None or k[0] in wanted],
            arrow_schema("gpu_samples"),
        )
        return _frame(table)

    def _scrapes(self, start_ns: int, end_ns: int) -> dict[tuple[str, int, int], dict[str, Any]]:
        """Every scrape of every sample series in [start_ns, end_ns), at its own time: one
        range vector of all their names (a grid of last_over_time merges scrapes closer than
        its step, which a loaded Prometheus makes: 15 of 21 kept in one 2 s window)."""
        span_ms = math.ceil((end_ns - start_ns) / 1e6) + 1  # the range ends at end_ns
        selector = '{__name__=~"' + "|".join(_BY_NAME) + '"}'
        points = query_samples(
            self.url, selector, span_ms, end_ns, _BY_NAME.get, timeout_s=self.timeout_s
        )
        rows: dict[tuple[str, int, int], dict[str, Any]] = {}
        for p in points:
            key = _gpu_key(p.labels)
            if key is None or not start_ns <= p.eval_ns < end_ns:
                continue
            _put(rows, key, p.eval_ns, p)
        return rows

    def bucketed(self, start_ns: int, end_ns: int, bucket_ns: int) -> pd.DataFrame:
        """Samples in [start_ns, end_ns) per (host, gpu, bucket), as
        data.reads_telemetry.bucketed returns them (ts_ns: the bucket's start)."""
        count = max(0, math.ceil((end_ns - start_ns) / bucket_ns))
        if count > MAX_POINTS:
            raise PrometheusError(f"{count} buckets: Prometheus answers {MAX_POINTS:,} at most")
        rows: dict[tuple[str, int, int], dict[str, Any]] = {}
        if count:
            b_ms = max(1, bucket_ns // 10**6)
            points = self._query(
                _bucket_clauses(b_ms), start_ns + bucket_ns, start_ns + count * bucket_ns, b_ms
            )
            for p in points:
                key = _gpu_key(p.labels)
                if key is None or p.value is None:
                    continue
                k = round((p.eval_ns - start_ns - bucket_ns) / bucket_ns)
                row = rows.setdefault(
                    (*key, start_ns + k * bucket_ns),
                    {"host": key[0], "gpu": key[1], "ts_ns": start_ns + k * bucket_ns,
                     "replayed": _source(p.labels) == "replay"},
                )  # fmt: skip
                value = int(p.value) if p.column == "samples" else _unit(p.column, p.value)
                row.setdefault(p.column, value)
        return _frame(_table([r for _, r in sorted(rows.items())], BUCKET_SCHEMA))

    def gpus(self) -> pd.DataFrame:
        """One row per (host, gpu) with a sample in the last 5 minutes, as
        data.reads_telemetry.gpus returns them: samples counts the last hour, first_ns and
        unsupported are NULL (Prometheus keeps neither)."""
        rows = []
        for (host, gpu), (labels, values) in sorted(self._instant(time.time_ns()).items()):
            if "last_ns" not in values:
                continue
            rows.append(
                {"host": host, "gpu": gpu, "last_ns": values["last_ns"],
                 "samples": values.get("samples"), "source": _source(labels),
                 "name": labels.get("modelName") or None,
                 **{c: values.get(c) for c in
                    ("mem_total_bytes", "power_limit_mw", "peak_hbm_bytes_per_s")}}
            )  # fmt: skip
        return _frame(_table(rows, GPUS_SCHEMA))

    def inventory(self, at_ns: int | None = None) -> pd.DataFrame:
        """Each GPU's static facts at `at_ns` (default now): the gpu_inventory columns, from
        the series and the UUID, modelName and DCGM_FI_DRIVER_VERSION labels; NULL where the
        exporter has no series (a plain dcgm-exporter has no peak bandwidth or max clock)."""
        at = time.time_ns() if at_ns is None else at_ns
        rows = []
        for (host, gpu), (labels, values) in sorted(self._instant(at).items()):
            rows.append(
                {"host": host, "gpu": gpu, "ts_ns": at, "source": _source(labels),
                 "uuid": labels.get("UUID") or None, "name": labels.get("modelName") or None,
                 "driver_version": labels.get("DCGM_FI_DRIVER_VERSION") or None,
                 **{s.column: values.get(s.column) for s in INVENTORY_SERIES}}
            )  # fmt: skip
        return _frame(_table(rows, arrow_schema("gpu_inventory")))

    # ------------------------------------------------------------------ queries

    def _instant(self, at_ns: int) -> dict[tuple[str, int], tuple[dict[str, str], dict[str, Any]]]:
        """Per (host, gpu) at one time: its labels and values (last_ns, samples and the
        inventory columns, in our units)."""
        present = [_selector(BY_COLUMN[c]) for c in PRESENCE]
        clauses = [
            _tag(" or ".join(f"timestamp({s})" for s in present), "last_ns", "t"),
            _tag(" or ".join(f"count_over_time({s}[{GPU_LOOKBACK}])" for s in present), "samples"),
        ]
        for s in INVENTORY_SERIES:
            expr = _selector(s)
            if s.column == "mem_total_bytes":
                expr = f"{expr} or ({' + '.join(FB_PARTS)})"
            clauses.append(_tag(expr, s.column))
        out: dict[tuple[str, int], tuple[dict[str, str], dict[str, Any]]] = {}
        for p in self._query(clauses, at_ns, at_ns, 1000):
            key = _gpu_key(p.labels)
            if key is None or p.value is None:
                continue
            _, values = out.setdefault(key, (dict(p.labels), {}))
            if p.column == "last_ns":
                if (ns := time_ns(p.value)) is not None:
                    values.setdefault("last_ns", ns)
            elif p.column == "samples":
                if 0 <= p.value < 2**31:  # a count; a hostile 1e300 would be no int column
                    values.setdefault("samples", int(p.value))
            else:
                values.setdefault(p.column, _unit(p.column, p.value))
        return out

    def _query(self, clauses: list[str], start_ns: int, end_ns: int, step_ms: int) -> list[Point]:
        """One query_range of the clauses joined by `or`: every point of the answer."""
        return query_range(
            self.url, " or ".join(clauses), start_ns, end_ns, step_ms, timeout_s=self.timeout_s
        )


# ---------------------------------------------------------------------- PromQL


def _selector(s: Series) -> str:
    if not s.aliases:
        return s.name
    return '{__name__=~"' + "|".join(s.names) + '"}'


def _tag(expr: str, column: str, part: str = "v") -> str:
    """expr with our two labels set (they overwrite any the series carried)."""
    inner = f'label_replace({expr}, "dash_col", "{column}", "", "")'
    return f'label_replace({inner}, "dash_part", "{part}", "", "")'


def _bucket_clauses(b_ms: int) -> list[str]:
    w = f"[{b_ms}ms]"
    clauses = [_tag(f"avg_over_time({_selector(BY_COLUMN[m])}{w})", m) for m in AVG_METRICS]
    for column, fn, base in (
        ("util_gpu_max_pct", "max", "util_gpu_pct"),
        ("sm_clock_min_mhz", "min", "sm_clock_mhz"),
        ("mem_used_max_bytes", "max", "mem_used_bytes"),
        ("process_count_max", "max", "process_count"),
    ):
        clauses.append(_tag(f"{fn}_over_time({_selector(BY_COLUMN[base])}{w})", column))
    present = [_selector(BY_COLUMN[c]) for c in PRESENCE]
    clauses.append(_tag(" or ".join(f"count_over_time({s}{w})" for s in present), "samples"))
    # No bitwise OR in PromQL: bit b was set in the bucket when max(M mod 2b >= b) is 1.
    mask = _selector(BY_COLUMN["clocks_event_reasons"])
    resolution = max(MIN_STEP_MS, b_ms // 10)
    bits = " + ".join(
        f"{b} * max_over_time(({mask} % {2 * b} >= bool {b})[{b_ms}ms:{resolution}ms])"
        for b in CLOCK_BITS
    )
    clauses.append(_tag(f"({bits})", "clocks_event_reasons"))
    return clauses


# ---------------------------------------------------------------------- the answer


def _raw_rows(
    points: list[Point], start_ns: int, end_ns: int
) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Raw sample rows keyed (host, gpu, scrape ns): each value beside its scrape time."""
    stamps = {
        (p.labels, p.column, p.eval_ns): p.value
        for p in points
        if p.part == "t" and p.value is not None
    }
    rows: dict[tuple[str, int, int], dict[str, Any]] = {}
    for p in points:
        key = _gpu_key(p.labels)
        stamp = stamps.get((p.labels, p.column, p.eval_ns))
        if p.part != "v" or key is None or stamp is None:
            continue
        ts = time_ns(stamp)
        if ts is not None and start_ns <= ts < end_ns:
            _put(rows, key, ts, p)
    return rows


def _put(
    rows: dict[tuple[str, int, int], dict[str, Any]], key: tuple[str, int], ts: int, p: Point
) -> None:
    """p's value into the row of its GPU's scrape at ts."""
    row = rows.setdefault(
        (*key, ts), {"host": key[0], "gpu": key[1], "ts_ns": ts, "source": _source(p.labels)}
    )
    if p.value is not None:
        row.setdefault(p.column, _unit(p.column, p.value))


def _gpu_key(labels: tuple[tuple[str, str], ...]) -> tuple[str, int] | None:
    """(host, gpu) of a series, or None for one that is not a whole GPU (no host, a `gpu`
    label that is not a small integer, a MIG instance)."""
    d = dict(labels)
    gpu = d.get("gpu", "")
    if not _GPU_LABEL.fullmatch(gpu) or "GPU_I_ID" in d:
        return None
    host = next((d[h] for h in HOST_LABELS if d.get(h)), None)
    return None if host is None else (host, int(gpu))


def _source(labels: Iterable[tuple[str, str]] | Mapping[str, str]) -> str:
    """nvml or replay from the agent's label; dcgm for a dcgm-exporter's series."""
    value = dict(labels).get(SOURCE_LABEL)
    return value if value in ("nvml", "replay") else "dcgm"


def _unit(column: str, value: float) -> float:
    """A series value in our column's unit."""
    return value * BY_COLUMN[_BASE.get(column, column)].scale


_BASE = {
    "util_gpu_max_pct": "util_gpu_pct",
    "sm_clock_min_mhz": "sm_clock_mhz",
    "mem_used_max_bytes": "mem_used_bytes",
    "process_count_max": "process_count",
}


def _table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Rows as an Arrow table of `schema`: whole numbers for integer columns, and a value
    that does not fit its column (a hostile 1e30 W) as NULL."""
    columns = {}
    for field in schema:
        values = [_cell(r.get(field.name), field.type) for r in rows]
        columns[field.name] = pa.array(values, type=field.type)
    return pa.table(columns, schema=schema)


def _cell(value: Any, kind: pa.DataType) -> Any:
    if value is None or not pa.types.is_integer(kind):
        return value
    whole = round(value)
    bits = kind.bit_width - 1
    return whole if -(2**bits) <= whole < 2**bits else None


def _frame(table: pa.Table) -> pd.DataFrame:
    """The table as the lake's reads return theirs: through DuckDB's .df()."""
    with duckdb.connect() as con:
        con.register("t", table)
        order = "host, gpu, ts_ns" if "ts_ns" in table.column_names else "host, gpu"
        return con.execute(f"SELECT * FROM t ORDER BY {order}").df()
