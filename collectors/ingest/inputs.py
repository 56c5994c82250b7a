"""What the user named, as trace files: folders' trace files, archives unpacked safely."""

from __future__ import annotations

import gzip
import os
import re
import tarfile
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from collectors.parse.expansion import expanded_cap_bytes, too_big
from data.errors import TraceFormatError, file_error
from data.scratch import scratch
from data.valid_text import valid_text

TRACE_SUFFIXES = (".json", ".json.gz")
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")
_COPY_BYTES = 4 << 20  # an archive member is copied out this much at a time


def _natural(path: Path) -> tuple[tuple[int, int | str], ...]:
    """A sort key that puts rank2 before rank10: a run's files in their ranks' order, which
    is the order its rows are written in (collectors.ingest.rank_write)."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in _DIGITS.split(path.name) if p)


_DIGITS = re.compile(r"(\d+)")


def _is_trace(path: Path) -> bool:
    return path.name.endswith(TRACE_SUFFIXES)


def _is_archive(path: Path) -> bool:
    return path.name.endswith(ARCHIVE_SUFFIXES)


def run_name(path: Path) -> str:
    name = path.name
    for suffix in (*ARCHIVE_SUFFIXES, ".json.gz", ".json", ".pt.trace"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".pt.trace") or "run"


@contextmanager
def expand_inputs(paths: Sequence[Path]) -> Iterator[dict[Path, str]]:
    """Trace files named by `paths` (folders' trace files, archives unpacked), each with the
    name to show the user (an archive member reads `archive.zip:dir/rank0.json.gz`)."""
    with scratch("ingest") as tmp:
        files: dict[Path, str] = {}
        for path in paths:
            if path.is_dir():
                found = sorted(
                    (p for p in path.iterdir() if p.is_file() and _is_trace(p)), key=_natural
                )
                if not found:
                    raise TraceFormatError(f"{path}: folder holds no .json or .json.gz trace")
                files.update((f, valid_text(str(f))) for f in found)
            elif _is_archive(path):
                files.update(_unpack(path, Path(tmp) / f"a{len(files)}"))
            elif path.exists():
                files[path] = valid_text(str(path))
            else:
                raise TraceFormatError(f"{path}: no such file or folder")
        if not files:
            raise TraceFormatError("no trace file given")
        yield files


def _safe_member(name: str) -> Path | None:
    """An archive member's path with absolute and '..' parts removed (never leaves dest)."""
    parts = [p for p in Path(name).parts if p not in ("", ".", "..", "/") and not p.endswith(":")]
    return Path(*parts) if parts and _is_trace(Path(parts[-1])) else None


def _unpack(archive: Path, dest: Path) -> dict[Path, str]:
    """Extract only regular trace files, each in a folder of its own under `dest`, shown as
    its sanitised path in the archive; streamed: the members together may expand to the cap
    (collectors.parse.expansion) and no further, on disk and in memory."""
    out: dict[Path, Path] = {}  # member path: where it was written
    made = 0
    cap = expanded_cap_bytes()
    written = 0

    def write(name: str, member: IO[bytes]) -> None:
        nonlocal written, made
        rel = _safe_member(name)
        if rel is None:
            return
        # Each member in a folder of its own, under its own file name (a rank can be read
        # from it) where that is a valid one: members' paths can clash (a/r.json beside
        # a/r.json/r.json) or be too long for the disk, their names never.
        target = dest / str(made) / _file_name(rel.name)
        made += 1
        target.parent.mkdir(parents=True)
        with target.open("wb") as fh:
            while chunk := member.read(_COPY_BYTES):
                written += len(chunk)
                if written > cap:
                    raise too_big(archive, cap)
                try:
                    fh.write(chunk)
                except OSError as e:  # a full disk: a write's error names no file
                    raise file_error(e, target) from None
        out[rel] = target  # a later member of the same path replaces it, as tar's does

    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    if not info.is_dir() and _safe_member(info.filename) is not None:
                        with _open_member(archive, zf, info) as member:
                            write(info.filename, member)
        else:
            # Stream mode: each member is decompressed once, in order, never seeked over;
            # GzipFile reads every member of a gzip stream (tarfile's own reader, the first).
            with archive.open("rb") as raw:
                gzipped = raw.read(2) == b"\x1f\x8b"
                raw.seek(0)
                with (
                    gzip.GzipFile(fileobj=raw) if gzipped else raw as packed,
                    tarfile.open(fileobj=packed, mode="r|") as tf,
                ):
                    for entry in tf:
                        member_file = tf.extractfile(entry) if entry.isreg() else None
                        if member_file is not None:
                            write(entry.name, member_file)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as e:
        raise TraceFormatError(f"{archive}: unreadable archive: {e}") from None
    except OSError as e:
        if e.filename:  # writing the member out: the disk, not the archive
            raise OSError(e.errno, f"{e.strerror} (unpacking {archive})", e.filename) from None
        raise TraceFormatError(f"{archive}: unreadable archive: {e}") from None
    if not out:
        raise TraceFormatError(f"{archive}: archive holds no .json or .json.gz trace")
    in_order = sorted(out, key=lambda rel: (rel.parent.parts, _natural(rel)))
    return {out[rel]: valid_text(f"{archive}:{rel}") for rel in in_order}


def _open_member(archive: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    try:
        return zf.open(info)
    except (RuntimeError, NotImplementedError) as e:  # encrypted; a method zipfile lacks
        why = "encrypted (no password is asked for)" if info.flag_bits & 1 else str(e)
        raise TraceFormatError(valid_text(f"{archive}:{info.filename}: {why}")) from None


def _file_name(name: str) -> str:
    """The member's file name, or a stand-in with its suffix where the disk would refuse it."""
    try:
        if "\0" not in name and len(os.fsencode(name)) <= _NAME_BYTES:
            return name
    except UnicodeError:  # a surrogate no byte stands for
        pass
    return "member" + (".json.gz" if name.endswith(".gz") else ".json")


_NAME_BYTES = 255  # Linux's limit on one file name
