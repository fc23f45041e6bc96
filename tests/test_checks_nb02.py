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


def entropy_by_clamping(weights):
    return -(weights * weights.clamp_min(1e-30).log()).sum(dim=-1)


def attention_with_einsum(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights


class AttentionWithBiasAndPyTorchKernel(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query, self.key, self.value = nn.Linear(d_model, d_k), nn.Linear(d_model, d_k), nn.Linear(d_model, d_v)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return attention_with_einsum(self.query(x), self.key(context), self.value(context), mask)


def test_checks_accept_correct_answers_written_differently():
    nb02.check_attention_entropy(lambda weights: torch.distributions.Categorical(probs=weights).entropy())
    nb02.check_attention_entropy(entropy_by_clamping)
    nb02.check_scaled_dot_product_attention(attention_with_einsum)
    nb02.check_single_head_attention(AttentionWithBiasAndPyTorchKernel)


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
