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


@wrong_answer("LayerNorm", message="divided by d - 1), and eps is added to the standard deviation")
class LayerNormWithUnbiasedStdAndEpsOutsideTheRoot(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="the mean is not subtracted: the features are divided by their root mean square")
class LayerNormWithoutCentring(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        rms = torch.sqrt((x**2).mean(-1, keepdim=True) + self.eps)
        return x / rms * self.gain + self.bias


@wrong_answer("LayerNorm", message="the mean is not subtracted: the features are divided by their standard deviation")
class LayerNormDividingWithoutCentring(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        variance = x.var(dim=-1, unbiased=False, keepdim=True)
        return x / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="the statistics come from the wrong axis, dim=1 of x (2, 5, 8)")
class LayerNormOverThePositions(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(dim=1, keepdim=True)
        variance = x.var(dim=1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="Keep the reduced axis (keepdim=True)")
class LayerNormWithoutKeepdim(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(-1)
        variance = x.var(-1, unbiased=False)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer(
    "LayerNorm", message="LayerNorm(4)(x) with x (3, 4) that requires grad returned a tensor that does not require"
)
class LayerNormUnderNoGrad(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    @torch.no_grad()
    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        variance = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="a layer norm whose mean and variance are constants (.detach() or .data)")
class LayerNormWithDetachedStatistics(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True).detach()  # "statistics are constants"
        variance = x.var(dim=-1, unbiased=False, keepdim=True).detach()
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="a layer norm whose variance is a constant")
class LayerNormWithADetachedVariance(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        centred = x - x.mean(dim=-1, keepdim=True)
        variance = centred.pow(2).mean(dim=-1, keepdim=True)
        return centred / torch.sqrt(variance.data + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="self.gain is an nn.Parameter made with requires_grad=False")
class LayerNormWithFrozenGainAndBias(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d), requires_grad=False)
        self.bias = nn.Parameter(torch.zeros(d), requires_grad=False)

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        variance = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="torch.var_mean returns (variance, mean), in this order")
class LayerNormUnpackingVarMeanSwapped(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean, variance = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="the mean and the variance divide their sums over the features by 3")
class LayerNormDividingByLenX(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.sum(dim=-1, keepdim=True) / len(x)
        variance = ((x - mean) ** 2).sum(dim=-1, keepdim=True) / len(x)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="the centred features are divided by their length (norm)")
class LayerNormDividingByTheNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        centred = x - x.mean(dim=-1, keepdim=True)
        return centred / torch.sqrt(centred.pow(2).sum(dim=-1, keepdim=True) + self.eps) * self.gain + self.bias


@wrong_answer("LayerNorm", message="your default is eps=1e-06, not PyTorch's 1e-5")
class LayerNormWithADefaultEpsOf1e6(nn.Module):
    def __init__(self, d, eps=1e-6):  # "a small number, as in many papers"
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        variance = x.var(dim=-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


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


@wrong_answer("FeedForward", message="needs self.linear1 = nn.Linear(8, 16)")
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


@wrong_answer("FeedForward", message="self.linear2 have no bias (bias=False), but the formula adds b1 and b2")
class FeedForwardWithoutBiases(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff, bias=False)
        self.linear2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


@wrong_answer("FeedForward", message="b1 and b2 are left out of W2 ReLU(W1 x + b1) + b2")
class FeedForwardWithTheWeightsAlone(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return torch.relu(x @ self.linear1.weight.T) @ self.linear2.weight.T


@wrong_answer("FeedForward", message="you used tanh")
class FeedForwardWithTanh(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(torch.tanh(self.linear1(x)))


@wrong_answer("FeedForward", message="self.linear2 runs first, on x")
class FeedForwardRunningTheLayersInReverse(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear1(torch.relu(self.linear2(x)))


@wrong_answer("FeedForward", message="the hidden layer has 4·d_model = 32 units, not the d_ff=16")
class FeedForwardFourTimesWiderThanDModel(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, 4 * d_model)
        self.linear2 = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


@wrong_answer("FeedForward", message="FeedForward(d_model=8, d_ff=16)(x) with x (2, 5, 8) that requires grad returned")
class FeedForwardUnderNoGrad(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    @torch.no_grad()
    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


@wrong_answer("FeedForward", message="with a residual connection inside the network")
class FeedForwardWithAResidualConnection(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return x + self.linear2(torch.relu(self.linear1(x)))


@wrong_answer("FeedForward", message="weight @ x follows the formula's W1 x, where x is one column")
class FeedForwardMultiplyingTheWeightsByAColumn(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        hidden = torch.relu(self.linear1.weight @ x + self.linear1.bias)  # W1 x + b1
        return self.linear2.weight @ hidden + self.linear2.bias


@wrong_answer("FeedForward", message="torch.maximum takes a tensor, and it was given a Python int")
class FeedForwardWithMaximumOfZero(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(torch.maximum(self.linear1(x), 0))


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


@wrong_answer("EncoderLayer", message="self.norm1 is torch's nn.LayerNorm")
class EncoderLayerWithTorchsLayerNorm(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="self.feed_forward has a hidden layer of 32 units = 4·d_model")
class EncoderLayerWithAFeedForwardFourTimesDModel(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, 4 * d_model)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="the feed-forward network reads the layer's input x, not the stream")
class EncoderLayerWithTheSublayersSideBySide(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            return x + self.self_attention(self.norm1(x), mask=mask)[0] + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="queries from norm1(x) but its keys and values from the layer's input x")
class EncoderLayerAttendingToTheUnnormalisedInput(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), x, mask=mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="your layer took the second item, the attention weights")
class EncoderLayerTakingTheAttentionWeights(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[1]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[1])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="the norm is applied to the sublayer's output before the addition")
class EncoderLayerNormalisingTheSublayersOutput(nn.Module):
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
        x = x + self.norm1(self.self_attention(x, mask=mask)[0])
        return x + self.norm2(self.feed_forward(x))


@wrong_answer("EncoderLayer", message="the feed-forward network step is pre-LN, x = x + sublayer(norm(x))")
class EncoderLayerMixingTheTwoOrders(nn.Module):
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
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return x + self.feed_forward(self.norm2(x))


@wrong_answer("EncoderLayer", message="that requires grad returned a tensor that does not require gradients")
class EncoderLayerUnderNoGrad(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    @torch.no_grad()
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="self.self_attention has 2 heads, not the num_heads=4 the layer was given")
class EncoderLayerWithTwoHeadsFixed(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, 2)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="not as nn.MultiheadAttention(query, key, value)")
class EncoderLayerCallingAttentionWithQueryKeyValue(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attention(h, h, h)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, x, x)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="the self-attention received the mask with an axis added, shape (2, 1, 1, 5)")
class EncoderLayerAddingAHeadAxisToTheMask(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # (batch, 1, 1, seq): "one axis for the heads"
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="the self-attention received the mask transposed, shape (2, 5, 1)")
class EncoderLayerTransposingTheMask(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if mask is not None:
            mask = mask.transpose(-2, -1)  # (batch, seq, 1)
        if self.norm_first:
            x = x + self.self_attention(self.norm1(x), mask=mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("EncoderLayer", message="with no norm: what norm1 returns never reaches the stream")
class EncoderLayerFeedingTheStreamBeforeNorm1On(nn.Module):
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
        h = x + self.self_attention(x, mask=mask)[0]
        x = self.norm1(h)
        return self.norm2(h + self.feed_forward(h))


@wrong_answer("EncoderLayer", message="the feed-forward network step is x = norm(x) + sublayer(x)")
class EncoderLayerNormalisingXBesideTheFeedForward(nn.Module):
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
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x) + self.feed_forward(x)


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


@wrong_answer("Encoder", message="received the stack's input x, not the output of the layer before")
class EncoderNotChainingItsLayers(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            out = layer(x, mask)
        return out if self.norm is None else self.norm(out)


@wrong_answer("Encoder", message="only layer 1 ran: layers 2 and 3 never ran")
class EncoderReturningInsideTheLoop(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
            return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="the layers are post-LN although the encoder was given norm_first=True")
class EncoderNotPassingNormFirstOn(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="self.norm is applied to the input, before the first layer")
class EncoderNormalisingItsInput(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        if self.norm is not None:
            x = self.norm(x)
        for layer in self.layers:
            x = layer(x, mask)
        return x


@wrong_answer("Encoder", message="the layers get num_heads and d_ff swapped")
class EncoderSwappingNumHeadsAndDff(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, d_ff, num_heads, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="that requires grad returned a tensor that does not require gradients")
class EncoderUnderNoGrad(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    @torch.no_grad()
    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="self.layers holds 6 layers; num_layers=3 asks for 3")
class EncoderWithSixLayersFixed(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(6))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="layer 1's feed-forward network has a hidden layer of 32 units = 4·d_model")
class EncoderWithLayersFourTimesDModelWide(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, 4 * d_model, norm_first) for _ in range(num_layers)
        )
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="layer 1's self-attention has 2 heads, not the num_heads=4 the encoder was given")
class EncoderWithTwoHeadsFixed(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, 2, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="a residual connection around the whole layer")
class EncoderWithAResidualAroundEachLayer(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = x + layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("Encoder", message="the layers run in reverse order, the last of self.layers first")
class EncoderRunningItsLayersInReverse(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in reversed(self.layers):
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


@wrong_answer("LayerNorm", message="the variance is the mean of the squared features, mean(x²), taken before centring")
class LayerNormWithTheVarianceAsTheMeanSquare(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        variance = (x**2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


@wrong_answer("FeedForward", message="ReLU is applied to the output only")
class FeedForwardWithReluOnTheOutputOnly(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return torch.relu(self.linear2(self.linear1(x)))


@wrong_answer("FeedForward", message="self.linear1 has no bias (bias=False), but the formula adds b1")
class FeedForwardWithoutTheFirstBias(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff, bias=False)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


@wrong_answer("EncoderLayer", message="a 'sandwich' norm")
class EncoderLayerWithSandwichNorms(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.norm1(self.self_attention(self.norm1(x), mask=mask)[0])
            return x + self.norm2(self.feed_forward(self.norm2(x)))
        x = self.norm1(x + self.self_attention(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


@wrong_answer("Encoder", message="self.layers holds 2 layers; num_layers=3 asks for 3")
class EncoderOneLayerShort(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers - 1))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)
