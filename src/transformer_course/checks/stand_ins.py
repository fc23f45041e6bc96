"""Correct versions of exercises, under the exercises' own names, that a check of a later exercise puts in place
of the learner's (``earlier_exercises_replaced``), so that each exercise is graded on its own.

They are answers a learner could import, so no student release holds this module (autograder/release.py);
there the checks use the learner's own earlier exercises. Each is built on PyTorch's operations or on the
reference code; notebook 09's, on plain Python.
"""

import collections
import itertools

import torch

from ..reference import Decoder, DecoderLayer, EncoderLayer, FeedForward, LayerNorm
from ..reference.nb10_gpt import GPTBlock
from . import pytorch_attention
from .nb04 import real_positions, visible_to_causal_attention

__all__ = [  # by notebook: 01, 02, 03, 04, 06, 07, 09, 10
    "softmax",
    "attention_weights",
    "scaled_dot_product_attention",
    "split_heads",
    "merge_heads",
    "padding_mask",
    "causal_mask",
    "LayerNorm",
    "FeedForward",
    "EncoderLayer",
    "DecoderLayer",
    "Decoder",
    "count_pairs",  # notebook 09
    "merge",  # notebook 09
    "GPTBlock",  # notebook 10
    "next_token_probabilities",  # notebook 10
]


def softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Notebook 01: PyTorch's softmax."""
    return torch.softmax(scores, dim=dim)


def attention_weights(x: torch.Tensor) -> torch.Tensor:
    """Notebook 01: the self-attention weights softmax(x xᵀ) from PyTorch's attention, unscaled."""
    return pytorch_attention(x, x, x, mask=None, scale=1.0)[1]  # (..., seq, seq)


def scaled_dot_product_attention(q, k, v, mask=None):
    """Notebook 02: PyTorch's attention, returning (outputs, weights)."""
    return pytorch_attention(q, k, v, mask=mask, scale=None)


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Notebook 03: (..., seq, d_model) -> (..., heads, seq, d_head), head i holding features i*d_head ... by
    slicing them out."""
    return torch.stack(x.chunk(num_heads, dim=-1), dim=-3)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Notebook 03: (..., heads, seq, d_head) -> (..., seq, heads * d_head), the heads' features side by side."""
    return torch.cat(x.unbind(dim=-3), dim=-1)


def padding_mask(lengths: torch.Tensor, max_len: int | None = None) -> torch.Tensor:
    """Notebook 04: (batch, 1, max_len), True at the real positions, from PyTorch's own padding utility."""
    return real_positions(lengths, max_len=max_len)


def causal_mask(n: int) -> torch.Tensor:
    """Notebook 04: (n, n), True where PyTorch's causal attention lets query i see key j."""
    return visible_to_causal_attention(n=n)


def count_pairs(ids: list[int]) -> dict[tuple[int, int], int]:
    """Notebook 09: every adjacent pair and how often it occurs, overlapping occurrences included, in the order of
    their first occurrence (plain Python: Counter keeps the order in which keys arrive)."""
    return dict(collections.Counter(itertools.pairwise(ids)))


def merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Notebook 09: a new list with each occurrence of pair, found from the left without overlaps, as new_id."""
    merged = []
    just_merged = False  # the last id came from a match, so it cannot start another one
    for current in ids:
        if merged and not just_merged and (merged[-1], current) == tuple(pair):
            merged[-1] = new_id
            just_merged = True
        else:
            merged.append(current)
            just_merged = False
    return merged


def next_token_probabilities(logits, temperature=1.0, top_k=None, top_p=None):
    """Notebook 10: temperature, then top-k, then top-p (the order of transformers' generate), renormalised;
    temperature 0 puts all the probability on the argmax. Plain PyTorch: this module must not import transformers,
    which every notebook's checks would then wait for."""
    if temperature == 0:
        return torch.zeros_like(logits).scatter(-1, logits.argmax(dim=-1, keepdim=True), 1.0)  # (batch, vocab)
    scores = logits / temperature  # (batch, vocab)
    if top_k is not None and top_k < scores.shape[-1]:
        kth_best = scores.topk(top_k, dim=-1).values[..., -1:]  # (batch, 1)
        scores = scores.masked_fill(scores < kth_best, float("-inf"))
    if top_p is not None:
        probs, order = scores.softmax(dim=-1).sort(dim=-1, descending=True)  # (batch, vocab) each
        reached = probs.cumsum(dim=-1) - probs >= top_p  # the more probable tokens already hold top_p
        scores = scores.masked_fill(torch.zeros_like(reached).scatter(-1, order, reached), float("-inf"))
    return scores.softmax(dim=-1)  # (batch, vocab)
