"""Prometheus' HTTP API as the dashboard uses it: a query_range, or a range vector's query,
its answer checked.

Every byte of an answer is someone else's text. The answer's shape is checked (a status, a
matrix of series, string labels, [time, "value"] points), an answer over 64 MiB is refused, a
non-finite value is no value, and every failure (no server, a timeout, an HTTP error, an
answer that is not the API's) is one PrometheusError line, the server's own words flattened
to one short line.
"""

from __future__ import annotations

import http.client
import json
import math
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.error import HTTPError, URLError

from data.errors import PrometheusError
from data.valid_text import valid_text

DEFAULT_TIMEOUT_S = 10.0
MAX_ANSWER_BYTES = 64 * 2**20
MAX_TIME_S = 9.2e9  # Unix seconds whose ns still fit an int64 (the store's time columns)
# The labels data.reads_prometheus sets on each clause of a query, and the name, which some
# functions keep (last_over_time) and others drop: none of them says which GPU it is.
TAGS = ("dash_col", "dash_part", "__name__")


@dataclass(frozen=True, slots=True)
class Point:
    """One value of one clause (column, part) of one series, at an evaluation time."""

    labels: tuple[tuple[str, str], ...]  # the series' labels less TAGS, sorted
    column: str
    part: str
    eval_ns: int
    value: float | None


def checked_url(url: str) -> str:
    """The base URL of a Prometheus server (http or https, no query), without a final /."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PrometheusError(f"{url!r}: expected a Prometheus URL like http://host:9090")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")


def query_range(
    url: str,
    query: str,
    start_ns: int,
    end_ns: int,
    step_ms: int,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[Point]:
    """POST /api/v1/query_range to the server at `url`: every point of the answer."""
    form = {
        "query": query,
        "start": f"{start_ns / 1e9:.3f}",
        "end": f"{max(start_ns, end_ns) / 1e9:.3f}",
        "step": f"{step_ms / 1000:.3f}",
        "timeout": f"{timeout_s:g}s",
    }
    return list(_points(url, _post(url, "/api/v1/query_range", form, timeout_s)))


def query_samples(
    url: str,
    selector: str,
    span_ms: int,
    end_ns: int,
    column_of: Callable[[str], str | None],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[Point]:
    """POST /api/v1/query of `selector[span_ms]` at end_ns: every scrape stored in that range,
    at its own time (a range vector, where query_range evaluates on a grid). Each series'
    column is `column_of(its name)`; series it names none of are left out."""
    form = {
        "query": f"{selector}[{span_ms}ms]",
        "time": f"{end_ns / 1e9:.3f}",
        "timeout": f"{timeout_s:g}s",
    }
    return list(_points(url, _post(url, "/api/v1/query", form, timeout_s), column_of))


def _post(url: str, path: str, form: Mapping[str, str], timeout_s: float) -> Any:
    request = urllib.request.Request(
        url + path,
        data=urllib.parse.urlencode(form).encode(),
        headers={"Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read(MAX_ANSWER_BYTES + 1)
    except HTTPError as e:
        raise PrometheusError(f"{url}: HTTP {e.code}: {_error_text(e)}") from None
    except (URLError, OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", None) or e
        raise PrometheusError(f"{url}: cannot query ({_one_line(str(reason))})") from None
    if len(raw) > MAX_ANSWER_BYTES:
        raise PrometheusError(f"{url}: answer over {MAX_ANSWER_BYTES // 2**20} MiB")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise PrometheusError(f"{url}: the answer is not JSON") from None


def _tagged(labels: Mapping[str, str]) -> tuple[str, str] | None:
    """(column, part) of a clause data.reads_prometheus tagged."""
    column = labels.get("dash_col")
    return None if column is None else (column, labels.get("dash_part", "v"))


def _points(
    url: str, answer: Any, column_of: Callable[[str], str | None] | None = None
) -> Iterable[Point]:
    """The points of a matrix answer (query_range, or a range vector's query); a series'
    column is its tags' or, given column_of, column_of(its name). PrometheusError when the
    answer is not one."""
    if not isinstance(answer, dict):
        raise PrometheusError(f"{url}: not a Prometheus API answer")
    if answer.get("status") != "success":
        raise PrometheusError(f"{url}: {_api_error(answer)}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise PrometheusError(f"{url}: not a query_range answer (no matrix result)")
    result = data.get("result")
    if not isinstance(result, list):
        raise PrometheusError(f"{url}: not a query_range answer (no matrix result)")
    for series in result:
        labels = series.get("metric") if isinstance(series, dict) else None
        values = series.get("values") if isinstance(series, dict) else None
        if not isinstance(labels, dict) or not isinstance(values, list):
            raise PrometheusError(f"{url}: a series without labels or values")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise PrometheusError(f"{url}: a label that is not a string")
        labels = {valid_text(k): valid_text(v) for k, v in labels.items()}  # "\udcff" escapes
        if column_of is None:
            found = _tagged(labels)
        else:
            named = column_of(labels.get("__name__", ""))
            found = None if named is None else (named, "v")
        if found is None:
            continue  # not one of ours (a clause always is with Prometheus' own server)
        column, part = found
        rest = tuple(sorted((k, v) for k, v in labels.items() if k not in TAGS))
        for pair in values:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise PrometheusError(f"{url}: a point that is not [time, value]")
            when, text = pair
            if not isinstance(when, int | float) or not isinstance(text, str):
                raise PrometheusError(f"{url}: a point that is not [time, value]")
            if (when_ns := time_ns(when)) is None:  # NaN too
                raise PrometheusError(f"{url}: a point's time {str(when)[:40]} is out of range")
            yield Point(rest, column, part, when_ns, _finite(text))


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def ns_of(seconds: float) -> int:
    """Prometheus' seconds (millisecond resolution) as integer ns."""
    return round(float(seconds) * 1000) * 1_000_000


def time_ns(seconds: float) -> int | None:
    """ns_of a point's time or a timestamp() value; None where it is no Unix time the store's
    int64 ns hold (NaN, or a hostile 1e306, which would overflow the conversion)."""
    return ns_of(seconds) if 0 <= seconds <= MAX_TIME_S else None


def _api_error(answer: Mapping[str, Any]) -> str:
    kind, error = answer.get("errorType"), answer.get("error")
    text = f"{kind}: {error}" if isinstance(kind, str) and isinstance(error, str) else "error"
    return _one_line(text)


def _error_text(e: HTTPError) -> str:
    try:
        answer = json.loads(e.read(4096))
    except (ValueError, UnicodeDecodeError, OSError):
        return _one_line(str(e.reason))
    return _api_error(answer) if isinstance(answer, dict) else _one_line(str(e.reason))


def _one_line(text: str, limit: int = 200) -> str:
    """Someone else's text as one short line (control characters become spaces)."""
    flat = "".join(c if c.isprintable() else " " for c in text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
