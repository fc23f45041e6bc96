"""Wrong answers to notebook 02: entropy, the scale of scaled dot-product attention, masks, projections."""

import math

import torch
from torch import nn

# The module exercise calls the attention exercise by name, as it does in the notebook.
from transformer_course.checks.stand_ins import scaled_dot_product_attention
from wrong_answers import wrong_answer

ASSIGNMENT = "02_queries_keys_values"

# Exercise 1: attention_entropy ---------------------------------------------------------------------------


@wrong_answer("attention_entropy", message="0 · (-inf) = nan")
def entropy_with_nan_for_zero_weights(weights):
    return -(weights * torch.log(weights)).sum(dim=-1)


@wrong_answer("attention_entropy", message="log base 2")
def entropy_in_bits(weights):
    return -torch.special.xlogy(weights, weights).sum(dim=-1) / math.log(2)


@wrong_answer("attention_entropy", message="averaged over the keys")
def entropy_averaged_over_keys(weights):
    return -torch.special.xlogy(weights, weights).mean(dim=-1)


@wrong_answer("attention_entropy", message="mind the minus sign")
def entropy_without_minus_sign(weights):
    return torch.special.xlogy(weights, weights).sum(dim=-1)


@wrong_answer("attention_entropy", message="you summed over the queries axis")
def entropy_summed_over_queries(weights):
    return -torch.special.xlogy(weights, weights).sum(dim=-2)


@wrong_answer("attention_entropy", message="no keepdim")
def entropy_keeping_the_summed_axis(weights):
    return -torch.special.xlogy(weights, weights).sum(dim=-1, keepdim=True)


@wrong_answer("attention_entropy", message="the sum ran over all the weights at once")
def entropy_of_the_whole_tensor(weights):
    return -torch.special.xlogy(weights, weights).sum()


@wrong_answer("attention_entropy", message="you used log base 10")
def entropy_with_log10(weights):
    return -(weights * torch.log10(weights)).nan_to_num(0.0).sum(dim=-1)


@wrong_answer("attention_entropy", message="that is -Σ w log(1 + w)")
def entropy_with_log_of_one_plus_w(weights):
    return -(weights * torch.log(1 + weights)).sum(dim=-1)


@wrong_answer("attention_entropy", message="and some rows are negative: an entropy never is")
def entropy_averaged_and_without_minus_sign(weights):
    return torch.special.xlogy(weights, weights).mean(dim=-1)


# Exercise 2: scaled_dot_product_attention ----------------------------------------------------------------
# Each is complete on its own, as a learner's cell would be.


@wrong_answer("scaled_dot_product_attention", message="you did not scale the scores")
def attention_without_scaling(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="√(number of keys)")
def attention_scaled_by_sequence_length(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="you divided by √d_v")
def attention_scaled_by_value_dimension(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="you scaled after the softmax")
def attention_scaled_after_softmax(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1) / math.sqrt(q.shape[-1])
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="over the queries axis")
def attention_softmax_over_queries(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-2)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="applied after the softmax")
def attention_masked_after_softmax(q, k, v, mask=None):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="a score of 0 still gets weight")
def attention_masked_with_zero_scores(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, 0.0)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="your mask is inverted")
def attention_with_inverted_mask(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="the mask changed nothing")
def attention_discarding_the_masked_scores(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="your mask is inverted")
def attention_with_inverted_mask_and_finfo_min(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="asks the tensor mask for a single truth value")
def attention_asking_the_mask_for_its_truth(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="returns (weights, outputs)")
def attention_returning_weights_first(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights, weights @ v


@wrong_answer("scaled_dot_product_attention", message="does not require gradients")
def attention_without_gradients(q, k, v, mask=None):
    with torch.no_grad():
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="no gradient reaches q or k")
def attention_with_detached_weights(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).detach()
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="must return a pair (outputs, weights)")
def attention_returning_only_outputs(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


@wrong_answer("scaled_dot_product_attention", message="gives the weights of q @ k.T")
def attention_transposing_keys_with_dot_t(q, k, v, mask=None):
    scores = q @ k.T / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="depends on the number of batch axes")
def attention_for_one_batch_axis_only(q, k, v, mask=None):
    scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="not differentiable")
def attention_through_numpy(q, k, v, mask=None):
    scores = torch.from_numpy((q @ k.transpose(-2, -1)).detach().numpy()) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


# Exercise 3: SingleHeadAttention -------------------------------------------------------------------------


@wrong_answer("SingleHeadAttention", message="the queries, keys and values all came from x: context was not used")
class AttentionIgnoringContext(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        return scaled_dot_product_attention(self.query(x), self.key(x), self.value(x), mask)


@wrong_answer("SingleHeadAttention", message="the queries came from context, the keys from x and the values from x")
class AttentionWithQueriesFromContext(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(context), self.key(x), self.value(x), mask)


@wrong_answer("SingleHeadAttention", message="use their own projection self.key")
class AttentionSharingQueryAndKeyProjection(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.query(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="self.value maps 6 → 4")
class AttentionWithValuesOfKeySize(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_k, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="the queries came from x, the keys from x and the values from context")
class AttentionWithKeysFromX(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(x), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="queries came from context, the keys from context and the values from x")
class AttentionWithValuesFromX(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        source = x if context is None else context
        return scaled_dot_product_attention(self.query(source), self.key(source), self.value(x), mask)


@wrong_answer("SingleHeadAttention", message="your projections add a bias; the notebook's projections have none")
class AttentionWithBiasedProjections(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k)
        self.key = nn.Linear(d_model, d_k)
        self.value = nn.Linear(d_model, d_v)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="self.query and self.key share one parameter")
class AttentionWithOneLayerForQueriesAndKeys(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = self.query
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="does not require gradients")
class AttentionWithoutGradients(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    @torch.no_grad()
    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="asks the tensor context for a single truth value")
class AttentionAskingTheContextForItsTruth(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = context or x
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="the mask changed nothing")
class AttentionIgnoringTheMask(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context))


@wrong_answer("SingleHeadAttention", message="your mask is inverted")
class AttentionWithInvertedMask(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        blocked = None if mask is None else ~mask
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), blocked)


@wrong_answer("SingleHeadAttention", message="they were scaled twice")
class AttentionScaledTwice(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = self.query(x) / math.sqrt(self.query.out_features)
        return scaled_dot_product_attention(q, self.key(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="returns (weights, outputs)")
class AttentionReturningWeightsFirst(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        outputs, weights = scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)
        return weights, outputs


@wrong_answer("SingleHeadAttention", message="is a plain tensor, so it is not among module.parameters()")
class AttentionWithPlainTensors(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = torch.randn(d_model, d_k) / math.sqrt(d_model)
        self.key = torch.randn(d_model, d_k) / math.sqrt(d_model)
        self.value = torch.randn(d_model, d_v) / math.sqrt(d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(x @ self.query, context @ self.key, context @ self.value, mask)


@wrong_answer("SingleHeadAttention", message="and your module has other parameters: self.query_bias (4,)")
class AttentionWithMatricesAndABias(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))
        self.key = nn.Parameter(torch.randn(d_model, d_k) / math.sqrt(d_model))
        self.value = nn.Parameter(torch.randn(d_model, d_v) / math.sqrt(d_model))
        self.query_bias = nn.Parameter(torch.randn(d_k))

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = x @ self.query + self.query_bias
        return scaled_dot_product_attention(q, context @ self.key, context @ self.value, mask)


# Found by the second review ------------------------------------------------------------------------------


@wrong_answer("attention_entropy", message="the experiment averages them itself")
def entropy_averaged_over_the_rows(weights):
    return -torch.special.xlogy(weights, weights).sum(dim=-1).mean()


@wrong_answer("attention_entropy", message="nan_to_num after the sum wipes the whole row")
def entropy_with_nan_replaced_after_the_sum(weights):
    return -(weights * torch.log(weights)).sum(dim=-1).nan_to_num(0.0)


@wrong_answer("scaled_dot_product_attention", message="Yet it is right for q (1, 1, 3, 4), with two batch axes")
def attention_transposing_axes_2_and_3(q, k, v, mask=None):
    scores = q @ k.transpose(2, 3) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="Yet it is right for q (1, 1, 3, 4), with two batch axes")
def attention_with_the_softmax_over_axis_3(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=3)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="you multiplied the scores by √d_k; divide them by √d_k")
def attention_multiplied_by_the_square_root_of_d_k(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) * math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="your scores were divided by √q.shape[1] = √3")
def attention_scaled_by_the_size_of_axis_1(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("SingleHeadAttention", message="the scores were divided by √d_model = √6, not by √d_k = √4")
class AttentionScaledByTheModelDimension(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q, k, v = self.query(x), self.key(context), self.value(context)
        scores = q @ k.mT / math.sqrt(x.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights


# Found by the third review ------------------------------------------------------------------------------


@wrong_answer("attention_entropy", message="the entropy divided by log n = log 4")
def entropy_divided_by_the_log_of_the_number_of_keys(weights):
    return -torch.special.xlogy(weights, weights).sum(dim=-1) / math.log(weights.shape[-1])


@wrong_answer("scaled_dot_product_attention", message="so the scores are cosine similarities")
def attention_with_cosine_similarity(q, k, v, mask=None):
    scores = (q / q.norm(dim=-1, keepdim=True)) @ (k / k.norm(dim=-1, keepdim=True)).transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="torch.sqrt takes a tensor, and it was given a Python int")
def attention_with_torch_sqrt_of_an_int(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / torch.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("SingleHeadAttention", message="nn.Linear stores its weight as (d_out, d_model)")
class AttentionWithUntransposedWeights(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = x @ self.query.weight
        k = context @ self.key.weight
        v = context @ self.value.weight
        return scaled_dot_product_attention(q, k, v, mask)


@wrong_answer("SingleHeadAttention", message="x @ W needs (d_model, d_k) = (6, 4)")
class AttentionWithMatricesStoredTheOtherWayRound(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Parameter(torch.randn(d_k, d_model) / math.sqrt(d_model))
        self.key = nn.Parameter(torch.randn(d_k, d_model) / math.sqrt(d_model))
        self.value = nn.Parameter(torch.randn(d_v, d_model) / math.sqrt(d_model))

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(x @ self.query, context @ self.key, context @ self.value, mask)


@wrong_answer("SingleHeadAttention", message="the keys were made with self.value; use their own projection self.key")
class AttentionWithKeysMadeByTheValueProjection(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.value(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="the values were made with self.key; use their own projection")
class AttentionWithValuesMadeByTheKeyProjection(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(context), self.key(context), mask)


@wrong_answer("SingleHeadAttention", message="the queries were made with self.key, the keys with self.query")
class AttentionWithQueryAndKeyProjectionsSwapped(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.key(x), self.query(context), self.value(context), mask)


# Found by the fourth review -----------------------------------------------------------------------------


@wrong_answer("attention_entropy", message="that is -Σ w log softmax(w)")
def entropy_with_log_softmax_of_the_weights(weights):
    return -(weights * torch.log_softmax(weights, dim=-1)).sum(dim=-1)


@wrong_answer("attention_entropy", message="The functions of Python's math module take a single number")
def entropy_with_math_log(weights):
    return -(weights * math.log(weights)).sum(dim=-1)


@wrong_answer("attention_entropy", message="the terms of the small weights are off")
def entropy_with_a_large_clamp(weights):
    return -(weights * weights.clamp(min=0.01).log()).sum(dim=-1)


@wrong_answer("attention_entropy", message="a loop over a tensor goes over its first axis only")
def entropy_looping_over_the_first_axis(weights):
    return torch.stack([-torch.special.xlogy(item, item).sum() for item in weights])


@wrong_answer("scaled_dot_product_attention", message="A softmax called without dim picks axis 1 itself")
def attention_with_softmax_without_dim(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = nn.functional.softmax(scores)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="boolean indexing such as scores[~mask] = ... does not broadcast")
def attention_masked_by_boolean_indexing(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores[~mask] = float("-inf")
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="every weight is nan, and only with the mask")
def attention_adding_the_mask_times_minus_infinity(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + (~mask) * float("-inf")
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="divided by 16, not by √d_k = √8. That is 2 · d_k")
def attention_divided_by_d_k_to_the_power_1_over_2(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / d_k**1 / 2
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="divided by 4, not by √d_k = √8. That is d_k / 2")
def attention_divided_by_d_k_to_the_power_1_over_2_in_brackets(q, k, v, mask=None):
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / (d_k**1 / 2)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="taken without keepdim=True")
def attention_with_a_softmax_summed_without_keepdim(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    exponentials = torch.exp(scores)
    weights = exponentials / exponentials.sum(dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="The last two axes are swapped")
def attention_with_outputs_transposed(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return v.transpose(-2, -1) @ weights.transpose(-2, -1), weights


@wrong_answer("SingleHeadAttention", message="the scores were divided by √5, not by √d_k = √4")
class AttentionScaledByTheValueDimension(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q, k, v = self.query(x), self.key(context), self.value(context)
        scores = q @ k.mT / math.sqrt(v.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights


@wrong_answer("SingleHeadAttention", message="your module masks them itself")
class AttentionWithACausalMaskOfItsOwn(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        causal = torch.ones(x.shape[-2], context.shape[-2], dtype=torch.bool).tril()
        mask = causal if mask is None else mask & causal
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="forward's parameters must come in the order the exercise gives")
class AttentionTakingTheMaskSecond(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, mask=None, context=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)


# Found by the fifth review ------------------------------------------------------------------------------


@wrong_answer("attention_entropy", message="boolean indexing such as weights[weights > 0], which flattens the rows")
def entropy_of_the_nonzero_weights_picked_by_a_boolean_index(weights):
    nonzero = weights[weights > 0]
    return -(nonzero * nonzero.log()).sum(dim=-1)


@wrong_answer("attention_entropy", message="that is -Σ w log(w + 0.001)")
def entropy_with_an_eps_in_the_log(weights):
    return -(weights * torch.log(weights + 1e-3)).sum(dim=-1)


@wrong_answer("attention_entropy", message="that is the entropy of softmax(w)")
def entropy_of_the_softmax_of_the_weights(weights):
    probabilities = torch.softmax(weights, dim=-1)
    return -(probabilities * probabilities.log()).sum(dim=-1)


@wrong_answer("attention_entropy", message="is the keys' axis only for 2-D weights")
def entropy_summed_over_axis_1(weights):
    return -torch.special.xlogy(weights, weights).sum(dim=1)


@wrong_answer("scaled_dot_product_attention", message="divided by √8, not by √d_k = √4. No axis of these inputs has")
def attention_divided_by_a_fixed_square_root_of_8(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="your code handles a mask of shape (n_q, n_k) only")
def attention_with_the_mask_given_two_axes_in_front(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask.view(1, 1, *mask.shape), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="The cause is what your code does with the mask")
def attention_with_the_mask_unsqueezed(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask.unsqueeze(1), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="returns a pair, (values, indices), not a tensor")
def attention_subtracting_the_pair_that_max_returns(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    exponentials = torch.exp(scores - scores.max(dim=-1, keepdim=True))
    weights = exponentials / exponentials.sum(dim=-1, keepdim=True)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="the maximum over the keys taken without keepdim=True")
def attention_subtracting_the_maximum_without_keepdim(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    exponentials = torch.exp(scores - scores.max(dim=-1).values)
    weights = exponentials / exponentials.sum(dim=-1, keepdim=True)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="your code fails only with float64 inputs")
def attention_with_the_softmax_in_float32(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores.float(), dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="torch.bmm takes exactly one batch axis")
def attention_with_bmm(q, k, v, mask=None):
    scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights, v), weights


@wrong_answer("scaled_dot_product_attention", message="softmax(dim=-1) and d_k = q.shape[-1], so that any batch")
def attention_with_d_k_from_axis_3(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[3])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="masked pairs get weight -inf, not 0")
def attention_filling_the_weights_with_minus_infinity(q, k, v, mask=None):
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, float("-inf"))
    return weights @ v, weights


@wrong_answer("scaled_dot_product_attention", message="the weights you return are the scores, q kᵀ / √d_k")
def attention_returning_the_scores(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, scores


@wrong_answer("scaled_dot_product_attention", message="your weights are the logarithms of the right ones")
def attention_with_log_softmax(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.log_softmax(scores, dim=-1)
    return weights @ v, weights


@wrong_answer("SingleHeadAttention", message="self.query and self.key start at zero")
class AttentionWithProjectionsStartingAtZero(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Parameter(torch.zeros(d_model, d_k))
        self.key = nn.Parameter(torch.zeros(d_model, d_k))
        self.value = nn.Parameter(torch.zeros(d_model, d_v))

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(x @ self.query, context @ self.key, context @ self.value, mask)


@wrong_answer("SingleHeadAttention", message="trains parameters besides its three maps: self.query.bias (4,)")
class AttentionWithBiasesOfZeros(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k)
        self.key = nn.Linear(d_model, d_k)
        self.value = nn.Linear(d_model, d_v)
        for layer in (self.query, self.key, self.value):
            nn.init.zeros_(layer.bias)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="your forward fails only when context is None")
class AttentionUsingContextBeforeItsDefault(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        q, k, v = self.query(x), self.key(context), self.value(context)
        if context is None:
            k, v = self.key(x), self.value(x)
        return scaled_dot_product_attention(q, k, v, mask)


@wrong_answer("SingleHeadAttention", message="__init__ must call super().__init__() first")
class AttentionWithoutSuperInit(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.query(x), self.key(context), self.value(context), mask)


@wrong_answer("SingleHeadAttention", message="the queries were made with self.key, the keys with self.query")
class single_head_with_queries_and_keys_swapped(nn.Module):
    def __init__(self, d_model, d_k, d_v):
        super().__init__()
        self.query = nn.Linear(d_model, d_k, bias=False)
        self.key = nn.Linear(d_model, d_k, bias=False)
        self.value = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = self.key(x)
        k = self.query(context)
        v = self.value(context)
        return scaled_dot_product_attention(q, k, v, mask)
