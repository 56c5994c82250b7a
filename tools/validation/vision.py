"""Image classification training: timm and torchvision models, host and DataLoader inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tools.validation.training import Checkpointing, Precision, prepared, static, train
from tools.validation.workload import Ctx, Workload, forever, loop


def vision_train(
    ctx: Ctx,
    model: nn.Module,
    batch: int,
    inputs: str = "device",
    *,
    channels_last: bool = True,
    precision: Precision = "bf16-autocast",
    compiled: bool = False,
    checkpointed: Checkpointing = False,
    optimizer: str = "fused",
    graphed: bool = False,
    after_step: Callable[[torch.Tensor], None] | None = None,
) -> Workload:
    """Image classification training. inputs: "device" (one batch already there), "pageable"
    or "pinned" (batches in host memory, copied each step), or "loader0"/"loader8" (FakeData
    with real transforms through a DataLoader of 0 or 8 workers). graphed=True (inputs on the
    device): the whole step replayed from a CUDA graph (training.train); after_step: called
    with the loss after each step."""
    size = ctx.pick(224, 32)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(ctx.device, memory_format=fmt)
    y = torch.randint(0, 1000, (batch,), device=ctx.device)
    if inputs == "device":
        x = torch.randn(batch, 3, size, size, device=ctx.device).contiguous(memory_format=fmt)
        next_x = static(x)
    elif inputs in ("pageable", "pinned"):
        host = [torch.randn(batch, 3, size, size).contiguous(memory_format=fmt) for _ in range(4)]
        pinned = inputs == "pinned" and ctx.cuda
        host = [h.pin_memory() for h in host] if pinned else host
        it = forever(lambda: iter(host))
        next_x = lambda: next(it).to(ctx.device, non_blocking=pinned)  # noqa: E731
    else:
        next_x = image_loader(ctx, batch, size, workers=int(inputs.removeprefix("loader")), fmt=fmt)
    forward = prepared(model, compiled=compiled, checkpointed=checkpointed)
    step = train(
        ctx, model, lambda x: F.cross_entropy(forward(x), y), next_x, precision=precision,
        optimizer=optimizer, graphed=graphed, after_step=after_step,
    )  # fmt: skip
    notes = {"inputs": inputs, "channels_last": channels_last, "precision": precision,
             "compiled": compiled, "checkpointed": checkpointed, "graphed": graphed}  # fmt: skip
    return Workload(loop(step), batch, "samples", notes)


def image_loader(
    ctx: Ctx, batch: int, size: int, workers: int, fmt: torch.memory_format
) -> Callable[[], torch.Tensor]:
    from torchvision import datasets, transforms

    tf = transforms.Compose(
        [
            transforms.RandomResizedCrop(size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
        ]
    )
    data = datasets.FakeData(size=batch * 40, image_size=(3, size, size), transform=tf)
    tuned = workers > 0
    loader = torch.utils.data.DataLoader(
        data,
        batch_size=batch,
        shuffle=True,
        drop_last=True,
        num_workers=workers,
        pin_memory=tuned and ctx.cuda,
        persistent_workers=tuned,
        prefetch_factor=4 if tuned else None,
    )
    it = forever(lambda: iter(loader))
    return lambda: next(it)[0].to(ctx.device, non_blocking=tuned).contiguous(memory_format=fmt)


def timm_model(name: str, **kwargs: Any) -> nn.Module:
    import timm

    return timm.create_model(name, pretrained=False, **kwargs)


def resnet50() -> nn.Module:
    from torchvision.models import resnet50 as build

    return build(weights=None)


def vit(ctx: Ctx) -> nn.Module:
    """ViT-S/16 with 6 of its 12 blocks: traces of GPT-2 blocks on CPU put a full one's
    two profiled steps near 1 MB gzipped, too big for a test fixture."""
    kwargs = {"depth": 6} if not ctx.smoke else {"depth": 1, "img_size": 32}
    return timm_model("vit_small_patch16_224", **kwargs)


def swin(ctx: Ctx) -> nn.Module:
    """Swin-T (windowed attention over 7 x 7 patches); the smoke run's 32-pixel images
    take 2 x 2 windows and one block per stage."""
    kwargs = {"img_size": 32, "window_size": 2, "depths": (1, 1, 1, 1)} if ctx.smoke else {}
    return timm_model("swin_tiny_patch4_window7_224", **kwargs)


def coatnet(ctx: Ctx) -> nn.Module:
    """CoAtNet-0 (MBConv stages, then relative-position attention stages); the smoke run's
    32-pixel images need the model built for them."""
    return timm_model("coatnet_0_rw_224", **({"img_size": 32} if ctx.smoke else {}))
