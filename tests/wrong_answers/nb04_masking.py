"""Wrong answers to notebook 04: padding and causal masks, masked attention's hard cases, combining masks."""

import torch
import torch.nn.functional as F

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


@wrong_answer("masked_attention", message="from a softmax over a row of all -inf")
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


@wrong_answer("decoder_mask", message="combine with & (and), not | (or)")
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


@wrong_answer("padding_mask", message="Make the lengths a column, shape (batch, 1)")
def padding_mask_comparing_with_the_lengths_as_a_row(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(max_len) < lengths).unsqueeze(1)


@wrong_answer("masked_attention", message="some step handles matrices only, such as k.T")
def attention_transposing_with_dot_t(q, k, v, mask=None):
    scores = q @ k.T / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="takes exactly three axes or counts them from the front, such as torch.bmm")
def attention_with_bmm(q, k, v, mask=None):
    scores = torch.bmm(q, k.transpose(-2, -1)) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return torch.bmm(weights, v), weights


@wrong_answer("masked_attention", message="Keep the axis, keepdim=True")
def attention_emptying_rows_without_keepdim(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(dim=-1), 0.0)  # the rows with no visible key
    return weights @ v, weights


@wrong_answer("masked_attention", message="softmax needs the axis to normalise over, its dim")
def attention_with_softmax_missing_its_dim(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="F.softmax without dim picks the axis from the number of axes")
def attention_with_functional_softmax_without_dim(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="return the pair in the order (outputs, weights)")
def attention_returning_the_weights_first(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights, weights @ v


@wrong_answer("masked_attention", message="changed its input q in place")
def attention_scaling_q_in_place(q, k, v, mask=None):
    q /= q.shape[-1] ** 0.5
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="changed its input mask in place")
def attention_inverting_the_mask_in_place(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        hidden = mask.logical_not_()
        scores = scores.masked_fill(hidden, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(hidden, 0.0)
    return weights @ v, weights


@wrong_answer("decoder_mask", message="padded to n = 1, the length of the first sentence, lengths[0]")
def decoder_mask_sized_by_the_first_sentence(lengths):
    n = int(lengths[0])
    return padding_mask(lengths, n) & causal_mask(n)


@wrong_answer("decoder_mask", message="padded to n = 3, the number of sentences, len(lengths)")
def decoder_mask_sized_by_the_batch(lengths):
    n = len(lengths)
    return padding_mask(lengths, n) & causal_mask(n)


@wrong_answer("decoder_mask", message="Python's `and`, `or`, `not` and `if` need a single True or False")
def decoder_mask_with_python_and(lengths):
    n = int(lengths.max())
    return padding_mask(lengths, n) and causal_mask(n)


# Second fresh read: overflow, in-place change of the softmax's output, code for four axes only, d_k from another
# axis, torch.sqrt of a Python int ------------------------------------------------------------------------------


@wrong_answer("masked_attention", message="e^x overflows float32 to inf for x above about 88.7")
def attention_with_a_softmax_written_without_the_row_max(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    exps = torch.exp(scores)
    weights = exps / exps.sum(dim=-1, keepdim=True)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="the softmax's output, the weights, was changed in place")
def attention_zeroing_the_weights_in_place(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights.masked_fill_(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="It runs on inputs of four axes, (batch, heads, n, d), but not on three")
def attention_with_softmax_over_axis_three(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=3)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="is the size of q's axis 2 (queries), not d_k")
def attention_taking_d_k_from_axis_two(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[2] ** 0.5  # d_k as in (batch, n, d)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="torch.sqrt takes a tensor, and it was given a Python int")
def attention_with_torch_sqrt_of_the_size(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / torch.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("decoder_mask", message="a padding mask of (batch, n), without its axis of size 1")
def decoder_mask_with_the_padding_mask_squeezed(lengths):
    n = int(lengths.max())
    return padding_mask(lengths, n).squeeze(1) & causal_mask(n)


@wrong_answer("padding_mask", message="the axis of size 1 last; put it in the middle")
def padding_mask_with_the_query_axis_last(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(max_len) < lengths[:, None])[:, :, None]


@wrong_answer("masked_attention", message="your code adds an axis to the mask")
def attention_adding_a_heads_axis_to_the_mask(q, k, v, mask=None):
    if mask is not None:
        mask = mask.unsqueeze(1)  # a heads axis, although the mask has one already
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


# Third fresh read: renormalising after step 2, the visible keys' weight lost in three ways, a transposed mask, one
# maximum for the whole tensor, the weights returned from before step 2, left padding, a repeated padding row, the
# padding mask's axes swapped --------------------------------------------------------------------------------------


@wrong_answer("masked_attention", message="or from dividing a row of zero weights by its sum, 0")
def attention_renormalising_after_zeroing(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
        weights = weights / weights.sum(dim=-1, keepdim=True)  # 0 / 0 for a row with nothing visible
    return weights @ v, weights


@wrong_answer("masked_attention", message="step 1 gave the masked keys a large positive score")
def attention_filling_with_the_largest_number(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).max)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="step 1 filled the visible scores instead of the masked ones")
def attention_with_the_values_of_where_swapped(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = torch.where(mask, torch.finfo(scores.dtype).min, scores)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="step 2 set the weights of the visible pairs to 0")
def attention_zeroing_the_visible_weights(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="your code transposes the mask")
def attention_transposing_the_mask(q, k, v, mask=None):
    if mask is not None:
        mask = mask.transpose(-2, -1)  # (keys, queries)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="subtracting one number for the whole tensor, such as scores.max()")
def attention_with_a_softmax_minus_the_largest_score_of_all(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    exps = torch.exp(scores - scores.max())
    weights = exps / exps.sum(dim=-1, keepdim=True)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="your outputs are right, but the weights you return are not the ones")
def attention_returning_the_weights_from_before_zeroing(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is None:
        return weights @ v, weights
    zeroed = weights.masked_fill(~mask, 0.0)
    return zeroed @ v, weights


@wrong_answer("padding_mask", message="as if the padding came first")
def padding_mask_padding_on_the_left(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(max_len) >= max_len - lengths[:, None])[:, None, :]


@wrong_answer("padding_mask", message="each sentence's row repeated for every query")
def padding_mask_repeated_for_every_query(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    real = torch.arange(max_len) < lengths[:, None]  # (batch, max_len)
    return real[:, None, :].expand(-1, max_len, -1)


@wrong_answer("decoder_mask", message="its axis of size 1 moved to the front (transpose(0, 1), say)")
def decoder_mask_with_the_padding_mask_transposed(lengths):
    n = int(lengths.max())
    return causal_mask(n) & padding_mask(lengths, n).transpose(0, 1)


@wrong_answer("padding_mask", message="the positions are on the first axis and the sentences on the last, swapped")
def padding_mask_with_positions_as_the_column(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    real = torch.arange(max_len)[:, None] < lengths  # (max_len, batch): positions down, sentences across
    return real[:, None, :]


@wrong_answer("padding_mask", message="the axis of size 1 in front; put it in the middle")
def padding_mask_with_the_query_axis_in_front(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(max_len) < lengths[:, None]).unsqueeze(0)


@wrong_answer("padding_mask", message="one fewer than max_len = 4, so the default is not the cause")
def padding_mask_counting_positions_from_one(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    positions = torch.arange(1, max_len)  # 1-based positions, one short
    return (positions <= lengths[:, None])[:, None, :]


@wrong_answer("padding_mask", message="one more than max_len = 4, so the default is not the cause")
def padding_mask_with_one_position_too_many(lengths, max_len=None):
    max_len = int(lengths.max()) if max_len is None else max_len
    return (torch.arange(max_len + 1) < lengths[:, None])[:, None, :]


@wrong_answer("masked_attention", message="you multiplied by √d_k; divide by it")
def attention_multiplied_by_the_square_root(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="you divided the scores by √(number of keys)")
def attention_scaled_by_the_number_of_keys(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / k.shape[-2] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="and `d ** -1/2` is (d ** -1) / 2")
def attention_multiplied_by_a_power_read_as_a_division(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -1 / 2
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="It runs when given q and k swapped: your scores are k qᵀ")
def attention_with_the_scores_of_k_times_q(q, k, v, mask=None):
    scores = k @ q.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="It runs when given v transposed, (…, d_v, n_k): your code transposes v")
def attention_transposing_the_values(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v.transpose(-2, -1), weights


@wrong_answer("masked_attention", message="A float64 (double) tensor met a float32 one")
def attention_computing_the_scores_in_double(q, k, v, mask=None):
    scores = q.double() @ k.double().transpose(-2, -1) / q.shape[-1] ** 0.5  # more precision
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="some step made float64 tensors (.double(), or dtype=torch.float64")
def attention_with_a_softmax_in_float64(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1, dtype=torch.float64)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="a condition such as mask.any() skips exactly this mask")
def attention_masking_only_if_some_key_is_visible(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None and mask.any():
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None and mask.any():
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="such as the boolean mask's, mask.dtype")
def attention_filling_with_the_finfo_of_the_mask(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(mask.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights


@wrong_answer("masked_attention", message="an augmented assignment such as weights *= mask")
def attention_multiplying_the_weights_by_the_mask_in_place(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights *= mask
    return weights @ v, weights


@wrong_answer("decoder_mask", message="An in-place operation such as &= writes its result into its left side")
def decoder_mask_combined_in_place(lengths):
    n = int(lengths.max())
    mask = padding_mask(lengths, n)  # (batch, 1, n)
    mask &= causal_mask(n)
    return mask


@wrong_answer("decoder_mask", message="tril on the padding mask alone works on that single row")
def decoder_mask_from_the_padding_mask_made_triangular(lengths):
    return padding_mask(lengths, int(lengths.max())).tril()  # keep j <= i


@wrong_answer("decoder_mask", message="On boolean tensors, + is an or as well")
def decoder_mask_with_plus(lengths):
    n = int(lengths.max())
    return padding_mask(lengths, n) + causal_mask(n)


@wrong_answer("causal_mask", message="torch.tensor of an empty list has no values to take a dtype from")
def causal_mask_from_a_list_comprehension(n):
    return torch.tensor([[j <= i for j in range(n)] for i in range(n)])


@wrong_answer("decoder_mask", message="Broadcasting lines axes up from the right")
def decoder_mask_with_an_axis_added_to_the_causal_mask(lengths):
    n = int(lengths.max())
    return padding_mask(lengths, n) & causal_mask(n).unsqueeze(1)
