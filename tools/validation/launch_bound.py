"""A launch-bound MLP, eager or replayed from CUDA graphs."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from tools.validation.training import static, train
from tools.validation.workload import Ctx, Workload, loop


def launch_bound(ctx: Ctx, graphs: bool) -> Workload:
    """A deep MLP of small Linear + LayerNorm + GELU blocks in bf16: hundreds of tiny kernels a
    step. graphs=True: forward and backward captured by torch.cuda.make_graphed_callables and
    replayed (torch.compile's mode="reduce-overhead" failed its steady state here: its
    CUDA-graph outputs were overwritten by the next replay before the optimizer read them)."""
    blocks, d, batch = ctx.pick((16, 256, 64), (2, 32, 4))
    layers = [m for _ in range(blocks) for m in (nn.Linear(d, d), nn.LayerNorm(d), nn.GELU())]
    model = nn.Sequential(*layers).to(ctx.device, torch.bfloat16)
    x = torch.randn(batch, d, device=ctx.device, dtype=torch.bfloat16)
    y = torch.randn_like(x)
    forward: Callable[[torch.Tensor], torch.Tensor] = model
    if graphs and ctx.cuda:
        forward = torch.cuda.make_graphed_callables(model, (x,))
    step = train(ctx, model, lambda b: F.mse_loss(forward(b), y), static(x), precision="bf16")
    notes = {"blocks": blocks, "d": d, "graphs": "make_graphed_callables" if graphs else "none"}
    return Workload(loop(step), batch, "samples", notes)
