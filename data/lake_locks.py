"""Claims in a lake's `_locks/` folder: one ingest of a content hash at a time.

A claim is a file named after the key whose one line names its owner (data.owner). It is
made complete or not at all: the owner is written to a private temporary file, which is
then linked to the claim's name (a link, like O_EXCL, fails when the name exists), so a full
disk or a kill can never leave an empty claim that reads as "owned by pid 0, alive". A claim
whose owner is dead, or that is empty or garbled (an older version's, cut short), is stale
and taken over. Checking a claim and taking it over happen under one flock on
`_locks/.mutex`, which the kernel releases when its holder dies, so two ingests cannot both
take over the same stale claim.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from data.errors import DuplicateTraceError, file_error
from data.owner import me, owned_tmp_path, read_owner

MUTEX = ".mutex"


@contextlib.contextmanager
def _mutex(locks: Path) -> Iterator[None]:
    fd = os.open(locks / MUTEX, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the flock


def write_new(path: Path, text: str) -> None:
    """Create `path` holding `text`, completely or not at all; FileExistsError if it exists."""
    tmp = owned_tmp_path(path)
    try:
        tmp.write_text(text)
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as e:  # a full disk, say: name the claim, not its temporary file
        raise file_error(e, path) from None
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def claim(locks: Path, key: str, what: str) -> Iterator[None]:
    """Hold the claim on `key` while the block runs. Raises DuplicateTraceError (run_id None)
    while another live process holds it."""
    lock = locks / key
    with _mutex(locks):
        try:
            write_new(lock, me().text())
        except FileExistsError:
            owner = read_owner(lock)
            if owner is not None and owner.alive():
                raise DuplicateTraceError(
                    f"{what}: the same trace is being ingested right now (pid {owner.pid} "
                    f"on {owner.host}; claim {lock})",
                    run_id=None,
                ) from None
            lock.unlink(missing_ok=True)  # stale: its owner died, or it was never written whole
            write_new(lock, me().text())
    try:
        yield
    finally:
        if read_owner(lock) == me():
            lock.unlink(missing_ok=True)


def remove_stale_claims(locks: Path) -> int:
    """Remove every claim whose owner is dead (or that names none); returns how many."""
    removed = 0
    with _mutex(locks):
        for lock in locks.iterdir():
            if lock.name.startswith("."):
                continue
            owner = read_owner(lock)
            if owner is None or not owner.alive():
                lock.unlink(missing_ok=True)
                removed += 1
    return removed
