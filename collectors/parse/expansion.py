"""How far a compressed input may expand, and a gzip reader that stops there.

A trace arrives compressed (.json.gz, or inside a .zip / .tar.gz) and must be held expanded
to be parsed, so a small file can ask for any amount of memory or disk: 8 MB of gzipped
whitespace is 8 GB. Every expansion is therefore streamed and counted against one cap,
DASH_MAX_EXPANDED_MB (default 4096: four times the dashboard's 1 GB upload limit, where real
traces compress 7-31 times), and refused with one line as soon as it passes it, before more
than the cap is held in memory or written to disk (docs/decisions.md D32).
"""

from __future__ import annotations

import os
import zlib
from typing import BinaryIO

from data.errors import DashError, TraceFormatError

CAP_ENV = "DASH_MAX_EXPANDED_MB"
DEFAULT_CAP_MB = 4096
_READ_BYTES = 1 << 20  # compressed bytes read at a time
_STEP_BYTES = 16 << 20  # the most one decompress call may produce


def expanded_cap_bytes() -> int:
    """The cap on the bytes one input may expand to ($DASH_MAX_EXPANDED_MB, in MB)."""
    text = os.environ.get(CAP_ENV, "").strip()
    if not text:
        return DEFAULT_CAP_MB << 20
    if not text.isdigit() or int(text) == 0:
        raise DashError(f"{CAP_ENV}={text!r}: expected a whole number of MB, at least 1")
    return int(text) << 20


def too_big(what: object, cap: int) -> TraceFormatError:
    """The refusal of an input that expands beyond `cap` bytes."""
    return TraceFormatError(
        f"{what}: expands to more than {cap >> 20} MB; refused ({CAP_ENV} raises the cap)"
    )


def gunzip(fh: BinaryIO, what: object, cap: int, out: BinaryIO) -> int:
    """Write the decompressed bytes of a gzip stream (every member of it) to `out`, read in
    pieces and refused as soon as they pass `cap` bytes; returns how many. Raises EOFError
    for a truncated stream and zlib.error for a corrupt one."""
    size = 0
    member = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer
    in_member = False
    data = b""
    while True:
        if not data:
            data = fh.read(_READ_BYTES)
            if not data:
                break
        in_member = True
        piece = member.decompress(data, _STEP_BYTES)
        size += len(piece)
        if size > cap:
            raise too_big(what, cap)
        out.write(piece)
        if member.eof:  # a gzip file may hold several members, one after the other
            data, in_member = member.unused_data, False
            member = zlib.decompressobj(wbits=31)
        else:
            data = member.unconsumed_tail
    if in_member:
        raise EOFError
    return size
