"""The checks of notebook 03 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py.)
"""

import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.stubs import StubModule, raise_not_implemented
from transformer_course import checks
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


class MultiHeadAttentionWithEinsum(nn.Module):
    """Projects with einsum from the layers' weights, gives attention's inputs its own names, keeps its layers,
    created in another order, also in a list of its own (no sharing: the same layers)."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.output = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.query = nn.Linear(d_model, d_model)
        self.layers = nn.ModuleList([self.query, self.key, self.value, self.output])

    def project(self, layer, x):
        heads = torch.einsum("bsi,oi->bso", x, layer.weight) + layer.bias  # (batch, seq, d_model)
        return torch.stack(heads.chunk(self.num_heads, dim=-1), dim=1)  # (batch, heads, seq, d_head)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        queries, keys, values = (
            self.project(self.query, x),
            self.project(self.key, context),
            self.project(self.value, context),
        )
        mask = mask if mask is None else mask.unsqueeze(-3)
        per_head, weights = attention(queries, keys, values, mask=mask)
        return self.output(torch.einsum("bhsd->bshd", per_head).flatten(2)), weights


class MultiHeadAttentionWithOneFusedProjection(nn.Module):
    """Keeps the four layers the prompt names but projects queries, keys and values at once, with their weights
    concatenated (as nn.MultiheadAttention's in_proj_weight), and calls the learner's split and merge by name."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query, self.key, self.value, self.output = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        weight = torch.cat([self.query.weight, self.key.weight, self.value.weight])  # (3 d_model, d_model)
        bias = torch.cat([self.query.bias, self.key.bias, self.value.bias])
        d_model = x.shape[-1]
        q = split_with_unflatten_and_movedim(F.linear(x, weight[:d_model], bias[:d_model]), self.num_heads)
        k, v = (
            split_with_unflatten_and_movedim(part, self.num_heads)
            for part in F.linear(context, weight[d_model:], bias[d_model:]).chunk(2, dim=-1)
        )
        outputs, weights = attention(q, k, v, None if mask is None else mask[..., None, :, :])
        return self.output(merge_with_movedim_and_flatten(outputs)), weights


class MultiHeadAttentionWithHeadsFoldedIntoTheBatch(nn.Module):
    """Folds the heads into the batch axis, as nn.MultiheadAttention does, and copies each sentence's mask for its
    heads in a row (a mask (n_q, n_k) broadcasts as it is)."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query, self.key, self.value, self.output = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        batch, heads = x.shape[0], self.num_heads
        q, k, v = (
            torch.stack(projected.chunk(heads, dim=-1), dim=1).flatten(0, 1)  # (batch · heads, seq, d_head)
            for projected in (self.query(x), self.key(context), self.value(context))
        )
        if mask is not None and mask.dim() == 3:
            mask = mask.repeat_interleave(heads, dim=0)  # (batch · heads, n_q or 1, n_k)
        outputs, weights = attention(q, k, v, mask)
        outputs = outputs.unflatten(0, (batch, heads))  # (batch, heads, n_q, d_head)
        return self.output(torch.cat(outputs.unbind(dim=1), dim=-1)), weights.unflatten(0, (batch, heads))


class MultiHeadAttentionByHandWithAnAdditiveMask(nn.Module):
    """Computes attention itself, with the mask turned into numbers added to the scores (0 or -inf), as
    nn.MultiheadAttention does inside: right, since nothing here reads those numbers as booleans."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query, self.key, self.value, self.output = (nn.Linear(d_model, d_model) for _ in range(4))

    @torch.enable_grad()
    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_with_unflatten_and_movedim(self.query(x), self.num_heads)
        k = split_with_unflatten_and_movedim(self.key(context), self.num_heads)
        v = split_with_unflatten_and_movedim(self.value(context), self.num_heads)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores + torch.zeros(mask.shape).masked_fill(~mask, float("-inf")).unsqueeze(-3)
        weights = scores.softmax(dim=-1)
        outputs = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_with_movedim_and_flatten(outputs)), weights


class MultiHeadAttentionSentenceBySentence(nn.Module):
    """Runs attention one sentence at a time, giving each its own mask, (n_q, n_k) as it is or row b of a mask with
    a batch axis, told apart by their number of axes (whatever their sizes: a batch may be as large as n_q)."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query, self.key, self.value, self.output = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_with_unflatten_and_movedim(self.query(x), self.num_heads)
        k = split_with_unflatten_and_movedim(self.key(context), self.num_heads)
        v = split_with_unflatten_and_movedim(self.value(context), self.num_heads)
        outputs, weights = [], []
        for sentence in range(x.shape[0]):
            own = None if mask is None else mask if mask.dim() == 2 else mask[sentence]  # (n_q or 1, n_k)
            o, w = attention(q[sentence], k[sentence], v[sentence], own)  # (heads, n_q, ...)
            outputs.append(o)
            weights.append(w)
        return self.output(merge_with_movedim_and_flatten(torch.stack(outputs))), torch.stack(weights)


class MultiHeadAttentionUnderEnableGrad(MultiHeadAttentionViaPyTorch):
    """A decorator on forward that keeps gradients (and keeps __wrapped__, as torch's decorators do)."""

    @torch.enable_grad()
    def forward(self, x, context=None, mask=None):
        return super().forward(x, context, mask)


@pytest.mark.parametrize(
    "module",
    [
        MultiHeadAttentionViaPyTorch,
        MultiHeadAttentionWithViewAndPermute,
        MultiHeadAttentionWithEinsum,
        MultiHeadAttentionWithOneFusedProjection,
        MultiHeadAttentionUnderEnableGrad,
        MultiHeadAttentionSentenceBySentence,
        MultiHeadAttentionWithHeadsFoldedIntoTheBatch,
        MultiHeadAttentionByHandWithAnAdditiveMask,
    ],
)
def test_the_module_check_accepts_correct_modules_written_differently(module):
    nb03.check_multi_head_attention(module)
    nb03.check_multi_head_attention(module, seed=42)


def test_checks_accept_correct_answers_written_differently():
    nb03.check_split_heads(split_with_unflatten_and_movedim)
    nb03.check_merge_heads(merge_with_movedim_and_flatten)
    nb03.check_split_heads(lambda x, num_heads: torch.stack(x.chunk(num_heads, dim=-1), dim=-3))
    nb03.check_merge_heads(lambda x: torch.cat(x.unbind(dim=-3), dim=-1))
    # torch.split takes the size of each piece, torch.chunk their number: both cut the heads out when told so.
    nb03.check_split_heads(lambda x, num_heads: torch.stack(x.split(x.shape[-1] // num_heads, dim=-1), dim=-3))
    nb03.check_merge_heads(lambda x: torch.cat(x.split(1, dim=-3), dim=-1).squeeze(-3))


def test_the_module_check_passes_masks_of_every_documented_shape():
    """The exercise documents a mask (n_q, n_k) for the whole batch and (batch, n_q or 1, n_k) per sentence."""
    seen = []

    class Recording(MultiHeadAttentionViaPyTorch):
        def forward(self, x, context=None, mask=None):
            if mask is not None:
                seen.append(tuple(mask.shape))
            return super().forward(x, context, mask)

    nb03.check_multi_head_attention(Recording)
    assert {(5, 6), (3, 1, 6), (3, 5, 6)} <= set(seen)


def test_the_module_check_gives_a_mask_of_the_batch_to_as_many_sentences_as_it_has_rows():
    """A mask (n_q, n_k) told from one per sentence by comparing its first size with the batch size passes for one
    when they agree (notebook 04's causal mask on a square batch): the check has a call where they do."""
    seen = []

    class Recording(MultiHeadAttentionViaPyTorch):
        def forward(self, x, context=None, mask=None):
            if mask is not None:
                seen.append((x.shape[0], tuple(mask.shape)))
            return super().forward(x, context, mask)

    nb03.check_multi_head_attention(Recording)
    assert any(len(shape) == 2 and batch == shape[0] for batch, shape in seen)
    assert any(len(shape) == 2 and batch != shape[0] for batch, shape in seen)


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


MODULE_CALLING_SPLIT_AND_MERGE = """
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query, self.key, self.value, self.output = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights
"""


def notebook_with(split: str, merge: str) -> dict:
    """A learner's namespace holding split_heads and merge_heads written as given, and a right module calling them."""
    namespace = {"torch": torch, "nn": nn, "attention": attention}
    for code in (split, merge, MODULE_CALLING_SPLIT_AND_MERGE):
        exec(code, namespace)
    return namespace


RIGHT_SPLIT = "def split_heads(x, num_heads):\n    return x.unflatten(-1, (num_heads, -1)).transpose(-3, -2)"
RIGHT_MERGE = "def merge_heads(x):\n    return x.transpose(-3, -2).flatten(-2)"


def test_at_home_a_right_module_is_told_that_only_the_learners_own_failing_split_or_merge_is_wrong(monkeypatch):
    monkeypatch.setattr(checks, "stand_ins", None)  # as in a student release: the learner's own versions are used
    nb03.check_multi_head_attention(notebook_with(RIGHT_SPLIT, RIGHT_MERGE)["MultiHeadAttention"])
    dealing = "def split_heads(x, num_heads):\n    *b, n, d = x.shape\n    return x.reshape(*b, num_heads, n, -1)"
    with pytest.raises(CheckFailed) as failure:
        nb03.check_multi_head_attention(notebook_with(dealing, RIGHT_MERGE)["MultiHeadAttention"])
    message = str(failure.value)
    assert "the rest of your module is right: it computes multi-head attention correctly with your split_heads" in (
        message
    )
    assert "your own split_heads from earlier in the notebook, and it does not pass its check" in message
    assert "instead of reshaping in forward" not in message and "merge_heads" not in message
    mixing = "def merge_heads(x):\n    *b, h, n, d = x.shape\n    return x.reshape(*b, n, h * d)"
    with pytest.raises(CheckFailed, match="correctly with your merge_heads, so its results differ .* only through it"):
        nb03.check_multi_head_attention(notebook_with(RIGHT_SPLIT, mixing)["MultiHeadAttention"])


def test_at_home_a_module_reshaping_inline_is_told_so_when_the_learners_split_and_merge_pass(monkeypatch):
    monkeypatch.setattr(checks, "stand_ins", None)
    namespace = notebook_with(RIGHT_SPLIT, RIGHT_MERGE)
    inline = re.sub(  # the queries, keys and values dealt out to heads by a reshape, with no transpose
        r"split_heads\(self\.(\w+)\((\w+)\), self\.num_heads\)",
        r"self.\1(\2).reshape(\2.shape[0], self.num_heads, \2.shape[1], -1)",
        MODULE_CALLING_SPLIT_AND_MERGE,
    )
    exec(inline, namespace)
    with pytest.raises(CheckFailed) as failure:
        nb03.check_multi_head_attention(namespace["MultiHeadAttention"])
    assert "Call split_heads and merge_heads (Exercises 1 and 2) instead of reshaping in forward" in str(failure.value)
    assert "your own" not in str(failure.value)
