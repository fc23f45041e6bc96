"""The checks of notebook 04 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py.)
"""

import pytest
import torch

from tests.stubs import raise_not_implemented
from transformer_course.checks import CheckFailed, expect_masked_weights, nb04


def padding_mask_by_loop(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    mask = torch.zeros(len(lengths), 1, max_len, dtype=torch.bool)
    for row, length in enumerate(lengths):
        mask[row, 0, :length] = True
    return mask


def causal_mask_by_comparison(n):
    positions = torch.arange(n)
    return positions[None, :] <= positions[:, None]


def masked_attention_with_where(q, k, v, mask=None):
    scores = q @ k.mT / q.shape[-1] ** 0.5
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        weights = torch.softmax(torch.where(mask, scores, torch.finfo(scores.dtype).min), dim=-1)
        weights = torch.where(mask, weights, torch.zeros(()))
    return weights @ v, weights


def masked_attention_with_minus_infinity_and_nan_to_num(q, k, v, mask=None):
    # masked_fill blocks the gradient of filled positions, so -inf followed by nan_to_num is correct too
    scores = q @ k.mT / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v, weights


def masked_attention_multiplying_by_the_mask(q, k, v, mask=None):
    # after a finite fill there is no nan, so multiplying by the mask zeroes the forbidden weights
    scores = q @ k.mT / q.shape[-1] ** 0.5
    if mask is None:
        return torch.softmax(scores, dim=-1) @ v, torch.softmax(scores, dim=-1)
    weights = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1) * mask
    return weights @ v, weights


def masked_attention_adding_the_most_negative_number(q, k, v, mask=None):
    # adding finfo.min where masked stays finite (it rounds to finfo.min), so the softmax and its gradient do too
    scores = (q / q.shape[-1] ** 0.5) @ k.transpose(-1, -2)
    if mask is not None:
        scores = scores + (~mask).to(scores.dtype) * torch.finfo(scores.dtype).min
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights * mask.to(weights.dtype)
    return weights @ v, weights


def masked_attention_with_pytorch_inside(q, k, v, mask=None):
    # PyTorch's attention with the identity as values returns the weights themselves
    n_k = k.shape[-2]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    weights = torch.nn.functional.scaled_dot_product_attention(
        q, k, torch.eye(n_k, dtype=q.dtype).expand(*batch, n_k, n_k), attn_mask=mask
    )
    return weights @ v, weights


@torch.no_grad()
def padding_mask_without_gradients(lengths, max_len=None):
    # masks need no gradient: a decorator that turns it off is a correct answer
    max_len = lengths.max().item() if max_len is None else max_len
    return (torch.arange(max_len)[None, :] < lengths[:, None]).unsqueeze(1)


def test_checks_accept_correct_answers_written_differently():
    nb04.check_padding_mask(padding_mask_by_loop)
    nb04.check_causal_mask(causal_mask_by_comparison)
    nb04.check_masked_attention(masked_attention_with_where)
    nb04.check_masked_attention(masked_attention_with_minus_infinity_and_nan_to_num)
    nb04.check_masked_attention(masked_attention_multiplying_by_the_mask)
    nb04.check_masked_attention(masked_attention_adding_the_most_negative_number)
    nb04.check_masked_attention(masked_attention_with_pytorch_inside)
    nb04.check_padding_mask(padding_mask_without_gradients)
    nb04.check_decoder_mask(lambda lengths: padding_mask_by_loop(lengths) & causal_mask_by_comparison(max(lengths)))


@pytest.mark.parametrize("seed", range(40))
def test_correct_answers_pass_with_every_seed(seed):
    # the random cases include empty sentences, a batch of empty sentences and lengths all equal to max_len
    nb04.check_padding_mask(padding_mask_by_loop, seed=seed)
    nb04.check_decoder_mask(
        lambda lengths: padding_mask_by_loop(lengths) & causal_mask_by_comparison(max(lengths)), seed=seed
    )
    nb04.check_masked_attention(masked_attention_with_where, seed=seed)


def test_seeds_draw_different_cases():
    calls = []

    def recording(lengths, max_len=None):
        calls.append((lengths.tolist(), max_len))
        return padding_mask_by_loop(lengths, max_len)

    nb04.check_padding_mask(recording, seed=0)
    nb04.check_padding_mask(recording, seed=7)
    half = len(calls) // 2
    assert calls[:3] == calls[half : half + 3]  # the fixed cases
    assert calls[3:half] != calls[half + 3 :]  # the random ones


def test_decoder_mask_failure_shows_the_first_sentence_that_differs():
    def wrong_in_sentence_1(lengths):
        mask = padding_mask_by_loop(lengths) & causal_mask_by_comparison(max(lengths))
        mask[1, -1, 0] = not mask[1, -1, 0]
        return mask

    with pytest.raises(CheckFailed, match="sentence 1 .* is the first that differs"):
        nb04.check_decoder_mask(wrong_in_sentence_1)


def test_the_mask_oracles_agree_with_closed_forms():
    assert nb04.real_positions(torch.tensor([2, 0]), max_len=3).squeeze(1).tolist() == [
        [True, True, False],
        [False, False, False],
    ]
    assert torch.equal(nb04.visible_to_causal_attention(n=3), torch.ones(3, 3, dtype=torch.bool).tril())


@pytest.mark.parametrize(
    "check",
    [nb04.check_padding_mask, nb04.check_causal_mask, nb04.check_masked_attention, nb04.check_decoder_mask],
)
def test_a_stub_is_reported_as_not_implemented_yet(check):
    with pytest.raises(CheckFailed, match="is not implemented yet"):
        check(raise_not_implemented)


def attention_filling_with(fill: float, zero_afterwards: bool):
    def masked_attention(q, k, v, mask=None):
        scores = q @ k.mT / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, fill)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None and zero_afterwards:
            weights = weights.masked_fill(~mask, 0.0)
        return weights @ v, weights

    return masked_attention


@pytest.mark.parametrize("seed", range(0, 40, 3))
@pytest.mark.parametrize("zero_afterwards", [False, True])
@pytest.mark.parametrize(("fill", "named"), [(0.0, "scores were 0"), (-3.0, "replaced by -3"), (-10.0, "by -10")])
def test_a_finite_fill_is_named_by_the_number_it_used(seed, zero_afterwards, fill, named):
    with pytest.raises(CheckFailed, match=named):
        nb04.check_masked_attention(attention_filling_with(fill, zero_afterwards), seed=seed)


def test_the_masked_weights_message_mentions_a_query_with_no_visible_key_only_where_there_is_one():
    scores = torch.tensor([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]])  # (n_q, n_k)
    with_visible_keys = torch.tensor([[True, False, True], [True, True, False]])
    with_an_empty_row = torch.tensor([[True, False, True], [False, False, False]])
    for mask, clause_expected in ((with_visible_keys, False), (with_an_empty_row, True)):
        weights = torch.softmax(scores.masked_fill(~mask, 0.0), dim=-1)  # a fill of 0 leaves masked keys weight
        for given in (scores, None):
            with pytest.raises(CheckFailed) as failure:
                expect_masked_weights(weights, mask, "attention", scores=given)
            assert ("no visible key" in str(failure.value)) == clause_expected


def test_without_scores_the_masked_weights_message_names_both_causes_of_a_shortfall():
    scores = torch.tensor([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]])
    mask = torch.tensor([[True, False, True], [True, True, False]])
    after_the_softmax = torch.softmax(scores, dim=-1) * mask
    with pytest.raises(CheckFailed, match="the mask was applied after the softmax, where"):
        expect_masked_weights(after_the_softmax, mask, "attention", scores=scores)
    with pytest.raises(CheckFailed, match="when the mask is applied after the softmax, or when the masked scores"):
        expect_masked_weights(after_the_softmax, mask, "attention")


def test_weights_that_do_not_sum_to_one_where_nothing_is_masked_are_left_to_the_comparison():
    scores = torch.tensor([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    halved = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) / 2  # not a masking mistake
    expect_masked_weights(halved, mask, "attention", scores=scores)
    expect_masked_weights(halved, mask, "attention")
