"""Element sizes and precisions of the dtypes a trace names, in each naming the trace uses.

torch.profiler writes an op's `Input type` as C++ type names (`float`, `c10::BFloat16`), a
cast's target dtype as a torch ScalarType code (`Concrete Inputs` of `_to_copy`), and NCCL's
collective metadata as ScalarType names (`Float`, `BFloat16`).
"""

from __future__ import annotations

# `Input type` names -> bytes per element.
BYTES_PER_ELEMENT = {
    "double": 8, "long int": 8, "long": 8, "c10::complex<float>": 8, "float": 4, "int": 4,
    "unsigned int": 4, "c10::Half": 2, "c10::BFloat16": 2, "short int": 2, "short": 2,
    "bool": 1, "unsigned char": 1, "signed char": 1, "char": 1, "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1, "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1,
    "c10::Float8_e8m0fnu": 1,
}  # fmt: skip

# `Input type` names -> the precision whose roof a matrix op of that dtype is held to.
PRECISION_OF = {
    "double": "fp64", "float": "fp32", "c10::Half": "fp16", "c10::BFloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8", "signed char": "int8", "unsigned char": "int8",
}  # fmt: skip

# 16-bit floating point `Input type` names (the weights INT8/INT4 quantization would shrink).
HALF_TYPES = ("c10::BFloat16", "c10::Half")

# torch ScalarType codes (c10/core/ScalarType.h) -> bytes per element, for casts.
SCALAR_TYPE_BYTES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 15: 2, 23: 1, 24: 1}

# ScalarType names in NCCL collective metadata (`dtype`) -> bytes per element.
COLLECTIVE_DTYPE_BYTES = {
    "Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4, "Byte": 1,
    "Char": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1,
}  # fmt: skip
