"""Greedy Llama decode with a static KV cache: transformers' model or the same one in plain
torch, eager or replayed from a CUDA graph."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tools.validation.timing import sync
from tools.validation.workload import Ctx, Workload, loop

DECODE_PROMPT = 128
DECODE_CACHE_LEN = 256  # prompt + every step of every phase, with room to spare


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
