"""Wrong answers to notebook 07: the decoder layer, the decoder stack and the full encoder-decoder."""

import math

import torch
from torch import nn

# Later exercises call earlier ones by name, as in the notebook; the rest is reference code there.
from transformer_course.reference import (
    Decoder,
    DecoderLayer,
    Encoder,
    FeedForward,
    LayerNorm,
    MultiHeadAttention,
    sinusoidal_encoding,
)
from wrong_answers import wrong_answer

ASSIGNMENT = "07_decoder_and_full_model"

# Exercise 1: DecoderLayer --------------------------------------------------------------------------------


@wrong_answer("DecoderLayer", message="the cross-attention's queries came from the memory")
class DecoderLayerWithQueriesFromTheEncoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(memory + self.cross_attention(memory, context=x)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the cross-attention attends to x itself")
class DecoderLayerAttendingToItselfTwice(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm2(x))[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the self-attention ignores self_mask")
class DecoderLayerWithoutTheCausalMask(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x))[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the cross-attention's queries came from the memory")
class DecoderLayerAskingTheMemoryForTheTarget(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(memory, context=self.norm2(x), mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(memory, context=x, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the mask is inverted")
class DecoderLayerInvertingTheMasks(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        hidden_future, hidden_padding = ~self_mask, ~memory_mask  # True where attention is not allowed
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=hidden_future)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=hidden_padding)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=hidden_future)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=hidden_padding)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the masks are swapped")
class DecoderLayerWithTheMasksSwapped(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=memory_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=self_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=memory_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=self_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="every sublayer uses norm1; each sublayer has its own norm")
class DecoderLayerReusingNorm1(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm1(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm1(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm1(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm1(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the feed-forward network uses norm2")
class DecoderLayerNormalisingTheFeedForwardWithNorm2(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="self.self_attention does the cross-attention too")
class DecoderLayerWithOneAttentionForBoth(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.self_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.self_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the cross-attention ignores memory_mask")
class DecoderLayerAttendingToSourcePadding(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="you built post-LN")
class DecoderLayerAlwaysPostLN(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the cross-attention runs before the self-attention")
class DecoderLayerWithCrossAttentionFirst(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.cross_attention(self.norm1(x), context=memory, mask=memory_mask)[0]
            x = x + self.self_attention(self.norm2(x), mask=self_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        x = self.norm2(x + self.self_attention(x, mask=self_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the cross-attention's keys and values came from norm2(memory)")
class DecoderLayerNormalisingTheMemory(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=self.norm2(memory), mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the self-attention's mask went in as `context`")
class DecoderLayerPassingTheMasksByPosition(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), memory, memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, memory, memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="self.cross_attention returns a pair (outputs, weights)")
class DecoderLayerAddingTheCrossAttentionsPair(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask))
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="there is no residual connection around the cross-attention")
class DecoderLayerWithoutTheCrossAttentionResidual(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the feed-forward network's output is added to the stream as the self-attention")
class DecoderLayerWhoseLastResidualSkipsTheCrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            h = x + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(h))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        h = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(h))


@wrong_answer("DecoderLayer", message="the pre-LN layer ends with norm3, so its output is normalised")
class DecoderLayerNormalisingItsPreLNOutput(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return self.norm3(x + self.feed_forward(self.norm3(x)))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the cross-attention got self_mask, the causal mask")
class DecoderLayerGivingTheCrossAttentionTheSelfMask(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=self_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=self_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the self-attention got memory_mask, the source")
class DecoderLayerGivingTheSelfAttentionTheMemoryMask(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=memory_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=memory_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the cross-attention's queries came from the layer's input x")
class DecoderLayerWithCrossAttentionQueriesFromItsInput(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            h = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            h = h + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return h + self.feed_forward(self.norm3(h))
        h = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        h = self.norm2(h + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(h + self.feed_forward(h))


@wrong_answer("DecoderLayer", message="feed-forward network steps are x = x + norm(sublayer(x))")
class DecoderLayerNormalisingTheSublayersOutputs(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = x + self.norm1(self.self_attention(x, mask=self_mask)[0])
        x = x + self.norm2(self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return x + self.norm3(self.feed_forward(x))


@wrong_answer("DecoderLayer", message="norm(x) + sublayer(norm(x)): the residual connection starts from")
class DecoderLayerWithResidualsFromTheNormalisedStream(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = h + self.self_attention(h, mask=self_mask)[0]
            h = self.norm2(x)
            x = h + self.cross_attention(h, context=memory, mask=memory_mask)[0]
            h = self.norm3(x)
            return h + self.feed_forward(h)
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the self-attention got a causal mask made up in your code")
class DecoderLayerMakingItsOwnCausalMask(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        n = x.shape[1]
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).tril()
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=causal)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=causal)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


@wrong_answer("DecoderLayer", message="the feed-forward network step is x = x + sublayer(x), with no norm: what norm3")
class DecoderLayerWithoutItsLastNorm(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), context=memory, mask=memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, context=memory, mask=memory_mask)[0])
        return x + self.feed_forward(x)


# Exercise 2: Decoder -------------------------------------------------------------------------------------


@wrong_answer("Decoder", message="one and the same object")
class DecoderRepeatingOneLayer(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(d_model, num_heads, d_ff, norm_first)] * num_layers)
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Decoder", message="needs a final self.norm")
class DecoderWithoutTheFinalNorm(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return x


@wrong_answer("Decoder", message="compared with nn.TransformerDecoder")
class DecoderFeedingEachLayerTheEmbeddings(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        out = x
        for layer in self.layers:
            out = layer(x, memory, self_mask, memory_mask)
        return out if self.norm is None else self.norm(out)


@wrong_answer("Decoder", message="the layers got the masks swapped")
class DecoderSwappingTheMasks(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, memory_mask, self_mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Decoder", message="the layers got no memory_mask")
class DecoderForgettingTheSourceMask(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Decoder", message="the layers received ~memory_mask: the mask is inverted")
class DecoderInvertingTheMasks(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        hidden_future, hidden_padding = ~self_mask, ~memory_mask  # True where attention is not allowed
        for layer in self.layers:
            x = layer(x, memory, hidden_future, hidden_padding)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Decoder", message="the final norm is applied after every layer")
class DecoderNormalisingAfterEveryLayer(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
            if self.norm is not None:
                x = self.norm(x)
        return x


@wrong_answer("Decoder", message="the self_mask reached layer 3 only; layers 1 and 2 got no self_mask")
class DecoderMaskingTheLastLayerOnly(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for number, layer in enumerate(self.layers):
            last = number == len(self.layers) - 1
            x = layer(x, memory, self_mask if last else None, memory_mask if last else None)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Decoder", message="layer 2 got layer 1's output, the target stream, as its memory")
class DecoderPassingEachLayersOutputOnAsTheMemory(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
            memory = x
        return x if self.norm is None else self.norm(x)


@wrong_answer("Decoder", message="layer 1 got the target x, the stack's input, as its memory")
class DecoderGivingTheStreamAsTheMemory(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            memory = x
            x = layer(x, memory, self_mask, memory_mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Decoder", message="self.norm is applied to the input, before the first layer")
class DecoderNormalisingItsInput(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm is not None:
            x = self.norm(x)
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return x


@wrong_answer("Decoder", message="every layer computes post-LN, though norm_first=True asks for pre-LN in every")
class DecoderLeavingNormFirstOutOfItsLayers(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return x if self.norm is None else self.norm(x)


# Exercise 3: Transformer ---------------------------------------------------------------------------------


@wrong_answer("Transformer", message="not multiplied by √d_model")
class TransformerWithoutEmbeddingScale(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        source = self.src_embedding(src) + sinusoidal_encoding(src.shape[-1], self.d_model)
        target = self.tgt_embedding(tgt) + sinusoidal_encoding(tgt.shape[-1], self.d_model)
        memory = self.encoder(source, src_mask)
        return self.output(self.decoder(target, memory, tgt_mask, src_mask))


@wrong_answer("Transformer", message="there is no positional encoding")
class TransformerWithoutPositions(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        memory = self.encoder(self.src_embedding(src) * math.sqrt(self.d_model), src_mask)
        target = self.tgt_embedding(tgt) * math.sqrt(self.d_model)
        return self.output(self.decoder(target, memory, tgt_mask, src_mask))


@wrong_answer("Transformer", message="starts with standard deviation 1.00")
class TransformerWithUnitEmbeddings(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        scale = math.sqrt(self.d_model)
        source = self.src_embedding(src) * scale + sinusoidal_encoding(src.shape[-1], self.d_model)
        target = self.tgt_embedding(tgt) * scale + sinusoidal_encoding(tgt.shape[-1], self.d_model)
        return self.output(self.decoder(target, self.encoder(source, src_mask), tgt_mask, src_mask))


@wrong_answer("Transformer", message="sees the whole target")
class TransformerForgettingTheTargetMask(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        scale = math.sqrt(self.d_model)
        source = self.src_embedding(src) * scale + sinusoidal_encoding(src.shape[-1], self.d_model)
        target = self.tgt_embedding(tgt) * scale + sinusoidal_encoding(tgt.shape[-1], self.d_model)
        return self.output(self.decoder(target, self.encoder(source, src_mask), None, src_mask))


@wrong_answer("Transformer", message="are one and the same table")
class TransformerSharingOneEmbedding(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(max(src_vocab, tgt_vocab), d_model)
        nn.init.normal_(self.src_embedding.weight, std=d_model**-0.5)
        self.tgt_embedding = self.src_embedding
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        scale = math.sqrt(self.d_model)
        source = self.src_embedding(src) * scale + sinusoidal_encoding(src.shape[-1], self.d_model)
        target = self.tgt_embedding(tgt) * scale + sinusoidal_encoding(tgt.shape[-1], self.d_model)
        return self.output(self.decoder(target, self.encoder(source, src_mask), tgt_mask, src_mask))


@wrong_answer("Transformer", message="the target words are looked up in src_embedding")
class TransformerEmbeddingBothWithTheSourceTable(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table=None):
        return self.src_embedding(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(
            tokens.shape[-1], self.d_model
        )

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="a length was taken from the batch axis")
class TransformerWithPositionsAlongTheBatch(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[0], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the decoder's cross-attention ignores src_mask")
class TransformerDecodingWithoutTheSourceMask(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the encoder ignores src_mask")
class TransformerEncodingWithoutTheSourceMask(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding))

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the decoder got the masks swapped")
class TransformerSwappingTheDecoderMasks(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, src_mask, tgt_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the mask is inverted")
class TransformerInvertingTheSourceMask(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        padding = None if src_mask is None else ~src_mask  # True at the padding, to be hidden
        return self.encoder(self.embed(src, self.src_embedding), padding)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        padding = None if src_mask is None else ~src_mask
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, padding))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the positional encoding is multiplied by √d_model too")
class TransformerScalingAfterAddingPositions(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return (table(tokens) + sinusoidal_encoding(tokens.shape[-1], self.d_model)) * math.sqrt(self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the embeddings are multiplied by d_model = 8, not by √d_model")
class TransformerScalingByDModel(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * self.d_model + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the model returns probabilities: each row sums to 1")
class TransformerReturningProbabilities(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        logits = self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))
        return logits.softmax(dim=-1)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the positional encoding runs along the batch axis")
class TransformerWithTheEncodingBroadcastOverTheBatch(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        positions = sinusoidal_encoding(tokens.shape[0], self.d_model)[:, None, :]
        return table(tokens) * math.sqrt(self.d_model) + positions

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the model returns log-probabilities")
class TransformerReturningLogProbabilities(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask)).log_softmax(
            -1
        )

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="and is right when both have 5: one side used a length taken from the other")
class TransformerAddingTheSourcesEncodingToTheTarget(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        positions = sinusoidal_encoding(src.shape[1], self.d_model)
        scale = math.sqrt(self.d_model)
        memory = self.encoder(self.src_embedding(src) * scale + positions, src_mask)
        target = self.tgt_embedding(tgt) * scale + positions
        return self.output(self.decoder(target, memory, tgt_mask, src_mask))


@wrong_answer("Transformer", message="self.output's weight is self.tgt_embedding's weight")
class TransformerTyingTheOutputToTheTargetEmbedding(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)
        self.output.weight = self.tgt_embedding.weight

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the decoder got a causal mask made up in your code, not the tgt_mask")
class TransformerMakingItsOwnCausalMask(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        n = tgt.shape[1]
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        return self.decode(tgt, self.encode(src, src_mask), causal, src_mask)


@wrong_answer("Transformer", message="the source side (encode) is embedded wrongly and the target side rightly")
class TransformerNotScalingTheSourceEmbeddings(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.src_embedding(src) + sinusoidal_encoding(src.shape[-1], self.d_model), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="embed is not implemented yet")
class TransformerDoingEverythingInForward(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        raise NotImplementedError()

    def encode(self, src, src_mask=None):
        raise NotImplementedError()

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        raise NotImplementedError()

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        scale = math.sqrt(self.d_model)
        source = self.src_embedding(src) * scale + sinusoidal_encoding(src.shape[-1], self.d_model)
        target = self.tgt_embedding(tgt) * scale + sinusoidal_encoding(tgt.shape[-1], self.d_model)
        return self.output(self.decoder(target, self.encoder(source, src_mask), tgt_mask, src_mask))


@wrong_answer("Transformer", message="returns (batch, n_tgt, d_model), the decoder")
class TransformerWhoseDecodeLeavesOutTheOutputLayer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.output(self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask))


@wrong_answer("Transformer", message="self.output has no bias")
class TransformerWithAnOutputLayerWithoutBias(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab, bias=False)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="entries that small would be drowned by the encoding")
class TransformerWithEmbeddingsOfStandardDeviationOneOverDModel(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=1 / d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer(
    "Transformer", message="is right when both have d_model = 8 words: the positional encoding has d_model rows"
)
class TransformerSwappingTheEncodingsArguments(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(self.d_model, tokens.shape[-1])

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the positional encoding is sinusoidal_encoding(d_model, seq_len) transposed")
class TransformerTransposingASwappedEncoding(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        positions = sinusoidal_encoding(self.d_model, tokens.shape[1]).T  # (seq, d_model), so that it adds
        return table(tokens) * math.sqrt(self.d_model) + positions

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the embeddings are divided by √d_model, not multiplied by it")
class TransformerDividingTheEmbeddingsByTheRootOfDModel(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) / math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="self.encoder is a post-LN stack (no final norm, post-LN layers), but norm_first")
class TransformerBuildingItsEncoderWithoutNormFirst(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="self.encoder and self.decoder are post-LN stacks")
class TransformerPassingNormFirstToNeitherStack(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="self.encoder has 6 layers; num_layers=2 asks for 2 layers in each stack")
class TransformerWithSixLayersFixed(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(6, d_model, num_heads, d_ff, norm_first)  # as in the original transformer
        self.decoder = Decoder(6, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        return table(tokens) * math.sqrt(self.d_model) + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        return self.output(self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


@wrong_answer("Transformer", message="the positions are counted from 1")
class TransformerCountingPositionsFromOne(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        positions = sinusoidal_encoding(tokens.shape[-1] + 1, self.d_model)[1:]
        return table(tokens) * math.sqrt(self.d_model) + positions

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(src, self.src_embedding), src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        hidden = self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask)
        return self.output(hidden)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)
