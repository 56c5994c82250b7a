"""Which recorded inputs of a GEMM op are its operands, and its (M, N, K).

One table for the work models (FLOPs and bytes), the weight-GEMM shapes of the inference
and batch rules, the re-read model of tiled GEMM kernels and the alignment rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GemmOperands:
    """Positions in the op's inputs: a @ b (+ bias). `weight_nk`: b is stored N×K (linear's
    weight); `weight`: b can be a 2-D weight that the op multiplies activations by."""

    a: int
    b: int
    bias: int | None = None
    weight_nk: bool = False
    weight: bool = False


GEMM_OPERANDS = {
    "aten::mm": GemmOperands(0, 1, weight=True),
    "aten::addmm": GemmOperands(1, 2, bias=0, weight=True),
    "aten::matmul": GemmOperands(0, 1, weight=True),
    "aten::linear": GemmOperands(0, 1, bias=2, weight_nk=True, weight=True),
    "aten::_scaled_mm": GemmOperands(0, 1),
    "aten::bmm": GemmOperands(0, 1),
    "aten::baddbmm": GemmOperands(1, 2, bias=0),
    "aten::addbmm": GemmOperands(1, 2, bias=0),
}
WEIGHT_GEMM_OPS = tuple(op for op, o in GEMM_OPERANDS.items() if o.weight)
# Ops whose operands are plain 2-D (or batched 3-D) matrices that cuBLAS's tiled kernels
# read panel by panel: matmul broadcasts, linear's x has any rank, _scaled_mm carries scales,
# and addbmm reduces over the batch, so their grids do not map onto the operands.
TILED_GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
_PLAIN = GemmOperands(0, 1)


def gemm_mnk(name: str, shapes: Sequence[Sequence[int]]) -> tuple[int, int, int] | None:
    """(M, N, K) of a GEMM op from its input shapes (an unknown op is read as a @ b of its
    first two inputs); None when they do not fit."""
    ops = GEMM_OPERANDS.get(name, _PLAIN)
    if len(shapes) <= max(ops.a, ops.b):
        return None
    a, b = list(shapes[ops.a]), list(shapes[ops.b])
    if ops.weight_nk:
        if len(a) < 1 or len(b) != 2:
            return None
        return math.prod(a[:-1]), b[0], a[-1]
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        return None
    return a[-2], b[-1], a[-1]
