"""Wrong answers to notebook 06: layer normalisation, the feed-forward network, the encoder layer and stack."""

import torch
from torch import nn

# Later exercises call earlier ones by name, as in the notebook; MultiHeadAttention is reference code there.
from transformer_course.reference import EncoderLayer, FeedForward, LayerNorm, MultiHeadAttention
from wrong_answers import wrong_answer

ASSIGNMENT = "06_transformer_block"

# Exercise 1: LayerNorm -----------------------------------------------------------------------------------


@wrong_answer("LayerNorm", message="the variance is the unbiased one")
class LayerNormWithUnbiasedVariance(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        normalised = (x - x.mean(dim=-1, keepdim=True)) / torch.sqrt(x.var(dim=-1, keepdim=True) + self.eps)
        return normalised * self.gain + self.bias


@wrong_answer("LayerNorm", message="eps is added to the standard deviation")
class LayerNormWithEpsOutsideTheRoot(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        normalised = (x - x.mean(dim=-1, keepdim=True)) / (x.std(dim=-1, unbiased=False, keepdim=True) + self.eps)
        return normalised * self.gain + self.bias


@wrong_answer("LayerNorm", message="the statistics come from the wrong axis")
class LayerNormOverTheBatch(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        normalised = (x - x.mean(dim=0, keepdim=True)) / torch.sqrt(
            x.var(dim=0, unbiased=False, keepdim=True) + self.eps
        )
        return normalised * self.gain + self.bias


@wrong_answer("LayerNorm", message="the gain and bias are not applied")
class LayerNormForgettingGainAndBias(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return (x - x.mean(dim=-1, keepdim=True)) / torch.sqrt(x.var(dim=-1, unbiased=False, keepdim=True) + self.eps)


@wrong_answer("LayerNorm", message="needs a learnable self.gain")
class LayerNormWithFixedGain(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("gain", torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        normalised = (x - x.mean(dim=-1, keepdim=True)) / torch.sqrt(
            x.var(dim=-1, unbiased=False, keepdim=True) + self.eps
        )
        return normalised * self.gain + self.bias


@wrong_answer("LayerNorm", message="the gain and bias are swapped")
class LayerNormWithGainAndBiasSwapped(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        normalised = (x - x.mean(dim=-1, keepdim=True)) / torch.sqrt(
            x.var(dim=-1, unbiased=False, keepdim=True) + self.eps
        )
        return normalised * self.bias + self.gain


@wrong_answer("LayerNorm", message="self.gain starts at 0 and self.bias at 1")
class LayerNormStartingWithGainAndBiasSwapped(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.zeros(d))
        self.bias = nn.Parameter(torch.ones(d))

    def forward(self, x):
        normalised = (x - x.mean(dim=-1, keepdim=True)) / torch.sqrt(
            x.var(dim=-1, unbiased=False, keepdim=True) + self.eps
        )
        return normalised * self.gain + self.bias


@wrong_answer("LayerNorm", message="the statistics come from every position of a sentence together")
class LayerNormOverPositionsAndFeatures(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(dim=(-2, -1), keepdim=True)
        variance = ((x - mean) ** 2).mean(dim=(-2, -1), keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="the layer ignores its eps argument")
class LayerNormWithEpsFixedAt1e5(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        variance = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(variance + 1e-5) * self.gain + self.bias


@wrong_answer("LayerNorm", message="divided by the variance plus eps, not by its square root")
class LayerNormDividingByTheVariance(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        variance = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / (variance + self.eps) * self.gain + self.bias


# Exercise 2: FeedForward ---------------------------------------------------------------------------------


@wrong_answer("FeedForward", message="there is no activation")
class FeedForwardWithoutActivation(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(self.linear1(x))


@wrong_answer("FeedForward", message="you used GELU")
class FeedForwardWithGelu(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(torch.nn.functional.gelu(self.linear1(x)))


@wrong_answer("FeedForward", message="needs self.linear1 = nn.Linear(8, 32)")
class FeedForwardWithTheWidthsSwapped(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_model)
        self.linear2 = nn.Linear(d_model, d_model)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


@wrong_answer("FeedForward", message="so dropout is still on although the check runs your module in eval mode")
class FeedForwardWithDropoutAlwaysOn(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(nn.functional.dropout(torch.relu(self.linear1(x)), p=0.1))


@wrong_answer("FeedForward", message="ReLU is applied to the output too")
class FeedForwardWithReluOnTheOutput(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return torch.relu(self.linear2(torch.relu(self.linear1(x))))


@wrong_answer("FeedForward", message="ReLU is applied to the input x, before linear1")
class FeedForwardWithReluBeforeTheFirstLayer(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(self.linear1(torch.relu(x)))


# Exercise 3: EncoderLayer --------------------------------------------------------------------------------


@wrong_answer("EncoderLayer", message="you built pre-LN")
class EncoderLayerAlwaysPreLN(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        x = x + self.self_attention(self.norm1(x), mask=mask)[0]
        return x + self.feed_forward(self.norm2(x))


@wrong_answer("EncoderLayer", message="the mask had no effect")
class EncoderLayerIgnoringTheMask(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x))[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="there is no residual connection around the feed-forward network")
class EncoderLayerWithoutTheSecondResidual(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(self.feed_forward(x))


@wrong_answer("EncoderLayer", message="every sublayer uses norm1; each sublayer has its own norm")
class EncoderLayerReusingNorm1(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm1(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm1(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="self.norm1 and self.norm2 are one and the same LayerNorm")
class EncoderLayerWithOneNormObject(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="adds the self-attention's output to norm1(x)")
class EncoderLayerAddingToTheNormalisedStream(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = self.norm1(x)
            x = x + self.self_attention(x, mask=mask)[0]
            x = self.norm2(x)
            return x + self.feed_forward(x)
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="so dropout is still on although the check runs your module in eval mode")
class EncoderLayerWithDropoutAlwaysOn(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        def dropout(h):
            return nn.functional.dropout(h, p=0.1)

        if self.norm_first:
            x = x + dropout(self.self_attention(self.norm1(x), mask=mask)[0])
            return x + dropout(self.feed_forward(self.norm2(x)))
        x = self.norm1(x + dropout(self.self_attention(x, mask=mask)[0]))
        return self.norm2(x + dropout(self.feed_forward(x)))


@wrong_answer("EncoderLayer", message="the self-attention received ~mask: the mask is inverted")
class EncoderLayerInvertingThePaddingMask(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        padding = None if mask is None else ~mask  # True where a position is padding
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=padding)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=padding)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="the self-attention's mask went in as `context`")
class EncoderLayerPassingTheMaskByPosition(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="self.self_attention returns a pair (outputs, weights)")
class EncoderLayerAddingTheAttentionsPair(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask))
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="the feed-forward network's output is added to the layer's input x")
class EncoderLayerWithTheSecondResidualFromTheInput(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            attended = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm2(attended))
        attended = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(attended))


@wrong_answer("EncoderLayer", message="the pre-LN layer ends with norm2, so its output is normalised")
class EncoderLayerNormalisingItsPreLNOutput(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            x = x + self.feed_forward(self.norm2(x))
            return self.norm2(x)
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="Post-LN normalises after the addition")
class EncoderLayerAddingToThePostLNNormalisedStream(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x) + self.self_attention(self.norm1(x), mask=mask)[0]
        return self.norm2(x) + self.feed_forward(self.norm2(x))


# Exercise 4: Encoder -------------------------------------------------------------------------------------


@wrong_answer("Encoder", message="one and the same object")
class EncoderRepeatingOneLayer(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(d_model, num_heads, d_ff, norm_first)] * num_layers)
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="needs self.layers = nn.ModuleList")
class EncoderWithAPlainList(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = [EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers)]
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="needs a final self.norm")
class EncoderWithoutTheFinalNorm(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x


@wrong_answer("Encoder", message="the layers got no mask")
class EncoderForgettingTheMask(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="the layers received ~mask: the mask is inverted")
class EncoderInvertingThePaddingMask(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        padding = None if mask is None else ~mask  # True at the padding, to be hidden
        for layer in self.layers:
            x = layer(x, padding)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="the mask reached layer 1 only; layers 2 and 3 got no mask")
class EncoderMaskingTheFirstLayerOnly(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for number, layer in enumerate(self.layers):
            x = layer(x, mask if number == 0 else None)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="the final norm is applied after every layer")
class EncoderNormalisingAfterEveryLayer(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
            if self.norm is not None:
                x = self.norm(x)
        return x
