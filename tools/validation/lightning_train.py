"""A TransformerEncoder language model trained by Lightning's Trainer.fit."""

from __future__ import annotations

import logging
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from tools.validation.training import set_precision
from tools.validation.workload import Boundary, Ctx, Workload


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
