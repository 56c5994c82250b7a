"""transformers' causal LMs' and BERT's training, and host-side batch building in pure Python."""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from tools.validation.training import Checkpointing, prepared, smaller, static, train
from tools.validation.workload import Ctx, Workload, forever, loop


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


def _hf_causal_lm(
    ctx: Ctx, name: str, layers: int, d: int, heads: int, vocab: int, attn: str, **extra: Any
) -> nn.Module:
    """transformers' `<name>Config` and `<name>ForCausalLM` at these sizes (random weights,
    positions for 1024 tokens); `extra`: the architecture's own config fields."""
    import transformers

    cfg = getattr(transformers, f"{name}Config")(
        num_hidden_layers=layers,
        hidden_size=d,
        num_attention_heads=heads,
        vocab_size=vocab,
        max_position_embeddings=ctx.pick(1024, 64),
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation=attn,
        **extra,
    )
    model: nn.Module = getattr(transformers, f"{name}ForCausalLM")(cfg)
    return model.to(ctx.device)


def _grouped_query(d: int, heads: int) -> dict[str, int]:
    """3 query heads per key/value head where the heads divide so; a SwiGLU MLP of 8/3 d."""
    return {
        "num_key_value_heads": heads // 3 if heads % 3 == 0 else heads,
        "intermediate_size": 64 * round(8 * d / 3 / 64),
    }


def llama(ctx: Ctx, layers: int, d: int, heads: int, vocab: int, attn: str = "sdpa") -> nn.Module:
    """A Llama (RMSNorm, rotary positions, SwiGLU MLP, untied head) with grouped-query
    attention."""
    return _hf_causal_lm(ctx, "Llama", layers, d, heads, vocab, attn, **_grouped_query(d, heads))


def neox(ctx: Ctx, layers: int, d: int, heads: int, vocab: int, attn: str = "sdpa") -> nn.Module:
    """A GPT-NeoX (Pythia's architecture: parallel attention and MLP residuals, rotary
    positions on a quarter of each head, LayerNorm, GELU MLP of 4 d)."""
    return _hf_causal_lm(ctx, "GPTNeoX", layers, d, heads, vocab, attn, intermediate_size=4 * d)


def qwen2(ctx: Ctx, layers: int, d: int, heads: int, vocab: int, attn: str = "sdpa") -> nn.Module:
    """A Qwen2 (a Llama with biases on q, k and v), grouped-query attention as llama's."""
    return _hf_causal_lm(ctx, "Qwen2", layers, d, heads, vocab, attn, **_grouped_query(d, heads))


def opt(ctx: Ctx, layers: int, d: int, heads: int, vocab: int, attn: str = "sdpa") -> nn.Module:
    """An OPT (learned positions, pre-LayerNorm, ReLU MLP of 4 d)."""
    return _hf_causal_lm(
        ctx, "OPT", layers, d, heads, vocab, attn,
        ffn_dim=4 * d, word_embed_proj_dim=d, pad_token_id=vocab - 1,
    )  # fmt: skip


CAUSAL_LMS = {"gpt2": gpt2, "llama": llama, "neox": neox, "qwen2": qwen2, "opt": opt}


def lm_train(
    ctx: Ctx,
    *,
    arch: str = "gpt2",
    layers: int = 4,
    d: int = 512,
    heads: int = 8,
    vocab: int = 50304,
    seq: int = 512,
    batch: int = 16,
    attn: str = "sdpa",
    lora: bool = False,
    compiled: bool = False,
    checkpointed: Checkpointing = False,
    batches: Callable[[int, int, int], Callable[[], torch.Tensor]] | None = None,
    **train_kwargs: Any,
) -> Workload:
    """Causal language-model training (transformers' GPT-2, Llama, GPT-NeoX, Qwen2, OPT: arch);
    sizes are the GPU machine's (the smoke run shrinks them, keeping a vocab, sequence or
    batch that is not a multiple of 8, 64 or 8 misaligned)."""
    if ctx.smoke:
        layers, d, heads = (2, 64, 4) if arch == "gpt2" else (2, 96, 6)
        vocab, seq, batch = smaller(vocab, 1024, 8), smaller(seq, 32, 64), smaller(batch, 2, 8)
    model = CAUSAL_LMS[arch](ctx, layers, d, heads, vocab, attn)
    notes: dict[str, Any] = {"arch": arch, "layers": layers, "d": d, "vocab": vocab, "seq": seq,
                             "batch": batch}  # fmt: skip
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

    notes.update(compiled=compiled, checkpointed=checkpointed)
    forward = prepared(model, compiled=compiled, checkpointed=checkpointed)

    def lm_loss(x: torch.Tensor) -> torch.Tensor:
        x = x.to(ctx.device)  # a host batch's one copy; a no-op for one already there
        return forward(input_ids=x, labels=x).loss

    step = train(ctx, model, lm_loss, next_batch, **train_kwargs)
    return Workload(loop(step), batch * seq, "tokens", notes)


BERT_SMALL = (6, 512, 8, 512, 16)
BERT_BASE = (12, 768, 12, 512, 32)  # GPU-bound on an H200: the attention's share shows
BERT_SMALL_B64 = (6, 512, 8, 512, 64)


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


def bert_mlm(
    ctx: Ctx,
    attn: str,
    size: tuple[int, int, int, int, int] = BERT_SMALL,
    graphs: str = "",
    compiled: bool = False,
    checkpointed: Checkpointing = False,
    after_step: Callable[[torch.Tensor], None] | None = None,
) -> Workload:
    """BERT masked-LM training (bidirectional attention), bf16 autocast; vocab padded to a
    multiple of 64 so that only the attention differs from a tuned run. `size`: layers,
    hidden size, heads, sequence, batch on the GPU machine. graphs="callables": the forward
    and backward captured by torch.cuda.make_graphed_callables (dropout included) and
    replayed; graphs="step": the whole step, optimizer included (training.train's graphed);
    compiled=True, checkpointed: the model torch.compile'd, checkpointed (training.prepared);
    after_step: called with the loss after each step (training.train)."""
    from transformers import BertConfig, BertForMaskedLM

    layers, d, heads, seq, batch = ctx.pick(size, (2, 64, 4, 32, 2))
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
    # transformers builds the eager attention's (all-zero) mask each forward with a host-side
    # scalar, which capture refuses; the captured step is given the same mask built once.
    mask = torch.zeros(batch, 1, seq, seq, device=ctx.device) if graphs == "step" else None
    loss_of: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = _MlmLoss(
        prepared(model, compiled=compiled, checkpointed=checkpointed), ctx, mask
    )
    if graphs == "callables" and ctx.cuda:
        loss_of = torch.cuda.make_graphed_callables(loss_of, (x, labels))
    step = train(
        ctx, model, lambda b: loss_of(*b), static((x, labels)), graphed=graphs == "step",
        after_step=after_step,
    )  # fmt: skip
    notes = {"layers": layers, "attn": attn, "batch": batch, "graphs": graphs,
             "compiled": compiled, "checkpointed": checkpointed}  # fmt: skip
    return Workload(loop(step), batch * seq, "tokens", notes)


class _MlmLoss(nn.Module):
    """The model's loss as a module of tensors in, tensor out (what CUDA graph capture takes),
    under bf16 autocast inside (a captured graph replays what ran at capture)."""

    def __init__(self, model: nn.Module, ctx: Ctx, mask: torch.Tensor | None = None) -> None:
        super().__init__()
        self.model, self.device_type, self.mask = model, ctx.device.type, mask

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        # No cast cache: a captured graph may not keep casts made outside it.
        with torch.autocast(self.device_type, dtype=torch.bfloat16, cache_enabled=False):
            return self.model(input_ids=x, labels=labels, attention_mask=self.mask).loss
