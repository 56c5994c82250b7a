"""Make the large benchmark trace: time-shifted copies of one real trace, concatenated.

The copies keep Kineto's multi-line event layout byte for byte (only numbers change), so the
ingest is measured on what a real exporter writes. Each copy's timestamps are shifted past the
previous copy, and its correlation / External id / flow ids are offset so links stay unique.

    python benchmarks/make_big_trace.py SOURCE.json.gz OUT.json --target-mb 360
"""

from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

_NUM = rb"-?\d+(?:\.\d+)?"
_TS = re.compile(rb'("ts": )(' + _NUM + rb")")
_IDS = re.compile(rb'("(?:correlation|External id|id|Record function id)": ?)(\d+)')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--target-mb", type=float, default=360.0)
    args = ap.parse_args()

    if args.source.suffix == ".gz":
        with gzip.open(args.source) as fh:
            raw = fh.read()
    else:
        raw = args.source.read_bytes()
    start = raw.index(b"[", raw.index(b'"traceEvents"')) + 1
    end = raw.rindex(b"]", start, raw.rindex(b"}"))  # Kineto writes traceEvents last
    head, body, tail = raw[:start], raw[start:end].rstrip().rstrip(b","), raw[end:]
    ts = [float(m.group(2)) for m in _TS.finditer(body)]
    span_us = max(ts) - min(ts) + 1000.0
    max_id = max(int(m.group(2)) for m in _IDS.finditer(body)) + 1
    copies = max(1, round(args.target_mb * 1e6 / len(body)))

    with args.out.open("wb") as out:
        out.write(head)
        for k in range(copies):
            shift, off = k * span_us, k * max_id

            def _ts(m: re.Match[bytes], shift: float = shift) -> bytes:
                v = m.group(2)
                if b"." in v:  # keep the exporter's 3-decimal ns precision
                    return m.group(1) + b"%.3f" % (float(v) + shift)
                return m.group(1) + b"%d" % (int(v) + round(shift))

            def _id(m: re.Match[bytes], off: int = off) -> bytes:
                return m.group(1) + b"%d" % (int(m.group(2)) + off)

            chunk = _IDS.sub(_id, _TS.sub(_ts, body)) if k else body
            out.write((b",\n" if k else b"") + chunk)
        out.write(b"\n" + tail)
    size_mb = args.out.stat().st_size / 1e6
    print(f"{args.out}: {size_mb:.0f} MB, {copies} copies of {args.source.name}")


if __name__ == "__main__":
    main()
