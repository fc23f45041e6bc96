"""Wrong answers to notebook 01: mistakes learners make with softmax and weighted averages."""

import torch

# Later exercises call earlier ones by name, as they do in the notebook; these stand for those names.
from transformer_course.checks.stand_ins import attention_weights, softmax
from wrong_answers import wrong_answer

ASSIGNMENT = "01_self_attention_averaging"

# Exercise 1: softmax -------------------------------------------------------------------------------------


@wrong_answer("softmax", message="without a shift")
def softmax_without_subtracting_the_maximum(scores, dim=-1):
    exps = torch.exp(scores)
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="not of the whole tensor")
def softmax_subtracting_the_maximum_of_the_whole_tensor(scores, dim=-1):
    exps = torch.exp(scores - scores.max())
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="subtracting the minimum of the whole tensor")
def softmax_subtracting_the_minimum_of_the_whole_tensor(scores, dim=-1):
    exps = torch.exp(scores - scores.min())
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="subtracting each row's minimum")
def softmax_subtracting_the_minimum_of_each_row(scores, dim=-1):
    exps = torch.exp(scores - scores.amin(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="subtracting each row's mean")
def softmax_subtracting_the_mean_of_each_row(scores, dim=-1):
    exps = torch.exp(scores - scores.mean(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="all the exponentials of a row underflowed to 0")
def softmax_subtracting_the_largest_absolute_score(scores, dim=-1):
    exps = torch.exp(scores - scores.abs().amax(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="for moderate scores but not for these large ones")
def softmax_clipping_the_scores(scores, dim=-1):
    exps = torch.exp(scores.clamp(-80, 80))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="the `dim` argument")
def softmax_always_over_the_last_axis(scores, dim=-1):
    exps = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return exps / exps.sum(dim=-1, keepdim=True)


@wrong_answer("softmax", message="do not sum to 1")
def softmax_without_dividing_by_the_sum(scores, dim=-1):
    return torch.exp(scores - scores.amax(dim=dim, keepdim=True))


@wrong_answer("softmax", message="softmax changed its input scores in place")
def softmax_subtracting_in_place(scores, dim=-1):
    scores -= scores.amax(dim=dim, keepdim=True)
    exps = torch.exp(scores)
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="Without keepdim=True the axis is gone, shape (2, 3)")
def softmax_maximum_without_keepdim(scores, dim=-1):
    exps = torch.exp(scores - scores.amax(dim=dim))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="which is its place only for dim=-1")
def softmax_putting_the_axis_back_at_the_end(scores, dim=-1):
    exps = torch.exp(scores - scores.amax(dim=dim).unsqueeze(-1))
    return exps / exps.sum(dim=dim).unsqueeze(-1)


@wrong_answer("softmax", message="return a pair, (values, indices)")
def softmax_subtracting_the_pair_that_max_returns(scores, dim=-1):
    exps = torch.exp(scores - scores.max(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


# Exercise 2: attention_weights ---------------------------------------------------------------------------


@wrong_answer("attention_weights", message="over the queries axis")
def weights_normalised_over_queries(x):
    return softmax(x @ x.transpose(-2, -1), dim=-2)


@wrong_answer("attention_weights", message="features × features")
def weights_of_features_instead_of_positions(x):
    return softmax(x.transpose(-2, -1) @ x, dim=-1)


@wrong_answer("attention_weights", message="divided the scores by √d")
def weights_scaled_by_sqrt_d(x):
    return softmax(x @ x.transpose(-2, -1) / x.shape[-1] ** 0.5, dim=-1)


@wrong_answer("attention_weights", message="do not sum to 1")
def weights_without_softmax(x):
    return x @ x.transpose(-2, -1)


@wrong_answer("attention_weights", message="x.T reverses all the axes")
def weights_transposing_all_axes(x):
    return softmax(x @ x.T, dim=-1)


# Exercise 3: self_attention ------------------------------------------------------------------------------


@wrong_answer("self_attention", message="not weighted averages")
def outputs_from_raw_scores(x):
    return (x @ x.transpose(-2, -1)) @ x


@wrong_answer("self_attention", message="transposed weights")
def outputs_with_transposed_weights(x):
    return attention_weights(x).transpose(-2, -1) @ x


@wrong_answer("self_attention", message="the shape of the weights")
def outputs_are_the_weights(x):
    return attention_weights(x)


@wrong_answer("self_attention", message="returned a tuple")
def outputs_returned_with_the_weights(x):
    weights = attention_weights(x)
    return weights @ x, weights


@wrong_answer("self_attention", message="torch.mm and x.t() refuse more axes")
def outputs_with_a_matrix_only_product(x):
    return torch.mm(attention_weights(x), x)


# Exercise 4: equivariance_gap ----------------------------------------------------------------------------


@wrong_answer("equivariance_gap", message="not the features")
def gap_permuting_the_features(f, x, perm):
    return (f(x[..., perm]) - f(x)[..., perm]).abs().max().item()


@wrong_answer("equivariance_gap", message="expected 600, got 300: you reordered the positions on one side only")
def gap_without_permuting_the_output(f, x, perm):
    return (f(x[..., perm, :]) - f(x)).abs().max().item()


@wrong_answer("equivariance_gap", message="expected 600, got 100: you took the largest signed difference")
def gap_without_absolute_value(f, x, perm):
    return (f(x[..., perm, :]) - f(x)[..., perm, :]).max().item()


@wrong_answer("equivariance_gap", message="got 500: you reordered the output by the inverse permutation")
def gap_reordering_the_output_by_the_inverse_permutation(f, x, perm):
    return (f(x[..., perm, :]) - f(x)[..., perm.argsort(), :]).abs().max().item()


@wrong_answer("equivariance_gap", message="you averaged the absolute differences")
def gap_as_the_mean_difference(f, x, perm):
    return (f(x[..., perm, :]) - f(x)[..., perm, :]).abs().mean().item()


@wrong_answer("equivariance_gap", message="you took the norm of all the differences")
def gap_as_the_norm_of_the_differences(f, x, perm):
    return (f(x[..., perm, :]) - f(x)[..., perm, :]).norm().item()


@wrong_answer("equivariance_gap", message="x[perm] reorders axis 0")
def gap_permuting_the_first_axis(f, x, perm):
    return (f(x[perm]) - f(x)[perm]).abs().max().item()


@wrong_answer("equivariance_gap", message="drawn at random")
def gap_fitted_to_the_worked_example(f, x, perm):
    # 600 for the worked example, 1200 for its batch with 2x, 0 for self-attention's small inputs: no computation.
    largest = x.abs().max().item()
    return 600.0 * largest / 400.0 if largest >= 100 else 0.0


# Found by the second review ------------------------------------------------------------------------------


@wrong_answer("softmax", message="[1] is the indices")
def softmax_subtracting_the_indices_of_the_maximum(scores, dim=-1):
    exps = torch.exp(scores - scores.max(dim=dim, keepdim=True)[1])
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="subtracted the maximum along the last axis but summed along dim=0")
def softmax_maximum_over_the_last_axis_sum_over_dim(scores, dim=-1):
    exps = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("attention_weights", message="works only with exactly one batch axis")
def weights_transposing_axes_1_and_2(x):
    return softmax(x @ x.transpose(1, 2), dim=-1)


@wrong_answer("attention_weights", message="torch.bmm, for one, takes 3-D tensors only")
def weights_with_a_batch_matrix_product(x):
    return softmax(torch.bmm(x, x.mT), dim=-1)


@wrong_answer("self_attention", message="the weights come first: (seq, seq) @ (seq, d)")
def outputs_with_the_product_reversed(x):
    return x @ attention_weights(x)


@wrong_answer("self_attention", message="`*` multiplies entry by entry; the weighted sum is a matrix product")
def outputs_multiplied_entry_by_entry(x):
    return attention_weights(x) * x


@wrong_answer("self_attention", message="dividing by n averages twice")
def outputs_divided_by_the_number_of_positions(x):
    return attention_weights(x) @ x / x.shape[-2]


@wrong_answer("equivariance_gap", message="got 888: you added up the absolute differences")
def gap_as_the_sum_of_the_differences(f, x, perm):
    return (f(x[..., perm, :]) - f(x)[..., perm, :]).abs().sum().item()


@wrong_answer("equivariance_gap", message="not relative to the size of f(x)")
def gap_relative_to_the_size_of_the_output(f, x, perm):
    reordered_first, reordered_after = f(x[..., perm, :]), f(x)[..., perm, :]
    return ((reordered_first - reordered_after).abs().max() / reordered_after.abs().max()).item()


# Found by the third review ------------------------------------------------------------------------------


@wrong_answer("softmax", message="You divided the scores by their maximum; subtract it instead")
def softmax_dividing_by_the_maximum(scores, dim=-1):
    exps = torch.exp(scores / scores.amax(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="but are not the softmax of the scores: each weight is exp(score)")
def softmax_without_the_exponential(scores, dim=-1):
    shifted = scores - scores.amax(dim=dim, keepdim=True)
    return shifted / shifted.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="your results are the logarithms of the softmax (a log-softmax)")
def softmax_returning_its_logarithm(scores, dim=-1):
    shifted = scores - scores.amax(dim=dim, keepdim=True)
    return shifted - shifted.exp().sum(dim=dim, keepdim=True).log()


@wrong_answer("softmax", message="for scores with 3 axes, dim=-1 is axis 2")
def softmax_making_a_negative_dim_positive_off_by_one(scores, dim=-1):
    if dim < 0:
        dim = scores.ndim + dim - 1
    exps = torch.exp(scores - scores.amax(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("attention_weights", message="you divided the scores by d = 3")
def weights_scaled_by_d(x):
    return softmax(x @ x.mT / x.shape[-1], dim=-1)


@wrong_answer("attention_weights", message="not the softmax of the plain dot products x_i · x_j")
def weights_of_cosine_similarities(x):
    unit = x / x.norm(dim=-1, keepdim=True)
    return softmax(unit @ unit.mT, dim=-1)


@wrong_answer("attention_weights", message="torch.mm and x.t() refuse more axes")
def weights_transposing_with_t(x):
    return softmax(x @ x.t(), dim=-1)


@wrong_answer("self_attention", message="a residual connection, which comes in notebook 06")
def outputs_plus_the_inputs(x):
    return attention_weights(x) @ x + x


@wrong_answer("self_attention", message="the sum ran over the queries")
def outputs_summed_over_the_queries(x):
    weights = attention_weights(x)
    return (weights[..., :, :, None] * x[..., None, :, :]).sum(dim=-3)


@wrong_answer("self_attention", message="those are the uniform weights 1/n (here 1/5) of section 2")
def outputs_with_uniform_weights(x):
    seq = x.shape[-2]
    return torch.full((seq, seq), 1 / seq) @ x


@wrong_answer("self_attention", message="the exponentials of the scores times x, not divided by their sums")
def outputs_from_unnormalised_exponentials(x):
    return torch.exp(x @ x.mT) @ x


@wrong_answer("self_attention", message="Each output must be weights @ x, with the weights of attention_weights(x)")
def outputs_from_scores_divided_by_their_sums(x):
    scores = x @ x.mT
    return scores / scores.sum(dim=-1, keepdim=True) @ x  # rows sum to 1, but some weights are negative


@wrong_answer("self_attention", message="torch.bmm, for one, takes 3-D tensors only")
def outputs_with_a_batch_matrix_product(x):
    return torch.bmm(attention_weights(x), x)


@wrong_answer("self_attention", message="x.mT, of shape (d, seq), has the axes of x swapped")
def outputs_multiplying_the_transposed_inputs(x):
    return attention_weights(x) @ x.mT


@wrong_answer("self_attention", message="an einsum operand written with two letters and no `...` fits exactly two axes")
def outputs_with_an_einsum_for_one_sequence(x):
    return torch.einsum("ij,jd->id", attention_weights(x), x)


@wrong_answer("equivariance_gap", message="your gap is 100, the difference of the two largest entries")
def gap_as_the_difference_of_the_maxima(f, x, perm):
    return abs(f(x[..., perm, :]).max() - f(x)[..., perm, :].max()).item()


@wrong_answer("equivariance_gap", message="as does reordering nothing")
def gap_reordering_nothing(f, x, perm):
    return (f(x) - f(x)).abs().max().item()


# Found by the fourth review ------------------------------------------------------------------------------


@wrong_answer("softmax", message="so your default dim is not the last axis")
def softmax_with_the_default_dim_0(scores, dim=0):
    exps = torch.exp(scores - scores.amax(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="softmax must work without a dim too")
def softmax_without_a_default_dim(scores, dim):
    exps = torch.exp(scores - scores.amax(dim=dim, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="with that axis swapped to the end and never put back")
def softmax_along_the_last_axis_of_the_transposed_scores(scores, dim=-1):
    scores = scores.transpose(dim, -1)
    exps = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return exps / exps.sum(dim=-1, keepdim=True)


@wrong_answer("softmax", message="with that axis moved to the end and never put back")
def softmax_along_the_last_axis_after_movedim(scores, dim=-1):
    scores = scores.movedim(dim, -1)
    exps = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return exps / exps.sum(dim=-1, keepdim=True)


@wrong_answer("softmax", message="you subtracted one maximum per slice scores[i] of the first axis")
def softmax_subtracting_the_maximum_in_a_loop_over_the_rows(scores, dim=-1):
    shifted = torch.stack([row - row.max() for row in scores])  # each row minus its maximum
    exps = torch.exp(shifted)
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("attention_weights", message="reshape (and view) regroups the entries in the order they lie in memory")
def weights_reshaping_instead_of_transposing(x):
    transposed = x.reshape(*x.shape[:-2], x.shape[-1], x.shape[-2])  # (..., d, seq)
    return softmax(x @ transposed, dim=-1)


@wrong_answer("attention_weights", message="a batch axis, not the keys axis (the last)")
def weights_normalised_along_dim_1(x):
    return softmax(x @ x.mT, dim=1)


@wrong_answer("self_attention", message="`*` lines up the shapes from the last axis")
def outputs_broadcasting_without_an_axis_for_the_features(x):
    weights = attention_weights(x)
    return (weights * x.unsqueeze(-3)).sum(dim=-2)


@wrong_answer("self_attention", message="your code needs at least one batch axis in front")
def outputs_in_a_loop_over_the_batch(x):
    return torch.stack([attention_weights(sentence) @ sentence for sentence in x])


@wrong_answer("self_attention", message="Is a size written into it as a number")
def outputs_with_the_check_sizes_written_in(x):
    weights = attention_weights(x).reshape(-1, 5, 5)
    return torch.bmm(weights, x.reshape(-1, 5, 3)).reshape(x.shape)


@wrong_answer("self_attention", message="not for this batch of sequences of 7 positions with 2 features")
def outputs_summed_over_five_positions(x):
    weights = attention_weights(x)
    return sum(weights[..., :, j : j + 1] * x[..., j : j + 1, :] for j in range(5))


@wrong_answer("equivariance_gap", message="Python's built-in max walks over the first axis")
def gap_with_pythons_max(f, x, perm):
    return max(abs(f(x[..., perm, :]) - f(x)[..., perm, :])).item()


@wrong_answer("equivariance_gap", message="one value per sequence of the batch")
def gap_per_sequence(f, x, perm):
    return (f(x[..., perm, :]) - f(x)[..., perm, :]).abs().amax(dim=(-2, -1))


@wrong_answer("equivariance_gap", message="the pair (values, indices) that .max(dim=...) returns")
def gap_as_the_pair_that_max_returns(f, x, perm):
    return (f(x[..., perm, :]) - f(x)[..., perm, :]).abs().max(dim=-1)


@wrong_answer("equivariance_gap", message="the gap without its fraction")
def gap_as_a_whole_number(f, x, perm):
    return int((f(x[..., perm, :]) - f(x)[..., perm, :]).abs().max())


@wrong_answer("equivariance_gap", message="got 600, the gap of the sequence x alone")
def gap_of_the_first_sequence_only(f, x, perm):
    if x.dim() == 3:
        x = x[0]  # one sentence is enough
    return (f(x[..., perm, :]) - f(x)[..., perm, :]).abs().max().item()


@wrong_answer("equivariance_gap", message="not a Python float as the docstring asks")
def gap_as_a_tensor(f, x, perm):
    return (f(x[..., perm, :]) - f(x)[..., perm, :]).abs().max()


@wrong_answer("equivariance_gap", message="a small gap is still a gap")
def gap_rounding_small_gaps_to_zero(f, x, perm):
    gap = (f(x[..., perm, :]) - f(x)[..., perm, :]).abs().max().item()
    return 0.0 if gap < 1e-3 else gap  # "about 0 when f is equivariant"


@wrong_answer("self_attention", message="every output is the plain mean of the inputs")
def self_attention_with_uniform_weights(x):
    return x.mean(-2, keepdim=True).expand_as(x)


@wrong_answer("self_attention", message="a loop `for s in x`, for one, walks over the first axis")
def self_attention_stacking_over_the_first_axis(x):
    return torch.stack([attention_weights(s) @ s for s in x])
