"""transformers' GPT-2 and BERT training, and host-side batch building in pure Python."""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from tools.validation.training import smaller, static, train
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
