"""The time of each generated token: greedy decoding timed step by step, for notebook 11 and its benchmark.

A step's time is what one new token costs at that position, so the curve of step times against position shows how
the cost of a token grows with the text before it: with a KV cache and without one.
"""

import time
from collections.abc import Callable

import torch


@torch.no_grad()
def greedy_step_seconds(
    next_logits: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], prompt_ids: torch.Tensor, new_tokens: int
) -> tuple[torch.Tensor, list[float]]:
    """Greedy decoding, each step timed: ``next_logits(ids, newest)`` gives the logits (batch, vocab) of the token
    after ``ids`` (batch, seq), where ``newest`` holds the tokens that the model has not been given yet (the prompt
    at the first step, then the last token). Returns the ids (batch, seq + new_tokens) and the seconds of each step.
    """
    ids = newest = prompt_ids  # (batch, seq)
    seconds = []
    for _ in range(new_tokens):
        start = time.perf_counter()
        newest = next_logits(ids, newest).argmax(dim=-1, keepdim=True)  # (batch, 1)
        seconds.append(time.perf_counter() - start)
        ids = torch.cat([ids, newest], dim=1)
    return ids, seconds
