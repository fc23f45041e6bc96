"""The checks of notebook 02 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py.)
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.stubs import StubModule, raise_not_implemented
from transformer_course.checks import CheckFailed, nb02
from transformer_course.reference import attention


def entropy_by_clamping(weights):
    return -(weights * weights.clamp_min(1e-30).log()).sum(dim=-1)


def attention_with_einsum(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights


def attention_with_matmul_and_where(q, k, v, mask=None):
    scores = torch.matmul(q, k.mT) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch.matmul(weights, v), weights


class AttentionWithEinsum(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        source = context if context is not None else x
        return attention_with_einsum(self.query(x), self.key(source), self.value(source), mask)


class AttentionWithZeroBias(AttentionWithEinsum):
    """Biases that are there but zero change nothing the module computes, so they cost no points."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__(d_model, d_k, d_v)
        self.query, self.key, self.value = nn.Linear(d_model, d_k), nn.Linear(d_model, d_k), nn.Linear(d_model, d_v)
        for layer in (self.query, self.key, self.value):
            nn.init.zeros_(layer.bias)


def test_checks_accept_correct_answers_written_differently():
    nb02.check_attention_entropy(lambda weights: torch.distributions.Categorical(probs=weights).entropy())
    nb02.check_attention_entropy(entropy_by_clamping)
    nb02.check_scaled_dot_product_attention(attention_with_einsum)
    nb02.check_scaled_dot_product_attention(attention_with_matmul_and_where)
    nb02.check_single_head_attention(AttentionWithEinsum)
    nb02.check_single_head_attention(AttentionWithZeroBias)


@pytest.mark.parametrize("seed", [0, 1, 577, 1729, 8128])
def test_correct_answers_pass_for_the_hidden_seeds(seed):
    nb02.check_attention_entropy(entropy_by_clamping, seed=seed)
    nb02.check_scaled_dot_product_attention(attention_with_einsum, seed=seed)
    nb02.check_single_head_attention(AttentionWithEinsum, seed=seed)


def test_the_reference_attention_is_pytorchs():
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 5)  # (batch, heads, n, d)
    mask = torch.rand(4, 6) > 0.3  # (n_q, n_k)
    mask[:, 0] = True
    outputs, weights = attention(q, k, v, mask)
    assert torch.allclose(outputs, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-6)
    assert torch.allclose(weights.sum(dim=-1), torch.ones(2, 3, 4))
    assert (weights[..., ~mask] == 0).all()


# (1, 1) with d_v = d_k: there PyTorch's own kernel (torch 2.13, CPU) returns numbers instead of an error.
@pytest.mark.parametrize("batch", [(), (2,), (2, 3), (1, 1)])
def test_the_reference_attention_refuses_keys_and_values_of_different_lengths(batch):
    q, k, v = torch.randn(*batch, 4, 8), torch.randn(*batch, 5, 8), torch.randn(*batch, 3, 8)  # n_k = 5, 3 values
    with pytest.raises(ValueError, match="5 keys but 3 values"):
        attention(q, k, v)


def test_the_reference_attention_refuses_a_query_that_sees_no_key():
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    with pytest.raises(ValueError, match="no key at all"):
        attention(q, k, v, mask)


@pytest.mark.parametrize(
    ("check", "stub"),
    [
        (nb02.check_attention_entropy, raise_not_implemented),
        (nb02.check_scaled_dot_product_attention, raise_not_implemented),
        (nb02.check_single_head_attention, StubModule),
    ],
)
def test_a_stub_is_reported_as_not_implemented_yet(check, stub):
    with pytest.raises(CheckFailed, match="is not implemented yet"):
        check(stub)
