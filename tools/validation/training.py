"""The training step every training workload runs, and the smoke run's sizes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from tools.validation.workload import Ctx

Precision = str  # fp32 (TF32 off) | tf32 | bf16-autocast | bf16 (weights and inputs already)


def set_precision(precision: Precision) -> None:
    """TF32 for matmuls and cuDNN: on for tf32, off for fp32, PyTorch's defaults otherwise."""
    tf32 = {"fp32": (False, False), "tf32": (True, True)}.get(precision, (False, True))
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


def train(
    ctx: Ctx,
    model: nn.Module,
    loss_fn: Callable[[Any], torch.Tensor],
    batch: Callable[[], Any],
    *,
    precision: Precision = "bf16-autocast",
    optimizer: str = "fused",
    after_step: Callable[[torch.Tensor], None] | None = None,
    graphed: bool = False,
) -> Callable[[], None]:
    """One training step: batch, forward and loss (autocast for bf16-autocast), backward,
    AdamW (fused, or one parameter at a time with optimizer="for-loop"), zero_grad.
    `loss_fn` may call a compiled or checkpointed version of `model` (see `prepared`).
    graphed=True: the whole step captured once in a CUDA graph and replayed (`_captured`;
    a static batch, a capturable fused AdamW, no after_step)."""
    set_precision(precision)
    params = [p for p in model.parameters() if p.requires_grad]
    opt_kwargs = {"fused": True} if optimizer == "fused" else {"foreach": False, "fused": False}
    graphed = graphed and ctx.cuda
    if graphed:
        opt_kwargs["capturable"] = True  # its step count on the device, as capture needs
    opt = torch.optim.AdamW(params, lr=1e-4, **opt_kwargs)
    autocast = precision == "bf16-autocast"

    def update(b: Any) -> torch.Tensor:
        """Forward, loss, backward and the optimizer's step on batch `b`. Captured, without
        the cast cache: a replayed graph may not reuse casts made outside it."""
        with torch.autocast(
            ctx.device.type, dtype=torch.bfloat16, enabled=autocast, cache_enabled=not graphed
        ):
            loss = loss_fn(b)
        loss.backward()
        opt.step()
        return loss

    if graphed:
        static_batch = batch()
        return _captured(lambda: update(static_batch), opt)

    def step() -> None:
        loss = update(batch())
        opt.zero_grad(set_to_none=True)
        if after_step is not None:
            after_step(loss)

    return step


def _captured(body: Callable[[], Any], opt: torch.optim.Optimizer) -> Callable[[], None]:
    """`body` (forward, backward, optimizer step) captured in a CUDA graph, as PyTorch's
    whole-network capture does it: warm-up steps on a side stream, then the gradients set to
    None so that the captured backward allocates them from the graph's pool (each replay
    writes them afresh: no zero_grad). Returns the replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        body()
    return graph.replay


Checkpointing = bool | str  # False, True (the framework's default kind) or "reentrant"


def prepared(
    model: nn.Module, *, compiled: bool = False, checkpointed: Checkpointing = False
) -> nn.Module:
    """The module the loss calls: torch.compile'd (Inductor's default mode: fused kernels,
    no CUDA graphs), and/or with activation checkpointing as the framework enables it
    (transformers: gradient_checkpointing_enable(), non-reentrant by default, reentrant with
    checkpointed="reentrant"; timm: set_grad_checkpointing())."""
    if checkpointed:
        if hasattr(model, "gradient_checkpointing_enable"):
            kwargs = {"use_reentrant": checkpointed == "reentrant"}
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
        else:
            model.set_grad_checkpointing(True)
    return torch.compile(model) if compiled else model


def smaller(n: int, tiny: int, align: int) -> int:
    """A smoke-run size: `tiny`, or one less when `n` is not a multiple of `align`."""
    return tiny if n % align == 0 else tiny - 1


def static(x: Any) -> Callable[[], Any]:
    """The same batch every step (already on the device)."""
    return lambda: x
