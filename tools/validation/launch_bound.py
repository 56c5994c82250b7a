"""A launch-bound MLP, eager or replayed from CUDA graphs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tools.validation.timing import sync
from tools.validation.training import static, train
from tools.validation.workload import Ctx, Workload, loop

COMPILE_BUDGET_S = 150  # torch.compile is skipped for CUDA graphs when less than this is left


def launch_bound(ctx: Ctx, graphs: bool) -> Workload:
    """A deep MLP of small Linear + LayerNorm + GELU blocks in bf16: hundreds of tiny kernels a
    step. graphs=True: torch.compile(mode="reduce-overhead") (CUDA graphs), or, if compiling
    fails or the budget is short, forward + backward captured by make_graphed_callables."""
    blocks, d, batch = ctx.pick((16, 256, 64), (2, 32, 4))
    layers = [m for _ in range(blocks) for m in (nn.Linear(d, d), nn.LayerNorm(d), nn.GELU())]
    model = nn.Sequential(*layers).to(ctx.device, torch.bfloat16)
    x = torch.randn(batch, d, device=ctx.device, dtype=torch.bfloat16)
    y = torch.randn_like(x)
    notes: dict[str, Any] = {"blocks": blocks, "d": d, "graphs": "none"}
    forward: Callable[[torch.Tensor], torch.Tensor] = model
    if graphs:
        forward = graphed_forward(ctx, model, x, y, notes)

    def loss_fn(b: torch.Tensor) -> torch.Tensor:
        if notes["graphs"] == "torch.compile":
            torch.compiler.cudagraph_mark_step_begin()  # a new training iteration
        return F.mse_loss(forward(b), y)

    step = train(ctx, model, loss_fn, static(x), precision="bf16")
    return Workload(loop(step), batch, "samples", notes)


def graphed_forward(
    ctx: Ctx, model: nn.Module, x: torch.Tensor, y: torch.Tensor, notes: dict[str, Any]
) -> Callable[[torch.Tensor], torch.Tensor]:
    if ctx.seconds_left() > COMPILE_BUDGET_S:
        compiled = torch.compile(model, mode="reduce-overhead")
        t0 = time.perf_counter()
        try:
            for _ in range(3):  # compile, then cudagraph trees' warm-up and recording
                torch.compiler.cudagraph_mark_step_begin()
                F.mse_loss(compiled(x), y).backward()
            sync(ctx)
            model.zero_grad(set_to_none=True)
            notes.update(graphs="torch.compile", compile_s=round(time.perf_counter() - t0, 1))
            return compiled
        except Exception as e:  # fall back to capturing by hand
            notes["compile_error"] = f"{type(e).__name__}: {e}"[:500]
            torch._dynamo.reset()
    else:
        notes["compile_skipped"] = f"{ctx.seconds_left():.0f} s of budget left"
    graphed = torch.cuda.make_graphed_callables(model, (x,))
    notes["graphs"] = "make_graphed_callables"
    return graphed
