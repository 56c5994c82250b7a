"""Ingest torch.profiler traces into the lake: `python -m collectors.ingest PATH...`.

A run is one trace file, or a folder (or .zip/.tar archive) holding one file per rank. The
ranks are parsed, linked (every GPU activity to its runtime call and CPU op, every event to
its ProfilerStep) in an in-memory DuckDB, written as Parquet into a staging folder and
committed in one step. Any failure leaves the store exactly as it was. The new run id is the
last line of standard output; progress goes to standard error.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import secrets
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from collectors.parse import RankTrace, metadata_json, parse_trace
from data.errors import DashError, DuplicateTraceError, TraceFormatError
from data.lake import Lake
from data.schema import SCHEMA_VERSION, TABLES, arrow_schema
from data.store import DEFAULT_DATA_DIR, Store

TRACE_SUFFIXES = (".json", ".json.gz")
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")
StageProgress = Callable[[str, float], None]

_DEVICE_FIELDS = {
    "device_id": "id", "name": "name", "total_global_mem_bytes": "totalGlobalMem",
    "compute_major": "computeMajor", "compute_minor": "computeMinor", "num_sms": "numSms",
    "max_threads_per_block": "maxThreadsPerBlock",
    "max_threads_per_sm": "maxThreadsPerMultiprocessor", "regs_per_block": "regsPerBlock",
    "regs_per_sm": "regsPerMultiprocessor", "warp_size": "warpSize",
    "shared_mem_per_block_bytes": "sharedMemPerBlock",
    "shared_mem_per_sm_bytes": "sharedMemPerMultiprocessor",
    "shared_mem_per_block_optin_bytes": "sharedMemPerBlockOptin",
}  # fmt: skip


def _is_trace(path: Path) -> bool:
    return path.name.endswith(TRACE_SUFFIXES)


def _is_archive(path: Path) -> bool:
    return path.name.endswith(ARCHIVE_SUFFIXES)


def _run_name(path: Path) -> str:
    name = path.name
    for suffix in (*ARCHIVE_SUFFIXES, ".json.gz", ".json", ".pt.trace"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".pt.trace") or "run"


@contextmanager
def expand_inputs(paths: Sequence[Path]) -> Iterator[dict[Path, str]]:
    """Trace files named by `paths` (folders' trace files, archives unpacked), each with the
    name to show the user (an archive member reads `archive.zip:dir/rank0.json.gz`)."""
    with tempfile.TemporaryDirectory(prefix="ingest-") as tmp:
        files: dict[Path, str] = {}
        for path in paths:
            if path.is_dir():
                found = sorted(p for p in path.iterdir() if p.is_file() and _is_trace(p))
                if not found:
                    raise TraceFormatError(f"{path}: folder holds no .json or .json.gz trace")
                files.update((f, str(f)) for f in found)
            elif _is_archive(path):
                files.update(_unpack(path, Path(tmp) / f"a{len(files)}"))
            elif path.exists():
                files[path] = str(path)
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
    """Extract only regular trace files, keeping their (sanitised) folders under `dest`."""
    out: dict[Path, str] = {}

    def write(name: str, data: bytes) -> None:
        rel = _safe_member(name)
        if rel is None:
            return
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        out[target] = f"{archive}:{rel}"

    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    if not info.is_dir():
                        write(info.filename, zf.read(info))
        else:
            with tarfile.open(archive) as tf:
                for member in tf.getmembers():
                    member_file = tf.extractfile(member) if member.isreg() else None
                    if member_file is not None:
                        write(member.name, member_file.read())
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as e:
        raise TraceFormatError(f"{archive}: unreadable archive: {e}") from None
    if not out:
        raise TraceFormatError(f"{archive}: archive holds no .json or .json.gz trace")
    return dict(sorted(out.items()))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


class _Background(threading.Thread):
    """Runs `work` beside the parse (hashlib, Parquet writes and DuckDB release the GIL)."""

    def __init__(self, work: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.work = work
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.work()
        except BaseException as e:  # re-raised in the caller's thread by result()
            self.error = e

    def result(self) -> Any:
        self.join()
        if self.error is not None:
            raise self.error
        return self.value


def ingest(
    paths: Sequence[Path | str],
    *,
    data_dir: Path | str = DEFAULT_DATA_DIR,
    name: str | None = None,
    tags: dict[str, Any] | None = None,
    include_python: bool = False,
    progress: StageProgress | None = None,
) -> str:
    """Ingest trace files as one run; returns the new run id.

    Raises TraceFormatError for unreadable input and DuplicateTraceError for content that is
    already in the store. Either way nothing is written.
    """
    report = progress or (lambda stage, frac: None)
    in_paths = [Path(p) for p in paths]
    with expand_inputs(in_paths) as labels:
        files = list(labels)
        # Hashing and opening the store (a new one writes an empty segment per table) run
        # beside the first file's parse, once its helper process is forked.
        hasher = _Background(lambda: [_sha256(f) for f in files])
        opener = _Background(lambda: Store(data_dir))

        def beside() -> None:
            hasher.start()
            opener.start()

        traces: list[RankTrace] = []
        try:
            for i, f in enumerate(files):

                def on_events(done: int, total: int, i: int = i) -> None:
                    report("parse", (i + done / max(total, 1)) / len(files))

                try:
                    trace = parse_trace(
                        f,
                        include_python=include_python,
                        progress=on_events,
                        beside=beside if i == 0 else None,
                    )
                except TraceFormatError as e:  # name the user's file, not a temporary copy
                    raise TraceFormatError(str(e).replace(str(f), labels[f])) from None
                if trace.events_total == 0:
                    raise TraceFormatError(
                        f"{labels[f]}: the trace has no events (empty traceEvents)"
                    )
                traces.append(trace)
        finally:  # a failed parse too: exiting mid-write would leave a half-made store
            for job in (hasher, opener):
                if job.ident is not None:
                    job.join()
        digests: list[str] = hasher.result()
        store: Store = opener.result()
        _check_ranks(traces, labels)
        digest = hashlib.sha256("".join(sorted(digests)).encode()).hexdigest()
        what = str(in_paths[0]) if len(in_paths) == 1 else f"{in_paths[0]} (+{len(in_paths) - 1})"
        existing = store.find_by_sha256(digest)
        if existing:
            raise DuplicateTraceError(f"{what}: already ingested as run {existing}")
        with store.lake.claim(digest, what):
            run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
            run = {
                "run_id": run_id,
                "name": name or _run_name(in_paths[0]),
                "source": json.dumps([str(p) for p in in_paths]),
                "source_sha256": digest,
                "tags": json.dumps(tags or {}),
            }
            report("link", 0.0)
            _write_run(store.lake, run, traces, digests)
            report("commit", 1.0)
    store.close()
    return run_id


def _check_ranks(traces: list[RankTrace], labels: dict[Path, str]) -> None:
    seen: dict[int, Path] = {}
    for t in traces:
        if t.rank in seen:
            raise TraceFormatError(
                f"{labels[t.path]}: rank {t.rank} ({t.rank_source}) is also the rank of "
                f"{labels[seen[t.rank]]}"
            )
        seen[t.rank] = t.path


def _with_rank(table: pa.Table, rank: int) -> pa.Table:
    return table.append_column("rank", pa.array([rank] * table.num_rows, pa.int32()))


def _empty(table: str) -> pa.Table:
    return arrow_schema(table).empty_table().drop(["run_id"])


def _write_run(
    lake: Lake, run: dict[str, Any], traces: list[RankTrace], digests: list[str]
) -> None:
    run_id = run["run_id"]
    lake.stage_dir(run_id)
    try:
        raw = {
            f"raw_{table}": _concat(
                [_with_rank(t.tables[table], t.rank) for t in traces if table in t.tables], table
            )
            for table in _PARSED
        }
        raw["raw_ranks"] = _ranks_table(traces, digests)
        raw["raw_devices"] = _devices_table(traces)
        con = _connect(duckdb.connect(":memory:"), raw)
        con.execute(_STEPS_SQL)

        def write(tables: Sequence[str], link: str = "") -> None:
            cursor = _connect(con.cursor(), raw)  # a connection per thread
            try:
                if link:
                    cursor.execute(link)
                for table in tables:
                    if table == "runs":
                        cursor.register("raw_runs", _run_row(cursor, run, traces))
                    _copy(cursor, lake, run_id, table)
            finally:
                cursor.close()

        # cpu_ops, the biggest write, needs only the steps: it is written while the GPU
        # activity is linked and written beside it.
        rest = sorted((t for t in TABLES if t not in _AFTER_GPU_LINK), key="cpu_ops".__ne__)
        with ThreadPoolExecutor(2) as pool:
            jobs = [pool.submit(write, rest), pool.submit(write, _AFTER_GPU_LINK, _GPU_LINK_SQL)]
            for job in jobs:
                job.result()
        con.close()
        lake.commit(run_id)
    except BaseException:
        lake.discard(run_id)
        raise


_PARSED = ("gpu_events", "runtime_calls", "cpu_ops", "annotations", "collectives",
           "memory_events", "python_functions")  # fmt: skip


def _connect(con: duckdb.DuckDBPyConnection, raw: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """`con` with the raw tables registered (a registration is seen by its connection only)."""
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET preserve_insertion_order = false")
    for name, table in raw.items():
        con.register(name, table)
    return con


def _copy(con: duckdb.DuckDBPyConnection, lake: Lake, run_id: str, table: str) -> None:
    """Write one table of the run as Parquet into the staging folder."""
    src = "raw_runs" if table == "runs" else f"linked_{table}"
    cols = ", ".join(
        f'CAST("{c.name}" AS {_duck_type(c.type)}) AS "{c.name}"'
        for c in TABLES[table]
        if c.name != "run_id"
    )
    # Time order lets window queries skip row groups; cpu_ops are looked up by id, and
    # sorting their wide JSON columns was 0.3 s of a 360 MB ingest.
    order = " ORDER BY rank, ts_ns" if table in _TIME_SORTED else ""
    target = lake.staged_file(run_id, table)
    con.execute(
        f"COPY (SELECT {cols} FROM {src}{order}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)"
    )


# Tables written in (rank, ts_ns) order.
_TIME_SORTED = {"gpu_events", "runtime_calls", "annotations", "steps", "collectives"}

# Columns the link step computes; the parser does not produce them.
_DERIVED = {
    "gpu_events": {"op_external_id", "launch_api", "launch_ts_ns", "step"},
    "runtime_calls": {"step"},
    "cpu_ops": {"step"},
}


def _concat(parts: list[pa.Table], table: str) -> pa.Table:
    derived = _DERIVED.get(table, set()) | {"run_id"}  # run_id comes from the partition
    schema = pa.schema([f for f in arrow_schema(table) if f.name not in derived])
    if not parts:
        return schema.empty_table()
    cast = [p.select(schema.names).cast(schema) for p in parts]
    return pa.concat_tables(cast)


def _duck_type(t: pa.DataType) -> str:
    return {pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.float64(): "DOUBLE",
            pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN"}[t]  # fmt: skip


def _ranks_table(traces: list[RankTrace], digests: list[str]) -> pa.Table:
    rows = []
    for t, digest in zip(traces, digests, strict=True):
        meta = t.metadata
        base = meta.get("baseTimeNanoseconds")
        rows.append({
            "rank": t.rank, "world_size": t.world_size, "rank_source": t.rank_source,
            "file_name": t.path.name, "file_bytes": t.file_bytes, "file_sha256": digest,
            "host_name": meta.get("host_name") if isinstance(meta.get("host_name"), str) else None,
            "backend": (t.distributed_info or {}).get("backend"),
            "distributed_info": metadata_json(t.distributed_info) if t.distributed_info else None,
            "trace_metadata": metadata_json(meta),
            "base_time_ns": base if isinstance(base, int) else None,
            "events_total": t.events_total, "events_malformed": t.malformed,
            "events_skipped": t.events_skipped,
            "malformed_examples": metadata_json(t.malformed_examples),
            "category_counts": metadata_json(dict(t.category_counts)),
        })  # fmt: skip
    schema = pa.schema(
        [f for f in arrow_schema("ranks") if f.name not in ("run_id", "start_ns", "end_ns")]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def _devices_table(traces: list[RankTrace]) -> pa.Table:
    schema = arrow_schema("devices").remove(0)
    rows = []
    for t in traces:
        for d in t.devices:
            row: dict[str, Any] = {"rank": t.rank}
            for col, key in _DEVICE_FIELDS.items():
                v = d.get(key)
                row[col] = v if isinstance(v, int | str) and not isinstance(v, bool) else None
            row["name"] = d.get("name") if isinstance(d.get("name"), str) else None
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


def _run_row(
    con: duckdb.DuckDBPyConnection, run: dict[str, Any], traces: list[RankTrace]
) -> pa.Table:
    kernels, device = con.execute(
        "SELECT (SELECT count(*) FROM linked_gpu_events WHERE kind = 'kernel'), "
        "(SELECT d.name FROM linked_devices d ORDER BY "
        " d.device_id IN (SELECT device FROM linked_gpu_events) DESC, d.rank, d.device_id LIMIT 1)"
    ).fetchall()[0]
    row = {
        **run,
        "ingested_at_ns": time.time_ns(),
        "rank_count": len(traces),
        "device_name": device,
        "events_total": sum(t.events_total for t in traces),
        "events_malformed": sum(t.malformed for t in traces),
        "kernel_count": kernels,
        "schema_version": SCHEMA_VERSION,
    }
    return pa.Table.from_pylist([row], schema=arrow_schema("runs"))


# Links and derived columns, over the raw_* tables registered above: first the steps, then
# (on a second connection, beside the cpu_ops write) the GPU activity.
_STEPS_SQL = """
CREATE TABLE step_marks AS
WITH marks AS (
    SELECT rank, name, ts_ns, dur_ns FROM raw_annotations
    WHERE kind = 'cpu' AND name LIKE 'ProfilerStep#%'
    UNION ALL
    SELECT rank, name, ts_ns, dur_ns FROM raw_cpu_ops WHERE name LIKE 'ProfilerStep#%'
)
SELECT rank, TRY_CAST(split_part(name, '#', 2) AS INTEGER) AS step,
       min(ts_ns) AS ts_ns, max(ts_ns + dur_ns) - min(ts_ns) AS dur_ns
FROM marks GROUP BY ALL HAVING step IS NOT NULL;

CREATE VIEW linked_runtime_calls AS
SELECT c.*, CASE WHEN c.ts_ns < s.ts_ns + s.dur_ns THEN s.step END AS step
FROM raw_runtime_calls c ASOF LEFT JOIN step_marks s ON c.rank = s.rank AND c.ts_ns >= s.ts_ns;

CREATE VIEW linked_cpu_ops AS
SELECT c.*, CASE WHEN c.ts_ns < s.ts_ns + s.dur_ns THEN s.step END AS step
FROM raw_cpu_ops c ASOF LEFT JOIN step_marks s ON c.rank = s.rank AND c.ts_ns >= s.ts_ns;

CREATE VIEW linked_annotations AS SELECT * FROM raw_annotations;
CREATE VIEW linked_collectives AS SELECT * FROM raw_collectives;
CREATE VIEW linked_memory_events AS SELECT * FROM raw_memory_events;
CREATE VIEW linked_python_functions AS SELECT * FROM raw_python_functions;
CREATE VIEW linked_devices AS SELECT * FROM raw_devices;

CREATE VIEW linked_ranks AS
WITH spans AS (
    SELECT rank, ts_ns, ts_ns + dur_ns AS e FROM raw_gpu_events
    UNION ALL SELECT rank, ts_ns, ts_ns + dur_ns FROM raw_runtime_calls
    UNION ALL SELECT rank, ts_ns, ts_ns + dur_ns FROM raw_cpu_ops
    UNION ALL SELECT rank, ts_ns, ts_ns + dur_ns FROM raw_annotations
)
SELECT r.*, b.start_ns, b.end_ns
FROM raw_ranks r LEFT JOIN (SELECT rank, min(ts_ns) AS start_ns, max(e) AS end_ns
                            FROM spans GROUP BY rank) b USING (rank);
"""

_AFTER_GPU_LINK = ("gpu_events", "runtime_calls", "steps", "runs")  # on its connection
_GPU_LINK_SQL = """
CREATE TABLE linked_gpu_events AS
WITH launch AS (
    SELECT rank, correlation, arg_min(name, ts_ns) AS launch_api, min(ts_ns) AS launch_ts_ns,
           arg_min(external_id, ts_ns) AS launch_external_id, arg_min(step, ts_ns) AS step
    FROM linked_runtime_calls
    WHERE category <> 'sync' AND correlation IS NOT NULL
    GROUP BY rank, correlation
)
SELECT g.*, coalesce(g.external_id, l.launch_external_id) AS op_external_id,
       l.launch_api, l.launch_ts_ns, l.step
FROM raw_gpu_events g LEFT JOIN launch l ON g.rank = l.rank AND g.correlation = l.correlation;

CREATE TABLE step_gpu AS
WITH iv AS (
    SELECT rank, step, kind, ts_ns AS s, ts_ns + dur_ns AS e, dur_ns,
           max(ts_ns + dur_ns) OVER (PARTITION BY rank, step ORDER BY ts_ns, dur_ns
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM linked_gpu_events WHERE step IS NOT NULL
), isl AS (
    SELECT *, sum(CASE WHEN prev_end IS NULL OR s > prev_end THEN 1 ELSE 0 END)
        OVER (PARTITION BY rank, step ORDER BY s, dur_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM iv
), merged AS (
    SELECT rank, step, island, min(s) AS s, max(e) AS e FROM isl GROUP BY ALL
)
SELECT i.rank, i.step, min(i.s) AS gpu_start_ns, max(i.e) AS gpu_end_ns,
       count(*) FILTER (WHERE i.kind = 'kernel') AS kernel_count,
       coalesce(sum(i.dur_ns) FILTER (WHERE i.kind = 'kernel'), 0) AS kernel_time_ns,
       (SELECT sum(m.e - m.s) FROM merged m WHERE m.rank = i.rank AND m.step = i.step)
           AS gpu_busy_ns
FROM isl i GROUP BY i.rank, i.step;

CREATE VIEW linked_steps AS
SELECT s.*, g.gpu_start_ns, g.gpu_end_ns, coalesce(g.kernel_count, 0) AS kernel_count,
       coalesce(g.kernel_time_ns, 0) AS kernel_time_ns, coalesce(g.gpu_busy_ns, 0) AS gpu_busy_ns
FROM step_marks s LEFT JOIN step_gpu g USING (rank, step);
"""


# ---------------------------------------------------------------------------- the CLI


def _progress_printer(json_lines: bool) -> StageProgress:
    last = [-1.0]

    def show(stage: str, frac: float) -> None:
        if json_lines:
            print(
                json.dumps({"stage": stage, "fraction": round(frac, 4)}),
                file=sys.stderr,
                flush=True,
            )
        elif frac - last[0] >= 0.1 or stage != "parse":
            print(f"{stage}: {frac:.0%}", file=sys.stderr, flush=True)
            last[0] = frac

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    ap = argparse.ArgumentParser(
        prog="python -m collectors.ingest",
        description="Ingest torch.profiler traces (.json, .json.gz; a folder or archive = one "
        "run with one file per rank). Prints the new run id on the last line of stdout.",
    )
    ap.add_argument("paths", nargs="+", type=Path, help="trace files, folders or archives")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="store folder")
    ap.add_argument("--name", help="run name (default: the file or folder name)")
    ap.add_argument(
        "--tag", action="append", default=[], metavar="KEY=VALUE", help="run metadata, repeatable"
    )
    ap.add_argument(
        "--python-functions",
        action="store_true",
        help="also store python_function events (off by default: large)",
    )
    ap.add_argument(
        "--progress-json",
        action="store_true",
        help="progress as JSON lines on stderr (for the dashboard)",
    )
    args = ap.parse_args(argv)
    tags = dict(t.split("=", 1) if "=" in t else (t, "") for t in args.tag)
    t0 = time.perf_counter()
    try:
        run_id = ingest(
            args.paths,
            data_dir=args.data,
            name=args.name,
            tags=tags,
            include_python=args.python_functions,
            progress=_progress_printer(args.progress_json),
        )
    except DashError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted; nothing was written", file=sys.stderr)
        return 130
    summary = Store(args.data).run_summary(run_id)
    print(
        f"ingested {summary['name']!r}: {summary['rank_count']} rank(s), "
        f"{summary['kernel_count']} kernels, {summary['events_total']} events"
        f" ({summary['events_malformed']} malformed) in {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    print(run_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
