"""Ingest torch.profiler traces into the lake: `python -m collectors.ingest PATH...`.

A run is one trace file, or a folder (or .zip/.tar archive) holding one file per rank. The
ranks are parsed, linked (every GPU activity to its runtime call and CPU op, every event to
its ProfilerStep) in an in-memory DuckDB, written as Parquet into a staging folder and
committed in one step. Any failure leaves the store exactly as it was. The new run id is the
last line of standard output; progress goes to standard error.

Modules: `inputs` (files, folders and archives to trace files), `pipeline` (ingest(): parse,
check, claim, write), `lake_write` (a run's tables into the staging folder, then the
commit), `link_sql` (the linking SQL), `__main__` (the command line).
"""

from collectors.ingest.inputs import ARCHIVE_SUFFIXES, TRACE_SUFFIXES, expand_inputs
from collectors.ingest.pipeline import StageProgress, ingest

__all__ = ["ARCHIVE_SUFFIXES", "TRACE_SUFFIXES", "StageProgress", "expand_inputs", "ingest"]
