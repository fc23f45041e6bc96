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


@wrong_answer("split_heads", message="you reshaped the features to (..., seq, d_head, heads)")
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


@wrong_answer("split_heads", message="consecutive features, where there should be")
def split_into_pieces_of_num_heads_features(x, num_heads):
    return torch.stack(torch.split(x, num_heads, dim=-1), dim=-3)


@wrong_answer("split_heads", message="the right pieces, not yet one tensor")
def split_returning_the_pieces(x, num_heads):
    return torch.chunk(x, num_heads, dim=-1)


@wrong_answer("split_heads", message="joined end to end along an axis that x already has")
def split_joining_the_pieces_with_cat(x, num_heads):
    return torch.cat(torch.split(x, x.shape[-1] // num_heads, dim=-1), dim=-3)


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


@wrong_answer("MultiHeadAttention", message="the heads' average; average them only to draw them")
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


@wrong_answer("MultiHeadAttention", message="as mask.repeat_interleave(")
class MultiHeadAttentionCopyingTheMaskForEachHead(nn.Module):
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
        if mask is not None:
            mask = mask.repeat_interleave(self.num_heads, 0)  # one mask per head
        outputs, weights = attention(q, k, v, mask)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="the masks of the sentences reached the heads of other sentences")
class MultiHeadAttentionFoldingHeadsIntoTheBatchInTheWrongOrder(nn.Module):
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
        batch = x.shape[0]
        q, k, v = q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1)  # (batch · heads, seq, d_head)
        if mask is not None and mask.dim() == 3:
            mask = mask.repeat(self.num_heads, 1, 1)  # (batch · heads, n_q, n_k)
        outputs, weights = attention(q, k, v, mask)
        outputs = outputs.unflatten(0, (batch, self.num_heads))
        weights = weights.unflatten(0, (batch, self.num_heads))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="your module is right for one sentence and its mask")
class MultiHeadAttentionCopyingSentenceMasksForEachHead(nn.Module):
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
        if mask is not None and mask.dim() == 3:
            mask = mask.repeat_interleave(self.num_heads, 0)  # (batch · heads, n_q, n_k)
        outputs, weights = attention(q, k, v, mask)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="the mask reached it as numbers, 0 where a key is visible")
class MultiHeadAttentionWithAnAdditiveMask(nn.Module):
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
        if mask is not None:  # as nn.MultiheadAttention does: 0 where allowed, -inf where not
            mask = torch.zeros(mask.shape).masked_fill(~mask, float("-inf")).unsqueeze(-3)
        outputs, weights = attention(q, k, v, mask)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="asked the context for its truth value")
class MultiHeadAttentionWithContextOrX(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = context or x
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="asked the mask for its truth value")
class MultiHeadAttentionTestingTheMaskWithIf(nn.Module):
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
        if mask:
            mask = mask.unsqueeze(-3)
        outputs, weights = attention(q, k, v, mask)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="applied sentence i's mask to head i of every sentence")
class MultiHeadAttentionWithAnAxisInFrontOfTheMask(nn.Module):
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
        outputs, weights = attention(q, k, v, None if mask is None else mask[None])
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="your code uses the length of one sequence where the other's belongs")
class MultiHeadAttentionWithKeysAsLongAsX(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        batch, n, d_model = x.shape
        d_head = d_model // self.num_heads
        q = self.query(x).view(batch, n, self.num_heads, d_head).transpose(1, 2)
        k = self.key(context).view(batch, n, self.num_heads, d_head).transpose(1, 2)
        v = self.value(context).view(batch, n, self.num_heads, d_head).transpose(1, 2)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="whose sequence is as long as d_model, your module is right")
class MultiHeadAttentionWithTheHeadSizeFromTheSequenceAxis(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        d_head = x.shape[1] // self.num_heads
        q = self.query(x).view(x.shape[0], -1, self.num_heads, d_head).transpose(1, 2)
        k = self.key(context).view(context.shape[0], -1, self.num_heads, d_head).transpose(1, 2)
        v = self.value(context).view(context.shape[0], -1, self.num_heads, d_head).transpose(1, 2)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="multiplied by √d_head, not divided by it")
class MultiHeadAttentionScalingBySquareRootOfDHead(nn.Module):
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
        scale = q.shape[-1] ** 0.5  # √d_head
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3), scale=scale)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="not divided by √d_head")
class MultiHeadAttentionWithoutScaling(nn.Module):
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
        scores = q @ k.transpose(-2, -1)  # (batch, heads, n_q, n_k)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="sum to 1 over the queries")
class MultiHeadAttentionWithTheSoftmaxOverQueries(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (batch, heads, n_q, n_k)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = torch.softmax(scores, dim=-2)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="the softmax was applied twice")
class MultiHeadAttentionWithTheSoftmaxTwice(nn.Module):
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
        weights = torch.softmax(weights, dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="the residual connection, is the transformer block's step")
class MultiHeadAttentionAddingTheResidual(nn.Module):
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
        return x + self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="two calls with the same inputs gave different results")
class MultiHeadAttentionWithDropout(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        weights = self.dropout(weights)
        return self.output(merge_heads(weights @ v)), weights


# Exercise 3, further mistakes: scaling, masking, projections, shapes --------------------------------


@wrong_answer("split_heads", message="you reshaped to (..., heads, seq, d_head) first")
def split_reshaping_to_heads_first_then_transposing(x, num_heads):
    *batch, seq, d_model = x.shape
    return x.reshape(*batch, num_heads, seq, d_model // num_heads).transpose(-3, -2)


@wrong_answer("merge_heads", message="you swapped the heads axis with d_head")
def merge_swapping_heads_with_d_head(x):
    *batch, num_heads, seq, d_head = x.shape
    return x.transpose(-3, -1).reshape(*batch, seq, num_heads * d_head)


@wrong_answer("merge_heads", message="your merge averages the heads")
def merge_by_averaging_the_heads(x):
    return x.mean(dim=-3)


@wrong_answer("merge_heads", message="joins the heads one after the other along the seq axis")
def merge_joining_the_heads_along_seq(x):
    return torch.cat(x.unbind(dim=-3), dim=-2)


@wrong_answer("MultiHeadAttention", message="split_heads takes the number of heads, and you gave it d_head")
class MultiHeadAttentionSplittingByHeadSize(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        d_head = x.shape[-1] // self.num_heads
        q = split_heads(self.query(x), d_head)
        k = split_heads(self.key(context), d_head)
        v = split_heads(self.value(context), d_head)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="as if their scores were 0")
class MultiHeadAttentionFillingMaskedScoresWithZero(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), 0.0)
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="the mask was applied after the softmax")
class MultiHeadAttentionMaskingAfterTheSoftmax(nn.Module):
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
        weights = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).softmax(dim=-1)
        if mask is not None:
            weights = weights * mask.unsqueeze(-3)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="the queries lack the bias of self.query")
class MultiHeadAttentionProjectingWithoutBias(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(torch.einsum("bnd,ed->bne", x, self.query.weight), self.num_heads)
        k = split_heads(torch.einsum("bnd,ed->bne", context, self.key.weight), self.num_heads)
        v = split_heads(torch.einsum("bnd,ed->bne", context, self.value.weight), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="multiplied by the weights as nn.Linear stores them")
class MultiHeadAttentionWithUntransposedWeights(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = split_heads(x @ self.query.weight + self.query.bias, self.num_heads)
        k = split_heads(context @ self.key.weight + self.key.bias, self.num_heads)
        v = split_heads(context @ self.value.weight + self.value.bias, self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="divided by d_head, not by √d_head")
class MultiHeadAttentionScaledByOneOverDHead(nn.Module):
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
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3), scale=1 / q.shape[-1])
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message=".T on a tensor of more than two axes reverses them all")
class MultiHeadAttentionTransposingKeysWithT(nn.Module):
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
        scores = q @ k.T / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="the heads folded into the batch axis, (batch · heads, n_q, n_k)")
class MultiHeadAttentionLeavingWeightsFolded(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        b, n_q, n_k, h = x.shape[0], x.shape[1], context.shape[1], self.num_heads
        q = split_heads(self.query(x), h).flatten(0, 1)
        k = split_heads(self.key(context), h).flatten(0, 1)
        v = split_heads(self.value(context), h).flatten(0, 1)
        scores = torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5  # (b*h, n_q, n_k)
        if mask is not None:
            m = mask.expand(b, n_q, n_k) if mask.dim() == 3 else mask.expand(b, n_q, n_k)
            scores = scores.masked_fill(~m.repeat_interleave(h, 0), float("-inf"))
        weights = scores.softmax(-1)
        out = torch.bmm(weights, v).unflatten(0, (b, h))
        return self.output(merge_heads(out)), weights


@wrong_answer("MultiHeadAttention", message="√d_head after the softmax")
class MultiHeadAttentionScalingAfterTheSoftmax(nn.Module):
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
        scores = q @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = scores.softmax(dim=-1) / q.shape[-1] ** 0.5
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="the weights you return are those of attention without the mask")
class MultiHeadAttentionReturningUnmaskedWeights(nn.Module):
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
        outputs = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=None if mask is None else mask.unsqueeze(-3)
        )
        _, weights = attention(q, k, v)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="keep num_heads there, under exactly that name")
class MultiHeadAttentionKeepingHeadsUnderAnotherName(nn.Module):
    """num_heads attention heads computed at once from d_model x d_model projections, then W_O."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (batch, n_q, d_model); context: (batch, n_k, d_model), default x;
        mask: (n_q, n_k) or (batch, n_q or 1, n_k), True where a query may attend to a key.

        Returns outputs (batch, n_q, d_model) and weights (batch, heads, n_q, n_k).
        """
        context = x if context is None else context
        q = split_heads(self.query(x), self.heads)  # (batch, heads, n_q, d_head)
        k = split_heads(self.key(context), self.heads)  # (batch, heads, n_k, d_head)
        v = split_heads(self.value(context), self.heads)  # (batch, heads, n_k, d_head)
        head_mask = None if mask is None else mask.unsqueeze(-3)  # (1, n_q, n_k) or (batch, 1, n_q or 1, n_k)
        outputs, weights = attention(q, k, v, head_mask)  # (batch, heads, n_q, d_head), (batch, heads, n_q, n_k)
        return self.output(merge_heads(outputs)), weights  # (batch, n_q, d_model), (batch, heads, n_q, n_k)
        ### END SOLUTION


@wrong_answer("MultiHeadAttention", message="returned the pair in reverse order")
class MultiHeadAttentionReturningThePairReversed(nn.Module):
    """num_heads attention heads computed at once from d_model x d_model projections, then W_O."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (batch, n_q, d_model); context: (batch, n_k, d_model), default x;
        mask: (n_q, n_k) or (batch, n_q or 1, n_k), True where a query may attend to a key.

        Returns outputs (batch, n_q, d_model) and weights (batch, heads, n_q, n_k).
        """
        context = x if context is None else context
        q = split_heads(self.query(x), self.num_heads)  # (batch, heads, n_q, d_head)
        k = split_heads(self.key(context), self.num_heads)  # (batch, heads, n_k, d_head)
        v = split_heads(self.value(context), self.num_heads)  # (batch, heads, n_k, d_head)
        head_mask = None if mask is None else mask.unsqueeze(-3)  # (1, n_q, n_k) or (batch, 1, n_q or 1, n_k)
        outputs, weights = attention(q, k, v, head_mask)  # (batch, heads, n_q, d_head), (batch, heads, n_q, n_k)
        return weights, self.output(merge_heads(outputs))  # (batch, n_q, d_model), (batch, heads, n_q, n_k)
        ### END SOLUTION


@wrong_answer("MultiHeadAttention", message="the keys were projected twice")
class MultiHeadAttentionProjectingKeysTwice(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        qx = self.query(x)
        q = split_heads(qx, self.num_heads)
        k = split_heads(self.key(self.query(context)), self.num_heads)
        v = split_heads(self.value(self.query(context)), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="sum to 1 over the heads, not over the keys")
class MultiHeadAttentionSoftmaxOverHeads(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = torch.softmax(scores, dim=1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="divided by d_head, not by √d_head")
class MultiHeadAttentionScalingQueriesAndLettingAttentionScale(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        d_head = x.shape[-1] // self.num_heads
        q = split_heads(self.query(x), self.num_heads) / d_head**0.5  # scale the queries
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("split_heads", message="Your result's last three axes are then (..., heads, d_head, seq)")
def split_reshaping_to_d_head_then_heads_and_swapping_the_outer_axes(x, num_heads):
    *batch, seq, d_model = x.shape
    return x.reshape(*batch, seq, d_model // num_heads, num_heads).transpose(-3, -1)


@wrong_answer("merge_heads", message="you swapped seq with d_head, the last two axes")
def merge_swapping_seq_with_d_head(x):
    *batch, num_heads, seq, d_head = x.shape
    return x.transpose(-2, -1).reshape(*batch, seq, num_heads * d_head)


@wrong_answer("MultiHeadAttention", message="the scores were divided by √5: the length of the sequence")
class MultiHeadAttentionScaledByTheSequenceLength(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.size(-2) ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="the number of heads, axis 1 of the queries")
class MultiHeadAttentionScaledByTheNumberOfHeads(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="as if divided by √9 where √d_head = √4 belongs")
class MultiHeadAttentionScaledByAConstant(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / 3.0
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer(
    "MultiHeadAttention",
    message="keep what masked_fill returns: it returns a new tensor",
)
class MultiHeadAttentionDiscardingWhatMaskedFillReturns(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="your outputs are those of attention without the mask")
class MultiHeadAttentionWithOutputsOfAnUnmaskedCall(nn.Module):
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
        _, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        outputs = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="a causal mask that the caller did not give")
class MultiHeadAttentionAlwaysCausal(nn.Module):
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
        allowed = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        if mask is not None:
            allowed = allowed & mask.unsqueeze(-3)
        outputs, weights = attention(q, k, v, allowed)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="transposed before they met the values")
class MultiHeadAttentionTransposingTheWeightsForTheValues(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights.transpose(-2, -1) @ v)), weights


@wrong_answer("MultiHeadAttention", message="your weights are the softmax of k · qᵀ")
class MultiHeadAttentionScoringKeysAgainstQueries(nn.Module):
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
        scores = k @ q.transpose(-2, -1) / q.shape[-1] ** 0.5  # (batch, heads, n_k, n_q)
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3).transpose(-2, -1), float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="the outputs lack the bias of self.output")
class MultiHeadAttentionWithoutTheOutputBias(nn.Module):
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
        merged = merge_heads(outputs)
        return torch.einsum("bnd,ed->bne", merged, self.output.weight), weights


@wrong_answer("MultiHeadAttention", message="multiplied by self.output.weight as nn.Linear stores it")
class MultiHeadAttentionWithTheOutputWeightUntransposed(nn.Module):
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
        return merge_heads(outputs) @ self.output.weight + self.output.bias, weights


@wrong_answer("MultiHeadAttention", message="the values lack the bias of self.value")
class MultiHeadAttentionWithValuesWithoutBias(nn.Module):
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
        v = split_heads(torch.einsum("bnd,ed->bne", context, self.value.weight), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="the values were computed with self.value.weight as")
class MultiHeadAttentionWithTheValueWeightUntransposed(nn.Module):
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
        v = split_heads(context @ self.value.weight + self.value.bias, self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="its outputs are values @ weights")
class MultiHeadAttentionMultiplyingValuesByWeights(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(v @ weights)), weights


@wrong_answer("MultiHeadAttention", message="self.output takes d_model features")
class MultiHeadAttentionApplyingTheOutputBeforeMerging(nn.Module):
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
        return merge_heads(self.output(outputs)), weights


@wrong_answer("MultiHeadAttention", message="those of head 0 alone")
class MultiHeadAttentionReturningTheFirstHeadsWeights(nn.Module):
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
        return self.output(merge_heads(outputs)), weights[:, 0]


@wrong_answer("MultiHeadAttention", message="your weights are the scores before the softmax")
class MultiHeadAttentionReturningTheScores(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        return self.output(merge_heads(scores.softmax(dim=-1) @ v)), scores


# More mistakes of all three exercises ----------------------------------------------------------------


@wrong_answer("split_heads", message="the heads axis went in front of the batch axes")
def split_moving_the_heads_to_the_front(x, num_heads):
    return x.unflatten(-1, (num_heads, -1)).movedim(-2, 0)


@wrong_answer("merge_heads", message="you read the sizes of x in the split's order")
def merge_unpacking_the_sizes_in_the_splits_order(x):
    *batch, seq, num_heads, d_head = x.shape
    return x.transpose(-3, -2).reshape(*batch, seq, num_heads * d_head)


@wrong_answer("merge_heads", message="the reshape joined the last three axes of (..., seq, heads, d_head)")
def merge_flattening_three_axes(x):
    return x.transpose(-3, -2).flatten(-3)


@wrong_answer("merge_heads", message="it takes the number of heads from somewhere other than x")
def merge_with_a_default_number_of_heads(x, num_heads=2):
    *batch, _, seq, d_head = x.shape
    return x.transpose(-3, -2).reshape(*batch, seq, num_heads * d_head)


@wrong_answer("MultiHeadAttention", message="changed its input mask in place")
class MultiHeadAttentionUnsqueezingTheMaskInPlace(nn.Module):
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
        if mask is not None:
            mask.unsqueeze_(-3)
        outputs, weights = attention(q, k, v, mask)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="Your code expects n_q rows in every mask")
class MultiHeadAttentionViewingThePaddingMaskToTheQueries(nn.Module):
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
        if mask is not None:
            if mask.dim() == 2:
                mask = mask[None, None]
            else:
                mask = mask.view(x.shape[0], 1, x.shape[1], context.shape[1])
        outputs, weights = attention(q, k, v, mask)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="as many as the mask (n_q, n_k) has rows")
class MultiHeadAttentionTellingTheMaskByItsFirstSize(nn.Module):
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
        if mask is not None:
            if mask.shape[0] == x.shape[0]:  # one mask per sentence
                mask = mask.unsqueeze(1)
            else:  # one mask for the whole batch
                mask = mask.unsqueeze(0).unsqueeze(0)
        outputs, weights = attention(q, k, v, mask)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="joined end to end along the queries' axis")
class MultiHeadAttentionJoiningTheHeadsWeightsWithCat(nn.Module):
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
        head_mask = None if mask is None else mask.unsqueeze(-3)
        outputs, weights = [], []
        for head in range(self.num_heads):
            o, w = attention(q[:, head : head + 1], k[:, head : head + 1], v[:, head : head + 1], head_mask)
            outputs.append(o)
            weights.append(w[:, 0])
        return self.output(merge_heads(torch.cat(outputs, dim=1))), torch.cat(weights, dim=1)


@wrong_answer("MultiHeadAttention", message="Your softmax divides by e.sum(dim=-1), which drops the axis")
class MultiHeadAttentionWithASoftmaxWithoutKeepdim(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        e = scores.exp()
        weights = e / e.sum(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="their axes in the order (batch, n_q, heads, n_k)")
class MultiHeadAttentionReturningTheWeightsAsQueriesHeadsKeys(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        h = self.num_heads
        q = self.query(x).unflatten(-1, (h, -1))  # (batch, n_q, heads, d_head)
        k = self.key(context).unflatten(-1, (h, -1))  # (batch, n_k, heads, d_head)
        v = self.value(context).unflatten(-1, (h, -1))  # (batch, n_k, heads, d_head)
        scores = torch.einsum("bqhd,bkhd->bqhk", q, k) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask.unsqueeze(-2), float("-inf"))
        weights = scores.softmax(dim=-1)  # (batch, n_q, heads, n_k)
        outputs = torch.einsum("bqhk,bkhd->bqhd", weights, v).flatten(-2)
        return self.output(outputs), weights


@wrong_answer("MultiHeadAttention", message="the weighted values were summed over the queries' axis")
class MultiHeadAttentionSummingOverTheQueries(nn.Module):
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
        _, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        outputs = (weights.unsqueeze(-1) * v.unsqueeze(-3)).sum(dim=-3)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="0 · inf is nan, so a mask multiplied by -inf")
class MultiHeadAttentionMultiplyingTheMaskByInfinity(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores + (~mask.unsqueeze(-3)) * float("-inf")
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="your code uses the length of one sequence where the other's belongs")
class MultiHeadAttentionMergingWithTheContextsLength(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        batch, seq, d_model = context.shape
        h = self.num_heads
        q = self.query(x).view(batch, -1, h, d_model // h).transpose(1, 2)
        k = self.key(context).view(batch, seq, h, d_model // h).transpose(1, 2)
        v = self.value(context).view(batch, seq, h, d_model // h).transpose(1, 2)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(outputs.transpose(1, 2).reshape(batch, seq, d_model)), weights


@wrong_answer("MultiHeadAttention", message="with the two sizes in the other order, (batch, seq, d_head, heads)")
class MultiHeadAttentionCuttingEveryHthFeatureInline(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        batch, n_q, d_model = x.shape
        n_k, h = context.shape[1], self.num_heads
        q = self.query(x).view(batch, n_q, d_model // h, h).permute(0, 3, 1, 2)
        k = self.key(context).view(batch, n_k, d_model // h, h).permute(0, 3, 1, 2)
        v = self.value(context).view(batch, n_k, d_model // h, h).permute(0, 3, 1, 2)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(outputs.permute(0, 2, 3, 1).reshape(batch, n_q, d_model)), weights


@wrong_answer("MultiHeadAttention", message="your module applies them to x already split into heads")
class MultiHeadAttentionSplittingBeforeProjecting(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q = self.query(split_heads(x, self.num_heads))
        k = self.key(split_heads(context, self.num_heads))
        v = self.value(split_heads(context, self.num_heads))
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="its last two axes, n_q and n_k, still last")
class MultiHeadAttentionAddingTheMasksAxisAtTheEnd(nn.Module):
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
        outputs, weights = attention(q, k, v, None if mask is None else mask[..., None])
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="called without a context, as self-attention calls it")
class MultiHeadAttentionWithoutADefaultContext(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        q = split_heads(self.query(x), self.num_heads)
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="returned a list of two; return a tuple (outputs, weights)")
class MultiHeadAttentionReturningAList(nn.Module):
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
        return [self.output(merge_heads(outputs)), weights]


@wrong_answer("MultiHeadAttention", message="your mask is inverted")
class MultiHeadAttentionHidingTheVisibleKeysByHand(nn.Module):
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
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:  # some rows end up with every key hidden: nan there
            scores = scores.masked_fill(mask.unsqueeze(-3), float("-inf"))
        weights = scores.softmax(dim=-1)
        return self.output(merge_heads(weights @ v)), weights


@wrong_answer("MultiHeadAttention", message="it takes the batch size from somewhere other than x")
class MultiHeadAttentionForABatchOfThree(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        d_head = x.shape[-1] // self.num_heads
        q = self.query(x).view(3, -1, self.num_heads, d_head).transpose(1, 2)
        k = self.key(context).view(3, -1, self.num_heads, d_head).transpose(1, 2)
        v = self.value(context).view(3, -1, self.num_heads, d_head).transpose(1, 2)
        outputs, weights = attention(q, k, v, None if mask is None else mask.unsqueeze(-3))
        return self.output(outputs.transpose(1, 2).reshape(3, -1, x.shape[-1])), weights


@wrong_answer("MultiHeadAttention", message="queries divided by √d_head before attention")
class multi_head_scaling_queries_twice(nn.Module):
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
        q = q / q.shape[-1] ** 0.5
        k = split_heads(self.key(context), self.num_heads)
        v = split_heads(self.value(context), self.num_heads)
        head_mask = None if mask is None else mask.unsqueeze(-3)
        outputs, weights = attention(q, k, v, head_mask)
        return self.output(merge_heads(outputs)), weights


@wrong_answer("MultiHeadAttention", message="Give the mask an axis of size 1 where the scores have their heads")
class MultiHeadAttentionWithTheMasksHeadAxisInFront(nn.Module):
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
        head_mask = None if mask is None else mask.unsqueeze(0)
        outputs, weights = attention(q, k, v, head_mask)
        return self.output(merge_heads(outputs)), weights
