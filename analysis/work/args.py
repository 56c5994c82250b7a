"""One op call's recorded inputs as the work models read them: shapes, dtypes, scalars.

torch.profiler records them as JSON text (`Input Dims`, `Input type`, `Concrete Inputs`,
record_shapes=True); a TensorList input (the `_foreach_*` and fused optimizer ops) has no
shapes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.model.dtypes import BYTES_PER_ELEMENT


class NoShapes(Exception):
    """The op's recorded inputs do not hold the shapes its model needs."""


@dataclass(frozen=True, slots=True)
class OpArgs:
    """One op call's recorded inputs."""

    dims: list[Any]
    types: list[str]
    concrete: list[str]

    def shape(self, i: int) -> list[int]:
        if i >= len(self.dims) or not isinstance(self.dims[i], list) or not self.dims[i]:
            raise NoShapes
        d = self.dims[i]
        if not all(isinstance(x, int) for x in d):
            raise NoShapes  # a TensorList: the profiler records no shapes for it
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


Result = tuple[float, float] | tuple[float, float, str]
Model = Callable[[OpArgs], Result]


def numel(shape: Sequence[int]) -> float:
    return float(math.prod(shape))


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


def types(text: object) -> list[str]:
    """`Input type` JSON text as a list of type names ([] when missing)."""
    return [str(t) for t in json_list(text)]
