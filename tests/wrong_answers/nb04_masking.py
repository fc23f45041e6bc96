"""Wrong answers to notebook 04: padding and causal masks, masked attention's hard cases, combining masks."""

import torch

# The last exercise calls the first two by name, as in the notebook.
from transformer_course.checks.stand_ins import causal_mask, padding_mask
from wrong_answers import wrong_answer

ASSIGNMENT = "04_masking"

# Exercise 1: padding_mask --------------------------------------------------------------------------------


@wrong_answer("padding_mask", message="one position too many")
def padding_mask_off_by_one(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(max_len) <= lengths[:, None])[:, None, :]


@wrong_answer("padding_mask", message="True at the padding")
def padding_mask_marking_the_padding(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(max_len) >= lengths[:, None])[:, None, :]


@wrong_answer("padding_mask", message="add an axis for the queries")
def padding_mask_without_query_axis(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return torch.arange(max_len) < lengths[:, None]


@wrong_answer("padding_mask", message="padded to the longest length")
def padding_mask_ignoring_max_len(lengths, max_len=None):
    return (torch.arange(int(lengths.max())) < lengths[:, None])[:, None, :]


@wrong_answer("padding_mask", message="one position too few")
def padding_mask_one_position_short(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(max_len) < lengths[:, None] - 1)[:, None, :]


@wrong_answer("padding_mask", message="with no max_len given, max_len is the longest length")
def padding_mask_one_position_longer_by_default(lengths, max_len=None):
    max_len = int(lengths.max()) + 1 if max_len is None else max_len
    return (torch.arange(max_len) < lengths[:, None])[:, None, :]


@wrong_answer("padding_mask", message="return a boolean mask")
def padding_mask_of_floats(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(max_len) < lengths[:, None]).float()[:, None, :]


# Exercise 2: causal_mask ---------------------------------------------------------------------------------


@wrong_answer("causal_mask", message="hides the diagonal")
def causal_mask_hiding_the_diagonal(n):
    return torch.ones(n, n, dtype=torch.bool).tril(diagonal=-1)


@wrong_answer("causal_mask", message="hides the past instead of the future")
def causal_mask_hiding_the_past(n):
    return torch.ones(n, n, dtype=torch.bool).triu()


@wrong_answer("causal_mask", message="it marks what to hide")
def causal_mask_marking_the_future(n):
    return torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)


@wrong_answer("causal_mask", message="1 step into the future")
def causal_mask_one_step_ahead(n):
    return torch.ones(n, n, dtype=torch.bool).tril(diagonal=1)


@wrong_answer("causal_mask", message="additive mask")
def causal_mask_additive(n):
    return torch.full((n, n), float("-inf")).triu(diagonal=1)


# Exercise 3: masked_attention ----------------------------------------------------------------------------


@wrong_answer("masked_attention", message="softmax of all -inf is 0/0 = nan")
def attention_filling_minus_infinity(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("masked_attention", message="the gradient of q holds nan")
def attention_adding_minus_infinity_then_replacing_nan(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores + torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="applied after the softmax")
def attention_masking_after_the_softmax(q, k, v, mask=None):
    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="lets masked scores dominate the normalisation")
def masked_attention_renormalising_after_softmax(q, k, v, mask=None):
    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
        total = weights.sum(dim=-1, keepdim=True)  # what the visible keys kept
        weights = weights / total.masked_fill(total == 0, 1.0)  # a row with nothing visible stays 0
    return weights @ v, weights


@wrong_answer("masked_attention", message="has no visible key, yet its weights are")
def attention_forgetting_to_zero_empty_rows(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("masked_attention", message="your mask is inverted")
def attention_with_inverted_mask(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="the mask changed nothing")
def attention_ignoring_the_mask(q, k, v, mask=None):
    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return weights @ v, weights


@wrong_answer("masked_attention", message="as if their scores were 0")
def attention_filling_with_zero(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, 0.0)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("masked_attention", message="the masked scores were 0: filling with 0, or multiplying the scores")
def attention_multiplying_scores_and_weights_by_the_mask(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores * mask
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v, weights


@wrong_answer("masked_attention", message="the masked scores were replaced by -10, a finite number not negative")
def attention_filling_minus_ten_then_zeroing(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, -10.0)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="as if their scores were replaced by -5")
def attention_filling_minus_five(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, -5.0)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("masked_attention", message="sees some key, yet all its weights are 0")
def attention_multiplying_the_mask_by_minus_infinity(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores + (~mask) * float("-inf")  # 0 × (-inf) is nan where the mask is True
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="nan in the results, also for queries that see some key")
def attention_with_nan_from_zero_times_infinity(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores + (~mask) * float("-inf")  # 0 × (-inf) is nan where the mask is True
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("masked_attention", message="Boolean indexing (scores[~mask] = ...)")
def attention_indexing_with_a_broadcast_mask(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores[~mask] = torch.finfo(scores.dtype).min
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights[~mask] = 0.0
    return weights @ v, weights


@wrong_answer("masked_attention", message="mask the scores only if mask is not None")
def attention_assuming_a_mask(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="you did not scale the scores")
def attention_without_scaling(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="you divided the scores by √d_v")
def attention_scaled_by_the_value_size(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / v.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="you divided the scores by d_k; divide by its square root")
def attention_scaled_by_d_k(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1]
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="you scaled after the softmax")
def attention_scaled_after_the_softmax(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1) / q.shape[-1] ** 0.5
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="sum to 1 over the queries axis")
def attention_softmax_over_the_queries(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-2)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="compute the outputs from the weights you return")
def attention_with_outputs_before_zeroing(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    outputs = weights @ v
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return outputs, weights


@wrong_answer("masked_attention", message="returned a tensor that does not require gradients")
def attention_without_gradients(q, k, v, mask=None):
    with torch.no_grad():
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)
        return weights @ v, weights


# Exercise 4: decoder_mask --------------------------------------------------------------------------------


@wrong_answer("decoder_mask", message="the padded keys are visible")
def decoder_mask_without_padding(lengths):
    n = int(lengths.max())
    return causal_mask(n).expand(len(lengths), n, n)


@wrong_answer("decoder_mask", message="returned only the padding mask")
def decoder_mask_without_causality(lengths):
    return padding_mask(lengths)


@wrong_answer("decoder_mask", message="combine with &, not |")
def decoder_mask_with_or(lengths):
    return padding_mask(lengths) | causal_mask(int(lengths.max()))


@wrong_answer("decoder_mask", message="the causal part is the upper triangle")
def decoder_mask_with_the_upper_triangle(lengths):
    n = int(lengths.max())
    return padding_mask(lengths, n) & torch.ones(n, n, dtype=torch.bool).triu()


@wrong_answer("decoder_mask", message="the rows of the padded queries are all False")
def decoder_mask_hiding_padded_queries(lengths):
    n = int(lengths.max())
    keys = padding_mask(lengths, n)  # (batch, 1, n)
    return keys & keys.transpose(-2, -1) & causal_mask(n)


@wrong_answer("masked_attention", message="A number written in for one d_k fits no other")
def attention_scaled_by_a_constant_two(q, k, v, mask=None):
    """√d_k written as the number it was in one example: right for d_k = 4 only."""
    scores = q @ k.transpose(-2, -1) / 2
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="`d ** 1/2` is (d ** 1) / 2")
def attention_scaled_with_the_power_read_as_a_division(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 1 / 2
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
