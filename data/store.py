"""DuckDB access to the lake: one view per table, read functions that return DataFrames.

The dashboard process owns ``<data>/dashboard.duckdb`` (``owner=True``); every other process
(CLI, agents, tests) opens an in-memory database over the same lake, so no process ever waits
on DuckDB's file lock. Views read the Parquet segments at query time, so a run committed by
another process shows up on the next query, without a restart.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from data.errors import RunNotFoundError, SchemaVersionError, StoreError
from data.lake import LAKE_FOLDER, Lake
from data.schema import SCHEMA_VERSION, STREAM_TABLES, TABLES, column_names
from data.valid_text import valid_text

if TYPE_CHECKING:  # pandas costs 0.4 s to import; the ingest CLI never needs it
    import pandas as pd
    from pandas.api.extensions import ExtensionDtype

DEFAULT_DATA_DIR = Path("data/local")
DATABASE_FILE = "dashboard.duckdb"
# The lake's folder reaches the views' SQL as this DuckDB variable, set on every connection
# from a bound parameter: a path is never pasted into SQL (a quote in it broke every view).
LAKE_VARIABLE = "lake_root"
# The tables with a row per rank (or finer): what a store of some ranks (Store.of_ranks) filters.
RANKED_TABLES = tuple(t for t in TABLES if any(c.name == "rank" for c in TABLES[t]))
_HELD_BY = re.compile(r"\(PID (\d+)\)")


def dashboard_data_dir() -> Path:
    """The store the dashboard reads: $DASH_DATA, else data/local beside app.py."""
    env = os.environ.get("DASH_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1] / DEFAULT_DATA_DIR


class Store:
    """The lake plus a DuckDB connection with one view per table."""

    def __init__(
        self,
        data_dir: Path | str = DEFAULT_DATA_DIR,
        *,
        owner: bool = False,
        ranks: Sequence[int] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.ranks = None if ranks is None else tuple(sorted({int(r) for r in ranks}))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.lake = Lake(self.data_dir / LAKE_FOLDER)
        database = self.data_dir / DATABASE_FILE
        self.con = _connect(database) if owner else duckdb.connect(":memory:")
        # The lake lives on local or shared disk; never try to download an extension.
        self.con.execute("SET autoinstall_known_extensions = false")
        self._set_lake(self.con)
        if owner:
            self._check_database_version()
        self._create_views()

    def _check_database_version(self) -> None:
        self.con.execute("CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
        row = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        if row and int(row[0][0]) != SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.data_dir / DATABASE_FILE}: schema {row[0][0]}, this build reads "
                f"{SCHEMA_VERSION}; delete the file (the lake is kept) and restart"
            )
        self.con.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)]
        )

    def _set_lake(self, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
        con.execute(f"SET VARIABLE {LAKE_VARIABLE} = ?", [str(self.lake.root)])
        return con

    def _create_views(self) -> None:
        for table in TABLES:
            cols = ", ".join(f'"{c.name}"' for c in TABLES[table])
            src = (
                f"read_parquet({_glob(table)}, hive_partitioning = true, "
                "hive_types = {'run_id': VARCHAR}, union_by_name = true)"
            )
            where = "" if table == "runs" else " WHERE run_id IN (SELECT run_id FROM runs)"
            if self.ranks is not None and table in RANKED_TABLES:
                # Integers formatted here, never text: a constant list, which the Parquet
                # scan can prune row groups by.
                where += f" AND rank IN ({', '.join(map(str, self.ranks)) or 'NULL'})"
            self.con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT {cols} FROM {src}{where}")
        for table in STREAM_TABLES:
            cols = ", ".join(f'"{c}"' for c in column_names(table))
            src = (
                f"read_parquet({_glob(table)}, hive_partitioning = true, "
                "hive_types = {'host': VARCHAR}, union_by_name = true)"
            )
            self.con.execute(f"CREATE OR REPLACE VIEW {table} AS SELECT {cols} FROM {src}")

    def of_ranks(self, ranks: Sequence[int]) -> Store:
        """A reader of the same lake whose views hold only these rank numbers (of every
        run; `runs` whole): what the analyses of a run of many ranks read
        (analysis.rank_sample)."""
        return Store(self.data_dir, ranks=ranks)

    def close(self) -> None:
        """Close the connection (releases the database file lock for an owner)."""
        self.con.close()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A connection for one thread (DuckDB refuses concurrent use of one connection)."""
        return self._set_lake(self.con.cursor())

    def query(
        self,
        sql: str,
        params: list[Any] | dict[str, Any] | None = None,
        *,
        categorical: tuple[str, ...] = (),
    ) -> pd.DataFrame:
        """Run SQL over the views and return a DataFrame (a fresh cursor per call: thread-safe).

        `categorical` string columns arrive as pandas categoricals (categories sorted), built
        in Arrow: one Python string per distinct value instead of one per row (on a 100 k-event
        run, per-row strings cost 0.6 s of a 0.8 s read of the GPU events).
        """
        with self.cursor() as cur:
            if not categorical:
                return cur.execute(sql, params).df()
            return arrow_frame(cur.sql(sql, params=params).to_arrow_table(), categorical)

    def rows(
        self, sql: str, params: list[Any] | dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Run SQL and return rows as dicts, without pandas."""
        with self.cursor() as cur:
            result = cur.execute(sql, params)
            names = [d[0] for d in result.description]
            return [dict(zip(names, r, strict=True)) for r in result.fetchall()]

    def runs(self) -> pd.DataFrame:
        """All runs, newest first. Columns: those of the `runs` table."""
        return self.query("SELECT * FROM runs ORDER BY ingested_at_ns DESC")

    def resolve_run(self, ref: str) -> str:
        """A run id, or a run name (the latest run of that name), to a run id."""
        ref = valid_text(ref)  # as a name from undecodable bytes was stored
        rows = self.rows(
            "SELECT run_id FROM runs WHERE run_id = ? OR name = ? "
            "ORDER BY run_id = ? DESC, ingested_at_ns DESC LIMIT 1",
            [ref, ref, ref],
        )
        if not rows:
            raise RunNotFoundError(f"{ref}: no run with this id or name in {self.data_dir}")
        return str(rows[0]["run_id"])

    def find_by_sha256(self, sha256: str) -> str | None:
        """The run id that holds content with this hash, if any."""
        rows = self.rows("SELECT run_id FROM runs WHERE source_sha256 = ? LIMIT 1", [sha256])
        return str(rows[0]["run_id"]) if rows else None

    def delete_run(self, run_id: str) -> None:
        """Remove a run from the lake."""
        self.lake.delete_run(self.resolve_run(run_id))

    def checksums(self) -> dict[str, tuple[int, int]]:
        """(row count, order-independent hash of all rows) per table: detects any change."""
        out: dict[str, tuple[int, int]] = {}
        for table in [*TABLES, *STREAM_TABLES]:
            n, h = self.con.execute(
                f"SELECT count(*), coalesce(bit_xor(hash(t)), 0) FROM {table} t"
            ).fetchall()[0]
            out[table] = (int(n), int(h))
        return out

    def run_summary(self, run_id: str) -> dict[str, Any]:
        """The runs row of one run as a dict (JSON columns decoded)."""
        rows = self.rows("SELECT * FROM runs WHERE run_id = ?", [run_id])
        if not rows:
            raise RunNotFoundError(f"{run_id}: no such run in {self.data_dir}")
        row = rows[0]
        for key in ("source", "tags"):
            row[key] = json.loads(row[key]) if row.get(key) else None
        return row


def _glob(table: str) -> str:
    """SQL for the read_parquet glob of one table's segments (lake/<table>/*/*.parquet)."""
    return f"getvariable('{LAKE_VARIABLE}') || '/{table}/*/*.parquet'"


def _connect(database: Path) -> duckdb.DuckDBPyConnection:
    """The dashboard's database file; StoreError when another process holds it (DuckDB
    lets one process open it: a second dashboard on the same store)."""
    try:
        return duckdb.connect(str(database))
    except duckdb.IOException as e:
        held = _HELD_BY.search(str(e))
        if held is None:
            raise StoreError(f"{database}: cannot open: {str(e).splitlines()[0]}") from None
        raise StoreError(
            f"{database}: the store is in use by another dashboard (pid {held.group(1)}); "
            "open that one, or start this one with DASH_DATA set to another folder"
        ) from None


def arrow_frame(table: pa.Table, categorical: tuple[str, ...]) -> pd.DataFrame:
    """An Arrow result as DuckDB's `.df()` would give it (integer columns with NULLs as
    pandas' nullable Int types, converted without passing through float64, where epoch-ns
    values are not exact), with the `categorical` columns as categoricals whose categories
    are sorted."""
    import pandas as pd

    for name in categorical:
        at = table.schema.get_field_index(name)
        table = table.set_column(at, name, _sorted_dictionary(table[name]))
    nullable: dict[pa.DataType, ExtensionDtype] = {
        pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype(),
    }  # fmt: skip
    frame = table.to_pandas(types_mapper=nullable.get)
    # Arrow's integer type names are numpy's: int64 -> "int64".
    exact = {
        f.name: str(f.type)
        for f in table.schema
        if f.type in nullable and not table[f.name].null_count
    }
    return frame.astype(exact) if exact else frame


def _sorted_dictionary(values: pa.ChunkedArray[Any]) -> pa.DictionaryArray[Any, Any]:
    """A string column dictionary-encoded, its dictionary in sorted order (NULL stays NULL)."""
    flat = values.combine_chunks()
    distinct = pc.drop_null(pc.unique(flat))
    categories = pc.take(distinct, pc.sort_indices(distinct))
    return pa.DictionaryArray.from_arrays(pc.index_in(flat, value_set=categories), categories)
