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


class MultiHeadAttentionWithViewAndPermute(nn.Module):
    """Splits with view and permute, for a single batch axis as the exercise's (batch, seq, d_model) has, and
    gives the mask its heads axis only when it has a batch axis (a 2-D mask broadcasts over heads as it is)."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query, self.key, self.value, self.output = (nn.Linear(d_model, d_model) for _ in range(4))

    def split(self, x):
        batch, seq, d_model = x.shape
        return x.view(batch, seq, self.num_heads, d_model // self.num_heads).permute(0, 2, 1, 3)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q, k, v = self.split(self.query(x)), self.split(self.key(context)), self.split(self.value(context))
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None]  # (batch, 1, n_q, n_k)
        outputs, weights = attention(q, k, v, mask)
        merged = outputs.permute(0, 2, 1, 3).reshape(x.shape[0], x.shape[1], -1)  # (batch, n_q, d_model)
        return self.output(merged), weights


def test_checks_accept_correct_answers_written_differently():
    nb03.check_split_heads(split_with_unflatten_and_movedim)
    nb03.check_merge_heads(merge_with_movedim_and_flatten)
    nb03.check_multi_head_attention(MultiHeadAttentionViaPyTorch)
    nb03.check_multi_head_attention(MultiHeadAttentionWithViewAndPermute)


@pytest.mark.parametrize("seed", [0, 1, 3, 5, 42])
def test_correct_answers_pass_for_the_hidden_seeds(seed):
    nb03.check_split_heads(split_with_unflatten_and_movedim, seed=seed)
    nb03.check_merge_heads(merge_with_movedim_and_flatten, seed=seed)
    nb03.check_multi_head_attention(MultiHeadAttentionViaPyTorch, seed=seed)


def inputs_seen_by(check, answer, seed: int) -> list[torch.Tensor]:
    seen = []

    def recording(x, *args):
        seen.append(x.clone())
        return answer(x, *args)

    check(recording, seed=seed)
    return seen


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb03.check_split_heads, split_with_unflatten_and_movedim),
        (nb03.check_merge_heads, merge_with_movedim_and_flatten),
    ],
)
def test_the_hidden_tests_of_split_and_merge_use_other_inputs(check, answer):
    visible, hidden = inputs_seen_by(check, answer, seed=0), inputs_seen_by(check, answer, seed=3)
    assert all(
        seen.shape != other.shape or not torch.equal(seen, other) for seen, other in zip(visible, hidden, strict=True)
    )


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
