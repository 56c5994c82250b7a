"""FLOPs and bytes of PyTorch ops, from the shapes and dtypes the profiler recorded.

torch.profiler's `with_flops` writes nothing into the exported trace, so the work of an op
comes from its `Input Dims`, `Input type` and `Concrete Inputs` (record_shapes=True), with
analytic formulas after AMD TraceLens's perf models (reference notes §4). Bytes are the
compulsory traffic: every input read once, every output written once; a kernel that re-reads
its data from DRAM moves more, one whose data stays in the 60 MB L2 moves less.

Models (B batch, M×K @ K×N, bpe = bytes per element of the op's dtype):
- gemm: mm, addmm, bmm, baddbmm, addbmm, matmul, linear, _scaled_mm (operands from
  analysis.model.gemm), addmv, mv: 2·M·N·K (+M·N for a bias/beta term); bytes = A + B + C
  (+ bias), each at its own dtype.
- conv: convolution, convolution, cudnn_convolution: 2·prod(out)·prod(w[1:]) (+prod(out)
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
- copies: copy_, to_copy, clone, contiguous, cat, fill_, zero_: 0 FLOP, bytes moved.

Which op a kernel belongs to: the op whose External id the kernel carries, which is the
innermost op on the stack when it launched (aten::mm, not the aten::matmul around it).
Composite ops (matmul, linear, layer_norm, cross_entropy_loss) have models too, used when a
kernel is launched directly under them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.model.dtypes import PRECISION_OF
from analysis.work.args import Model, NoShapes, OpArgs, json_list
from analysis.work.attention import ATTENTION_BWD, CAUSAL_AT, attention
from analysis.work.matrix import (
    convolution,
    convolution_backward,
    cudnn_convolution,
    gemm_models,
    mv,
)
from analysis.work.pointwise import (
    cat,
    clone,
    copy_into,
    elementwise,
    embedding,
    embedding_backward,
    fill,
    nll_loss,
    nll_loss_backward,
    no_shapes,
    norm,
    per_element,
    reduction,
    to_copy,
)


@dataclass(frozen=True, slots=True)
class Work:
    """The modelled work of one op call; flops/bytes None when it cannot be modelled."""

    op_class: str | None
    flops: float | None
    bytes: float | None
    precision: str | None
    note: str = ""


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


def _registry() -> dict[str, tuple[str, Model]]:
    reg: dict[str, tuple[str, Model]] = {
        "aten::mv": ("gemm", mv),
        "aten::addmv": ("gemm", lambda a: mv(a, 1, 2)),
        "aten::convolution": ("conv", convolution),
        "aten::_convolution": ("conv", convolution),
        "aten::conv2d": ("conv", lambda a: convolution(a, 3, None)),
        "aten::conv1d": ("conv", lambda a: convolution(a, 3, None)),
        "aten::conv3d": ("conv", lambda a: convolution(a, 3, None)),
        "aten::cudnn_convolution": ("conv", cudnn_convolution),
        "aten::convolution_backward": ("conv", convolution_backward),
        "aten::_softmax": ("softmax", per_element(3, 2)),
        "aten::softmax": ("softmax", per_element(3, 2)),
        "aten::_log_softmax": ("softmax", per_element(3, 2)),
        "aten::log_softmax": ("softmax", per_element(3, 2)),
        "aten::_softmax_backward_data": ("softmax", per_element(3, 3)),
        "aten::_log_softmax_backward_data": ("softmax", per_element(3, 3)),
        "aten::native_layer_norm": ("norm", norm(5, 2, (2, 3))),
        "aten::layer_norm": ("norm", norm(5, 2, (2, 3))),
        "aten::native_layer_norm_backward": ("norm", norm(8, 3, (5, 5))),
        "aten::_fused_rms_norm": ("norm", norm(4, 2, (2,))),
        "aten::rms_norm": ("norm", norm(4, 2, (2,))),
        "aten::native_batch_norm": ("norm", norm(5, 2, (1, 2))),
        "aten::cudnn_batch_norm": ("norm", norm(5, 2, (1, 2))),
        "aten::_batch_norm_impl_index": ("norm", norm(5, 2, (1, 2))),
        "aten::native_batch_norm_backward": ("norm", norm(8, 3, (2,))),
        "aten::cudnn_batch_norm_backward": ("norm", norm(8, 3, (2,))),
        "aten::native_group_norm": ("norm", norm(5, 2, (1, 2))),
        "aten::native_group_norm_backward": ("norm", norm(8, 3, (3,))),
        "aten::embedding": ("embedding", embedding),
        "aten::embedding_dense_backward": ("embedding", embedding_backward),
        "aten::embedding_backward": ("embedding", embedding_backward),
        "aten::nll_loss_forward": ("loss", nll_loss),
        "aten::nll_loss": ("loss", nll_loss),
        "aten::nll_loss_nd": ("loss", nll_loss),
        "aten::nll_loss_backward": ("loss", nll_loss_backward),
        "aten::cross_entropy_loss": ("loss", per_element(4, 1)),
        "aten::native_dropout": ("elementwise", per_element(2, 2.25)),  # + a bool mask
        "aten::copy_": ("copy", copy_into),
        "aten::_to_copy": ("copy", to_copy),
        "aten::clone": ("copy", clone),
        "aten::contiguous": ("copy", clone),
        "aten::cat": ("copy", cat),
        "aten::fill_": ("copy", fill),
        "aten::zero_": ("copy", fill),
        "aten::_fused_adamw_": ("optimizer", no_shapes),
        "aten::_fused_adam_": ("optimizer", no_shapes),
        "aten::_fused_sgd_": ("optimizer", no_shapes),
    }
    for op, model in gemm_models().items():
        reg[op] = ("gemm", model)
    for op in CAUSAL_AT.keys() | ATTENTION_BWD:
        reg[op] = ("attention", attention(op))
    for op in _UNARY:
        reg[f"aten::{op}"] = ("elementwise", elementwise)
        reg[f"aten::{op}_"] = ("elementwise", elementwise)  # self is read, then written
    for op in _BINARY:
        reg[f"aten::{op}"] = ("elementwise", elementwise)
        reg[f"aten::{op}_"] = ("elementwise", elementwise)  # self is read, then written
    for op in _REDUCE:
        reg[f"aten::{op}"] = ("reduction", reduction)
    return reg


MODELS = _registry()


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
    args = OpArgs(
        json_list(input_dims),
        [str(t) for t in json_list(input_types)],
        [str(c) for c in json_list(concrete)],
    )
    precision = next(
        (
            PRECISION_OF[t]
            for i, t in enumerate(args.types)
            if args.has_tensor(i) and t in PRECISION_OF
        ),
        None,
    )
    try:
        result = model(args)
    except (NoShapes, ValueError, IndexError, TypeError):
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
