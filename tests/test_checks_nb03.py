"""The checks of notebook 03 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py.)
"""

import pytest
import torch
from torch import nn

from tests.stubs import StubModule, raise_not_implemented
from transformer_course.checks import CheckFailed, nb03
from transformer_course.reference import attention


def split_with_unflatten_and_movedim(x, num_heads):
    return x.unflatten(-1, (num_heads, -1)).movedim(-2, -3)


def merge_with_movedim_and_flatten(x):
    return x.movedim(-3, -2).flatten(-2)


class MultiHeadAttentionViaPyTorch(nn.Module):
    """Delegates to nn.MultiheadAttention's functional form, sharing the course's parameter names."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query, self.key, self.value, self.output = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_with_unflatten_and_movedim(self.query(x), self.num_heads)
        k = split_with_unflatten_and_movedim(self.key(context), self.num_heads)
        v = split_with_unflatten_and_movedim(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask[..., None, :, :])
        return self.output(merge_with_movedim_and_flatten(outputs)), weights


def test_checks_accept_correct_answers_written_differently():
    nb03.check_split_heads(split_with_unflatten_and_movedim)
    nb03.check_merge_heads(merge_with_movedim_and_flatten)
    nb03.check_multi_head_attention(MultiHeadAttentionViaPyTorch)


def test_the_twin_is_nn_multihead_attention_with_the_same_weights():
    module = MultiHeadAttentionViaPyTorch(8, 2)
    twin = nb03.torch_twin(module, num_heads=2)
    x = torch.randn(2, 3, 8)
    assert torch.allclose(module(x)[0], twin(x, x, x)[0], atol=1e-6)


@pytest.mark.parametrize(
    ("check", "stub"),
    [
        (nb03.check_split_heads, raise_not_implemented),
        (nb03.check_merge_heads, raise_not_implemented),
        (nb03.check_multi_head_attention, StubModule),
    ],
)
def test_a_stub_is_reported_as_not_implemented_yet(check, stub):
    with pytest.raises(CheckFailed, match="is not implemented yet"):
        check(stub)
