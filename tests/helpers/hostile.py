"""The hostile corpus: broken and malicious inputs, each made at test time from a real trace.

Every case starts from a shared fixture, read in place (../shared/fixtures), and changes what
an attacker or a broken exporter controls: one value, one name, the nesting, the keys, the
compression. `CASES` maps a case id to how it is made and what ingest must do with it: refuse
it (`Refused`: one line naming the file, exit status 2, the store unchanged) or ingest it
(`Ingested`: exactly `malformed` events counted as malformed, `kernels` kernels kept).
Nothing here is checked in but this script: the megabytes are made when a test asks.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from helpers.hostile_bombs import (
    CAP_ENV,
    gz_of_base,
    tar_gz_bomb,
    whitespace_bomb,
    zip_lying_size,
    zip_many_members,
    zip_of_gz_bomb,
    zip_zero_bomb,
)
from helpers.paths import fixture

BASE = "h200/microops.pt.trace.json.gz"  # a real H200 trace: 276 events, 18 kernels
BASE_KERNELS = 18
BIG = 2**70  # beyond int64 and uint64
WIDE = 2**40  # beyond int32
# Mutations put this string where raw JSON text goes (a number no json.dumps writes).
RAW = "@@RAW@@"


@dataclass(frozen=True)
class Refused:
    """One line on standard error naming `names` (a path the case returns), matching
    `reason`; exit status 2; the store as it was."""

    reason: str


@dataclass(frozen=True)
class Ingested:
    """A new run with exactly `malformed` malformed events and `kernels` kernels."""

    malformed: int
    kernels: int = BASE_KERNELS


@dataclass(frozen=True)
class Case:
    """How to make one hostile input (into a folder; returns the paths to ingest) and the
    outcome ingest must give; `env` for the ingest process."""

    make: Callable[[Path], list[Path]]
    expect: Refused | Ingested
    env: dict[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------ the real trace to change


@cache
def _base_text() -> bytes:
    return gzip.decompress(fixture(BASE).read_bytes())


def base_doc() -> dict[str, Any]:
    """A fresh copy of the base trace's document."""
    return copy.deepcopy(_parsed())


@cache
def _parsed() -> dict[str, Any]:
    return dict(json.loads(_base_text()))


def events(doc: dict[str, Any], cat: str, ph: str = "X") -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") == ph and e.get("cat") == cat]


def dump(doc: Any, raw: str = "") -> bytes:
    """The document as JSON; every RAW string becomes the raw JSON text `raw`."""
    return json.dumps(doc).replace(json.dumps(RAW), raw).encode()


def _write(folder: Path, name: str, data: bytes) -> list[Path]:
    path = folder / name
    path.write_bytes(data)
    return [path]


def _mutated(
    name: str, change: Callable[[dict[str, Any]], Any], raw: str = ""
) -> Callable[[Path], list[Path]]:
    """A case maker: the base document changed in place by `change`, written as `name`."""

    def make(folder: Path) -> list[Path]:
        doc = base_doc()
        change(doc)
        data = dump(doc, raw)
        return _write(folder, name, gzip.compress(data) if name.endswith(".gz") else data)

    return make


def _set(cat: str, *keys: str, value: Any, ph: str = "X", at: int = 0) -> Callable[[Any], None]:
    """Set one field (keys: a path into the event, e.g. "args", "grid") of the `at`-th event
    of a category."""

    def change(doc: dict[str, Any]) -> None:
        target = events(doc, cat, ph)[at]
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        target[keys[-1]] = value

    return change


def _top(key: str, value: Any) -> Callable[[Any], None]:
    def change(doc: dict[str, Any]) -> None:
        doc[key] = value

    return change


def _device_prop(key: str, value: Any) -> Callable[[Any], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["deviceProperties"][0][key] = value

    return change


def _kernel_device_from_pid(doc: dict[str, Any]) -> None:
    """A kernel without args.device: its device is its pid, here beyond int32."""
    kernel = events(doc, "kernel")[0]
    del kernel["args"]["device"]
    kernel["pid"] = WIDE


# ------------------------------------------------------------------------- invalid UTF-8


def _bad_utf8(name: str, where: Callable[[dict[str, Any]], None]) -> Callable[[Path], list[Path]]:
    """`where` puts the marker "@@BAD@@" into one string; it becomes bytes that are not UTF-8
    (a lone continuation byte and a truncated 3-byte sequence)."""

    def make(folder: Path) -> list[Path]:
        doc = base_doc()
        where(doc)
        data = dump(doc).replace(b"@@BAD@@", b"\x80bad\xe2\x82")
        return _write(folder, name, gzip.compress(data) if name.endswith(".gz") else data)

    return make


def _kernel_name_marked(doc: dict[str, Any]) -> None:
    kernel = events(doc, "kernel")[0]
    kernel["name"] = "@@BAD@@" + kernel["name"]


def _op_type_marked(doc: dict[str, Any]) -> None:
    op = next(e for e in events(doc, "cpu_op") if e["args"].get("Input type"))
    op["args"]["Input type"][0] = "@@BAD@@"


# ------------------------------------------------------------------------------- nesting


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


# ---------------------------------------------------------------------- duplicate keys


def _duplicate_events(first_small: bool) -> Callable[[Path], list[Path]]:
    """Two traceEvents keys: the real events and an empty list, in either order."""

    def make(folder: Path) -> list[Path]:
        doc = base_doc()
        real = json.dumps(doc.pop("traceEvents"))
        rest = json.dumps(doc)[1:-1]
        parts = (
            ['"traceEvents": []', rest, f'"traceEvents": {real}']
            if first_small
            else [rest, f'"traceEvents": {real}', '"traceEvents": []']
        )
        return _write(folder, "two_lists.pt.trace.json", ("{" + ", ".join(parts) + "}").encode())

    return make


def _duplicate_metadata(folder: Path) -> list[Path]:
    doc = base_doc()
    text = dump(doc).decode()
    # a second deviceProperties after the events: the later one must not silently win
    text = text[:-1] + ', "deviceProperties": [{"id": 0, "name": "Fake GPU"}]}'
    return _write(folder, "two_devices.pt.trace.json", text.encode())


def _duplicate_far_from_events(folder: Path) -> list[Path]:
    """The duplicate behind 2 MB of metadata: the document is read the general way."""
    doc = base_doc()
    doc = {"padding": "x" * (2 << 20), **doc}
    text = dump(doc).decode()
    text = '{"traceName": "a", ' + text[1:-1] + ', "traceName": "b"}'
    return _write(folder, "far_duplicate.pt.trace.json", text.encode())


# ------------------------------------------------------------------- markup in the names

# Markdown, HTML and links: an image that would make every viewer's browser fetch a URL, a
# link, a tag with a script, emphasis; what a page must show as written.
MARKUP = (
    "![x](http://127.0.0.1:9/x.png) [click](http://evil) <img src=x onerror=alert(1)> "
    "**bold** __next__ $x$ :red[red]"
)


def markup_trace(folder: Path) -> Path:
    """The base trace with MARKUP in its device name and in front of every kernel and op
    name (the run name and tags are the ingest's to give)."""
    doc = base_doc()
    doc["deviceProperties"][0]["name"] = MARKUP
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "cpu_op") and e.get("ph") == "X":
            e["name"] = f"{MARKUP} {e['name']}"
    return _write(folder, "markup.pt.trace.json", dump(doc))[0]


# ------------------------------------------------------------------------------ the corpus

CASES: dict[str, Case] = {
    # out-of-range numbers: the event is counted; without a usable time it is left out
    "dur_2**70": Case(_mutated("dur.json", _set("kernel", "dur", value=BIG)), Ingested(1, 17)),
    "dur_1e300": Case(_mutated("dur.json", _set("kernel", "dur", value=1e300)), Ingested(1, 17)),
    "ts_10**19": Case(_mutated("ts.json", _set("kernel", "ts", value=10**19)), Ingested(1, 17)),
    "ts_2**70": Case(_mutated("ts.json", _set("cpu_op", "ts", value=BIG)), Ingested(1)),
    "ts_-2**70": Case(_mutated("ts.json", _set("cuda_runtime", "ts", value=-BIG)), Ingested(1)),
    "ts_1e400": Case(
        _mutated("ts.json", _set("kernel", "ts", value=RAW), raw="1e400"), Ingested(1, 17)
    ),
    "ts_1e999999999": Case(  # abs() of it overflows Decimal, int() would build 10**9 digits
        _mutated("ts.json", _set("kernel", "ts", value=RAW), raw="1e999999999"), Ingested(1, 17)
    ),
    "correlation_2**70": Case(
        _mutated("corr.json", _set("kernel", "args", "correlation", value=BIG)), Ingested(1)
    ),
    "correlation_2**64-1": Case(
        _mutated("corr.json", _set("cuda_runtime", "args", "correlation", value=2**64 - 1)),
        Ingested(1),
    ),
    "correlation_2**63-1": Case(
        _mutated("corr.json", _set("kernel", "args", "correlation", value=2**63 - 1)),
        Ingested(0),
    ),
    "bytes_2**70": Case(
        _mutated("bytes.json", _set("gpu_memset", "args", "bytes", value=BIG)), Ingested(1)
    ),
    "memory_bytes_2**70": Case(
        _mutated(
            "mem.json",
            _set("cpu_instant_event", "args", "Bytes", value=BIG, ph="i"),
        ),
        Ingested(1),
    ),
    "external_id_2**70": Case(
        _mutated("ext.json", _set("cpu_op", "args", "External id", value=BIG)), Ingested(1)
    ),
    "pid_2**70": Case(_mutated("pid.json", _set("kernel", "pid", value=BIG)), Ingested(1, 17)),
    "tid_2**70": Case(_mutated("tid.json", _set("cpu_op", "tid", value=BIG)), Ingested(1)),
    "stream_digits_30": Case(
        _mutated("stream.json", _set("kernel", "args", "stream", value="9" * 30)), Ingested(1)
    ),
    "grid_2**40": Case(
        _mutated("grid.json", _set("kernel", "args", "grid", value=[WIDE, 1, 1])), Ingested(1)
    ),
    "device_2**40": Case(
        _mutated("device.json", _set("kernel", "args", "device", value=WIDE)), Ingested(1)
    ),
    "device_from_pid_2**40": Case(_mutated("pid.json", _kernel_device_from_pid), Ingested(1)),
    "rank_2**70": Case(
        _mutated("rank.json", _top("distributedInfo", {"rank": BIG, "world_size": 2})),
        Ingested(1),
    ),
    "world_size_2**70": Case(
        _mutated("world.json", _top("distributedInfo", {"rank": 0, "world_size": BIG})),
        Ingested(1),
    ),
    "baseTime_2**70": Case(_mutated("base.json", _top("baseTimeNanoseconds", BIG)), Ingested(1)),
    "device_memory_2**70": Case(
        _mutated("props.json", _device_prop("totalGlobalMem", BIG)), Ingested(1)
    ),
    "device_sms_2**40": Case(_mutated("props.json", _device_prop("numSms", WIDE)), Ingested(1)),
    # values of the wrong kind
    "kernel_name_is_a_number": Case(
        _mutated("name.json", _set("kernel", "name", value=5)), Ingested(1, 17)
    ),
    "kernel_args_is_a_list": Case(
        _mutated("args.json", _set("kernel", "args", value=[1, 2])), Ingested(1)
    ),
    "an_event_that_is_a_number": Case(
        _mutated("event.json", lambda doc: doc["traceEvents"].insert(5, 7)), Ingested(1)
    ),
    "deviceProperties_is_a_string": Case(
        _mutated("props.json", _top("deviceProperties", "H200")), Ingested(0)
    ),
    # a number and true were a TypeError until tools/mutate_inputs.py found them (D106)
    "deviceProperties_is_0.5": Case(_mutated("p.json", _top("deviceProperties", 0.5)), Ingested(0)),
    "deviceProperties_true": Case(_mutated("p.json", _top("deviceProperties", True)), Ingested(0)),
    "distributedInfo_backend_is_a_list": Case(  # found by tools/mutate_inputs.py too
        _mutated("dist.json", _top("distributedInfo", {"rank": 0, "backend": [1]})), Ingested(0)
    ),
    "dur_negative": Case(_mutated("dur.json", _set("kernel", "dur", value=-5)), Ingested(1, 17)),
    "dur_is_true": Case(_mutated("dur.json", _set("kernel", "dur", value=True)), Ingested(1, 17)),
    "ts_is_a_string": Case(_mutated("ts.json", _set("kernel", "ts", value="123")), Ingested(1, 17)),
    "kernel_name_is_an_object": Case(
        _mutated("name.json", _set("kernel", "name", value={"x": [1]})), Ingested(1, 17)
    ),
    "grid_of_mixed_kinds": Case(
        _mutated("grid.json", _set("kernel", "args", "grid", value=[1, "x", None])), Ingested(1)
    ),
    "kernel_name_with_NUL": Case(  # kept as written; reports drop it (test_hostile_reports)
        _mutated("name.json", _set("kernel", "name", value="a\u0000b")), Ingested(0)
    ),
    "traceEvents_is_an_object": Case(
        _mutated("events.json", _top("traceEvents", {"a": 1})),
        Refused(r"not a trace: Expected `array`, got `object`"),
    ),
    # bytes around the document
    "gzip_with_trailing_garbage": Case(
        lambda folder: _write(
            folder, "trailing.json.gz", gzip.compress(_base_text()) + b"garbage!"
        ),
        Refused(r"corrupt gzip"),
    ),
    "utf8_byte_order_mark": Case(  # RFC 8259: a JSON text never starts with one
        lambda folder: _write(folder, "bom.json", b"\xef\xbb\xbf" + _base_text()),
        Refused(r"not JSON \(does not start with"),
    ),
    "utf16": Case(
        lambda folder: _write(folder, "utf16.json", _base_text().decode().encode("utf-16")),
        Refused(r"binary data, not a JSON trace"),
    ),
    # invalid UTF-8: replaced with U+FFFD and counted, the rest of the trace kept
    "utf8_kernel_name": Case(_bad_utf8("utf8.json", _kernel_name_marked), Ingested(1)),
    "utf8_kernel_name_gz": Case(_bad_utf8("utf8.json.gz", _kernel_name_marked), Ingested(1)),
    "utf8_op_input_type": Case(_bad_utf8("utf8.json", _op_type_marked), Ingested(1)),
    "utf8_metadata": Case(_bad_utf8("utf8.json", _top("traceName", "@@BAD@@")), Ingested(1)),
    # nesting
    "nesting_100k_in_args": Case(
        _mutated("deep.json", _set("kernel", "args", "extra", value=RAW), raw=_deep(100_000)),
        Refused(r"nested deeper than"),
    ),
    "nesting_100k_in_metadata": Case(
        _mutated("deep.json", _top("extra", RAW), raw=_deep(100_000)),
        Refused(r"nested deeper than"),
    ),
    "nesting_50_in_args": Case(
        _mutated("deep.json", _set("kernel", "args", "extra", value=RAW), raw=_deep(50)),
        Ingested(0),
    ),
    # duplicate top-level keys
    "two_traceEvents_real_first": Case(
        _duplicate_events(first_small=False), Refused(r"duplicate top-level key 'traceEvents'")
    ),
    "two_traceEvents_real_last": Case(
        _duplicate_events(first_small=True), Refused(r"duplicate top-level key 'traceEvents'")
    ),
    "two_deviceProperties": Case(
        _duplicate_metadata, Refused(r"duplicate top-level key 'deviceProperties'")
    ),
    "two_traceName_far_apart": Case(
        _duplicate_far_from_events, Refused(r"duplicate top-level key 'traceName'")
    ),
    # expansion beyond the cap (CAP_MB)
    "gzip_1GiB_of_spaces": Case(whitespace_bomb, Refused(r"expands to more than 64 MB"), CAP_ENV),
    "zip_512MiB_of_zeros": Case(zip_zero_bomb, Refused(r"expands to more than 64 MB"), CAP_ENV),
    "zip_80_members_of_1MiB": Case(
        zip_many_members, Refused(r"expands to more than 64 MB"), CAP_ENV
    ),
    "tar_gz_512MiB_of_spaces": Case(tar_gz_bomb, Refused(r"expands to more than 64 MB"), CAP_ENV),
    "zip_holding_a_gzip_bomb": Case(
        zip_of_gz_bomb, Refused(r"expands to more than 64 MB"), CAP_ENV
    ),
    "zip_member_lying_about_its_size": Case(
        zip_lying_size, Refused(r"unreadable archive: Bad CRC-32"), CAP_ENV
    ),
    "gzip_under_the_cap": Case(gz_of_base, Ingested(0), CAP_ENV),
}
