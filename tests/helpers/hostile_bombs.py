"""The hostile corpus's expansion bombs (tests/helpers/hostile.py): small files that expand
far beyond the cap they are ingested under, made at test time, none of them compressing more
than 16 MB (a bomb is many copies of one small gzip member)."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from functools import cache
from pathlib import Path

from helpers.paths import fixture

# The expanded-bytes cap the decompression cases run under (DASH_MAX_EXPANDED_MB).
CAP_MB = 64
CAP_ENV = {"DASH_MAX_EXPANDED_MB": str(CAP_MB)}
BASE = "h200/microops.pt.trace.json.gz"


@cache
def _base_text() -> bytes:
    return gzip.decompress(fixture(BASE).read_bytes())


def _write(folder: Path, name: str, data: bytes) -> list[Path]:
    path = folder / name
    path.write_bytes(data)
    return [path]


def _gzip_members(chunk: bytes, copies: int) -> bytes:
    """A gzip file of `copies` members each holding `chunk`: expands to copies × len(chunk)
    while only one member is ever compressed."""
    member = gzip.compress(chunk, compresslevel=9)
    return member * copies


def whitespace_bomb(folder: Path) -> list[Path]:
    """A .json.gz that starts like a trace and expands to 1 GiB of spaces (~1 MB on disk)."""
    head = gzip.compress(b'{"traceEvents": [')
    return _write(folder, "spaces.pt.trace.json.gz", head + _gzip_members(b" " * (16 << 20), 64))


def zip_zero_bomb(folder: Path) -> list[Path]:
    """A zip of one 512 MiB member of zeros named like a trace (~0.5 MB on disk)."""
    path = folder / "zeros.zip"
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open("run/rank0.pt.trace.json", "w", force_zip64=True) as out,
    ):
        block = b"\0" * (16 << 20)
        for _ in range(32):
            out.write(block)
    return [path]


def zip_many_members(folder: Path) -> list[Path]:
    """80 real-trace members of 1 MiB each: none alone is over the cap, all are."""
    path = folder / "many.zip"
    one = _padded_trace(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for rank in range(80):
            zf.writestr(f"run/rank{rank}.pt.trace.json", one)
    return [path]


def _padded_trace(size: int) -> bytes:
    data = _base_text()
    return data[:1] + b" " * (size - len(data)) + data[1:]


def tar_gz_bomb(folder: Path) -> list[Path]:
    """A .tar.gz whose one member holds 512 MiB of spaces (a multi-member gzip stream)."""
    size = 512 << 20
    info = tarfile.TarInfo("run/rank0.pt.trace.json")
    info.size = size
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    end = b"\0" * (1024 + (-size) % 512)
    data = (
        gzip.compress(header)
        + _gzip_members(b" " * (16 << 20), size // (16 << 20))
        + gzip.compress(end)
    )
    return _write(folder, "spaces.tar.gz", data)


def zip_of_gz_bomb(folder: Path) -> list[Path]:
    """A zip (small, stored) holding a .json.gz that expands beyond the cap."""
    path = folder / "nested.zip"
    inner = gzip.compress(b'{"traceEvents": [') + _gzip_members(b" " * (16 << 20), 8)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("run/rank0.pt.trace.json.gz", inner)
    return [path]


def zip_lying_size(folder: Path) -> list[Path]:
    """A zip member whose central directory says 1000 bytes and whose data expands to
    256 MiB: the reader must stop at what it was told, not at what the data holds."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("rank0.pt.trace.json", b" " * (256 << 20))
    data = bytearray(buf.getvalue())
    entry = data.rfind(b"PK\x01\x02")  # the central directory's one entry
    data[entry + 24 : entry + 28] = (1000).to_bytes(4, "little")  # its uncompressed size
    return _write(folder, "lying.zip", bytes(data))


def gz_of_base(folder: Path) -> list[Path]:
    return _write(folder, "base.pt.trace.json.gz", fixture(BASE).read_bytes())
