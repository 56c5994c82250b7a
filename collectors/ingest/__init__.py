"""Ingest torch.profiler traces into the lake: `python -m collectors.ingest PATH...`.

A run is one trace file, or a folder (or .zip/.tar archive) holding one file per rank. Each
rank is parsed, linked (every GPU activity to its runtime call and CPU op, every event to
its ProfilerStep) in an in-memory DuckDB and written as its own Parquet segments into a
staging folder, by worker processes side by side for a run of many files; the run is
committed in one step. Any failure leaves the store exactly as it was. The new run id is the
last line of standard output; progress goes to standard error.

Modules: `inputs` (files, folders and archives to trace files), `pipeline` (ingest(): the
ranks, the checks, the claim, the commit), `rank_jobs` (parsing the ranks, in worker
processes or one by one), `rank_write` (one rank linked and written), `link_sql` (the
linking SQL), `segments` (a table's Parquet segment and its name), `lake_write` (the run's
own rows and the commit), `__main__` (the command line).
"""

from collectors.ingest.inputs import ARCHIVE_SUFFIXES, TRACE_SUFFIXES, expand_inputs
from collectors.ingest.pipeline import StageProgress, ingest

__all__ = ["ARCHIVE_SUFFIXES", "TRACE_SUFFIXES", "StageProgress", "expand_inputs", "ingest"]
