"""The checks of notebook 04 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py.)
"""

import math

import pytest
import torch

from tests.stubs import raise_not_implemented
from transformer_course.checks import CheckFailed, call_learner, nb04
from transformer_course.checks.masked_weights import expect_masked_weights, query_named


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


def test_the_padding_oracle_cuts_sequences_longer_than_max_len_as_comparing_positions_does():
    lengths = torch.tensor([3, 1, 4])
    compared = (torch.arange(2) < lengths[:, None])[:, None, :]  # (batch, 1, max_len=2)
    assert torch.equal(nb04.real_positions(lengths, max_len=2), compared)


def test_the_inputs_changed_in_place_are_named():
    def attention_changing_k_and_v(q, k, v, mask=None):
        k.mul_(2.0)
        v.add_(1.0)
        return masked_attention_with_where(q, k, v, mask)

    with pytest.raises(CheckFailed, match="changed its inputs k and v in place"):
        nb04.check_masked_attention(attention_changing_k_and_v)


def test_a_crash_with_no_known_cause_is_shown_as_it_is():
    def attention_raising(q, k, v, mask=None):
        raise ValueError("something of the learner's own")

    with pytest.raises(CheckFailed, match=r"raised ValueError: something of the learner's own\.?$"):
        nb04.check_masked_attention(attention_raising)


def test_correct_answers_in_more_styles_pass():
    @torch.no_grad()
    def decoder_mask_decorated(lengths):
        return torch.logical_and(padding_mask_by_loop(lengths), causal_mask_by_comparison(int(lengths.max()))[None])

    def masked_attention_with_einsum_and_minus_infinity(q, k, v, mask=None):
        scores = torch.einsum("...qd,...kd->...qk", q, k) * q.size(-1) ** -0.5
        if mask is not None:
            scores = torch.where(mask, scores, float("-inf"))
        weights = scores.softmax(-1)
        if mask is not None:
            weights = torch.where(mask, weights, 0.0)
        return torch.einsum("...qk,...kd->...qd", weights, v), weights

    nb04.check_decoder_mask(decoder_mask_decorated)
    nb04.check_masked_attention(masked_attention_with_einsum_and_minus_infinity)


def test_a_hand_written_softmax_that_subtracts_the_row_maximum_passes_and_an_in_place_fill_of_the_scores_too():
    def masked_attention_with_a_stable_hand_written_softmax(q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores.masked_fill_(
                ~mask, torch.finfo(scores.dtype).min
            )  # the division's result: autograd does not need it
        exps = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        weights = exps / exps.sum(dim=-1, keepdim=True)
        if mask is not None:
            weights = weights * mask
        return weights @ v, weights

    nb04.check_masked_attention(masked_attention_with_a_stable_hand_written_softmax)


def test_a_crash_in_the_backward_pass_with_another_cause_is_shown_as_it_is():
    class FailingBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            raise RuntimeError("a backward pass of the learner's own")

    def attention_with_a_failing_backward(q, k, v, mask=None):
        outputs, weights = masked_attention_with_where(q, k, v, mask)
        return FailingBackward.apply(outputs), weights

    with pytest.raises(
        CheckFailed, match="computing the gradients of the outputs raised RuntimeError: a backward pass"
    ):
        nb04.check_masked_attention(attention_with_a_failing_backward)


@pytest.mark.parametrize("seed", range(20))
def test_one_maximum_for_the_whole_tensor_fails_with_every_seed_and_is_named(seed):
    # the large-scores case puts one query's scores more than 104 below another's whatever the seed
    def attention_minus_the_largest_score_of_all(q, k, v, mask=None):
        scores = q @ k.mT / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        exps = torch.exp(scores - scores.max())
        weights = exps / exps.sum(dim=-1, keepdim=True)
        return weights @ v, weights

    with pytest.raises(CheckFailed, match="subtracting one number for the whole tensor"):
        nb04.check_masked_attention(attention_minus_the_largest_score_of_all, seed=seed)


def test_a_softmax_not_finite_in_another_pattern_gets_both_limits_of_float32():
    def attention_minus_each_sequences_largest_score(q, k, v, mask=None):
        scores = q @ k.mT / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        exps = torch.exp(scores - scores.amax(dim=(-2, -1), keepdim=True))  # one number per sequence
        weights = exps / exps.sum(dim=-1, keepdim=True)
        return weights @ v, weights

    with pytest.raises(CheckFailed, match="meets two limits of float32"):
        nb04.check_masked_attention(attention_minus_each_sequences_largest_score)


def test_the_visible_keys_weight_lost_to_nan_replaced_by_zero_keeps_the_general_message():
    # every score nan or -inf, then nan_to_num: zeros with every key visible and with none, so no step is named
    def attention_multiplying_the_mask_by_minus_infinity(q, k, v, mask=None):
        scores = q @ k.mT / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores + (~mask) * float("-inf")
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        return weights @ v, weights

    with pytest.raises(CheckFailed, match=r"lost their weight\. Only a query with no visible key gets zero weights"):
        nb04.check_masked_attention(attention_multiplying_the_mask_by_minus_infinity)


def test_correct_answers_that_renormalise_safely_or_zero_only_the_empty_rows_pass():
    def masked_attention_renormalising_safely(q, k, v, mask=None):
        scores = q @ k.mT / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)
            weights = weights / weights.sum(dim=-1, keepdim=True).clamp(min=torch.finfo(weights.dtype).tiny)
        return weights @ v, weights

    def masked_attention_zeroing_the_empty_rows_only(q, k, v, mask=None):
        scores = q @ k.mT / q.shape[-1] ** 0.5
        if mask is None:
            weights = torch.softmax(scores, dim=-1)
        else:
            weights = torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)
            weights = weights * mask.any(dim=-1, keepdim=True)
        return weights @ v, weights

    nb04.check_masked_attention(masked_attention_renormalising_safely)
    nb04.check_masked_attention(masked_attention_zeroing_the_empty_rows_only)


def test_a_query_is_named_by_its_index_in_the_learners_words():
    assert query_named([3]) == "query 3"
    assert query_named([1, 2]) == "query 2 of sequence 1"
    assert query_named([0, 1, 4]) == "query 4 of batch index (0, 1)"


def test_a_modules_input_changed_in_place_is_named_by_its_forwards_signature():
    class MaskChanging(torch.nn.Module):
        def forward(self, x, mask=None):
            mask.unsqueeze_(-3)
            return x

    mask = torch.ones(2, 3, dtype=torch.bool)
    with pytest.raises(CheckFailed, match="changed its input mask in place"):
        call_learner(MaskChanging(), torch.ones(2, 3), mask=mask, call="module(x, mask)")


def test_a_correct_answer_that_computes_in_float64_and_returns_float32_passes():
    def masked_attention_in_double(q, k, v, mask=None):
        scores = q.double() @ k.double().mT / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)
        weights = weights.to(q.dtype)
        return weights @ v, weights

    nb04.check_masked_attention(masked_attention_in_double)


def test_weights_left_uniform_by_a_mask_that_hides_every_key_are_not_called_an_inverted_mask():
    def zeroing_only_if_some_key_is_visible(q, k, v, mask=None):
        scores = q @ k.mT / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        if mask is not None and mask.any():
            weights = weights.masked_fill(~mask, 0.0)
        return weights @ v, weights

    with pytest.raises(CheckFailed, match="hides every key.*no visible key, yet its weights are") as failure:
        nb04.check_masked_attention(zeroing_only_if_some_key_is_visible)
    assert "inverted" not in str(failure.value)
    weights = torch.full((2, 3), 1 / 3)
    with pytest.raises(CheckFailed, match="has no visible key, yet its weights are"):
        expect_masked_weights(weights, torch.zeros(1, 3, dtype=torch.bool), "attention")


def test_a_range_of_positions_one_short_is_named_when_max_len_is_given_too():
    def short_when_max_len_is_given(lengths, max_len=None):
        if max_len is None:
            return padding_mask_by_loop(lengths)
        return (torch.arange(max_len - 1) < lengths[:, None])[:, None, :]

    with pytest.raises(CheckFailed, match=r"\(4, 1, 5\), 5 positions, one fewer than max_len = 6\. torch.arange"):
        nb04.check_padding_mask(short_when_max_len_is_given)


def test_an_in_place_combination_is_named_whichever_mask_is_on_the_left():
    def causal_combined_in_place(lengths):
        n = int(lengths.max())
        mask = causal_mask_by_comparison(n)
        mask &= padding_mask_by_loop(lengths, n)
        return mask

    with pytest.raises(CheckFailed, match=r"keeps its shape, here \(4, 4\); it cannot grow to .* \(3, 4, 4\)"):
        nb04.check_decoder_mask(causal_combined_in_place)


def test_a_crash_on_the_pair_that_max_with_a_dim_returns_is_explained():
    def shifted(x):
        return x - x.max(dim=-1, keepdim=True)

    with pytest.raises(CheckFailed, match=r"the pair \(values, indices\) that \.max\(dim=\.\.\.\)"):
        call_learner(shifted, torch.ones(2, 3), call="shifted(x)")
