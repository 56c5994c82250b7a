"""Scratch folders named after their owner, and their removal once that owner is dead.

The ingest unpacks archives into `<tmp>/ingest-*`, its parse helper hands its tables over in
`/dev/shm/trace-parse-*`, the dashboard spools uploads into `<tmp>/upload-*`. A killed
process leaves them behind (up to 1.2 GB for an archive, 165 MB of shared memory), so each is
named `<prefix>-<pid>.<start>-<random>` (data.owner) and `sweep_scratch`, run by the next
ingest and agent start, removes those whose owner is dead.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from data.owner import me, owner_of_tag

PREFIXES = ("ingest", "trace-parse", "upload")
_NAME = re.compile(rf"(?:{'|'.join(PREFIXES)})-(\d+\.\d+)-.+")
SHARED_MEMORY = Path("/dev/shm")


def new_scratch(prefix: str, under: Path | None = None) -> Path:
    """A new scratch folder owned by this process (in the temporary folder by default)."""
    assert prefix in PREFIXES, prefix
    return Path(tempfile.mkdtemp(prefix=f"{prefix}-{me().tag()}-", dir=under))


@contextlib.contextmanager
def scratch(prefix: str, under: Path | None = None) -> Iterator[Path]:
    """A scratch folder for the block, removed after it."""
    folder = new_scratch(prefix, under)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep_scratch() -> int:
    """Remove the scratch folders of dead owners, here and in shared memory; how many."""
    removed = 0
    for base in {Path(tempfile.gettempdir()), SHARED_MEMORY}:
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for entry in entries:
            m = _NAME.fullmatch(entry.name)
            owner = owner_of_tag(m.group(1)) if m else None
            if owner is not None and not owner.alive() and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed += 1
    return removed
