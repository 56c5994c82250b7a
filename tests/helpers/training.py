"""The real training the profiler hook's tests profile: a 2-layer MLP on one CPU batch (the
CPU build of torch in requirements-dev is enough)."""

from __future__ import annotations

from typing import Any

import torch

RUN = "mlp-cpu"  # the run name the hook's tests give


def make_model() -> tuple[Any, Any, Any]:
    """A 2-layer MLP and one batch."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 10))
    return model, torch.randn(32, 64), torch.randint(0, 10, (32,))


def train(prof: Any, steps: int, model: Any = None) -> int:
    """Steps of real training; returns how many ran (all of them, unless the hook broke it)."""
    own, x, y = make_model()
    model = model or own
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    done = 0
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        prof.step()
        done += 1
    return done
