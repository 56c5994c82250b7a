"""Operators: per op name and input shapes (or per module / annotation scope), the calls, CPU
self and total time, the GPU time of what they launched, FLOPs and the achieved rate where
modelled (analysis/operators.py); select a row for the kernels behind it."""

import pandas as pd
import streamlit as st

from analysis.load import load_cpu_slices
from analysis.operators import OpTree, launched_kernels, op_tree, operator_table, scope_table
from data.store import Store
from pages._ui import RUNS_CACHED, require_run, run_facts

GROUPS = {"op and input shapes": "op", "module": "module", "annotation": "annotation"}
NUM = st.column_config.NumberColumn
COLUMNS = {
    "name": st.column_config.TextColumn("op", width="medium"),
    "input_dims": st.column_config.TextColumn("input shapes", width="medium"),
    "scope": st.column_config.TextColumn("scope", width="medium"),
    "calls": NUM("calls", format="%d"),
    "invocations": NUM("calls of the scope", format="%d"),
    "cpu_ms": NUM("scope CPU time (ms)", format="%.3f"),
    "op_calls": NUM("op calls", format="%d"),
    "cpu_total_ms": NUM("CPU total (ms)", format="%.3f"),
    "cpu_self_ms": NUM("CPU self (ms)", format="%.3f", help="Time no op inside it covers"),
    "gpu_ms": NUM(
        "GPU (ms)", format="%.3f", help="GPU time of the kernels, copies and memsets it launched"
    ),
    "gpu_total_ms": NUM("GPU incl. children (ms)", format="%.3f"),
    "gpu_share_pct": st.column_config.ProgressColumn(
        "share of GPU time", format="%.1f %%", min_value=0, max_value=100
    ),
    "launches": NUM("GPU launches", format="%d"),
    "flops": NUM("GFLOP", format="%.2f", help="Modelled from the recorded shapes"),
    "tflops": NUM("achieved TFLOP/s", format="%.2f", help="Modelled FLOPs over the GPU time"),
    "gbps": NUM("achieved GB/s", format="%.0f", help="Modelled bytes over the GPU time"),
    "note": st.column_config.TextColumn("not modelled because"),
    "kernel": st.column_config.TextColumn("kernel", width="large"),
    "kernel_class": st.column_config.TextColumn("class"),
    "tensor_core": st.column_config.CheckboxColumn("tensor cores"),
    "total_ms": NUM("total (ms)", format="%.3f"),
    "mean_us": NUM("mean (µs)", format="%.1f"),
}


# A run never changes after ingest: the tree is shared, not copied (frames not mutated here).
# Of a run of many ranks, the ops of its analysed `ranks` (the facts hold only their GPU
# work): nesting every rank's ops took 13.9 s at 512 ranks.
@st.cache_resource(show_spinner="Nesting the run's ops…", ttl=600, max_entries=RUNS_CACHED)
def tree_of(
    _store: Store, _work: pd.DataFrame, run_id: str, ranks: tuple[int, ...] | None
) -> OpTree:
    if ranks is None:
        return op_tree(load_cpu_slices(_store, run_id), _work)
    sampled = _store.of_ranks(ranks)
    try:
        return op_tree(load_cpu_slices(sampled, run_id), _work)
    finally:
        sampled.close()


def grouped(tree: OpTree, calls: pd.DataFrame, by: str) -> pd.DataFrame:
    """The table of `calls` (some of `tree`'s) grouped `by` op and shapes, module or
    annotation."""
    return operator_table(calls) if by == "op" else scope_table(OpTree(calls, tree.scopes), by)


# The unfiltered tables, per run and grouping: recomputed on every render they cost ~2 s at
# 512 ranks (6 M op calls).
@st.cache_resource(show_spinner=False, ttl=600, max_entries=12)
def table_of(_tree: OpTree, run_id: str, by: str) -> pd.DataFrame:
    return grouped(_tree, _tree.calls, by)


s, run_id = require_run()
st.title("Operators")
facts = run_facts(run_id)
sample = facts.sample
tree = tree_of(s, facts.all_work, run_id, None if sample is None else tuple(sample.ranks))
calls = tree.calls
if calls.empty:
    st.info("This trace holds no PyTorch operators (no cpu_op events).")
    st.stop()
left, right = st.columns([2, 3])
by = GROUPS[left.radio("Group by", list(GROUPS), horizontal=True)]
needle = right.text_input("Filter by op name", placeholder="e.g. aten::mm")
if needle:
    calls = calls[calls["name"].astype(str).str.contains(needle, case=False, regex=False)]
if by != "op" and not (tree.has_modules if by == "module" else tree.has_annotations):
    st.info(
        "This trace names no nn.Module (record with `with_modules=True` or `with_stack=True`)."
        if by == "module"
        else "This trace has no user annotations besides the ProfilerSteps "
        "(`torch.profiler.record_function`, or the scopes Lightning and HF emit)."
    )
table = grouped(tree, calls, by) if needle else table_of(tree, run_id, by)
gpu_ms = float(calls["gpu_ns"].sum()) / 1e6
st.caption(
    f"{len(calls):,} op calls, {len(table):,} rows; the ops launched {gpu_ms:,.3f} ms of GPU "
    "time. GPU time belongs to the innermost op that launched it; FLOPs and rates are the "
    "Roofline page's work models. Select a row for the kernels behind it."
)
table = table.assign(flops=table["flops"] / 1e9)
# The share of GPU time beside the name: at 1400 px the last columns are off the page.
lead = [c for c in ("name", "input_dims", "scope", "gpu_share_pct") if c in table]
picked = st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    column_config=COLUMNS,
    column_order=[*lead, *(c for c in table if c not in lead)],
    on_select="rerun",
    selection_mode="single-row",
    key=f"ops_{by}",
)
rows = picked.selection.rows if picked is not None else []
if rows:
    row = table.iloc[rows[0]]
    if by == "op":
        shapes = calls["input_dims"].astype(object).where(calls["input_dims"].notna(), "")
        chosen = calls[(calls["name"].astype(str) == row["name"]) & (shapes == row["input_dims"])]
        title = f"{row['name']} {row['input_dims']}"
    else:
        chosen = calls[calls[by] == row["scope"]]
        title = str(row["scope"])
    kernels = launched_kernels(chosen, facts.all_work)
    st.subheader("Kernels launched")
    st.text(title)
    if kernels.empty:
        st.caption("These calls launched no GPU work themselves.")
    else:
        st.dataframe(kernels, hide_index=True, width="stretch", column_config=COLUMNS)
