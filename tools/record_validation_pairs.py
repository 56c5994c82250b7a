"""Record before/after pairs of real-framework workloads, timed without the profiler.

The recommendations rank fixes by estimated time saved. To check those estimates, each pair
runs one workload twice with exactly one change (the "before" plants a recommendation, the
"after" is the tuned reference, in which it must not appear). Every run is timed unprofiled
(N steps, CUDA events at the step boundaries, no synchronize inside the loop), then profiled
with the dashboard's hook (ingest=False: the GPU machine has neither duckdb nor msgspec), whose
trace also carries the hook's own unprofiled measurement ("dashboardUnprofiledSteps").

On the GPU machine (one H200, no network: every model is built from a config with random
weights), from the repository root:

    PYTHONUNBUFFERED=1 python3 tools/record_validation_pairs.py OUT --tar $OUT/validation.tar \
        --budget-s 500

Writes OUT/summary.json after every workload (ids, roles, planted recommendation, timings,
per-step times, units per step, trace path, versions, errors) and OUT/traces/, then packs both
into the --tar file (uncompressed, at most 16 MiB; traces that would not fit are listed in the
summary's `tar_left_out`). `--list` prints the workloads, `--only ID[,ID]` runs some (a pair id
selects its runs), `--budget-s` stops starting workloads once that many seconds have passed.

`--smoke` runs tiny CPU versions of every workload whose libraries import here (the others
are skipped with the reason), so the control flow, the timing, the profiling with the hook
and the summary are exercised without a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import importlib.util
import json
import logging
import os
import platform
import random
import statistics
import string
import sys
import tarfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from collectors.torch_profiler import profile_to_dashboard

WARMUP_STEPS = 5
TIMED_STEPS = 20
PROFILE_STEPS = 6  # 3 unprofiled (timed by the hook), 1 warmup, 2 recorded
SCHEDULE = {"wait": 3, "warmup": 1, "active": 2, "repeat": 1}
TAR_LIMIT_BYTES = 16 << 20
COMPILE_BUDGET_S = 150  # torch.compile is skipped for CUDA graphs when less than this is left
DECODE_PROMPT = 128
DECODE_CACHE_LEN = 256  # prompt + every step of every phase, with room to spare
SESSION = "validation"  # fixed, so trace paths are OUT/traces/<id>/validation/cycle1/...

Boundary = Callable[[], None]


@dataclass
class Ctx:
    """Where the workloads run and at what size."""

    smoke: bool
    device: torch.device
    started: float
    budget_s: float | None

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def pick(self, full: Any, smoke: Any) -> Any:
        """A size: `full` on the GPU machine, `smoke` in the CPU smoke run."""
        return smoke if self.smoke else full

    def seconds_left(self) -> float:
        return float("inf") if self.budget_s is None else self.budget_s - self.elapsed()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


@dataclass
class Workload:
    """A built workload: `run(n, boundary)` runs n steps, calling boundary() before the first
    and after each (a loop, or a framework's callbacks)."""

    run: Callable[[int, Boundary], None]
    units_per_step: int
    unit: str  # tokens, samples or sequences
    notes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    id: str
    pair: str
    role: str  # before | after
    planted: str | None  # the recommendation the run should trigger; None for the tuned runs
    framework: str
    change: str
    needs: tuple[str, ...]  # importable modules; "a|b" for either
    build: Callable[[Ctx], Workload]
    with_stack: bool = False


def loop(step: Callable[[], None]) -> Callable[[int, Boundary], None]:
    """The plain training or decode loop: step, then a boundary."""

    def run(n: int, boundary: Boundary) -> None:
        boundary()
        for _ in range(n):
            step()
            boundary()

    return run


def forever(make: Callable[[], Iterator[Any]]) -> Iterator[Any]:
    """Epoch after epoch of an iterable (a DataLoader), as one iterator."""
    while True:
        yield from make()


# ---------------------------------------------------------------- timing and profiling


def sync(ctx: Ctx) -> None:
    if ctx.cuda:
        torch.cuda.synchronize()


class StepClock:
    """Boundary marks for `steps` steps: CUDA events on the current stream (no synchronize
    inside the loop), the host clock on CPU; a synchronize before the first step and after
    the last one gives the wall-clock mean."""

    def __init__(self, ctx: Ctx, steps: int) -> None:
        self.ctx, self.steps = ctx, steps
        self.marks: list[Any] = []
        self.wall_s = [0.0, 0.0]

    def __call__(self) -> None:
        if not self.marks:
            sync(self.ctx)
            self.wall_s[0] = time.perf_counter()
        if self.ctx.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            self.marks.append(time.perf_counter_ns())
        if len(self.marks) == self.steps + 1:
            sync(self.ctx)
            self.wall_s[1] = time.perf_counter()

    def result(self) -> dict[str, Any]:
        if len(self.marks) != self.steps + 1:
            raise RuntimeError(f"{len(self.marks)} step boundaries for {self.steps} steps")
        pairs = zip(self.marks, self.marks[1:], strict=False)
        if self.ctx.cuda:
            ms = [float(a.elapsed_time(b)) for a, b in pairs]
        else:
            ms = [(b - a) / 1e6 for a, b in pairs]
        return {
            "median_ms": statistics.median(ms),
            "mean_ms": statistics.fmean(ms),
            "wall_mean_ms": (self.wall_s[1] - self.wall_s[0]) * 1e3 / self.steps,
            "per_step_ms": [round(t, 4) for t in ms],
            "steps": self.steps,
            "clock": "cuda_event" if self.ctx.cuda else "host",
        }


def time_unprofiled(ctx: Ctx, w: Workload) -> dict[str, Any]:
    clock = StepClock(ctx, TIMED_STEPS)
    w.run(TIMED_STEPS, clock)
    return clock.result()


def profile(ctx: Ctx, case: Case, w: Workload, out: Path) -> dict[str, Any]:
    """PROFILE_STEPS steps under the hook; the profile starts at the first step boundary, so a
    framework's setup before its first step is not part of the hook's first unprofiled step."""
    with contextlib.ExitStack() as stack:
        prof: Any = None

        def boundary() -> None:
            nonlocal prof
            if prof is None:
                prof = stack.enter_context(
                    profile_to_dashboard(
                        case.id,
                        ingest=False,
                        trace_dir=out / "traces",
                        session=SESSION,
                        schedule=torch.profiler.schedule(**SCHEDULE),
                        profile_memory=True,
                        with_stack=case.with_stack,
                    )
                )
            else:
                prof.step()

        w.run(PROFILE_STEPS, boundary)
    h = prof.dashboard
    if h.errors:
        raise RuntimeError("; ".join(h.errors))
    (trace,) = h.trace_files
    (hook,) = h.unprofiled
    return {
        "trace": trace.relative_to(out.resolve()).as_posix(),
        "trace_bytes": trace.stat().st_size,
        "hook_unprofiled": None if hook is None else asdict(hook),
    }


# ---------------------------------------------------------------- the training step

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
) -> Callable[[], None]:
    """One training step: batch, forward and loss (autocast for bf16-autocast), backward,
    AdamW (fused, or one parameter at a time with optimizer="for-loop"), zero_grad."""
    set_precision(precision)
    params = [p for p in model.parameters() if p.requires_grad]
    opt_kwargs = {"fused": True} if optimizer == "fused" else {"foreach": False, "fused": False}
    opt = torch.optim.AdamW(params, lr=1e-4, **opt_kwargs)
    autocast = precision == "bf16-autocast"

    def step() -> None:
        b = batch()
        with torch.autocast(ctx.device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(b)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if after_step is not None:
            after_step(loss)

    return step


def smaller(n: int, tiny: int, align: int) -> int:
    """A smoke-run size: `tiny`, or one less when `n` is not a multiple of `align`."""
    return tiny if n % align == 0 else tiny - 1


def static(x: Any) -> Callable[[], Any]:
    """The same batch every step (already on the device)."""
    return lambda: x


# ---------------------------------------------------------------- transformers: GPT-2, BERT


def gpt2(ctx: Ctx, layers: int, d: int, heads: int, vocab: int, attn: str = "sdpa") -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        n_layer=layers,
        n_embd=d,
        n_head=heads,
        vocab_size=vocab,
        n_positions=ctx.pick(1024, 64),
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation=attn,
    )
    return GPT2LMHeadModel(cfg).to(ctx.device)


def gpt2_train(
    ctx: Ctx,
    *,
    layers: int = 4,
    d: int = 512,
    heads: int = 8,
    vocab: int = 50304,
    seq: int = 512,
    batch: int = 16,
    attn: str = "sdpa",
    lora: bool = False,
    batches: Callable[[int, int, int], Callable[[], torch.Tensor]] | None = None,
    **train_kwargs: Any,
) -> Workload:
    """GPT-2 language-model training; sizes are the GPU machine's (the smoke run shrinks them,
    keeping a vocab, sequence or batch that is not a multiple of 8, 64 or 8 misaligned)."""
    if ctx.smoke:
        layers, d, heads = 2, 64, 4
        vocab, seq, batch = smaller(vocab, 1024, 8), smaller(seq, 32, 64), smaller(batch, 2, 8)
    model = gpt2(ctx, layers, d, heads, vocab, attn)
    notes: dict[str, Any] = {"layers": layers, "d": d, "vocab": vocab, "seq": seq, "batch": batch}
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model.to(torch.bfloat16),  # frozen base in bf16; PEFT keeps the adapters in fp32
            LoraConfig(
                r=16,
                lora_alpha=32,
                target_modules=r".*\.attn\.(c_attn|c_proj)",
                fan_in_fan_out=True,
            ),
        )
        notes["lora"] = "r=16 on attn.c_attn and attn.c_proj"
    if batches is None:
        x = torch.randint(0, vocab, (batch, seq), device=ctx.device)
        next_batch = static(x)
    else:
        next_batch = batches(vocab, seq, batch)

    def lm_loss(x: torch.Tensor) -> torch.Tensor:
        x = x.to(ctx.device)  # a host batch's one copy; a no-op for one already there
        return model(input_ids=x, labels=x).loss

    step = train(ctx, model, lm_loss, next_batch, **train_kwargs)
    return Workload(loop(step), batch * seq, "tokens", notes)


class PythonTokenizer:
    """Host-side batch building in pure Python, as a training loop without a DataLoader does:
    synthetic documents (twice the sequence in words), split, normalized, looked up in a
    word -> id dict, padded or truncated, made a tensor."""

    def __init__(self, vocab: int, seq: int, batch: int) -> None:
        self.rng = random.Random(0)
        letters = string.ascii_letters
        self.words = [
            "".join(self.rng.choice(letters) for _ in range(self.rng.randint(2, 9)))
            for _ in range(20000)
        ]
        self.ids = {w.lower(): i % (vocab - 1) + 1 for i, w in enumerate(self.words)}
        self.seq, self.batch = seq, batch

    def __call__(self) -> torch.Tensor:
        rows = []
        for _ in range(self.batch):
            text = " ".join(self.rng.choices(self.words, k=2 * self.seq)) + "."
            ids = [self.ids.get(w.strip(".,;:!?").lower(), 0) for w in text.split()]
            rows.append((ids + [0] * self.seq)[: self.seq])
        return torch.tensor(rows)


def tokenized_in_loop(vocab: int, seq: int, batch: int) -> Callable[[], torch.Tensor]:
    return PythonTokenizer(vocab, seq, batch)


def pretokenized(vocab: int, seq: int, batch: int) -> Callable[[], torch.Tensor]:
    """The same tokenizer's batches, built before the loop; the loop only cycles them."""
    tok = PythonTokenizer(vocab, seq, batch)
    ready = [tok() for _ in range(8)]
    it = forever(lambda: iter(ready))
    return lambda: next(it)


def bert_mlm(ctx: Ctx, attn: str) -> Workload:
    """BERT masked-LM training (bidirectional attention), bf16 autocast; vocab padded to a
    multiple of 64 so that only the attention differs from a tuned run."""
    from transformers import BertConfig, BertForMaskedLM

    layers, d, heads, seq, batch = ctx.pick((6, 512, 8, 512, 16), (2, 64, 4, 32, 2))
    vocab = ctx.pick(30528, 1024)
    cfg = BertConfig(
        vocab_size=vocab,
        hidden_size=d,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * d,
        max_position_embeddings=seq,
        attn_implementation=attn,
    )
    model = BertForMaskedLM(cfg).to(ctx.device)
    x = torch.randint(0, vocab, (batch, seq), device=ctx.device)
    labels = torch.where(torch.rand(x.shape, device=ctx.device) < 0.15, x, -100)
    step = train(ctx, model, lambda b: model(input_ids=b[0], labels=b[1]).loss, static((x, labels)))
    return Workload(loop(step), batch * seq, "tokens", {"layers": layers, "attn": attn})


# ---------------------------------------------------------------- vision: timm, torchvision


def vision_train(
    ctx: Ctx,
    model: nn.Module,
    batch: int,
    inputs: str = "device",
    *,
    channels_last: bool = True,
    precision: Precision = "bf16-autocast",
) -> Workload:
    """Image classification training. inputs: "device" (one batch already there), "pageable"
    or "pinned" (batches in host memory, copied each step), or "loader0"/"loader8" (FakeData
    with real transforms through a DataLoader of 0 or 8 workers)."""
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
    step = train(ctx, model, lambda x: F.cross_entropy(model(x), y), next_x, precision=precision)
    notes = {"inputs": inputs, "channels_last": channels_last, "precision": precision}
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


# ---------------------------------------------------------------- launch-bound: CUDA graphs


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


# ---------------------------------------------------------------- decode: Llama


class HFDecoder:
    """transformers' LlamaForCausalLM with a StaticCache, greedy, one token per step. A step
    reads and writes only static buffers (ids, position, a 4-D boolean mask; the cache counts
    its own length), so it can be captured in a CUDA graph and replayed as it is."""

    def __init__(self, ctx: Ctx, batch: int) -> None:
        from transformers import LlamaForCausalLM, StaticCache

        self.cfg = llama_config(ctx)
        self.model = LlamaForCausalLM(self.cfg).to(ctx.device, torch.bfloat16).eval()
        self.cache = StaticCache(config=self.cfg, max_cache_len=DECODE_CACHE_LEN)
        self.setup(ctx, batch)

    def setup(self, ctx: Ctx, batch: int) -> None:
        self.ids = torch.zeros(batch, 1, dtype=torch.long, device=ctx.device)
        self.pos = torch.zeros(1, 1, dtype=torch.long, device=ctx.device)
        self.mask = torch.zeros(batch, 1, 1, DECODE_CACHE_LEN, dtype=torch.bool, device=ctx.device)
        self.slots = torch.arange(DECODE_CACHE_LEN, device=ctx.device)
        self.issued = 0  # steps launched, counted on the host: the cache must not overflow

    def logits(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> Any:
        out = self.model(
            input_ids=ids,
            position_ids=positions,
            attention_mask=mask,
            past_key_values=self.cache,
            use_cache=True,
            logits_to_keep=1,
        )
        return out.logits

    @torch.no_grad()
    def prefill(self, prompt: torch.Tensor) -> None:
        n = prompt.shape[1]
        positions = torch.arange(n, device=prompt.device)
        causal = self.slots[None, :] <= positions[:, None]
        mask = causal.expand(prompt.shape[0], 1, n, DECODE_CACHE_LEN)
        self.ids.copy_(self.logits(prompt, positions[None], mask)[:, -1].argmax(-1, keepdim=True))
        self.pos.fill_(n)

    @torch.no_grad()
    def step(self) -> None:
        self.mask.copy_((self.slots <= self.pos.view(1)).expand_as(self.mask))
        self.ids.copy_(self.logits(self.ids, self.pos, self.mask)[:, -1].argmax(-1, keepdim=True))
        self.pos.add_(1)


class HandDecoder(HFDecoder):
    """The same decoder written out in plain torch (RMSNorm, RoPE, grouped-query attention
    over a static KV cache, SwiGLU), for when transformers' decode step cannot be captured.
    Only `logits` differs: prefill and step, and their static buffers, are HFDecoder's."""

    def __init__(self, ctx: Ctx, batch: int) -> None:
        c = self.cfg = llama_config(ctx)
        self.heads, self.kv_heads = c.num_attention_heads, c.num_key_value_heads
        self.hd = c.hidden_size // c.num_attention_heads
        kv = self.kv_heads * self.hd

        def linear(i: int, o: int) -> nn.Linear:
            return nn.Linear(i, o, bias=False)

        self.net = nn.ModuleDict({
            "embed": nn.Embedding(c.vocab_size, c.hidden_size),
            "layers": nn.ModuleList(nn.ModuleDict({
                "n1": nn.RMSNorm(c.hidden_size, c.rms_norm_eps),
                "q": linear(c.hidden_size, c.hidden_size),
                "k": linear(c.hidden_size, kv), "v": linear(c.hidden_size, kv),
                "o": linear(c.hidden_size, c.hidden_size),
                "n2": nn.RMSNorm(c.hidden_size, c.rms_norm_eps),
                "gate": linear(c.hidden_size, c.intermediate_size),
                "up": linear(c.hidden_size, c.intermediate_size),
                "down": linear(c.intermediate_size, c.hidden_size),
            }) for _ in range(c.num_hidden_layers)),
            "norm": nn.RMSNorm(c.hidden_size, c.rms_norm_eps),
            "head": linear(c.hidden_size, c.vocab_size),
        }).to(ctx.device, torch.bfloat16)  # fmt: skip
        shape = (c.num_hidden_layers, batch, self.kv_heads, DECODE_CACHE_LEN, self.hd)
        self.k = torch.zeros(shape, device=ctx.device, dtype=torch.bfloat16)
        self.v = torch.zeros_like(self.k)
        self.inv_freq = 1.0 / (
            c.rope_parameters["rope_theta"]
            ** (torch.arange(0, self.hd, 2, device=ctx.device).float() / self.hd)
        )
        self.setup(ctx, batch)

    def logits(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> Any:
        pos = positions.view(-1)
        b, t = ids.shape
        angles = pos[:, None].float() * self.inv_freq[None, :]
        cos, sin = (
            torch.cat([f(angles)] * 2, -1).to(torch.bfloat16) for f in (torch.cos, torch.sin)
        )

        def rope(z: torch.Tensor) -> torch.Tensor:
            half = z.shape[-1] // 2
            return z * cos + torch.cat([-z[..., half:], z[..., :half]], -1) * sin

        x = self.net["embed"](ids)
        for i, layer in enumerate(self.net["layers"]):
            h = layer["n1"](x)
            q = rope(layer["q"](h).view(b, t, self.heads, self.hd).transpose(1, 2))
            k = rope(layer["k"](h).view(b, t, self.kv_heads, self.hd).transpose(1, 2))
            v = layer["v"](h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
            self.k[i].index_copy_(2, pos, k)
            self.v[i].index_copy_(2, pos, v)
            a = F.scaled_dot_product_attention(q, self.k[i], self.v[i], mask, enable_gqa=True)
            x = x + layer["o"](a.transpose(1, 2).reshape(b, t, -1))
            h = layer["n2"](x)
            x = x + layer["down"](F.silu(layer["gate"](h)) * layer["up"](h))
        return self.net["head"](self.net["norm"](x[:, -1:]))


def llama_config(ctx: Ctx) -> Any:
    from transformers import LlamaConfig

    layers, d, heads, kv_heads, ff, vocab = ctx.pick(
        (4, 1024, 16, 4, 2816, 32000), (2, 64, 4, 2, 128, 512)
    )
    return LlamaConfig(
        num_hidden_layers=layers,
        hidden_size=d,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=ff,
        vocab_size=vocab,
        max_position_embeddings=DECODE_CACHE_LEN,
        attn_implementation="sdpa",
    )


def capture(ctx: Ctx, step: Callable[[], None]) -> Callable[[], None]:
    """One step captured in a CUDA graph (after warm-up steps on a side stream); its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay


_capture_probe: dict[str, Any] = {}


def capturable_decoder(ctx: Ctx) -> tuple[type[HFDecoder], str | None]:
    """The decoder both runs of decode-cudagraph-llama use: transformers' if its decode step
    can be captured here (tried once), else the hand-written one, and why."""
    if "impl" not in _capture_probe:
        if not ctx.cuda:
            _capture_probe.update(impl=HandDecoder, why="no CUDA: nothing to capture")
        else:
            try:
                d = HFDecoder(ctx, batch=1)
                d.prefill(torch.zeros(1, 8, dtype=torch.long, device=ctx.device))
                capture(ctx, d.step)()
                sync(ctx)
                _capture_probe.update(impl=HFDecoder, why=None)
            except Exception as e:
                why = f"capturing transformers' decode step failed: {type(e).__name__}: {e}"
                _capture_probe.update(impl=HandDecoder, why=why[:500])
    return _capture_probe["impl"], _capture_probe["why"]


def decode(ctx: Ctx, batch: int, graph: bool, impl: type[HFDecoder] | None = None) -> Workload:
    """Greedy decode with a static KV cache after a DECODE_PROMPT-token prefill; a step is one
    new token per sequence, eager or replayed from a CUDA graph."""
    notes: dict[str, Any] = {"batch": batch, "cuda_graph": graph}
    if impl is None:
        impl, why = capturable_decoder(ctx)
        notes["probe"] = why
    notes["decoder"] = impl.__name__
    d = impl(ctx, batch)
    prompt_len = ctx.pick(DECODE_PROMPT, 16)
    d.prefill(torch.randint(0, d.cfg.vocab_size, (batch, prompt_len), device=ctx.device))
    step = d.step
    if graph:
        if ctx.cuda:
            try:
                step = capture(ctx, d.step)
            except Exception as e:  # recorded; this run then says it was not captured
                notes["capture_error"] = f"{type(e).__name__}: {e}"[:500]
                notes["cuda_graph"] = False
        else:
            notes["cuda_graph"] = "not captured: no CUDA"

    def counted() -> None:
        if d.issued >= DECODE_CACHE_LEN - prompt_len - 8:  # 3 capture warm-ups, 1 captured
            raise RuntimeError("the static cache is full")
        d.issued += 1
        step()

    return Workload(loop(counted), batch, "sequences", notes)


# ---------------------------------------------------------------- lightning


def lightning_train(ctx: Ctx, precision: str) -> Workload:
    """A TransformerEncoder language model as a LightningModule, trained by Trainer.fit;
    step boundaries come from a Callback (the profile's prof.step() too)."""
    try:
        import lightning.pytorch as pl
    except ImportError:
        import pytorch_lightning as pl
    logging.getLogger(pl.__name__).setLevel(logging.ERROR)  # its banners, each fit

    vocab, d, heads, layers, seq, batch = ctx.pick(
        (8192, 512, 8, 4, 256, 32), (512, 64, 4, 2, 32, 2)
    )

    class Encoder(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)

        def training_step(self, b: Any, _: int) -> torch.Tensor:
            x, y = b
            return F.cross_entropy(
                self.head(self.encoder(self.embed(x))).flatten(0, 1), y.flatten()
            )

        def configure_optimizers(self) -> Any:
            return torch.optim.AdamW(self.parameters(), lr=1e-4, fused=True)

    class Boundaries(pl.Callback):
        def __init__(self, boundary: Boundary) -> None:
            self.boundary, self.started = boundary, False

        def on_train_batch_start(self, *_: Any, **__: Any) -> None:
            if not self.started:
                self.started = True
                self.boundary()

        def on_train_batch_end(self, *_: Any, **__: Any) -> None:
            self.boundary()

    set_precision("fp32")  # "32-true" is fp32 with TF32 off
    module = Encoder()
    tokens = torch.randint(0, vocab, (64 * batch, seq + 1))
    data = torch.utils.data.TensorDataset(tokens[:, :-1], tokens[:, 1:])
    loader = torch.utils.data.DataLoader(data, batch_size=batch, pin_memory=ctx.cuda)

    def run(n: int, boundary: Boundary) -> None:
        trainer = pl.Trainer(
            accelerator="gpu" if ctx.cuda else "cpu",
            devices=1,
            precision=precision,
            max_steps=n,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
            callbacks=[Boundaries(boundary)],
        )
        trainer.fit(module, train_dataloaders=loader)

    return Workload(run, batch * seq, "tokens", {"precision": precision, "layers": layers})


# ---------------------------------------------------------------- the pairs


def host_sync_every_step() -> Callable[[torch.Tensor], None]:
    losses: list[float] = []
    return lambda loss: losses.append(loss.item())


def host_sync_every_100() -> Callable[[torch.Tensor], None]:
    state: dict[str, Any] = {"sum": None, "n": 0, "read": []}

    def after(loss: torch.Tensor) -> None:
        state["sum"] = loss.detach() if state["sum"] is None else state["sum"] + loss.detach()
        state["n"] += 1
        if state["n"] % 100 == 0:
            state["read"].append(state["sum"].item() / 100)
            state["sum"] = None

    return after


def empty_cache(_: torch.Tensor) -> None:
    torch.cuda.empty_cache()


def pair(
    pair_id: str,
    planted: str,
    framework: str,
    change: str,
    needs: tuple[str, ...],
    before: Callable[[Ctx], Workload],
    after: Callable[[Ctx], Workload],
) -> list[Case]:
    common = {"pair": pair_id, "framework": framework, "change": change, "needs": needs}
    return [
        Case(f"{pair_id}-before", role="before", planted=planted, build=before, **common),
        Case(f"{pair_id}-after", role="after", planted=None, build=after, **common),
    ]


def with_stack(cases: list[Case], pair_ids: tuple[str, ...]) -> list[Case]:
    """The tuned runs of these pairs once more, profiled with with_stack=True (the profiler-
    overhead model needs traces with different profiler flags)."""
    return [
        Case(**{**vars(c), "id": f"{c.id}-stack", "with_stack": True})
        for c in cases
        if c.pair in pair_ids and c.role == "after"
    ]


TF = ("transformers",)
PAIRS = [
    *pair("precision-gpt2", "mixed-precision", "transformers", "fp32 (TF32 off) -> bf16 autocast",
          TF, lambda c: gpt2_train(c, precision="fp32"), lambda c: gpt2_train(c)),
    *pair("tf32-vit", "tf32", "timm", "fp32 TF32 off -> TF32 on", ("timm",),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), precision="fp32"),
          lambda c: vision_train(c, vit(c), c.pick(128, 2), precision="tf32")),
    *pair("attention-bert", "fused-attention", "transformers", "eager attention -> sdpa",
          TF, lambda c: bert_mlm(c, "eager"), lambda c: bert_mlm(c, "sdpa")),
    *pair("attention-gpt2", "fused-attention", "transformers", "eager causal attention -> sdpa",
          TF, lambda c: gpt2_train(c, attn="eager", seq=1024, batch=8),
          lambda c: gpt2_train(c, seq=1024, batch=8)),
    *pair("optimizer-gpt2", "fused-optimizer", "transformers",
          "AdamW(foreach=False) -> AdamW(fused=True)", TF,
          lambda c: gpt2_train(c, layers=6, d=768, heads=12, batch=8, optimizer="for-loop"),
          lambda c: gpt2_train(c, layers=6, d=768, heads=12, batch=8)),
    *pair("allocator-gpt2", "memory-headroom", "transformers",
          "torch.cuda.empty_cache() after every step -> not", TF,
          lambda c: gpt2_train(c, after_step=empty_cache), lambda c: gpt2_train(c)),
    *pair("dataloader-resnet", "gpu-starvation", "timm+torchvision",
          "DataLoader num_workers=0 -> 8 workers, pinned, persistent, prefetch 4",
          ("timm", "torchvision"),
          lambda c: vision_train(c, timm_model("resnet18"), c.pick(64, 2), "loader0"),
          lambda c: vision_train(c, timm_model("resnet18"), c.pick(64, 2), "loader8")),
    *pair("host-preprocess-gpt2", "gpu-starvation", "transformers",
          "pure-Python tokenization in the loop -> batches pre-tokenized before it", TF,
          lambda c: gpt2_train(c, batches=tokenized_in_loop),
          lambda c: gpt2_train(c, batches=pretokenized)),
    *pair("layout-resnet50", "channels-last", "torchvision", "NCHW -> channels_last",
          ("torchvision",),
          lambda c: vision_train(c, resnet50(), c.pick(64, 2), channels_last=False),
          lambda c: vision_train(c, resnet50(), c.pick(64, 2))),
    *pair("launch-bound-mlp", "cuda-graphs", "torch",
          "eager -> torch.compile(mode='reduce-overhead') (make_graphed_callables if it fails)",
          (), lambda c: launch_bound(c, graphs=False), lambda c: launch_bound(c, graphs=True)),
    *pair("decode-cudagraph-llama", "cuda-graphs", "transformers",
          "eager decode step -> the step captured in a CUDA graph and replayed", TF,
          lambda c: decode(c, 1, graph=False), lambda c: decode(c, 1, graph=True)),
    *pair("host-sync-gpt2", "host-sync", "transformers",
          "loss.item() every step -> loss summed on the GPU, read every 100 steps", TF,
          lambda c: gpt2_train(c, after_step=host_sync_every_step()),
          lambda c: gpt2_train(c, after_step=host_sync_every_100())),
    *pair("pageable-resnet", "pageable-memcpy", "timm",
          "batches in pageable host memory, .to(cuda) -> pinned, non_blocking", ("timm",),
          lambda c: vision_train(c, timm_model("resnet18"), c.pick(128, 2), "pageable"),
          lambda c: vision_train(c, timm_model("resnet18"), c.pick(128, 2), "pinned")),
    *pair("alignment-peft", "tensor-core-alignment", "transformers+peft",
          "vocab 50257, batch 7 x seq 1000 -> vocab 50304, batch 8 x seq 1024 (per token)",
          ("transformers", "peft"),
          lambda c: gpt2_train(c, layers=6, d=768, heads=12, vocab=50257, seq=1000, batch=7,
                               lora=True),
          lambda c: gpt2_train(c, layers=6, d=768, heads=12, seq=1024, batch=8, lora=True)),
    *pair("precision-lightning", "mixed-precision", "lightning",
          'Trainer(precision="32-true") -> "bf16-mixed"', ("lightning|pytorch_lightning",),
          lambda c: lightning_train(c, "32-true"), lambda c: lightning_train(c, "bf16-mixed")),
    *pair("decode-batching-llama", "decode-batching", "transformers",
          "decode batch 1 -> batch 8 (compare per sequence: step_b8 / 8)", TF,
          lambda c: decode(c, 1, graph=False, impl=HFDecoder),
          lambda c: decode(c, 8, graph=False, impl=HFDecoder)),
]  # fmt: skip
CASES = PAIRS + with_stack(
    PAIRS, ("precision-gpt2", "attention-gpt2", "optimizer-gpt2", "layout-resnet50")
)


# ---------------------------------------------------------------- running and reporting


def dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, Any]:
    out: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__}
    for dist in ("transformers", "timm", "torchvision", "peft", "lightning", "accelerate"):
        out[dist] = dist_version(dist)
    out["cuda"] = torch.version.cuda
    out["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    return out


class Summary:
    """OUT/summary.json, rewritten (atomically) after every workload. A later invocation on
    the same OUT keeps the workloads it does not run, and adds itself to `invocations`."""

    def __init__(self, out: Path, invocation: dict[str, Any]) -> None:
        self.path = out / "summary.json"
        old = json.loads(self.path.read_text()) if self.path.is_file() else {}
        self.data: dict[str, Any] = {
            "steps": {"warmup": WARMUP_STEPS, "timed": TIMED_STEPS, "profiled": PROFILE_STEPS},
            "invocations": [*old.get("invocations", []), invocation],
            "workloads": old.get("workloads", {}),
        }

    def done(self, case: Case) -> bool:
        return bool(self.data["workloads"].get(case.id, {}).get("status") == "ok")

    def put(self, case_id: str, record: dict[str, Any]) -> None:
        self.data["workloads"][case_id] = record
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=str))
        os.replace(tmp, self.path)


def missing(case: Case) -> list[str]:
    def found(alternatives: str) -> bool:
        return any(importlib.util.find_spec(m) is not None for m in alternatives.split("|"))

    return [m for m in case.needs if not found(m)]


def clean_up(ctx: Ctx) -> None:
    """Between workloads: free what the last one held and put global settings back."""
    gc.collect()
    torch._dynamo.reset()
    set_precision("bf16-autocast")
    if ctx.cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def base_record(case: Case) -> dict[str, Any]:
    """What the summary says of a workload whether it ran or not."""
    return {
        "pair": case.pair,
        "role": case.role,
        "planted": case.planted,
        "framework": case.framework,
        "change": case.change,
        "versions": {"torch": torch.__version__, "transformers": dist_version("transformers")},
        "profiler": {
            "record_shapes": True,
            "profile_memory": True,
            "with_stack": case.with_stack,
            "schedule": SCHEDULE,
        },
        "errors": [],
        "seconds": {},
    }


STAGES = ("build", "warmup", "timed", "profile")


def measure(ctx: Ctx, case: Case, out: Path, record: dict[str, Any]) -> None:
    """Build, warm up, time unprofiled, profile; each stage's seconds go into the record as
    it ends (the workload, and what it holds on the device, ends with this call)."""
    t0 = time.perf_counter()

    def done(stage: str) -> None:
        nonlocal t0
        sync(ctx)
        record["seconds"][stage] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()

    torch.manual_seed(0)
    w = case.build(ctx)
    record.update(units_per_step=w.units_per_step, unit=w.unit, notes=w.notes)
    done("build")
    w.run(WARMUP_STEPS, lambda: None)
    done("warmup")
    record["unprofiled"] = time_unprofiled(ctx, w)
    done("timed")
    record.update(profile(ctx, case, w, out))
    done("profile")
    if ctx.cuda:
        record["peak_memory_bytes"] = torch.cuda.max_memory_allocated()


def run_case(ctx: Ctx, case: Case, out: Path) -> dict[str, Any]:
    """One workload's record; whatever it raises is recorded with its stage, and the next
    workload runs."""
    record = base_record(case)
    try:
        measure(ctx, case, out, record)
    except Exception as e:
        stage = next(s for s in STAGES if s not in record["seconds"])
        record["errors"].append(error_line(stage, e))
    try:
        clean_up(ctx)
    except Exception as e:  # a broken CUDA context: the next workloads will say so too
        record["errors"].append(error_line("clean-up", e))
    record["seconds"]["total"] = round(sum(record["seconds"].values()), 2)
    record["status"] = "error" if record["errors"] else "ok"
    return record


def error_line(stage: str, e: Exception) -> str:
    tb = traceback.extract_tb(e.__traceback__)[-1]
    return f"{stage}: {type(e).__name__}: {e} ({Path(tb.filename).name}:{tb.lineno})"[:2000]


def line(case: Case, r: dict[str, Any]) -> str:
    """The one line printed per workload."""
    head = f"{case.id:34s} {r['seconds'].get('total', 0):6.1f} s"
    if r["status"] != "ok":
        return f"{head}  {r['status'].upper()}: {(r['errors'] or [r.get('reason', '')])[0]}"
    u = r["unprofiled"]
    hook = (r.get("hook_unprofiled") or {}).get("median_ms")
    hook_s = f"{hook:8.2f}" if hook is not None else "       -"
    return (
        f"{head}  median {u['median_ms']:8.2f}  mean {u['mean_ms']:8.2f}  "
        f"wall {u['wall_mean_ms']:8.2f}  hook {hook_s} ms  "
        f"trace {r['trace_bytes'] / 1024:6.0f} kB"
    )


def pack(out: Path, summary: Summary, tar_path: Path) -> None:
    """OUT's summary and traces in one uncompressed tar of at most TAR_LIMIT_BYTES; traces
    that would not fit are left out and listed in the summary first."""
    traces = sorted((out / "traces").rglob("*.json.gz")) if (out / "traces").is_dir() else []
    room = TAR_LIMIT_BYTES - 512 * 1024  # the summary, headers, the end-of-archive blocks
    kept, left = [], []
    for t in traces:
        size = 512 + -(-t.stat().st_size // 512) * 512
        (kept if size <= room else left).append(t)
        room -= size if size <= room else 0
    summary.data["tar_left_out"] = [t.relative_to(out).as_posix() for t in left]
    summary.write()
    with tarfile.open(tar_path, "w") as tar:
        tar.add(summary.path, arcname="summary.json")
        for t in kept:
            tar.add(t, arcname=t.relative_to(out).as_posix())
    print(
        f"packed {len(kept)} traces ({len(left)} left out) into {tar_path}: "
        f"{tar_path.stat().st_size / 2**20:.1f} MiB",
        flush=True,
    )


def select(only: str | None) -> list[Case]:
    if not only:
        return CASES
    wanted = {s.strip() for s in only.split(",") if s.strip()}
    known = {c.id for c in CASES} | {c.pair for c in CASES}
    if unknown := wanted - known:
        sys.exit(f"--only: unknown workload or pair {', '.join(sorted(unknown))} (see --list)")
    return [c for c in CASES if c.id in wanted or c.pair in wanted]


def quiet() -> None:
    """One line per workload: the frameworks' notices and warnings are not wanted here."""
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    logging.getLogger("torch._inductor").setLevel(logging.ERROR)
    with contextlib.suppress(ImportError):
        import transformers

        transformers.logging.set_verbosity_error()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, nargs="?", help="output folder")
    ap.add_argument("--tar", type=Path, help="pack OUT's summary and traces into this tar")
    ap.add_argument("--list", action="store_true", help="print the workloads and exit")
    ap.add_argument("--only", help="comma-separated workload or pair ids")
    ap.add_argument("--budget-s", type=float, help="start no workload after this many seconds")
    ap.add_argument("--resume", action="store_true", help="skip workloads OUT has done (ok)")
    ap.add_argument("--smoke", action="store_true", help="tiny CPU versions, for checking here")
    args = ap.parse_args()
    if args.list:
        for c in CASES:
            print(f"{c.id:34s} {c.planted or '-':22s} {c.change}")
        return 0
    if args.out is None:
        ap.error("OUT is required")
    cases = select(args.only)
    if not args.smoke and not torch.cuda.is_available():
        sys.exit("no CUDA device: run on the GPU machine, or pass --smoke")
    quiet()
    if args.smoke:  # one thread: on a small shared CPU, more spin against other jobs
        torch.set_num_threads(1)
    device = torch.device("cpu" if args.smoke else "cuda")
    ctx = Ctx(args.smoke, device, time.perf_counter(), args.budget_s)
    args.out.mkdir(parents=True, exist_ok=True)
    invocation = {
        "argv": sys.argv,
        "smoke": args.smoke,
        "versions": versions(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    summary = Summary(args.out, invocation)
    if args.resume:
        cases = [c for c in cases if not summary.done(c)]
    for i, case in enumerate(cases, 1):
        if ctx.seconds_left() <= 0:
            why = f"budget of {args.budget_s:.0f} s spent"
            record = {**base_record(case), "status": "skipped", "reason": why}
        elif lacking := missing(case):
            why = f"needs {', '.join(lacking)}: not importable"
            record = {**base_record(case), "status": "skipped", "reason": why}
        else:
            record = run_case(ctx, case, args.out)
        summary.put(case.id, record)
        print(f"[{i:2d}/{len(cases)}] {line(case, record)}", flush=True)
    invocation.update(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), elapsed_s=round(ctx.elapsed()))
    summary.write()
    if args.tar:
        pack(args.out, summary, args.tar)
    return 0


if __name__ == "__main__":
    sys.exit(main())
