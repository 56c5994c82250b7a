"""Nesting, self time, GPU attribution and scopes of op calls, on small hand-built frames."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.nesting import nearest, nest, nest_order, subtree_sums
from analysis.operators import launched_kernels, op_tree, operator_table, scope_table


def slices(
    rows: list[tuple[str, int, int, int, str, str | None, int | None, int | None]],
) -> pd.DataFrame:
    """(kind, tid, ts, dur, name, input_dims, external_id, sequence_number) rows, rank 0."""
    df = pd.DataFrame(
        rows,
        columns=["kind", "tid", "ts_ns", "dur_ns", "name", "input_dims", "external_id",
                 "sequence_number"],
    )  # fmt: skip
    df.insert(1, "rank", 0)
    df.insert(2, "pid", 1)
    for c in ("kind", "name", "input_dims"):
        df[c] = df[c].astype("category")
    for c in ("external_id", "sequence_number"):
        df[c] = df[c].astype("Int64")
    return df


def work(rows: list[tuple[int, str, int, float | None, float | None]]) -> pd.DataFrame:
    """(op_external_id, kernel name, dur_ns, flops, bytes) rows, rank 0."""
    df = pd.DataFrame(rows, columns=["op_external_id", "name", "dur_ns", "flops", "bytes"])
    df.insert(0, "rank", 0)
    df["op_external_id"] = df["op_external_id"].astype("Int64")
    df["attribution"] = np.where(df["flops"].notna(), "modelled", "no shapes")
    df["kernel_class"], df["tensor_core"] = "gemm", True
    return df


def test_nesting_finds_parents_depths_and_subtrees() -> None:
    # GIVEN a step holding a linear (holding an addmm) and a relu, out of order, and a
    # second thread whose slice overlaps them in time
    s = slices([
        ("op", 1, 150, 20, "aten::relu", None, 4, None),
        ("annotation", 1, 0, 200, "ProfilerStep#1", None, 1, None),
        ("op", 1, 10, 100, "aten::linear", None, 2, None),
        ("op", 1, 20, 50, "aten::addmm", None, 3, None),
        ("op", 2, 15, 300, "aten::mm", None, 5, None),
    ])  # fmt: skip
    # WHEN they are nested
    ordered = s.iloc[nest_order(s, ["rank", "pid", "tid"])].reset_index(drop=True)
    tree = nest(ordered, ["rank", "pid", "tid"])
    # THEN each slice sits under the one that encloses it, on its own thread only
    names = ordered["name"].astype(str).tolist()
    assert names == ["ProfilerStep#1", "aten::linear", "aten::addmm", "aten::relu", "aten::mm"]
    assert tree["parent"].tolist() == [-1, 0, 1, 0, -1]
    assert tree["depth"].tolist() == [0, 1, 2, 1, 0]
    assert tree["subtree_end"].tolist() == [4, 3, 3, 4, 5]
    sums = subtree_sums(np.array([1.0, 2.0, 4.0, 8.0, 16.0]), tree["subtree_end"].to_numpy())
    assert sums.tolist() == [15.0, 6.0, 4.0, 8.0, 16.0]


def test_a_slice_ending_where_the_next_starts_is_not_its_parent() -> None:
    s = slices([
        ("op", 1, 0, 10, "a", None, None, None),
        ("op", 1, 10, 0, "b", None, None, None),
        ("op", 1, 10, 5, "c", None, None, None),
    ])  # fmt: skip
    ordered = s.iloc[nest_order(s, ["tid"])].reset_index(drop=True)
    tree = nest(ordered, ["tid"])
    # a ends at 10: neither slice starting at 10 is inside it; the zero-length b is inside c
    assert ordered["name"].astype(str).tolist() == ["a", "c", "b"]
    assert tree["parent"].tolist() == [-1, -1, 1]


def test_nearest_scope_skips_non_scopes() -> None:
    # 0 <- 1 <- 2 <- 3, and 4 at the top; 0 and 2 are scopes
    parent = np.array([-1, 0, 1, 2, -1])
    is_scope = np.array([True, False, True, False, False])
    assert nearest(parent, is_scope).tolist() == [-1, 0, 0, 2, -1]


def run_tree() -> tuple[pd.DataFrame, pd.DataFrame]:
    s = slices([
        ("annotation", 1, 0, 1000, "ProfilerStep#3", None, None, None),
        ("module", 1, 10, 400, "nn.Module: Attention_2", None, None, None),
        ("op", 1, 20, 100, "aten::linear", "[[4, 8], [8, 8]]", 10, 7),
        ("op", 1, 30, 60, "aten::addmm", "[[8], [4, 8], [8, 8]]", 11, None),
        ("op", 1, 200, 50, "aten::softmax", "[[4, 4]]", 12, 8),
        ("annotation", 1, 500, 300, "Optimizer.step#AdamW.step", None, None, None),
        ("op", 1, 510, 100, "aten::add_", "[[8]]", 13, None),
        # backward of the linear, on autograd's thread
        ("op", 2, 900, 80, "autograd::engine::evaluate_function: AddmmBackward0", None, 20, 7),
        ("op", 2, 910, 50, "aten::mm", "[[8, 4], [4, 8]]", 21, None),
    ])  # fmt: skip
    w = work([
        (11, "gemm_a", 40, 512.0, 100.0),
        (11, "gemm_b", 10, 128.0, 20.0),
        (12, "softmax_k", 5, None, None),
        (21, "gemm_a", 30, 256.0, 50.0),
    ])  # fmt: skip
    return s, w


def test_op_calls_have_self_time_gpu_time_and_scopes() -> None:
    s, w = run_tree()
    calls = op_tree(s, w).calls.set_index("name")
    linear, addmm = calls.loc["aten::linear"], calls.loc["aten::addmm"]
    assert (linear["cpu_total_ns"], linear["cpu_self_ns"]) == (100, 40)
    assert (linear["gpu_ns"], linear["gpu_total_ns"]) == (0, 50)
    assert (addmm["gpu_ns"], addmm["launches"], addmm["flops"]) == (50, 2, 640.0)
    assert addmm["module"] == "Attention"
    assert addmm["annotation"] == "(none)"  # the ProfilerStep is not a scope
    assert calls.loc["aten::add_", "annotation"] == "Optimizer.step#AdamW.step"
    assert calls.loc["aten::add_", "module"] == "(none)"
    # the backward op takes the module of the forward op with its sequence number
    assert calls.loc["aten::mm", "module"] == "Attention (backward)"
    assert calls.loc["aten::softmax", "note"] == "no shapes"


def test_operator_table_groups_by_name_and_shapes() -> None:
    s, w = run_tree()
    table = operator_table(op_tree(s, w).calls).set_index("name")
    assert table.index[0] == "aten::addmm"  # most GPU time first
    addmm = table.loc["aten::addmm"]
    assert addmm["input_dims"] == "[[8], [4, 8], [8, 8]]"
    assert addmm["gpu_ms"] == 50 / 1e6
    assert addmm["tflops"] == 640.0 / 50e-9 / 1e12
    assert addmm["gpu_share_pct"] == 100 * 50 / 85
    assert np.isnan(table.loc["aten::softmax", "tflops"])


def test_scope_table_and_launched_kernels() -> None:
    s, w = run_tree()
    tree = op_tree(s, w)
    modules = scope_table(tree, "module").set_index("scope")
    assert modules.loc["Attention", "invocations"] == 1
    assert modules.loc["Attention", "cpu_ms"] == 400 / 1e6
    assert modules.loc["Attention", "op_calls"] == 3
    assert modules.loc["Attention", "gpu_ms"] == 55 / 1e6
    assert modules.loc["Attention (backward)", "gpu_ms"] == 30 / 1e6
    kernels = launched_kernels(tree.calls[tree.calls["module"] == "Attention"], w)
    assert kernels[["kernel", "calls"]].values.tolist() == [
        ["gemm_a", 1], ["gemm_b", 1], ["softmax_k", 1]
    ]  # fmt: skip
