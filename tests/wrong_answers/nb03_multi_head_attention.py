"""Wrong answers to notebook 03: reshaping into heads, merging them back, and the multi-head module."""

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


@wrong_answer("split_heads", message="wrong shape")
def split_transposing_the_wrong_axes(x, num_heads):
    *batch, seq, d_model = x.shape
    return x.reshape(*batch, seq, num_heads, d_model // num_heads).transpose(-2, -1)


@wrong_answer("split_heads", message="raised RuntimeError")
def split_assuming_one_batch_axis(x, num_heads):
    batch, seq, d_model = x.shape[0], x.shape[-2], x.shape[-1]
    return x.view(batch, seq, num_heads, d_model // num_heads).transpose(1, 2)


# Exercise 2: merge_heads ---------------------------------------------------------------------------------


@wrong_answer("merge_heads", message="without transposing")
def merge_by_reshaping_without_transposing(x):
    *batch, num_heads, seq, d_head = x.shape
    return x.reshape(*batch, seq, num_heads * d_head)


@wrong_answer("merge_heads", message="raised RuntimeError")
def merge_with_view_after_transpose(x):
    *batch, num_heads, seq, d_head = x.shape
    return x.transpose(-3, -2).view(*batch, seq, num_heads * d_head)


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
