"""FLOPs and bytes of PyTorch ops, from the shapes and dtypes the profiler recorded.

torch.profiler's `with_flops` writes nothing into the exported trace, so the work of an op
comes from its `Input Dims`, `Input type` and `Concrete Inputs` (record_shapes=True), with
analytic formulas after AMD TraceLens's perf models (reference notes §4). Bytes are the
compulsory traffic: every input read once, every output written once; a kernel that re-reads
its data from DRAM moves more, one whose data stays in the 60 MB L2 moves less.

Models (B batch, M×K @ K×N, bpe = bytes per element of the op's dtype):
- gemm: mm, addmm, bmm, baddbmm, matmul, linear, _scaled_mm, addmv, mv: 2·M·N·K (+M·N for a
  bias/beta term); bytes = A + B + C (+ bias), each at its own dtype.
- conv: convolution, _convolution, cudnn_convolution: 2·prod(out)·prod(w[1:]) (+prod(out)
  bias); convolution_backward: the input and weight gradients asked for in output_mask, each
  as costly as the forward.
- attention (flash, efficient, cuDNN and the scaled_dot_product_attention front):
  B·H_q·N_q·N_kv·(2·d_qk + 2·d_v), halved when is_causal (the masked half is skipped);
  backward 2.5× the forward (recomputed QKᵀ, dV, dP, dQ, dK). Bytes: Q, K, V read, O written
  (backward: also O and dO read, dQ, dK, dV written). The softmax's FLOPs are ignored.
- elementwise and activations: 1 FLOP per output element; bytes = tensor inputs + output.
- reductions: 1 FLOP per input element; bytes = input (the output is far smaller).
- softmax / log_softmax: 3 FLOP per element, bytes = in + out; backward reads two tensors.
- layer / RMS / batch / group norm: 5 FLOP per element forward, 8 backward; bytes =
  activations read and written once plus the affine parameters.
- embedding: rows gathered: bytes = 2·indices·D·bpe + indices; dense backward writes the
  whole weight gradient.
- cross-entropy: its parts _log_softmax and nll_loss carry the kernels (nll_loss_backward
  writes the full gradient).
- optimizer ops: per-tensor ops are elementwise; `_foreach_*` and `_fused_adam(w)_` take
  TensorLists, whose shapes the profiler does not record: they report "no shapes".
- copies: copy_, _to_copy, clone, contiguous, cat, fill_, zero_: 0 FLOP, bytes moved.

Which op a kernel belongs to: the op whose External id the kernel carries, which is the
innermost op on the stack when it launched (aten::mm, not the aten::matmul around it).
Composite ops (matmul, linear, layer_norm, cross_entropy_loss) have models too, used when a
kernel is launched directly under them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

BYTES_PER_ELEMENT = {
    "double": 8, "long int": 8, "long": 8, "c10::complex<float>": 8, "float": 4, "int": 4,
    "unsigned int": 4, "c10::Half": 2, "c10::BFloat16": 2, "short int": 2, "short": 2,
    "bool": 1, "unsigned char": 1, "signed char": 1, "char": 1, "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1,
    "c10::Float8_e8m0fnu": 1,
}  # fmt: skip
_PRECISION_OF = {
    "double": "fp64", "float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8", "signed char": "int8", "unsigned char": "int8",
}  # fmt: skip

OP_CLASSES = (
    "gemm", "attention", "conv", "elementwise", "reduction", "softmax", "norm", "embedding",
    "loss", "optimizer", "copy",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Work:
    """The modelled work of one op call; flops/bytes None when it cannot be modelled."""

    op_class: str | None
    flops: float | None
    bytes: float | None
    precision: str | None
    note: str = ""


class _NoShapes(Exception):
    """The op's recorded inputs do not hold the shapes its model needs."""


@dataclass(frozen=True, slots=True)
class _Args:
    """One op call's recorded inputs."""

    dims: list[Any]
    types: list[str]
    concrete: list[str]

    def shape(self, i: int) -> list[int]:
        if i >= len(self.dims) or not isinstance(self.dims[i], list) or not self.dims[i]:
            raise _NoShapes
        d = self.dims[i]
        if not all(isinstance(x, int) for x in d):
            raise _NoShapes  # a TensorList: the profiler records no shapes for it
        return [int(x) for x in d]

    def has_tensor(self, i: int) -> bool:
        return (
            i < len(self.dims)
            and isinstance(self.dims[i], list)
            and bool(self.dims[i])
            and all(isinstance(x, int) for x in self.dims[i])
        )

    def bpe(self, i: int) -> int:
        return BYTES_PER_ELEMENT.get(self.types[i] if i < len(self.types) else "", 4)

    def nbytes(self, i: int) -> float:
        return float(math.prod(self.shape(i))) * self.bpe(i) if self.has_tensor(i) else 0.0

    def flag(self, i: int) -> bool | None:
        v = self.concrete[i] if i < len(self.concrete) else ""
        return {"True": True, "False": False}.get(v)

    def ints(self, i: int) -> list[int] | None:
        v = self.concrete[i] if i < len(self.concrete) else ""
        try:
            out = json.loads(v)
        except ValueError:
            return None
        if isinstance(out, int):
            return [out]
        return out if isinstance(out, list) and all(isinstance(x, int) for x in out) else None

    def tensors(self) -> list[int]:
        return [i for i in range(len(self.dims)) if self.has_tensor(i)]


_Result = tuple[float, float] | tuple[float, float, str]
_Model = Callable[[_Args], _Result]


def _n(shape: Sequence[int]) -> float:
    return float(math.prod(shape))


# ---------------------------------------------------------------------------------- gemm


def _mm(a: _Args, ia: int = 0, ib: int = 1, bias: int | None = None) -> _Result:
    sa, sb = a.shape(ia), a.shape(ib)
    if len(sa) != 2 or len(sb) != 2:
        raise _NoShapes
    m, k, n = sa[0], sa[1], sb[1]
    flops = 2.0 * m * n * k
    out = m * n * max(a.bpe(ia), a.bpe(ib))
    extra = 0.0
    if bias is not None and a.has_tensor(bias):
        flops += m * n
        extra = a.nbytes(bias)
    return flops, a.nbytes(ia) + a.nbytes(ib) + out + extra


def _bmm(a: _Args, ia: int = 0, ib: int = 1, bias: int | None = None) -> _Result:
    sa, sb = a.shape(ia), a.shape(ib)
    if len(sa) != 3 or len(sb) != 3:
        raise _NoShapes
    b, m, k, n = sa[0], sa[1], sa[2], sb[2]
    flops = 2.0 * b * m * n * k
    extra = 0.0
    if bias is not None and a.has_tensor(bias):
        flops += b * m * n
        extra = a.nbytes(bias)
    return flops, a.nbytes(ia) + a.nbytes(ib) + b * m * n * a.bpe(ia) + extra


def _matmul(a: _Args) -> _Result:
    sa, sb = a.shape(0), a.shape(1)
    if len(sb) == 1:  # matrix-vector
        m, k, n, batch = _n(sa[:-1]), sa[-1], 1, 1.0
    else:
        sa2 = sa if len(sa) > 1 else [1, *sa]
        m, k, n = sa2[-2], sa2[-1], sb[-1]
        batch = _n(np.broadcast_shapes(tuple(sa2[:-2]), tuple(sb[:-2])))
    return 2.0 * batch * m * n * k, a.nbytes(0) + a.nbytes(1) + batch * m * n * a.bpe(0)


def _linear(a: _Args) -> _Result:
    x, w = a.shape(0), a.shape(1)
    m, k, n = _n(x[:-1]), x[-1], w[0]
    flops = 2.0 * m * n * k + (m * n if a.has_tensor(2) else 0)
    return flops, a.nbytes(0) + a.nbytes(1) + a.nbytes(2) + m * n * a.bpe(0)


def _mv(a: _Args, ia: int = 0, ix: int = 1) -> _Result:
    m, n = a.shape(ia)
    return 2.0 * m * n, a.nbytes(ia) + a.nbytes(ix) + m * a.bpe(ia)


# ---------------------------------------------------------------------------------- conv


def _conv_out(x: list[int], w: list[int], a: _Args, first: int, transposed: bool) -> list[int]:
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
    return 2.0 * (_n(x) if transposed else _n(out)) * _n(w[1:])


def _convolution(a: _Args, first: int = 3, transposed_at: int | None = 6) -> _Result:
    x, w = a.shape(0), a.shape(1)
    transposed = bool(transposed_at is not None and a.flag(transposed_at))
    out = _conv_out(x, w, a, first, transposed)
    flops = _conv_fwd(x, w, out, transposed)
    if a.has_tensor(2):
        flops += _n(out)
    return flops, a.nbytes(0) + a.nbytes(1) + a.nbytes(2) + _n(out) * a.bpe(0)


def _cudnn_convolution(a: _Args) -> _Result:
    # (self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    x, w = a.shape(0), a.shape(1)
    stride, pad, dil = a.ints(3), a.ints(2), a.ints(4)
    swapped = _Args(
        a.dims, a.types, ["", "", "", json.dumps(stride), json.dumps(pad), json.dumps(dil)]
    )
    out = _conv_out(x, w, swapped, 3, False)
    return _conv_fwd(x, w, out, False), a.nbytes(0) + a.nbytes(1) + _n(out) * a.bpe(0)


def _convolution_backward(a: _Args) -> _Result:
    # (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    #  output_padding, groups, output_mask)
    g, x, w = a.shape(0), a.shape(1), a.shape(2)
    mask = a.concrete[10] if len(a.concrete) > 10 else ""
    want = [s.strip() == "True" for s in mask.strip("[]").split(",")] if mask else [True] * 3
    want += [True] * (3 - len(want))
    one = _conv_fwd(x, w, g, bool(a.flag(7)))
    flops = one * (want[0] + want[1]) + (_n(g) if want[2] else 0.0)
    written = (a.nbytes(1) if want[0] else 0.0) + (a.nbytes(2) if want[1] else 0.0)
    return flops, a.nbytes(0) + a.nbytes(1) + a.nbytes(2) + written


# ----------------------------------------------------------------------------- attention

# Position of is_causal in Concrete Inputs, per op (torch 2.x signatures).
_CAUSAL_AT = {
    "aten::scaled_dot_product_attention": 5,
    "aten::_scaled_dot_product_flash_attention": 4,
    "aten::_scaled_dot_product_efficient_attention": 6,
    "aten::_scaled_dot_product_cudnn_attention": 6,
    "aten::_cudnn_attention_forward": 10,
    "aten::_flash_attention_forward": 8,
    "aten::_efficient_attention_forward": 8,
    "aten::_scaled_dot_product_flash_attention_backward": 11,
    "aten::_scaled_dot_product_efficient_attention_backward": 11,
    "aten::_scaled_dot_product_cudnn_attention_backward": 14,
    "aten::_cudnn_attention_backward": 14,
}
_ATTENTION_BWD = {
    "aten::_scaled_dot_product_flash_attention_backward",
    "aten::_scaled_dot_product_efficient_attention_backward",
    "aten::_scaled_dot_product_cudnn_attention_backward",
    "aten::_cudnn_attention_backward",
    "aten::_flash_attention_backward",
    "aten::_efficient_attention_backward",
}


def _attention(name: str) -> _Model:
    backward = name in _ATTENTION_BWD
    q_at = 1 if backward else 0  # backward ops start with grad_out

    def model(a: _Args) -> _Result:
        q, k, v = a.shape(q_at), a.shape(q_at + 1), a.shape(q_at + 2)
        if len(q) != 4 or len(k) != 4 or len(v) != 4:
            raise _NoShapes
        b, h, nq, dqk = q
        nkv, dv = k[2], v[3]
        flops = 2.0 * b * h * nq * nkv * (dqk + dv)
        causal = a.flag(_CAUSAL_AT[name]) if name in _CAUSAL_AT else None
        note = "" if causal is not None else "is_causal not recorded: counted as not causal"
        if causal:
            flops /= 2
        bpe = a.bpe(q_at)
        qkv = (_n(q) + _n(k) + _n(v)) * bpe
        o = b * h * nq * dv * bpe
        if backward:  # read q, k, v, o, do; write dq, dk, dv
            return 2.5 * flops, 2 * qkv + 2 * o, note
        return flops, qkv + o, note

    return model


# ------------------------------------------------------------- elementwise and friends


def _elementwise(a: _Args) -> _Result:
    ts = a.tensors()
    if not ts:
        raise _NoShapes
    out = _n(np.broadcast_shapes(*(tuple(a.shape(i)) for i in ts)))
    bpe_out = max(a.bpe(i) for i in ts)
    return out, sum(a.nbytes(i) for i in ts) + out * bpe_out


# torch ScalarType codes (c10/core/ScalarType.h) -> bytes per element, for casts.
_SCALAR_TYPE_BYTES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 15: 2, 23: 1, 24: 1}


def _clone(a: _Args) -> _Result:
    return 0.0, 2 * a.nbytes(0)


def _to_copy(a: _Args) -> _Result:
    """_to_copy(self, dtype, …): read at the input's dtype, write at the target's."""
    code = a.ints(1)
    out_bpe = _SCALAR_TYPE_BYTES.get(code[0], a.bpe(0)) if code else a.bpe(0)
    return 0.0, _n(a.shape(0)) * (a.bpe(0) + out_bpe)


def _copy_(a: _Args) -> _Result:
    n = _n(a.shape(0))
    return 0.0, n * (a.bpe(0) + a.bpe(1))


def _fill(a: _Args) -> _Result:
    return 0.0, a.nbytes(0)


def _cat(a: _Args) -> _Result:
    moved = sum(a.nbytes(i) for i in a.tensors())
    if not moved:
        raise _NoShapes  # a TensorList
    return 0.0, 2 * moved


def _reduce(a: _Args) -> _Result:
    return _n(a.shape(0)), a.nbytes(0)


def _per_element(flops_per: float, tensors_moved: float) -> _Model:
    """flops_per FLOP per element of input 0; tensors_moved × its bytes."""

    def model(a: _Args) -> _Result:
        n = _n(a.shape(0))
        return flops_per * n, tensors_moved * n * a.bpe(0)

    return model


def _norm(flops_per: float, tensors_moved: float, params: Sequence[int]) -> _Model:
    def model(a: _Args) -> _Result:
        n = _n(a.shape(0))
        return flops_per * n, tensors_moved * n * a.bpe(0) + sum(a.nbytes(i) for i in params)

    return model


def _embedding(a: _Args) -> _Result:
    w, idx = a.shape(0), a.shape(1)
    rows = _n(idx)
    return 0.0, 2 * rows * w[-1] * a.bpe(0) + rows * a.bpe(1)


def _embedding_backward(a: _Args) -> _Result:
    g = a.shape(0)
    num_weights = a.ints(2)
    if not num_weights:
        raise _NoShapes
    d = g[-1]
    return _n(g), a.nbytes(0) + a.nbytes(1) + num_weights[0] * d * a.bpe(0)


def _nll_loss(a: _Args) -> _Result:
    n = _n(a.shape(1))  # one picked logit per target
    return n, n * (a.bpe(0) + a.bpe(1))


def _nll_loss_backward(a: _Args) -> _Result:
    # Scatters -1/N into one logit per target; zeroing the whole gradient is a separate op.
    n = _n(a.shape(2))
    return n, n * (a.bpe(1) + a.bpe(2))


def _no_shapes(a: _Args) -> _Result:
    raise _NoShapes


_UNARY = (
    "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "neg", "sqrt", "rsqrt", "abs",
    "reciprocal", "sin", "cos", "erf", "clamp", "clamp_min", "clamp_max", "hardtanh",
    "leaky_relu", "elu", "softplus", "mish", "square", "sign", "floor", "ceil", "round",
    "logical_not", "bitwise_not", "isnan", "isinf", "isneginf", "nan_to_num", "triu", "tril",
)  # fmt: skip
_BINARY = (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "where", "masked_fill", "eq",
    "ne", "lt", "le", "gt", "ge", "remainder", "fmod", "lerp", "addcmul", "addcdiv",
    "gelu_backward", "silu_backward", "threshold_backward", "tanh_backward",
    "sigmoid_backward", "hardtanh_backward", "bitwise_and", "bitwise_or", "logical_and",
    "logical_or", "rsub", "atan2", "hypot", "mse_loss", "mse_loss_backward",
)  # fmt: skip
_REDUCE = (
    "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std",
    "var_mean", "std_mean", "norm", "linalg_vector_norm", "prod", "all", "any", "logsumexp",
    "cumsum",
)  # fmt: skip


def _registry() -> dict[str, tuple[str, _Model]]:
    reg: dict[str, tuple[str, _Model]] = {
        "aten::mm": ("gemm", _mm),
        "aten::_scaled_mm": ("gemm", _mm),
        "aten::addmm": ("gemm", lambda a: _mm(a, 1, 2, bias=0)),
        "aten::bmm": ("gemm", _bmm),
        "aten::baddbmm": ("gemm", lambda a: _bmm(a, 1, 2, bias=0)),
        "aten::matmul": ("gemm", _matmul),
        "aten::linear": ("gemm", _linear),
        "aten::mv": ("gemm", _mv),
        "aten::addmv": ("gemm", lambda a: _mv(a, 1, 2)),
        "aten::convolution": ("conv", _convolution),
        "aten::_convolution": ("conv", _convolution),
        "aten::conv2d": ("conv", lambda a: _convolution(a, 3, None)),
        "aten::conv1d": ("conv", lambda a: _convolution(a, 3, None)),
        "aten::conv3d": ("conv", lambda a: _convolution(a, 3, None)),
        "aten::cudnn_convolution": ("conv", _cudnn_convolution),
        "aten::convolution_backward": ("conv", _convolution_backward),
        "aten::_softmax": ("softmax", _per_element(3, 2)),
        "aten::softmax": ("softmax", _per_element(3, 2)),
        "aten::_log_softmax": ("softmax", _per_element(3, 2)),
        "aten::log_softmax": ("softmax", _per_element(3, 2)),
        "aten::_softmax_backward_data": ("softmax", _per_element(3, 3)),
        "aten::_log_softmax_backward_data": ("softmax", _per_element(3, 3)),
        "aten::native_layer_norm": ("norm", _norm(5, 2, (2, 3))),
        "aten::layer_norm": ("norm", _norm(5, 2, (2, 3))),
        "aten::native_layer_norm_backward": ("norm", _norm(8, 3, (5, 5))),
        "aten::_fused_rms_norm": ("norm", _norm(4, 2, (2,))),
        "aten::rms_norm": ("norm", _norm(4, 2, (2,))),
        "aten::native_batch_norm": ("norm", _norm(5, 2, (1, 2))),
        "aten::cudnn_batch_norm": ("norm", _norm(5, 2, (1, 2))),
        "aten::_batch_norm_impl_index": ("norm", _norm(5, 2, (1, 2))),
        "aten::native_batch_norm_backward": ("norm", _norm(8, 3, (2,))),
        "aten::cudnn_batch_norm_backward": ("norm", _norm(8, 3, (2,))),
        "aten::native_group_norm": ("norm", _norm(5, 2, (1, 2))),
        "aten::native_group_norm_backward": ("norm", _norm(8, 3, (3,))),
        "aten::embedding": ("embedding", _embedding),
        "aten::embedding_dense_backward": ("embedding", _embedding_backward),
        "aten::embedding_backward": ("embedding", _embedding_backward),
        "aten::nll_loss_forward": ("loss", _nll_loss),
        "aten::nll_loss": ("loss", _nll_loss),
        "aten::nll_loss_nd": ("loss", _nll_loss),
        "aten::nll_loss_backward": ("loss", _nll_loss_backward),
        "aten::cross_entropy_loss": ("loss", _per_element(4, 1)),
        "aten::native_dropout": ("elementwise", _per_element(2, 2.25)),  # + a bool mask
        "aten::copy_": ("copy", _copy_),
        "aten::_to_copy": ("copy", _to_copy),
        "aten::clone": ("copy", _clone),
        "aten::contiguous": ("copy", _clone),
        "aten::cat": ("copy", _cat),
        "aten::fill_": ("copy", _fill),
        "aten::zero_": ("copy", _fill),
        "aten::_fused_adamw_": ("optimizer", _no_shapes),
        "aten::_fused_adam_": ("optimizer", _no_shapes),
        "aten::_fused_sgd_": ("optimizer", _no_shapes),
    }
    for op in _CAUSAL_AT.keys() | _ATTENTION_BWD:
        reg[op] = ("attention", _attention(op))
    for op in _UNARY:
        reg[f"aten::{op}"] = ("elementwise", _elementwise)
        reg[f"aten::{op}_"] = ("elementwise", _elementwise)  # self is read, then written
    for op in _BINARY:
        reg[f"aten::{op}"] = ("elementwise", _elementwise)
        reg[f"aten::{op}_"] = ("elementwise", _elementwise)  # self is read, then written
    for op in _REDUCE:
        reg[f"aten::{op}"] = ("reduction", _reduce)
    return reg


MODELS = _registry()


def json_list(text: object) -> list[Any]:
    """A JSON list recorded as text (Input Dims, Input type…); [] when missing or not a list."""
    if not isinstance(text, str) or not text:
        return []
    try:
        v = json.loads(text)
    except ValueError:
        return []
    return v if isinstance(v, list) else []


def dims(text: object) -> list[list[int]]:
    """`Input Dims` JSON text as a list of shapes ([] for a scalar or a missing input)."""
    return [
        [int(d) for d in s] if isinstance(s, list) and all(isinstance(d, int) for d in s) else []
        for s in json_list(text)
    ]


def op_work(
    name: str, input_dims: str | None, input_types: str | None, concrete: str | None
) -> Work:
    """The work of one op call from its recorded (JSON) shapes, dtypes and scalar inputs."""
    if name.startswith("aten::_foreach_"):
        return Work("optimizer", None, None, None, "no shapes (TensorList inputs)")
    entry = MODELS.get(name)
    if entry is None:
        return Work(None, None, None, None, "no model for this op")
    op_class, model = entry
    args = _Args(
        json_list(input_dims),
        [str(t) for t in json_list(input_types)],
        [str(c) for c in json_list(concrete)],
    )
    precision = next(
        (
            _PRECISION_OF[t]
            for i, t in enumerate(args.types)
            if args.has_tensor(i) and t in _PRECISION_OF
        ),
        None,
    )
    try:
        result = model(args)
    except (_NoShapes, ValueError, IndexError, TypeError):
        note = "no shapes (TensorList inputs)" if "TensorList" in args.types else "no shapes"
        return Work(op_class, None, None, precision, note)
    return Work(
        op_class,
        float(result[0]),
        float(result[1]),
        precision,
        result[2] if len(result) == 3 else "",
    )


WORK_COLUMNS = ["op_class", "flops", "bytes", "op_precision", "work_note"]


def work_table(ops: pd.DataFrame) -> pd.DataFrame:
    """Modelled work of each op; one row per input row, same index.

    `ops` has the `cpu_ops` columns name, input_dims, input_types, concrete_inputs, and
    optionally `signature` (equal for rows with equal values of those four).
    Columns: op_class (gemm, attention, conv, elementwise, reduction, softmax, norm,
    embedding, loss, optimizer, copy, or None for an op without a model), flops, bytes (NaN
    when not modelled), op_precision (fp32, bf16, fp16, fp8, fp64, int8 from the first
    tensor's dtype, or None), work_note ("" or why flops/bytes are missing: "no shapes",
    "no model for this op", ...). Each distinct (name, shapes, dtypes, scalars) is modelled
    once: a training run repeats a few hundred signatures over every step.
    """
    if ops.empty:
        return pd.DataFrame(
            {
                c: pd.Series(dtype=object if c not in ("flops", "bytes") else float)
                for c in WORK_COLUMNS
            },
            index=ops.index,
        )
    keys = ["name", "input_dims", "input_types", "concrete_inputs"]
    if "signature" in ops:  # data.reads_roofline.launching_ops has numbered them already
        codes, _ = pd.factorize(ops["signature"])
        first = ops[keys].iloc[np.unique(codes, return_index=True)[1]]
        uniques = list(first.itertuples(index=False, name=None))
    else:
        sig = ops[keys].astype(object).where(ops[keys].notna(), "")
        codes, idx = pd.factorize(pd.MultiIndex.from_frame(sig))
        uniques = list(idx)
    works = [op_work(*u) for u in uniques]

    def col(values: list[object]) -> pd.Series:
        # Object dtype: pandas 3 would convert each value to an Arrow string (0.1 s per 100 k).
        return pd.Series(np.array(values, dtype=object)[codes], index=ops.index, dtype=object)

    return pd.DataFrame({
        "op_class": col([w.op_class for w in works]),
        "flops": np.array([np.nan if w.flops is None else w.flops for w in works])[codes],
        "bytes": np.array([np.nan if w.bytes is None else w.bytes for w in works])[codes],
        "op_precision": col([w.precision for w in works]),
        "work_note": col([w.note for w in works]),
    }, index=ops.index)  # fmt: skip
