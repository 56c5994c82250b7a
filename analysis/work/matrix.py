"""Work models of matrix ops: GEMMs (2·M·N·K FLOPs, operands read once, output written)
and convolutions (2 FLOP per multiply-add; backward per the gradients asked for)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial

import numpy as np

from analysis.model.gemm import GEMM_OPERANDS, GemmOperands
from analysis.work.args import Model, NoShapes, OpArgs, Result, numel


def mm(a: OpArgs, o: GemmOperands) -> Result:
    """a (M×K) @ b (K×N), plus an M×N bias/beta term when recorded."""
    sa, sb = a.shape(o.a), a.shape(o.b)
    if len(sa) != 2 or len(sb) != 2:
        raise NoShapes
    m, k, n = sa[0], sa[1], sb[1]
    flops = 2.0 * m * n * k
    out = m * n * max(a.bpe(o.a), a.bpe(o.b))
    extra = 0.0
    if o.bias is not None and a.has_tensor(o.bias):
        flops += m * n
        extra = a.nbytes(o.bias)
    return flops, a.nbytes(o.a) + a.nbytes(o.b) + out + extra


def bmm(a: OpArgs, o: GemmOperands, *, reduce_batch: bool = False) -> Result:
    """Batched a (B×M×K) @ b (B×K×N); `reduce_batch` (addbmm) sums the B products into one
    M×N output."""
    sa, sb = a.shape(o.a), a.shape(o.b)
    if len(sa) != 3 or len(sb) != 3:
        raise NoShapes
    b, m, k, n = sa[0], sa[1], sa[2], sb[2]
    outputs = m * n if reduce_batch else b * m * n
    flops = 2.0 * b * m * n * k
    extra = 0.0
    if o.bias is not None and a.has_tensor(o.bias):
        flops += outputs
        extra = a.nbytes(o.bias)
    return flops, a.nbytes(o.a) + a.nbytes(o.b) + outputs * a.bpe(o.a) + extra


def matmul(a: OpArgs, o: GemmOperands) -> Result:
    """torch.matmul: broadcast batch dimensions, or a matrix-vector product."""
    sa, sb = a.shape(o.a), a.shape(o.b)
    if len(sb) == 1:  # matrix-vector
        m, k, n, batch = numel(sa[:-1]), sa[-1], 1, 1.0
    else:
        sa2 = sa if len(sa) > 1 else [1, *sa]
        m, k, n = sa2[-2], sa2[-1], sb[-1]
        batch = numel(np.broadcast_shapes(tuple(sa2[:-2]), tuple(sb[:-2])))
    return 2.0 * batch * m * n * k, a.nbytes(o.a) + a.nbytes(o.b) + batch * m * n * a.bpe(o.a)


def linear(a: OpArgs, o: GemmOperands) -> Result:
    """x (…×K) @ Wᵀ with W stored N×K, plus a bias."""
    x, w = a.shape(o.a), a.shape(o.b)
    m, k, n = numel(x[:-1]), x[-1], w[0]
    biased = o.bias is not None and a.has_tensor(o.bias)
    flops = 2.0 * m * n * k + (m * n if biased else 0)
    bias = a.nbytes(o.bias) if o.bias is not None else 0.0
    return flops, a.nbytes(o.a) + a.nbytes(o.b) + bias + m * n * a.bpe(o.a)


_GEMM_MODELS: dict[str, Callable[..., Result]] = {
    "aten::mm": mm, "aten::addmm": mm, "aten::_scaled_mm": mm, "aten::bmm": bmm,
    "aten::baddbmm": bmm, "aten::addbmm": partial(bmm, reduce_batch=True),
    "aten::matmul": matmul, "aten::linear": linear,
}  # fmt: skip


def gemm_models() -> dict[str, Model]:
    """A work model for every op of analysis.model.gemm.GEMM_OPERANDS, at its operands."""
    return {op: partial(_GEMM_MODELS[op], o=o) for op, o in GEMM_OPERANDS.items()}


def mv(a: OpArgs, ia: int = 0, ix: int = 1) -> Result:
    m, n = a.shape(ia)
    return 2.0 * m * n, a.nbytes(ia) + a.nbytes(ix) + m * a.bpe(ia)


def _conv_out(x: list[int], w: list[int], a: OpArgs, first: int, transposed: bool) -> list[int]:
    """Output shape of a convolution; stride/padding/dilation are concrete at `first`.."""
    k = w[2:]
    nd = len(k)
    stride = a.ints(first) or [1] * nd
    pad = a.ints(first + 1) or [0] * nd
    dil = a.ints(first + 2) or [1] * nd
    stride, pad, dil = ([v[0]] * nd if len(v) == 1 else v for v in (stride, pad, dil))
    if transposed:
        spatial = [
            (x[2 + i] - 1) * stride[i] - 2 * pad[i] + dil[i] * (k[i] - 1) + 1 for i in range(nd)
        ]
        return [x[0], w[1], *spatial]
    spatial = [
        (x[2 + i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nd)
    ]
    return [x[0], w[0], *spatial]


def _conv_fwd(x: list[int], w: list[int], out: list[int], transposed: bool) -> float:
    """2 FLOP per multiply-add: each output (input, if transposed) element sees w[1:]."""
    return 2.0 * (numel(x) if transposed else numel(out)) * numel(w[1:])


def convolution(a: OpArgs, first: int = 3, transposed_at: int | None = 6) -> Result:
    x, w = a.shape(0), a.shape(1)
    transposed = bool(transposed_at is not None and a.flag(transposed_at))
    out = _conv_out(x, w, a, first, transposed)
    flops = _conv_fwd(x, w, out, transposed)
    if a.has_tensor(2):
        flops += numel(out)
    return flops, a.nbytes(0) + a.nbytes(1) + a.nbytes(2) + numel(out) * a.bpe(0)


def cudnn_convolution(a: OpArgs) -> Result:
    # (self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    x, w = a.shape(0), a.shape(1)
    stride, pad, dil = a.ints(3), a.ints(2), a.ints(4)
    swapped = OpArgs(
        a.dims, a.types, ["", "", "", json.dumps(stride), json.dumps(pad), json.dumps(dil)]
    )
    out = _conv_out(x, w, swapped, 3, False)
    return _conv_fwd(x, w, out, False), a.nbytes(0) + a.nbytes(1) + numel(out) * a.bpe(0)


def convolution_backward(a: OpArgs) -> Result:
    # (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    #  output_padding, groups, output_mask)
    g, x, w = a.shape(0), a.shape(1), a.shape(2)
    mask = a.concrete[10] if len(a.concrete) > 10 else ""
    want = [s.strip() == "True" for s in mask.strip("[]").split(",")] if mask else [True] * 3
    want += [True] * (3 - len(want))
    one = _conv_fwd(x, w, g, bool(a.flag(7)))
    flops = one * (want[0] + want[1]) + (numel(g) if want[2] else 0.0)
    written = (a.nbytes(1) if want[0] else 0.0) + (a.nbytes(2) if want[1] else 0.0)
    return flops, a.nbytes(0) + a.nbytes(1) + a.nbytes(2) + written
