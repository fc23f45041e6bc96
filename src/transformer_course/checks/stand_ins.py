"""Correct versions of exercises, under the exercises' own names, that a check of a later exercise puts in place
of the learner's (``earlier_exercises_replaced``), so that each exercise is graded on its own.

They are answers a learner could import, so no student release holds this module (autograder/release.py);
there the checks use the learner's own earlier exercises. Each is built on PyTorch's operations or on the
reference code; notebook 09's, on plain Python.
"""

import collections
import itertools

import torch

from ..reference import Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward, LayerNorm
from ..reference.nb10_gpt import GPTBlock, next_token_probabilities
from . import pytorch_attention
from .nb04 import real_positions, visible_to_causal_attention

__all__ = [  # by notebook: 01, 02, 03, 04, 06, 07, 09, 10, 11, 12, 13
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
    "KVCache",  # notebook 11
    "cached_block_forward",  # notebook 11
    "cached_logits",  # notebook 11
    "RMSNorm",  # notebook 12
    "apply_rope",  # notebook 12
    "SwiGLU",  # notebook 12
    "grouped_query_attention",  # notebook 12
    "EncoderForMaskedLM",  # notebook 13
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


class KVCache:
    """Notebook 11: what is appended, joined along the positions with torch.cat."""

    def __init__(self):
        self.keys = self.values = None

    def __len__(self) -> int:
        return 0 if self.keys is None else self.keys.shape[-2]

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        both = [(keys, values)] if self.keys is None else [(self.keys, self.values), (keys, values)]
        self.keys, self.values = (torch.cat(parts, dim=-2) for parts in zip(*both, strict=True))
        return self.keys, self.values


def cached_block_forward(block, x, cache):
    """Notebook 11: the new positions' queries against every cached key, the future hidden counting from the last
    cached position (PyTorch's attention), then the block's MLP."""
    already = len(cache)
    queries, keys, values = block.attention.project_heads(block.ln_1(x))  # (batch, heads, new, d_head) each
    keys, values = cache.append(keys, values)  # (batch, heads, already + new, d_head) each
    future = torch.ones(x.shape[1], keys.shape[-2], dtype=torch.bool).triu(already + 1)  # (new, already + new)
    mixed = torch.nn.functional.scaled_dot_product_attention(queries, keys, values, attn_mask=~future)
    attended = x + block.attention.project_output(mixed)  # (batch, new, d_model)
    return attended + block.mlp(block.ln_2(attended))


def cached_logits(model, ids, caches):
    """Notebook 11: the new tokens at the positions after those cached, through every block and its cache."""
    first = len(caches[0])
    x = model.token_embedding(ids) + model.position_embedding.weight[first : first + ids.shape[-1]]
    for block, cache in zip(model.blocks, caches, strict=True):
        x = cached_block_forward(block, x, cache)
    return model.lm_head(model.ln_f(x))  # (batch, new, vocab)


class RMSNorm(torch.nn.Module):
    """Notebook 12: PyTorch's own RMS norm, with the gain as weight."""

    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.ones(d_model)), eps

    def forward(self, x):
        return torch.nn.functional.rms_norm(x, self.weight.shape, self.weight, self.eps)


def apply_rope(x, positions, base=10000.0):
    """Notebook 12: each feature i < d/2 turned with feature i + d/2 by the angle position · base^(-2i/d), written
    with complex numbers (the halves as real and imaginary parts)."""
    half = x.shape[-1] // 2
    frequencies = base ** (-torch.arange(half, dtype=torch.float64) / half)  # (d/2,)
    turns = torch.polar(torch.ones((), dtype=torch.float64), torch.outer(positions.double(), frequencies))
    as_complex = torch.complex(x[..., :half].double(), x[..., half:].double()) * turns  # (..., seq, d/2)
    return torch.cat([as_complex.real, as_complex.imag], dim=-1).to(x.dtype)


class SwiGLU(torch.nn.Module):
    """Notebook 12: the gated feed-forward of Llama, its three linears without bias."""

    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj, self.up_proj = (torch.nn.Linear(d_model, d_hidden, bias=False) for _ in range(2))
        self.down_proj = torch.nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        gated = torch.nn.functional.silu(self.gate_proj(x)) * self.up_proj(x)  # (..., d_hidden)
        return self.down_proj(gated)


def grouped_query_attention(q, k, v, mask=None):
    """Notebook 12: PyTorch's attention, which shares each key/value head among its group of query heads."""
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


class EncoderForMaskedLM(torch.nn.Module):
    """Notebook 13: BERT's encoder of the course's blocks, its head tied to the word embeddings."""

    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.token_embedding = torch.nn.Embedding(vocab_size, d_model)
        self.position_embedding = torch.nn.Embedding(max_len, d_model)
        self.embedding_norm, self.head_norm = LayerNorm(d_model), LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.head_transform = torch.nn.Linear(d_model, d_model)
        self.head_bias = torch.nn.Parameter(torch.zeros(vocab_size))

    def encode(self, ids, padding_mask=None):
        summed = self.token_embedding(ids) + self.position_embedding.weight[: ids.shape[1]]
        keys = None if padding_mask is None else padding_mask.unsqueeze(-2)  # (batch, 1, seq)
        return self.encoder(self.embedding_norm(summed), keys)

    def forward(self, ids, padding_mask=None):
        transformed = self.head_norm(torch.relu(self.head_transform(self.encode(ids, padding_mask))))
        return torch.nn.functional.linear(transformed, self.token_embedding.weight, self.head_bias)
