"""The Parquet lake: immutable segments that any process may write without a database lock.

Layout: ``<root>/<table>/run_id=<id>/*.parquet``: ``data.parquet`` for the run's own rows
(ranks, devices, runs), ``part-NNNNNN.parquet`` per batch of ranks for the rest
(collectors.ingest.rank_write). A run is written into
``<root>/_staging/<id>/`` first; committing renames each table folder into place and the
``runs`` folder last, and every store view only shows rows whose run is in ``runs``. So a
reader never sees half a run, and a failed or killed ingest leaves nothing visible.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from data import lake_locks
from data.errors import SchemaVersionError, file_error
from data.owner import me, owned_tmp_path
from data.schema import SCHEMA_VERSION, STREAM_TABLES, TABLES, arrow_schema

LAKE_FOLDER = "lake"  # the lake's folder in a store's data directory
EMPTY_PARTITION = "run_id=_empty"
EMPTY_STREAM_PARTITION = "host=_empty"
OWNER_FILE = ".owner"  # in a staging folder: the ingest writing it (data.owner)


class Lake:
    """A lake folder; creates its layout on first use and checks its schema version."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.staging = self.root / "_staging"
        self.locks = self.root / "_locks"
        self._init_layout()

    def _init_layout(self) -> None:
        meta = self.root / "_meta.json"
        if meta.exists():
            version = json.loads(meta.read_text()).get("schema_version")
            if version != SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"{self.root}: store has schema {version}, this build reads {SCHEMA_VERSION}; "
                    "move the folder aside and re-ingest"
                )
        for d in (self.staging, self.locks):
            d.mkdir(parents=True, exist_ok=True)
        for table in TABLES:
            # A zero-row segment per table keeps every view queryable on an empty store.
            empty = self.root / table / EMPTY_PARTITION / "data.parquet"
            if not empty.exists():
                self._write_atomic(empty, arrow_schema(table).empty_table().drop(["run_id"]))
        for table in STREAM_TABLES:
            empty = self.root / table / EMPTY_STREAM_PARTITION / "data.parquet"
            if not empty.exists():
                self._write_atomic(empty, arrow_schema(table).empty_table().drop(["host"]))
        if not meta.exists():
            tmp = owned_tmp_path(meta)
            tmp.write_text(json.dumps({"schema_version": SCHEMA_VERSION}))
            os.replace(tmp, meta)

    @staticmethod
    def _write_atomic(path: Path, table: pa.Table) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = owned_tmp_path(path)
        try:
            pq.write_table(table, tmp, compression="zstd")
            os.replace(tmp, path)
        except OSError as e:  # Arrow's carries no file name: name the segment
            tmp.unlink(missing_ok=True)
            raise file_error(e, path) from None

    def segment_path(self, table: str, host: str) -> Path:
        """A new, unique segment path in a stream table's partition for `host`."""
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in host) or "unknown"
        name = f"{time.time_ns()}-{os.getpid()}-{threading.get_ident()}.parquet"
        return self.root / table / f"host={safe}" / name

    def write_segment(
        self, table: str, host: str, rows: pa.Table, path: Path | None = None
    ) -> Path:
        """Append one immutable segment to a stream table (atomic: temp name, then rename).

        `rows` has the table's columns without `host`, which the partition path carries;
        `path` (from segment_path) when the caller must know the name before the write.
        """
        path = path or self.segment_path(table, host)
        schema = arrow_schema(table)
        self._write_atomic(path, rows.select(schema.names[1:]).cast(schema.remove(0)))
        return path

    def stage_dir(self, run_id: str) -> Path:
        """A private folder to write a run's tables into before commit. It appears with its
        owner inside (made under a temporary name, then renamed), so a folder without a
        live owner is always a leftover."""
        path = self.staging / run_id
        tmp = owned_tmp_path(path)
        tmp.mkdir(parents=True)
        try:
            (tmp / OWNER_FILE).write_text(me().text())
            os.rename(tmp, path)  # fails if a folder of that name is there
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return path

    def commit(self, run_id: str) -> None:
        """Move a staged run into place; the runs row goes last and makes the run visible."""
        staged = self.staging / run_id
        tables = sorted(p.name for p in staged.iterdir() if p.name not in ("runs", OWNER_FILE))
        moved: list[Path] = []
        try:
            for table in [*tables, "runs"]:
                dest = self.root / table / f"run_id={run_id}"
                os.replace(staged / table, dest)
                moved.append(dest)
        except BaseException:
            for dest in moved:
                shutil.rmtree(dest, ignore_errors=True)
            raise
        finally:
            shutil.rmtree(staged, ignore_errors=True)

    def discard(self, run_id: str) -> None:
        """Forget a staged run (after a failed ingest)."""
        shutil.rmtree(self.staging / run_id, ignore_errors=True)

    def delete_run(self, run_id: str) -> None:
        """Remove a committed run: its runs row first, so it vanishes from views at once."""
        for table in ["runs", *[t for t in TABLES if t != "runs"]]:
            shutil.rmtree(self.root / table / f"run_id={run_id}", ignore_errors=True)

    @contextlib.contextmanager
    def claim(self, key: str, what: str) -> Iterator[None]:
        """Hold an exclusive claim on `key` (a content hash) while one ingest runs
        (data.lake_locks)."""
        with lake_locks.claim(self.locks, key, what):
            yield
