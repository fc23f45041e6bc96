"""The training loop of notebooks 08 and 10, around the learner's loss and learning-rate schedule."""

import copy
import math
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn
from tqdm import tqdm


@dataclass
class History:
    """What a training run measured: the loss at every step and the validation score every so often."""

    losses: list[float] = field(default_factory=list)
    scores: dict[int, float] = field(default_factory=dict)  # step → validation score
    best_step: int | None = None  # the step whose weights the model has at the end
    training_seconds: float = 0.0  # without the time spent evaluating

    @property
    def steps_per_second(self) -> float:
        return len(self.losses) / self.training_seconds if self.training_seconds else math.nan


def train(
    model: nn.Module,
    batches: Iterator[tuple[torch.Tensor, ...]],
    loss_of_batch: Callable[..., torch.Tensor],
    learning_rate: Callable[[int], float],
    steps: int,
    evaluate: Callable[[nn.Module], float] | None = None,
    every: int = 250,
    clip: float = 1.0,
) -> History:
    """Train with Adam (β = 0.9, 0.98), the given learning rate at every step (counted from 1) and gradient
    clipping. Each batch is a tuple of tensors, and the loss is ``loss_of_batch(model, *batch)``: (src, tgt) in
    notebook 08, (windows,) in notebook 10. Every ``every`` steps and at the end, ``evaluate`` scores the model
    (higher is better); the model ends with the weights that scored best, since the score does not always rise.

    A progress bar shows the loss and the speed; nothing here is random, so the same seeds give the same run.
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate(1), betas=(0.9, 0.98), eps=1e-9)
    history, best_weights = History(), None
    progress = tqdm(range(1, steps + 1), desc="training", unit="step", file=sys.stdout, mininterval=2.0)
    for step in progress:
        started = time.perf_counter()
        loss = _update(model, optimizer, next(batches), loss_of_batch, learning_rate(step), clip)
        history.training_seconds += time.perf_counter() - started
        history.losses.append(loss)
        if evaluate is not None and (step % every == 0 or step == steps):
            history.scores[step] = _score(model, evaluate)
            if history.best_step is None or history.scores[step] > history.scores[history.best_step]:
                history.best_step, best_weights = step, copy.deepcopy(model.state_dict())
            progress.set_postfix(loss=f"{loss:.3f}", valid=f"{history.scores[step]:.3f}", refresh=False)
        elif step % 25 == 0:
            progress.set_postfix(loss=f"{loss:.3f}", refresh=False)
    if best_weights is not None:
        model.load_state_dict(best_weights)
    model.eval()
    return history


def _update(model, optimizer, batch: tuple, loss_of_batch, learning_rate: float, clip: float) -> float:
    for group in optimizer.param_groups:
        group["lr"] = learning_rate
    model.train()
    loss = loss_of_batch(model, *batch)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def _score(model: nn.Module, evaluate: Callable[[nn.Module], float]) -> float:
    model.eval()
    with torch.no_grad():
        return evaluate(model)
