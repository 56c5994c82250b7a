"""Operators: each op call's CPU and GPU time, its work, and the scope that ran it.

A call's CPU total is its duration, its CPU self time the part no child slice covers (the
slices nest per thread: analysis.nesting). Its GPU time is that of the GPU activities it
launched (gpu_events.op_external_id, the innermost op on the stack: `aten::mm`, not the
`aten::linear` around it); "incl. children" adds what the ops inside it launched. FLOPs and
bytes are the roofline's (analysis.roofline.kernel_work), so the two pages agree.

Scopes: the innermost nn.Module around the call (with_modules / with_stack traces; "GPT2Attention"
for `nn.Module: GPT2Attention_3`) and the innermost user annotation (record_function, HF and
Lightning scopes; not ProfilerStep#N). Backward ops run on autograd's thread, outside any
module: an `autograd::engine::evaluate_function` op takes the module of the forward op with
its sequence number, as "GPT2Attention (backward)".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.nesting import nearest, nest, nest_order, subtree_sums

THREAD = ["rank", "pid", "tid"]
STEP_PREFIX = "ProfilerStep#"
MODULE_PREFIX = "nn.Module: "
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
NO_SCOPE = "(none)"
CALL_COLUMNS = [
    "rank", "external_id", "name", "input_dims", "module", "annotation", "ts_ns",
    "cpu_total_ns", "cpu_self_ns", "gpu_ns", "gpu_total_ns", "launches", "flops", "bytes",
    "modelled_ns", "note",
]  # fmt: skip
OP_COLUMNS = [
    "name", "input_dims", "calls", "cpu_total_ms", "cpu_self_ms", "gpu_ms", "gpu_total_ms",
    "gpu_share_pct", "launches", "flops", "tflops", "gbps", "note",
]  # fmt: skip
SCOPE_COLUMNS = [
    "scope", "invocations", "cpu_ms", "op_calls", "cpu_self_ms", "gpu_ms", "gpu_share_pct",
    "launches", "flops", "tflops",
]  # fmt: skip
KERNEL_COLUMNS = ["kernel", "kernel_class", "tensor_core", "calls", "total_ms", "mean_us"]


@dataclass(frozen=True)
class OpTree:
    """A run's op calls (CALL_COLUMNS, one row per operator call) and its scopes: `scopes`
    holds scope (label), kind ('module' or 'annotation'), invocations and cpu_ns."""

    calls: pd.DataFrame
    scopes: pd.DataFrame

    @property
    def has_modules(self) -> bool:
        return bool((self.scopes["kind"] == "module").any())

    @property
    def has_annotations(self) -> bool:
        return bool((self.scopes["kind"] == "annotation").any())


def module_class(names: pd.Series) -> pd.Series:
    """'nn.Module: GPT2Attention_3' -> 'GPT2Attention' (the class, not the instance)."""
    return names.str.removeprefix(MODULE_PREFIX).str.replace(r"_\d+$", "", regex=True)


def op_tree(slices: pd.DataFrame, work: pd.DataFrame) -> OpTree:
    """The calls and scopes of a run.

    Args:
        slices: data.reads_ops.cpu_slices (ops, CPU annotations, nn.Module ranges).
        work: analysis.roofline.kernel_work of every GPU activity (rank, op_external_id,
            dur_ns, flops, bytes, attribution).
    """
    s = slices.iloc[nest_order(slices, THREAD)].reset_index(drop=True)
    tree = nest(s, THREAD)
    parent = tree["parent"].to_numpy()
    kind = s["kind"].astype(str).to_numpy()
    name = s["name"].astype("category")
    dur = s["dur_ns"].to_numpy(np.int64)
    step = _starts_with(name, STEP_PREFIX)
    is_op, is_ann = (kind == "op") & ~step, (kind == "annotation") & ~step

    labels = np.full(len(s), "", dtype=object)
    is_module = kind == "module"
    labels[is_module] = module_class(name[is_module].astype(str)).to_numpy()
    backward = is_op & _starts_with(name, BACKWARD_PREFIX)
    bw_roots = _backward_roots(s, is_op, backward, labels, nearest(parent, is_module))
    labels[bw_roots.index] = bw_roots.to_numpy()
    module_scope = is_module.copy()
    module_scope[bw_roots.index] = True
    labels[is_ann] = name[is_ann].astype(str).to_numpy()

    gpu = _launched(s, is_op, work)
    children_ns = np.bincount(parent[parent >= 0], weights=dur[parent >= 0], minlength=len(s))
    mod_at, ann_at = nearest(parent, module_scope), nearest(parent, is_ann)
    calls = pd.DataFrame({
        "rank": s["rank"], "external_id": s["external_id"], "name": s["name"],
        "input_dims": s["input_dims"],
        "module": _label(labels, mod_at), "annotation": _label(labels, ann_at),
        "ts_ns": s["ts_ns"], "cpu_total_ns": dur,
        "cpu_self_ns": np.maximum(dur - children_ns, 0).astype(np.int64),
        "gpu_ns": gpu["gpu_ns"],
        "gpu_total_ns": subtree_sums(gpu["gpu_ns"].to_numpy(), tree["subtree_end"].to_numpy()),
        "launches": gpu["launches"], "flops": gpu["flops"], "bytes": gpu["bytes"],
        "modelled_ns": gpu["modelled_ns"], "note": gpu["note"],
    })[is_op].reset_index(drop=True)  # fmt: skip
    scope_rows = module_scope | is_ann
    scopes = pd.DataFrame({
        "scope": labels[scope_rows],
        "kind": np.where(module_scope[scope_rows], "module", "annotation"),
        "dur_ns": dur[scope_rows],
    })  # fmt: skip
    scopes = scopes.groupby(["scope", "kind"], as_index=False, sort=False).agg(
        invocations=("dur_ns", "size"), cpu_ns=("dur_ns", "sum")
    )
    return OpTree(calls, scopes)


def _starts_with(names: pd.Series, prefix: str) -> np.ndarray:
    """Mask of the categorical `names` that start with `prefix`, matched once per category."""
    hit = names.cat.categories.str.startswith(prefix)
    codes = names.cat.codes.to_numpy()
    return np.append(hit, False)[codes]  # a missing name (code -1) matches nothing


def _label(labels: np.ndarray, at: np.ndarray) -> pd.Series:
    out = np.where(at >= 0, labels[np.where(at >= 0, at, 0)], NO_SCOPE)
    return pd.Series(out, dtype=object)


def _backward_roots(
    s: pd.DataFrame, is_op: np.ndarray, root: np.ndarray, labels: np.ndarray, mod_at: np.ndarray
) -> pd.Series:
    """Label per backward root op (autograd::engine::evaluate_function) whose forward op
    (same rank and sequence number, inside a module) is known: '<module> (backward)'."""
    seq = s["sequence_number"]
    fwd = is_op & (mod_at >= 0) & seq.notna().to_numpy()
    forward = pd.DataFrame({
        "rank": s["rank"][fwd], "seq": seq[fwd], "label": labels[mod_at[fwd]],
    }).drop_duplicates(["rank", "seq"])  # fmt: skip
    roots = pd.DataFrame({"rank": s["rank"][root], "seq": seq[root]})
    m = roots.reset_index().merge(forward, on=["rank", "seq"]).set_index("index")
    return (m["label"] + " (backward)").astype(object)


def _launched(s: pd.DataFrame, is_op: np.ndarray, work: pd.DataFrame) -> pd.DataFrame:
    """Per slice (same positions as `s`): gpu_ns, launches, flops, bytes, modelled_ns of the
    GPU activities it launched, and note (why some of its work is not modelled)."""
    w = work[work["op_external_id"].notna()]
    modelled = (w["flops"].notna() & w["bytes"].notna()).to_numpy()
    keys, at = np.unique(_op_key(w["rank"], w["op_external_id"]), return_inverse=True)
    dur = w["dur_ns"].to_numpy(np.float64)

    def total(values: np.ndarray | None) -> np.ndarray:
        return np.bincount(at, values, len(keys)).astype(np.float64)

    per_op = {
        "gpu_ns": total(dur),
        "launches": total(None),
        "flops": total(np.where(modelled, w["flops"].to_numpy(np.float64), 0.0)),
        "bytes": total(np.where(modelled, w["bytes"].to_numpy(np.float64), 0.0)),
        "modelled_ns": total(np.where(modelled, dur, 0.0)),
    }
    note = pd.Series(w["attribution"].to_numpy(dtype=object)).where(~modelled)
    first_note = note.groupby(at).first().reindex(range(len(keys))).to_numpy(dtype=object)
    # Each op's key; an External id names one op, and were one repeated, its first call
    # (in nesting order) takes the GPU time.
    ext = s["external_id"]
    mine = is_op & ext.notna().to_numpy()
    key = _op_key(s["rank"], ext.fillna(0))
    pos = np.searchsorted(keys, key).clip(0, max(len(keys) - 1, 0))
    found = mine & (len(keys) > 0) & (keys[pos] == key if len(keys) else False)
    _, first = np.unique(np.where(found, key, -1), return_index=True)
    owner = np.zeros(len(s), dtype=bool)
    owner[first] = True
    found &= owner
    out = pd.DataFrame(index=s.index)
    for col, values in per_op.items():
        out[col] = np.where(found, values[pos] if len(keys) else 0.0, 0.0)
    out["note"] = pd.Series(
        np.where(found, first_note[pos] if len(keys) else None, None), index=s.index, dtype=object
    )
    return out


def _op_key(rank: pd.Series, external_id: pd.Series) -> np.ndarray:
    """One int64 per (rank, External id): ids stay below 2^44, ranks below 2^19."""
    key: np.ndarray = (rank.to_numpy(np.int64) << 44) | external_id.to_numpy(np.int64)
    return key


def operator_table(calls: pd.DataFrame) -> pd.DataFrame:
    """Calls per op name and input shapes (OP_COLUMNS), most GPU time first: calls,
    cpu_total_ms, cpu_self_ms, gpu_ms (activities the op launched itself), gpu_total_ms (with
    its children's), gpu_share_pct (of all GPU time the run's ops launched), launches,
    flops (modelled, NaN when none is), tflops and gbps (modelled work over modelled time),
    note (why the rest is not modelled, e.g. 'no shapes')."""
    if calls.empty:
        return pd.DataFrame(columns=OP_COLUMNS)
    g = calls.groupby(["name", "input_dims"], dropna=False, observed=True, sort=False)
    out = _sums(g).reset_index()
    out["calls"] = g.size().to_numpy()
    out["cpu_total_ms"] = out.pop("cpu_total_ns") / 1e6
    out["gpu_total_ms"] = out.pop("gpu_total_ns") / 1e6
    out["gbps"] = (out["bytes"] / (out["modelled_ns"] / 1e9) / 1e9).where(out["modelled_ns"] > 0)
    out = _rates(out, float(calls["gpu_ns"].sum()))
    out["name"] = out["name"].astype(str)
    out["input_dims"] = out["input_dims"].astype(object).where(out["input_dims"].notna(), "")
    return out.sort_values(["gpu_ms", "cpu_total_ms"], ascending=False, ignore_index=True)[
        OP_COLUMNS
    ]


def scope_table(tree: OpTree, kind: str) -> pd.DataFrame:
    """Calls per innermost scope of `kind` ('module' or 'annotation'), SCOPE_COLUMNS, most GPU
    time first: invocations and cpu_ms of the scope itself, then its op calls' (op_calls,
    cpu_self_ms, gpu_ms, launches, flops, tflops); ops outside any scope are '(none)'."""
    calls = tree.calls
    if calls.empty:
        return pd.DataFrame(columns=SCOPE_COLUMNS)
    g = calls.groupby(kind, sort=False)
    out = _sums(g).reset_index().rename(columns={kind: "scope"})
    out["op_calls"] = g.size().to_numpy()
    own = tree.scopes[tree.scopes["kind"] == kind]
    out = out.merge(own[["scope", "invocations", "cpu_ns"]], on="scope", how="left")
    out["invocations"] = out["invocations"].astype("Int64")
    out["cpu_ms"] = out.pop("cpu_ns") / 1e6
    out = _rates(out, float(calls["gpu_ns"].sum()))
    return out.sort_values(["gpu_ms", "cpu_self_ms"], ascending=False, ignore_index=True)[
        SCOPE_COLUMNS
    ]


def _sums(g: pd.api.typing.DataFrameGroupBy[Any, Any]) -> pd.DataFrame:
    return g.agg(
        cpu_total_ns=("cpu_total_ns", "sum"), cpu_self_ns=("cpu_self_ns", "sum"),
        gpu_ns=("gpu_ns", "sum"), gpu_total_ns=("gpu_total_ns", "sum"),
        launches=("launches", "sum"), flops=("flops", "sum"), bytes=("bytes", "sum"),
        modelled_ns=("modelled_ns", "sum"), note=("note", "first"),
    )  # fmt: skip


def _rates(out: pd.DataFrame, gpu_total_ns: float) -> pd.DataFrame:
    out["cpu_self_ms"] = out.pop("cpu_self_ns") / 1e6
    out["gpu_ms"] = out.pop("gpu_ns") / 1e6
    out["gpu_share_pct"] = 100 * out["gpu_ms"] * 1e6 / gpu_total_ns if gpu_total_ns else np.nan
    out["launches"] = out["launches"].astype(np.int64)
    has = out["modelled_ns"] > 0
    # A copy is modelled with 0 FLOPs: its rate is bandwidth, not 0 TFLOP/s.
    rate = has & (out["flops"] > 0)
    out["tflops"] = (out["flops"] / (out["modelled_ns"] / 1e9) / 1e12).where(rate)
    out["flops"] = out["flops"].where(has)
    out["note"] = out["note"].fillna("").astype(object)
    return out


def launched_kernels(calls: pd.DataFrame, work: pd.DataFrame) -> pd.DataFrame:
    """The GPU activities `calls` launched, per kernel name (KERNEL_COLUMNS), most time
    first: kernel, kernel_class, tensor_core, calls, total_ms, mean_us."""
    keys = calls[["rank", "external_id"]].dropna().drop_duplicates()
    w = work.merge(keys, left_on=["rank", "op_external_id"], right_on=["rank", "external_id"])
    if w.empty:
        return pd.DataFrame(columns=KERNEL_COLUMNS)
    g = w.groupby(w["name"].astype(str), sort=False)
    out = g.agg(
        kernel_class=("kernel_class", "first"), tensor_core=("tensor_core", "first"),
        calls=("dur_ns", "size"), total_ns=("dur_ns", "sum"),
    ).reset_index(names="kernel")  # fmt: skip
    out["total_ms"] = out.pop("total_ns") / 1e6
    out["mean_us"] = out["total_ms"] * 1e3 / out["calls"]
    return out.sort_values("total_ms", ascending=False, ignore_index=True)[KERNEL_COLUMNS]
