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


def exact_ns(raws: Sequence[msgspec.Raw]) -> tuple[np.ndarray, np.ndarray]:
    """µs timestamps as written (e.g. b'5127903468908.233') -> (int64 ns, valid mask)."""
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
            # The unscaled value of a decimal with 3 fractional digits is the ns count.
            data = dec.buffers()[1]
            assert data is not None
            ns = np.frombuffer(memoryview(data), dtype=np.int64)[::2].copy()
            return ns, np.ones(n, dtype=bool)
    out = np.zeros(n, dtype=np.int64)
    ok = np.zeros(n, dtype=bool)
    for i, raw in enumerate(raws):
        try:
            out[i] = int(Decimal(bytes(raw).decode()) * 1000)
            ok[i] = True
        except (InvalidOperation, ValueError, UnicodeDecodeError):
            pass
    return out, ok


def dur_ns(durs: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    arr = np.array([np.nan if d is None else d for d in durs], dtype=np.float64)
    ok = np.isfinite(arr) & (arr >= 0)
    return np.rint(np.where(ok, arr, 0.0) * 1000.0).astype(np.int64), ok


def as_int(v: Any) -> int | None:
    """pid/tid/stream come as ints, digit strings, 'stream 7' or '0x0'."""
    if type(v) is int:
        return v
    if isinstance(v, str):
        s = v.strip().rsplit(" ", 1)[-1]
        try:
            return int(s, 0)
        except ValueError:
            return None
    return None


def ints(values: list[Any]) -> pa.Array[Any]:
    try:
        return pa.array(values, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # strings such as 'stream 7'
        return pa.array([as_int(v) for v in values], pa.int64())


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
