"""Wrong answers to notebook 03: reshaping into heads, merging them back, and the multi-head module."""

import torch
from torch import nn

# The module exercise calls the earlier ones by name, as in the notebook; attention is reference code there.
from transformer_course.checks.stand_ins import merge_heads, split_heads
from transformer_course.reference import attention
from wrong_answers import wrong_answer

ASSIGNMENT = "03_multi_head_attention"

# Exercise 1: split_heads ---------------------------------------------------------------------------------


@wrong_answer("split_heads", message="without transposing")
def split_by_reshaping_without_transposing(x, num_heads):
    *batch, seq, d_model = x.shape
    return x.reshape(*batch, num_heads, seq, d_model // num_heads)


@wrong_answer("split_heads", message="head i must hold features")
def split_with_heads_as_the_fastest_axis(x, num_heads):
    *batch, seq, d_model = x.shape
    return x.reshape(*batch, seq, d_model // num_heads, num_heads).permute(*range(len(batch)), -1, -3, -2)


@wrong_answer("split_heads", message="its last three axes are (..., seq, d_head, heads)")
def split_transposing_the_wrong_axes(x, num_heads):
    *batch, seq, d_model = x.shape
    return x.reshape(*batch, seq, num_heads, d_model // num_heads).transpose(-2, -1)


@wrong_answer("split_heads", message="your code assumes exactly one batch axis")
def split_assuming_one_batch_axis(x, num_heads):
    batch, seq, d_model = x.shape[0], x.shape[-2], x.shape[-1]
    return x.view(batch, seq, num_heads, d_model // num_heads).transpose(1, 2)


@wrong_answer("split_heads", message="returned shape (5, 3, 2). Given the same numbers with exactly one batch axis")
def split_transposing_axes_1_and_2(x, num_heads):
    *batch, seq, d_model = x.shape
    return x.reshape(*batch, seq, num_heads, d_model // num_heads).transpose(1, 2)


@wrong_answer("split_heads", message="it counts axes from the front, or folds the batch axes into one")
def split_flattening_the_batch_axes(x, num_heads):
    seq, d_model = x.shape[-2:]
    return x.reshape(-1, seq, num_heads, d_model // num_heads).transpose(1, 2)


@wrong_answer("split_heads", message="integer division, //, gives an int")
def split_with_a_float_head_size(x, num_heads):
    *batch, seq, d_model = x.shape
    return x.reshape(*batch, seq, num_heads, d_model / num_heads).transpose(-3, -2)


@wrong_answer("split_heads", message="training could not update anything before it")
def split_without_gradients(x, num_heads):
    *batch, seq, d_model = x.shape
    with torch.no_grad():
        return x.reshape(*batch, seq, num_heads, d_model // num_heads).transpose(-3, -2)


# Exercise 2: merge_heads ---------------------------------------------------------------------------------


@wrong_answer("merge_heads", message="without transposing")
def merge_by_reshaping_without_transposing(x):
    *batch, num_heads, seq, d_head = x.shape
    return x.reshape(*batch, seq, num_heads * d_head)


@wrong_answer("merge_heads", message="raised RuntimeError")
def merge_with_view_after_transpose(x):
    *batch, num_heads, seq, d_head = x.shape
    return x.transpose(-3, -2).view(*batch, seq, num_heads * d_head)


@wrong_answer("merge_heads", message="it counts axes from the front, or folds the batch axes into one")
def merge_assuming_four_axes(x):
    return x.permute(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)


@wrong_answer("merge_heads", message="side by side")
def merge_with_features_interleaved(x):
    *batch, num_heads, seq, d_head = x.shape
    return x.permute(*range(len(batch)), -2, -1, -3).reshape(*batch, seq, num_heads * d_head)


# Exercise 3: MultiHeadAttention --------------------------------------------------------------------------


@wrong_answer("MultiHeadAttention", message="the outputs lack W_O")
class MultiHeadAttentionWithoutOutputProjection(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return merge_heads(outputs), weights


@wrong_answer("MultiHeadAttention", message="divided by √d_model")
class MultiHeadAttentionScaledByModelSize(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        scale = x.shape[-1] ** -0.5
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3), scale=scale)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="return every head's weights")
class MultiHeadAttentionAveragingTheWeights(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights.mean(dim=1)


@wrong_answer("MultiHeadAttention", message="the mask had no effect")
class MultiHeadAttentionIgnoringTheMask(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="the queries, keys and values all came from x: context was not used")
class MultiHeadAttentionIgnoringContext(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(x), self.num_heads)
        v = split_heads(self.value(x), self.num_heads)
        outputs, weights = attention(q, k, v)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="maps 8 → 4 features")
class MultiHeadAttentionWithOneProjectionPerHeadSize(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model // num_heads)
        self.key = nn.Linear(d_model, d_model // num_heads)
        self.value = nn.Linear(d_model, d_model // num_heads)
        self.output = nn.Linear(d_model // num_heads, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        outputs, weights = attention(self.query(x), self.key(context), self.value(context), mask)
        return self.output(outputs), weights


@wrong_answer("MultiHeadAttention", message="the queries came from context, the keys from x and the values from x")
class MultiHeadAttentionWithQueriesFromContext(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(context), self.num_heads)
        k = split_heads(self.key(x), self.num_heads)
        v = split_heads(self.value(x), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="the queries came from x, the keys from context and the values from x")
class MultiHeadAttentionWithValuesFromX(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(x), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="without an axis for the heads")
class MultiHeadAttentionWithoutAHeadsAxisInTheMask(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, mask)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="lands between n_q and n_k")
class MultiHeadAttentionWithTheHeadsAxisCountedFromTheFront(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask[:, None])
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="self.query and self.key share one parameter")
class MultiHeadAttentionWithOneProjectionForAll(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = self.key = self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="the keys were computed with self.query, the layer of the queries")
class MultiHeadAttentionWithKeysFromTheQueryLayer(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.query(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="does not require gradients")
class MultiHeadAttentionWithoutGradients(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    @torch.no_grad()
    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="does not require gradients")
class MultiHeadAttentionDetachingTheOutputs(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)).detach(), weights


@wrong_answer("MultiHeadAttention", message="no gradient reaches self.key.weight from the outputs")
class MultiHeadAttentionDetachingTheKeys(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads).detach()
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="your mask is inverted")
class MultiHeadAttentionWithAnInvertedMask(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else ~mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="the queries, keys and values were cut into heads by a reshape straight")
class MultiHeadAttentionSplittingInlineWithoutTransposing(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        batch, n_q, n_k = x.shape[0], x.shape[1], context.shape[1]
        q = self.query(x).reshape(batch, self.num_heads, n_q, -1)
        k = self.key(context).reshape(batch, self.num_heads, n_k, -1)
        v = self.value(context).reshape(batch, self.num_heads, n_k, -1)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="cut into heads, and merged back, by a reshape straight")
class MultiHeadAttentionSplittingAndMergingInlineWithoutTransposing(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        batch, n_q, n_k = x.shape[0], x.shape[1], context.shape[1]
        q = self.query(x).reshape(batch, self.num_heads, n_q, -1)
        k = self.key(context).reshape(batch, self.num_heads, n_k, -1)
        v = self.value(context).reshape(batch, self.num_heads, n_k, -1)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(outputs.reshape(batch, n_q, -1)), weights


@wrong_answer("MultiHeadAttention", message="the heads' outputs were merged back by a reshape straight")
class MultiHeadAttentionMergingInlineWithoutTransposing(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(outputs.reshape(x.shape)), weights


@wrong_answer("MultiHeadAttention", message="your mask reached attention as numbers, not as booleans")
class MultiHeadAttentionWithAFloatMask(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3).float())
        return self.output(merge_heads(outputs)), weights
