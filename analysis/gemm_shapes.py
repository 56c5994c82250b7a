"""Which GEMM kernels multiply activations by a weight matrix, and how many tokens they carry.

For an op `y = x @ W` (aten::mm, addmm, linear, matmul with a 2-D right operand) the token
dimension M is every leading dimension of x, and W (K×N) is the weight read by the kernel.
Decode steps run such GEMMs with M = the batch of sequences (one token each); their bytes
are almost all weight bytes, so their time is the weight read. In a backward pass the
weight-gradient GEMM (xᵀ @ dy) has a feature dimension in M; a time-weighted median over all
GEMMs still follows the tokens, which the forward and input-gradient GEMMs (2/3) carry.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis.model.dtypes import BYTES_PER_ELEMENT
from analysis.model.gemm import GEMM_OPERANDS, WEIGHT_GEMM_OPS
from analysis.work.args import dims, types

GEMM_SHAPE_COLUMNS = [
    "rank", "step", "name", "op_name", "op_external_id", "dur_ns", "flops", "bytes",
    "precision", "tokens", "k", "n", "weight_bytes", "weight_type",
]  # fmt: skip


def weight_gemms(kernels: pd.DataFrame, ops: pd.DataFrame) -> pd.DataFrame:
    """The kernels of activation × weight GEMMs with their shapes.

    Args:
        kernels: analysis.roofline.kernel_work rows (kind kernel).
        ops: data.reads_roofline.launching_ops rows (rank, external_id, input_dims,
            input_types).
    Returns GEMM_SHAPE_COLUMNS: the kernel's rank, step, name, op_name, op_external_id, dur_ns,
    flops, bytes,
    precision (from kernel_work), tokens (M), k, n, weight_bytes (K·N × the weight's
    element size), weight_type (as recorded, e.g. c10::BFloat16). Kernels of ops without
    shapes or with a batched right operand (attention's activation × activation) are left out.
    """
    k = kernels[kernels["op_name"].isin(WEIGHT_GEMM_OPS)]
    o = ops[["rank", "external_id", "input_dims", "input_types"]].drop_duplicates(
        ["rank", "external_id"]
    )
    m = k.merge(
        o, how="inner", left_on=["rank", "op_external_id"], right_on=["rank", "external_id"]
    )
    shapes = [
        _shape(str(op), d, t)
        for op, d, t in zip(m["op_name"], m["input_dims"], m["input_types"], strict=True)
    ]
    cols = pd.DataFrame(shapes, columns=["tokens", "k", "n", "weight_bytes", "weight_type"])
    out = pd.concat([m.reset_index(drop=True), cols], axis=1)
    out = out[out["tokens"].notna()]
    return out[GEMM_SHAPE_COLUMNS].astype(
        {"tokens": "int64", "k": "int64", "n": "int64", "weight_bytes": "float64"}
    )


def _shape(op: str, dims_text: object, types_text: object) -> tuple[object, ...]:
    o = GEMM_OPERANDS[op]
    ix, iw, transposed = o.a, o.b, o.weight_nk
    shapes, dtypes = dims(dims_text), types(types_text)
    if len(shapes) <= max(ix, iw):
        return (None,) * 5
    x, w = shapes[ix], shapes[iw]
    if len(x) < 2 or len(w) != 2:
        return (None,) * 5
    n, kdim = (w[0], w[1]) if transposed else (w[1], w[0])
    wtype = dtypes[iw] if iw < len(dtypes) else ""
    size = BYTES_PER_ELEMENT.get(wtype, 4)
    return math.prod(x[:-1]), kdim, n, float(kdim * n * size), wtype


def time_weighted_median(values: pd.Series, weights: pd.Series) -> float:
    """The value below which half of the weight lies (NaN when empty)."""
    if values.empty:
        return math.nan
    order = np.argsort(values.to_numpy(float))
    v = values.to_numpy(float)[order]
    c = np.cumsum(weights.to_numpy(float)[order])
    return float(v[np.searchsorted(c, c[-1] / 2)])
