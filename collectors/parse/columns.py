"""Column conversions: exact ns timestamps, durations, ints, raw JSON text, metadata JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# Timestamps and durations beyond these are not measurements (the longest event of the shared
# fixtures is 43 s): refusing them keeps ts_ns + dur_ns, and sums of a few thousand durations,
# inside int64 (docs/decisions.md D31).
MAX_TS_NS = 2**62  # |ts| up to year 2116 in Unix ns
MAX_DUR_NS = 2**50  # 13 days


def exact_ns(raws: Sequence[msgspec.Raw]) -> tuple[np.ndarray, np.ndarray]:
    """µs timestamps as written (e.g. b'5127903468908.233') -> (int64 ns, valid mask); a
    value that is not a number, or beyond ±MAX_TS_NS, is invalid."""
    n = len(raws)
    lens = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    if n and lens.min() > 0:
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        text = pa.Array.from_buffers(
            pa.large_string(), n, [None, pa.py_buffer(offsets.data), pa.py_buffer(b"".join(raws))]
        )
        try:
            dec = pc.cast(text, pa.decimal128(24, 3))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        else:
            # The unscaled value of a decimal with 3 fractional digits is the ns count: its
            # low 64 bits, exact when the high ones are only its sign.
            data = dec.buffers()[1]
            assert data is not None
            words = np.frombuffer(memoryview(data), dtype=np.int64)
            ns, high = words[::2].copy(), words[1::2]
            ok = (high == (ns >> 63)) & (ns >= -MAX_TS_NS) & (ns <= MAX_TS_NS)
            return np.where(ok, ns, 0), ok
    out = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    limit = Decimal(MAX_TS_NS) / 1000
    for i, raw in enumerate(raws):
        try:
            us = Decimal(bytes(raw).decode())
        except (InvalidOperation, ValueError, UnicodeDecodeError):
            continue
        # Compared before converting (int() of 1e999999999 would build a billion digits), and
        # without arithmetic: abs() rounds to the context and overflows past 1e999999.
        if us.is_finite() and us.copy_abs() <= limit:
            out[i], ok[i] = int(us * 1000), True
    return out, ok


def dur_ns(durs: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """µs durations -> (int64 ns, valid mask); negative, not finite or beyond MAX_DUR_NS is
    invalid."""
    arr = np.array([np.nan if d is None else d for d in durs], dtype=np.float64) * 1000.0
    ok = np.isfinite(arr) & (arr >= 0) & (arr <= MAX_DUR_NS)
    return np.rint(np.where(ok, arr, 0.0)).astype(np.int64), ok


def as_int(v: Any) -> int | None:
    """pid/tid/stream come as ints, digit strings, 'stream 7' or '0x0'; None for the rest."""
    if type(v) is int:
        return v
    if isinstance(v, str):
        s = v.strip().rsplit(" ", 1)[-1]
        try:
            return int(s, 0)
        except ValueError:
            return None
    return None


def ints(values: Sequence[Any], bits: int = 64) -> tuple[pa.Array[Any], int]:
    """An int64 (or int32) column of values as_int reads, and how many of them were an
    integer out of the column's range (stored as NULL, never wrapped)."""
    kind = pa.int64() if bits == 64 else pa.int32()
    try:
        return pa.array(values, kind), 0
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        pass  # strings such as 'stream 7', or a value out of range
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    parsed = [as_int(v) for v in values]
    bad = sum(1 for i in parsed if i is not None and not low <= i <= high)
    if bad:
        parsed = [i if i is None or low <= i <= high else None for i in parsed]
    return pa.array(parsed, kind), bad


def raw_text(values: Sequence[msgspec.Raw]) -> pa.Array[Any]:
    """Raw JSON values -> a string column (empty Raw -> NULL), without per-value copies."""
    n = len(values)
    lens = np.fromiter(map(len, values), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    valid = lens > 0
    mask = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little").data)
    arr = pa.Array.from_buffers(
        pa.large_string(), n, [mask, pa.py_buffer(offsets.data), pa.py_buffer(b"".join(values))]
    )
    return arr.cast(pa.string())


def metadata_json(value: Any) -> str:
    """Compact JSON for metadata columns."""
    return json.dumps(value, separators=(",", ":"), default=str)
