"""What the analyses know about tensors and hardware, in one place: element sizes and
precisions of dtypes (dtypes.py), which inputs of a GEMM op are its operands (gemm.py), and
GPU-to-GPU link bandwidths (links.py). The work models, the rules and the device specs read
these tables; none keeps a copy."""
