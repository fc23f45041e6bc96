"""The checks of notebook 02 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py.)
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
    """Biases of zeros change nothing the module computes yet, but they are trained: the exercise asks for none.
    (The kept wrong answer AttentionWithBiasesOfZeros is the same; this one is the parent of other modules here.)"""

    def __init__(self, d_model, d_k, d_v):
        super().__init__(d_model, d_k, d_v)
        self.query, self.key, self.value = nn.Linear(d_model, d_k), nn.Linear(d_model, d_k), nn.Linear(d_model, d_v)
        for layer in (self.query, self.key, self.value):
            nn.init.zeros_(layer.bias)


@torch.no_grad()  # an entropy to look at need not be differentiable
def entropy_by_where(weights):
    terms = torch.where(weights > 0, weights * weights.log(), torch.zeros_like(weights))
    return -terms.sum(dim=-1)


def attention_with_bmm(q, k, v, mask=None):
    """Batch axes flattened into one for torch.bmm, and PyTorch's own attention for the outputs."""
    batch, (n_q, d_k), n_k = q.shape[:-2], q.shape[-2:], k.shape[-2]
    scores = torch.bmm(q.reshape(-1, n_q, d_k), k.reshape(-1, n_k, d_k).transpose(1, 2)) / d_k**0.5
    scores = scores.reshape(*batch, n_q, n_k)
    if mask is not None:
        scores = scores.masked_fill(mask.logical_not(), float("-inf"))
    outputs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return outputs, scores.softmax(dim=-1)


class AttentionWithMatrices(nn.Module):
    """Bare nn.Parameter matrices of shape (d_model, d_out), applied as x @ W, as the notebook's formulas write it."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Parameter(torch.randn(d_model, d_k) / d_model**0.5)
        self.key = nn.Parameter(torch.randn(d_model, d_k) / d_model**0.5)
        self.value = nn.Parameter(torch.randn(d_model, d_v) / d_model**0.5)

    def forward(self, x, context=None, mask=None):
        source = x if context is None else context
        scores = torch.einsum("...qd,...kd->...qk", x @ self.query, source @ self.key) / self.query.shape[1] ** 0.5
        if mask is not None:
            scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        return weights @ (source @ self.value), weights


class AttentionWithMatricesInLinearsLayout(nn.Module):
    """nn.Parameter matrices of shape (d_out, d_model), nn.Linear's layout, applied with F.linear."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query, self.key = (nn.Parameter(torch.randn(d_k, d_model)) for _ in range(2))
        self.value = nn.Parameter(torch.randn(d_v, d_model))

    def forward(self, x, context=None, mask=None):
        if context is None:
            context = x
        q, k, v = F.linear(x, self.query), F.linear(context, self.key), F.linear(context, self.value)
        return attention_with_matmul_and_where(q, k, v, mask)


class AttentionWithItsLayersListed(AttentionWithEinsum):
    """The three projections also kept in a list of the module's own: the same layers under two names, no sharing."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__(d_model, d_k, d_v)
        self.projections = nn.ModuleList([self.query, self.key, self.value])


class AttentionWithFusedProjection(AttentionWithEinsum):
    """One layer for the three projections, split after: correct, but the check cannot find self.query."""

    def __init__(self, d_model, d_k, d_v):
        nn.Module.__init__(self)
        self.qkv = nn.Linear(d_model, 2 * d_k + d_v, bias=False)


def test_checks_accept_correct_answers_written_differently():
    nb02.check_attention_entropy(lambda weights: torch.distributions.Categorical(probs=weights).entropy())
    nb02.check_attention_entropy(entropy_by_clamping)
    nb02.check_scaled_dot_product_attention(attention_with_einsum)
    nb02.check_scaled_dot_product_attention(attention_with_matmul_and_where)
    nb02.check_single_head_attention(AttentionWithEinsum)
    nb02.check_attention_entropy(entropy_by_where)
    nb02.check_scaled_dot_product_attention(attention_with_bmm)
    nb02.check_single_head_attention(AttentionWithMatrices)
    nb02.check_single_head_attention(AttentionWithMatricesInLinearsLayout)
    nb02.check_single_head_attention(AttentionWithItsLayersListed)


def test_projections_the_check_cannot_find_are_told_what_it_needs():
    with pytest.raises(CheckFailed, match=r"self.query is nothing\. The check gives .* nn.Linear without bias or an"):
        nb02.check_single_head_attention(AttentionWithFusedProjection)


@pytest.mark.parametrize("seed", [0, 1, 577, 1729, 8128])
def test_correct_answers_pass_for_the_hidden_seeds(seed):
    nb02.check_attention_entropy(entropy_by_clamping, seed=seed)
    nb02.check_scaled_dot_product_attention(attention_with_einsum, seed=seed)
    nb02.check_single_head_attention(AttentionWithEinsum, seed=seed)
    nb02.check_single_head_attention(AttentionWithMatrices, seed=seed)


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


def test_a_module_that_always_crashes_is_not_said_to_multiply_by_untransposed_weights():
    class AttentionThatCrashes(nn.Module):
        def __init__(self, d_model, d_k, d_v):
            super().__init__()
            self.query = nn.Linear(d_model, d_k, bias=False)
            self.key = nn.Linear(d_model, d_k, bias=False)
            self.value = nn.Linear(d_model, d_v, bias=False)

        def forward(self, x, context=None, mask=None):
            return attention(self.query(x) @ torch.ones(3, 3), self.key(x), self.value(x), mask)

    with pytest.raises(CheckFailed) as failure:
        nb02.check_single_head_attention(AttentionThatCrashes)
    assert "raised RuntimeError" in str(failure.value) and "nn.Linear stores" not in str(failure.value)


def test_attention_that_crashes_on_any_batch_shape_is_not_blamed_on_batch_axes():
    def attention_that_crashes_with_gradients(q, k, v, mask=None):
        if q.requires_grad:
            raise IndexError("some other mistake")
        return attention_with_einsum(q, k, v, mask)

    with pytest.raises(CheckFailed) as failure:
        nb02.check_scaled_dot_product_attention(attention_that_crashes_with_gradients)
    assert "raised IndexError" in str(failure.value) and "two batch axes" not in str(failure.value)


class AttentionWithMatricesAppliedTransposed(AttentionWithMatrices):
    """Matrices of shape (d_model, d_out), applied as F.linear(x, W), that is x @ W.T: the shapes fit only when
    d_model = d_out."""

    def forward(self, x, context=None, mask=None):
        source = x if context is None else context
        q, k, v = F.linear(x, self.query), F.linear(source, self.key), F.linear(source, self.value)
        return attention_with_einsum(q, k, v, mask)


class AttentionWithBiasesAndUntransposedWeights(AttentionWithZeroBias):
    def forward(self, x, context=None, mask=None):
        source = x if context is None else context
        q = x @ self.query.weight + self.query.bias
        k, v = source @ self.key.weight + self.key.bias, source @ self.value.weight + self.value.bias
        return attention_with_einsum(q, k, v, mask)


class AttentionWithMatricesAndValuesMadeByTheQuery(AttentionWithMatrices):
    def forward(self, x, context=None, mask=None):
        source = x if context is None else context
        return attention_with_einsum(x @ self.query, source @ self.key, source @ self.query, mask)


@pytest.mark.parametrize(
    ("module", "named"),
    [
        (AttentionWithMatricesAppliedTransposed, "it multiplies x by the transpose of self.query, of shape"),
        (AttentionWithBiasesAndUntransposedWeights, "it multiplies x by self.query.weight as it is stored"),
        (AttentionWithMatricesAndValuesMadeByTheQuery, "the values were made with self.query; use their own"),
    ],
)
def test_a_second_module_of_equal_sizes_names_what_the_first_one_s_shapes_hide(module, named):
    """Found by behaviour with the matrices in the layout that the learner's own module stores them in."""
    with pytest.raises(CheckFailed, match=r"A second module of yours, with d_model = d_k = d_v = 4") as failure:
        nb02.check_single_head_attention(module)
    assert named in str(failure.value)


def attention_with_torch_sqrt_of_a_tensor(q, k, v, mask=None):
    """torch.sqrt of the size made a tensor first: correct (a 0-dimensional tensor keeps q's dtype in the division)."""
    scores = q @ k.mT / torch.sqrt(torch.tensor(q.shape[-1]))
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def test_torch_sqrt_of_the_size_as_a_tensor_is_accepted():
    nb02.check_scaled_dot_product_attention(attention_with_torch_sqrt_of_a_tensor)


def attention_indexing_with_the_mask_expanded(q, k, v, mask=None):
    """Boolean indexing, correct once the mask is expanded to the scores' shape."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores[~mask.expand_as(scores)] = float("-inf")
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def test_boolean_indexing_with_a_mask_of_the_full_shape_is_accepted():
    nb02.check_scaled_dot_product_attention(attention_indexing_with_the_mask_expanded)


def attention_divided_by_three(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / 3
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def attention_multiplied_by_d_k(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * q.shape[-1]
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def attention_with_softmax_over_axis_0(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=0)
    return weights @ v, weights


def attention_with_a_nan_weight(q, k, v, mask=None):
    outputs, weights = attention_with_einsum(q, k, v, mask)
    weights = weights.clone()
    weights[..., 0, 0] = float("nan")
    return outputs, weights


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        (attention_divided_by_three, r"the scores were divided by 3, not by √d_k = √8\.$"),
        (attention_multiplied_by_d_k, r"the scores were multiplied by 8; divide them by √d_k = √8\.$"),
        (
            attention_with_softmax_over_axis_0,
            r"sum to 1 over axis 0, of size 2, a batch axis.* Give the softmax dim=-1",
        ),
        (attention_with_a_nan_weight, r"some of your weights are nan, where PyTorch's are all finite"),
    ],
)
def test_attention_mistakes_are_named_by_what_they_compute(answer, named):
    with pytest.raises(CheckFailed, match=named):
        nb02.check_scaled_dot_product_attention(answer)


class AttentionWithAKeywordOnlyMask(AttentionWithEinsum):
    """forward(x, context=None, *, mask=None): context stays second, so it may be passed by position."""

    def forward(self, x, context=None, *, mask=None):
        return super().forward(x, context, mask)


def test_a_module_whose_mask_is_keyword_only_is_accepted():
    nb02.check_single_head_attention(AttentionWithAKeywordOnlyMask)


def test_biases_of_zeros_are_named_as_parameters_the_exercise_does_not_ask_for():
    with pytest.raises(CheckFailed, match=r"trains parameters besides its three maps: self\.query\.bias \(4,\)"):
        nb02.check_single_head_attention(AttentionWithZeroBias)


class AttentionWithQueriesStartingAtZero(AttentionWithMatrices):
    """W_Q starts at zero, W_K does not: W_Q still receives a gradient (proportional to W_K), so it learns."""

    def __init__(self, d_model, d_k, d_v):
        super().__init__(d_model, d_k, d_v)
        self.query = nn.Parameter(torch.zeros(d_model, d_k))


def attention_with_a_loop_over_the_flattened_batch(q, k, v, mask=None):
    """One sequence at a time, after broadcasting the batch axes of q, k, v and the mask and flattening them."""
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    (n_q, d_k), (n_k, d_v) = q.shape[-2:], v.shape[-2:]
    qs = q.expand(*batch, n_q, d_k).reshape(-1, n_q, d_k)
    ks = k.expand(*batch, n_k, d_k).reshape(-1, n_k, d_k)
    vs = v.expand(*batch, n_k, d_v).reshape(-1, n_k, d_v)
    masks = None if mask is None else mask.expand(*batch, n_q, n_k).reshape(-1, n_q, n_k)
    outputs, weights = [], []
    for index in range(qs.shape[0]):
        scores = qs[index] @ ks[index].T / math.sqrt(d_k)
        if masks is not None:
            scores = torch.where(masks[index], scores, float("-inf"))
        weights.append(torch.softmax(scores, dim=1))
        outputs.append(weights[-1] @ vs[index])
    return torch.stack(outputs).reshape(*batch, n_q, d_v), torch.stack(weights).reshape(*batch, n_q, n_k)


def test_a_query_map_that_starts_at_zero_and_a_loop_over_the_batch_are_accepted():
    nb02.check_single_head_attention(AttentionWithQueriesStartingAtZero)
    nb02.check_scaled_dot_product_attention(attention_with_a_loop_over_the_flattened_batch)


def attention_indexing_the_last_two_axes(q, k, v, mask=None):
    """scores[..., ~mask]: right for a mask of shape (n_q, n_k), a crash for a mask with batch axes."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores[..., ~mask] = float("-inf")
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def test_a_mask_with_batch_axes_is_required_to_work():
    with pytest.raises(CheckFailed, match=r"Yet it was right with the mask of shape \(4, 6\)") as failure:
        nb02.check_scaled_dot_product_attention(attention_indexing_the_last_two_axes)
    assert "padding mask (2, 1, 1, 6)" in str(failure.value)


def entropy_with_a_tiny_eps(weights):
    """An eps far below every weight changes the entropy by less than float32 can tell."""
    return -(weights * torch.log(weights + 1e-12)).sum(dim=-1)


def test_an_eps_far_below_every_weight_is_accepted():
    nb02.check_attention_entropy(entropy_with_a_tiny_eps)
