"""Work models of memory-bound ops: elementwise, reductions, softmax, norms, embedding,
losses and copies (bytes moved, a few FLOPs per element)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analysis.model.dtypes import SCALAR_TYPE_BYTES
from analysis.work.args import Model, NoShapes, OpArgs, Result, numel


def elementwise(a: OpArgs) -> Result:
    ts = a.tensors()
    if not ts:
        raise NoShapes
    out = numel(np.broadcast_shapes(*(tuple(a.shape(i)) for i in ts)))
    bpe_out = max(a.bpe(i) for i in ts)
    return out, sum(a.nbytes(i) for i in ts) + out * bpe_out


def clone(a: OpArgs) -> Result:
    return 0.0, 2 * a.nbytes(0)


def to_copy(a: OpArgs) -> Result:
    """to_copy(self, dtype, …): read at the input's dtype, write at the target's."""
    code = a.ints(1)
    out_bpe = SCALAR_TYPE_BYTES.get(code[0], a.bpe(0)) if code else a.bpe(0)
    return 0.0, numel(a.shape(0)) * (a.bpe(0) + out_bpe)


def copy_into(a: OpArgs) -> Result:
    n = numel(a.shape(0))
    return 0.0, n * (a.bpe(0) + a.bpe(1))


def fill(a: OpArgs) -> Result:
    return 0.0, a.nbytes(0)


def cat(a: OpArgs) -> Result:
    moved = sum(a.nbytes(i) for i in a.tensors())
    if not moved:
        raise NoShapes  # a TensorList
    return 0.0, 2 * moved


def reduction(a: OpArgs) -> Result:
    return numel(a.shape(0)), a.nbytes(0)


def per_element(flops_per: float, tensors_moved: float) -> Model:
    """flops_per FLOP per element of input 0; tensors_moved × its bytes."""

    def model(a: OpArgs) -> Result:
        n = numel(a.shape(0))
        return flops_per * n, tensors_moved * n * a.bpe(0)

    return model


def norm(flops_per: float, tensors_moved: float, params: Sequence[int]) -> Model:
    def model(a: OpArgs) -> Result:
        n = numel(a.shape(0))
        return flops_per * n, tensors_moved * n * a.bpe(0) + sum(a.nbytes(i) for i in params)

    return model


def embedding(a: OpArgs) -> Result:
    w, idx = a.shape(0), a.shape(1)
    rows = numel(idx)
    return 0.0, 2 * rows * w[-1] * a.bpe(0) + rows * a.bpe(1)


def embedding_backward(a: OpArgs) -> Result:
    g = a.shape(0)
    num_weights = a.ints(2)
    if not num_weights:
        raise NoShapes
    d = g[-1]
    return numel(g), a.nbytes(0) + a.nbytes(1) + num_weights[0] * d * a.bpe(0)


def nll_loss(a: OpArgs) -> Result:
    n = numel(a.shape(1))  # one picked logit per target
    return n, n * (a.bpe(0) + a.bpe(1))


def nll_loss_backward(a: OpArgs) -> Result:
    # Scatters -1/N into one logit per target; zeroing the whole gradient is a separate op.
    n = numel(a.shape(2))
    return n, n * (a.bpe(1) + a.bpe(2))


def no_shapes(a: OpArgs) -> Result:
    raise NoShapes
