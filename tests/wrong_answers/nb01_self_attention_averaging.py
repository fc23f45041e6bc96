"""Wrong answers to notebook 01: mistakes learners make with softmax and weighted averages."""

import torch

# Later exercises call earlier ones by name, as they do in the notebook; these stand for those names.
from transformer_course.checks.stand_ins import attention_weights, softmax
from wrong_answers import wrong_answer

ASSIGNMENT = "01_self_attention_averaging"

# Exercise 1: softmax -------------------------------------------------------------------------------------


@wrong_answer("softmax", message="gives nan or inf")
def softmax_without_subtracting_the_maximum(scores, dim=-1):
    exps = torch.exp(scores)
    return exps / exps.sum(dim=dim, keepdim=True)


@wrong_answer("softmax", message="not of the whole tensor")
def softmax_subtracting_the_maximum_of_the_whole_tensor(scores, dim=-1):
    exps = torch.exp(scores - scores.max())
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


@wrong_answer("softmax", message="raised RuntimeError")
def softmax_maximum_without_keepdim(scores, dim=-1):
    exps = torch.exp(scores - scores.amax(dim=dim))
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


@wrong_answer("attention_weights", message="not on a batch")
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


# Exercise 4: equivariance_gap ----------------------------------------------------------------------------


@wrong_answer("equivariance_gap", message="not the features")
def gap_permuting_the_features(f, x, perm):
    return (f(x[..., perm]) - f(x)[..., perm]).abs().max().item()


@wrong_answer("equivariance_gap", message="expected 600, got 300")
def gap_without_permuting_the_output(f, x, perm):
    return (f(x[..., perm, :]) - f(x)).abs().max().item()


@wrong_answer("equivariance_gap", message="expected 600, got 100")
def gap_without_absolute_value(f, x, perm):
    return (f(x[..., perm, :]) - f(x)[..., perm, :]).max().item()


@wrong_answer("equivariance_gap", message="not on a batch")
def gap_permuting_the_first_axis(f, x, perm):
    return (f(x[perm]) - f(x)[perm]).abs().max().item()


@wrong_answer("equivariance_gap", message="drawn at random")
def gap_fitted_to_the_worked_example(f, x, perm):
    # 600 for the worked example, 1200 for its batch with 2x, 0 for self-attention's small inputs: no computation.
    largest = x.abs().max().item()
    return 600.0 * largest / 400.0 if largest >= 100 else 0.0
