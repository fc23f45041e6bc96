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


@wrong_answer("softmax", message="changed its input tensor in place")
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


@wrong_answer("self_attention", message="torch.mm takes 2-D matrices only")
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
