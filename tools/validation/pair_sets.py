"""The standard pairs of one model: each change the findings name, made to its tuned run.

The ninth to twelfth recordings (fresh_pairs.py) take models no earlier pair had and plant
one finding per pair on it; these build those pairs by kind, so that every model gets the
same change under the same name ("precision-llama", "precision-neox"). The thirteenth makes
rival fixes (a 4x batch, CUDA graphs; the sixteenth torch.compile) to those planted pairs'
before workloads ("batch-recompute-qwen2"), from the same planted changes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from torch import nn

from tools.validation.changes import (
    TF,
    empty_cache,
    host_sync_every_100,
    host_sync_every_step,
    pair,
)
from tools.validation.language_models import lm_train, pretokenized, tokenized_in_loop
from tools.validation.vision import vision_train
from tools.validation.workload import Case, Ctx

GRAPHED = "eager -> the whole step replayed from a CUDA graph"
COMPILED = "eager -> torch.compile (Inductor default mode)"
FUSED_ADAMW = "AdamW(foreach=False) -> AdamW(fused=True)"
EMPTIED = "torch.cuda.empty_cache() after every step -> not"
# What a planted kind changes in the tuned run (its pair's before), for the rival fixes made to
# those before workloads too (lm_rivals, vision_rivals).
_COMMON_PLANTED: dict[str, dict[str, Any]] = {
    "optimizer": {"optimizer": "for-loop"},
    "recompute": {"checkpointed": True},
    "allocator": {"after_step": empty_cache},
}
LM_PLANTED = {**_COMMON_PLANTED, "host-preprocess": {"batches": tokenized_in_loop}}
VISION_PLANTED = _COMMON_PLANTED
# The rival fixes' changes: the same on every model but the 4x batch (a vision model's here,
# lm_rivals' in tokens' rows).
_SHARED_RIVALS: dict[str, dict[str, Any]] = {"graphs": {"graphed": True},
                                             "compile": {"compiled": True}}  # fmt: skip
_VISION_RIVALS = {"batch-x4": {"batch": (512, 4)}, **_SHARED_RIVALS}
_RIVAL_TEXT = {
    "batch-x4": ("small-batch", "batch", "a 4x batch (per unit of work)"),
    "graphs": ("cuda-graphs", "graphs", "the whole step replayed from a CUDA graph"),
    "compile": ("kernel-fusion", "fusion-compile", "torch.compile (Inductor default mode)"),
}


def lm_pairs(name: str, cfg: dict[str, Any], kinds: tuple[str, ...]) -> list[Case]:
    """A transformers causal LM's pairs (lm_train's keywords in cfg), of the kinds named."""

    lm = partial(_lm, cfg)
    batch = cfg["batch"]
    planted, rivals = LM_PLANTED, _lm_rivals(batch)
    table = {
        "precision": ("mixed-precision", "fp32 (TF32 off) -> bf16 autocast",
                      lm(precision="fp32"), lm()),
        "attention": ("fused-attention", "eager causal attention -> sdpa", lm(attn="eager"), lm()),
        "optimizer": ("fused-optimizer", FUSED_ADAMW, lm(**planted["optimizer"]), lm()),
        "fusion-compile": ("kernel-fusion", COMPILED, lm(), lm(compiled=True)),
        "recompute": ("memory-headroom",
                      "gradient_checkpointing_enable() -> off, memory mostly free",
                      lm(**planted["recompute"]), lm()),
        "allocator": ("memory-headroom", EMPTIED, lm(**planted["allocator"]), lm()),
        "host-sync": ("host-sync",
                      "loss.item() every step -> loss summed on the GPU, read every 100 steps",
                      lambda c: lm_train(c, **cfg, after_step=host_sync_every_step()),
                      lambda c: lm_train(c, **cfg, after_step=host_sync_every_100())),
        "host-preprocess": ("gpu-starvation",
                            "pure-Python tokenization in the loop -> batches pre-tokenized "
                            "before it", lm(**planted["host-preprocess"]),
                            lm(batches=pretokenized)),
        "batch": ("small-batch", f"batch 2 -> {batch} (per token)", lm(batch=2), lm()),
        # the fixes of the findings ranked above planted ones most often, on the tuned run:
        # a 4x batch and the whole step replayed from a CUDA graph (evaluate.SAME_MODEL)
        "batch-x4": ("small-batch", f"batch {batch} -> {4 * batch} (per token)", lm(),
                     lm(**rivals["batch-x4"])),
        "graphs": ("cuda-graphs", GRAPHED, lm(), lm(**rivals["graphs"])),
    }  # fmt: skip
    return _cases(name, TF, "transformers", table, kinds, f"batch-{name}-b{4 * batch}")


def lm_rivals(name: str, cfg: dict[str, Any], rivals: tuple[tuple[str, str], ...]) -> list[Case]:
    """Rival fixes (a 4x batch, CUDA graphs, torch.compile) made to the before workloads of a
    causal LM's planted pairs: (planted kind, rival kind) each, named
    "<batch|graphs|fusion-compile>-<kind>-<name>"."""
    out: list[Case] = []
    for kind, rival in rivals:
        before = LM_PLANTED[kind]
        after = {**before, **_lm_rivals(cfg["batch"])[rival]}
        out += _rival(name, kind, rival, TF, "transformers", _lm(cfg, **before),
                      _lm(cfg, **after))  # fmt: skip
    return out


def _lm(cfg: dict[str, Any], **change: Any) -> Callable[[Ctx], Any]:
    return lambda c: lm_train(c, **{**cfg, **change})


def _lm_rivals(batch: int) -> dict[str, dict[str, Any]]:
    return {"batch-x4": {"batch": 4 * batch}, **_SHARED_RIVALS}


def vision_pairs(
    name: str, model: Callable[[Ctx], nn.Module], kinds: tuple[str, ...]
) -> list[Case]:
    """A timm image classifier's pairs at batch 128 (224 px), of the kinds named."""

    run = partial(_vision, model)
    planted = VISION_PLANTED
    table = {
        "tf32": ("tf32", "fp32 TF32 off -> TF32 on", run(precision="fp32"),
                 run(precision="tf32")),
        "optimizer": ("fused-optimizer", FUSED_ADAMW, run(**planted["optimizer"]), run()),
        "fusion-compile": ("kernel-fusion", COMPILED, run(), run(compiled=True)),
        "recompute": ("memory-headroom", "set_grad_checkpointing(True) -> off, memory mostly free",
                      run(**planted["recompute"]), run()),
        "layout": ("channels-last", "NCHW -> channels_last", run(channels_last=False), run()),
        "precision": ("mixed-precision", "fp32 TF32 off -> bf16 autocast",
                      run(precision="fp32"), run()),
        "pageable": ("pageable-memcpy",
                     "batches in pageable host memory, .to(cuda) -> pinned, non_blocking",
                     run("pageable"), run("pinned")),
        "batch": ("small-batch", "batch 32 -> 128 (per sample)", run(batch=(32, 2)),
                  run(batch=(128, 4))),
        "allocator": ("memory-headroom", EMPTIED, run(**planted["allocator"]), run()),
        "batch-x4": ("small-batch", "batch 128 -> 512 (per sample)", run(),
                     run(**_VISION_RIVALS["batch-x4"])),
        "graphs": ("cuda-graphs", GRAPHED, run(), run(**_VISION_RIVALS["graphs"])),
    }  # fmt: skip
    cases = _cases(name, ("timm",), "timm", table, kinds, f"batch-{name}-b512", ("dataloader",))
    if "dataloader" in kinds:
        cases += pair(
            f"dataloader-{name}", "gpu-starvation", "timm+torchvision",
            "DataLoader num_workers=0 -> 8 workers, pinned, persistent, prefetch 4",
            ("timm", "torchvision"), run("loader0", (64, 2)), run("loader8", (64, 2)),
        )  # fmt: skip
    return cases


def _cases(
    name: str,
    needs: tuple[str, ...],
    framework: str,
    table: dict[str, tuple[str, str, Callable[[Ctx], Any], Callable[[Ctx], Any]]],
    kinds: tuple[str, ...],
    batch_x4: str,
    by_caller: tuple[str, ...] = (),
) -> list[Case]:
    """The pairs of `kinds` from `table`, named "<kind>-<name>"; the 4x batch is `batch_x4`
    (the ninth recording's names). A kind neither in `table` nor built by the caller
    (`by_caller`) is an error, not a pair left out."""
    unknown = set(kinds) - set(table) - set(by_caller)
    if unknown:
        raise ValueError(f"{name}: no pair of kind {', '.join(sorted(unknown))}")
    cases: list[Case] = []
    for kind in kinds:
        if kind not in table:
            continue
        planted, change, before, after = table[kind]
        pair_id = batch_x4 if kind == "batch-x4" else f"{kind}-{name}"
        cases += pair(pair_id, planted, framework, change, needs, before, after)
    return cases


def vision_rivals(
    name: str, model: Callable[[Ctx], nn.Module], rivals: tuple[tuple[str, str], ...]
) -> list[Case]:
    """lm_rivals for a timm image classifier (vision_pairs' model and sizes)."""
    out: list[Case] = []
    for kind, rival in rivals:
        before = VISION_PLANTED[kind]
        out += _rival(name, kind, rival, ("timm",), "timm", _vision(model, **before),
                      _vision(model, **{**before, **_VISION_RIVALS[rival]}))  # fmt: skip
    return out


def _vision(
    model: Callable[[Ctx], nn.Module],
    inputs: str = "device",
    batch: tuple[int, int] = (128, 2),
    **change: Any,
) -> Callable[[Ctx], Any]:
    return lambda c: vision_train(c, model(c), c.pick(*batch), inputs, **change)


def _rival(
    name: str,
    kind: str,
    rival: str,
    needs: tuple[str, ...],
    framework: str,
    before: Callable[[Ctx], Any],
    after: Callable[[Ctx], Any],
) -> list[Case]:
    planted, prefix, text = _RIVAL_TEXT[rival]
    change = f"{kind}-{name}'s before -> {text}"
    return pair(f"{prefix}-{kind}-{name}", planted, framework, change, needs, before, after)
