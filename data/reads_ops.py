"""Reads for the Operators page and the timeline's CPU threads: every CPU slice of a run.

A slice is an operator (cpu_ops), a CPU user annotation (record_function, HF/Lightning
scopes, ProfilerStep#N) or an nn.Module range (python_function events that with_modules or
with_stack traces carry). Names and shapes travel as dictionaries: a training run repeats a
few hundred of them over every step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store

MODULE_PREFIX = "nn.Module: "
SLICE_KINDS = ("op", "annotation", "module", "python")


def cpu_slices(store: Store, run_id: str) -> pd.DataFrame:
    """Every CPU slice of the run: kind ('op', 'annotation' or 'module'; categorical), rank,
    pid, tid, ts_ns, dur_ns, name (categorical), input_dims (JSON text, categorical; NULL
    for annotations and modules), external_id, sequence_number (autograd's, pairs a
    backward op with its forward op)."""
    return store.query(
        f"""
        SELECT CAST('op' AS ENUM{SLICE_KINDS}) AS kind, rank, pid, tid, ts_ns, dur_ns, name,
               input_dims, external_id, sequence_number
        FROM cpu_ops WHERE run_id = $run
        UNION ALL
        SELECT 'annotation', rank, pid, tid, ts_ns, dur_ns, name, NULL, external_id, NULL
        FROM annotations WHERE run_id = $run AND kind = 'cpu'
        UNION ALL
        SELECT 'module', rank, pid, tid, ts_ns, dur_ns, name, NULL, NULL, NULL
        FROM python_functions WHERE run_id = $run AND starts_with(name, '{MODULE_PREFIX}')
        """,
        {"run": run_id},
        categorical=("name", "input_dims"),
    )
