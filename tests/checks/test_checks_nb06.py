"""The checks of notebook 06 accept correct answers written in different ways, vary with their seed, and explain
stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py.)
"""

import functools

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.check_probes import assert_hidden_tests_differ
from tests.stubs import StubModule
from transformer_course import reference
from transformer_course.checks import CheckFailed, nb06

ASSIGNMENT = "06_transformer_block"


class LayerNormWithTorchFunctional(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

    def forward(self, x):
        centred = x - x.mean(dim=-1, keepdim=True)
        return centred * torch.rsqrt(centred.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.gain + self.bias


class FeedForwardWithSequential(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(F.relu(self.linear1(x)))


def test_checks_accept_correct_answers_written_differently():
    nb06.check_layer_norm(LayerNormWithTorchFunctional)
    nb06.check_feed_forward(FeedForwardWithSequential)
    nb06.check_encoder_layer(reference.EncoderLayer)
    nb06.check_encoder(reference.Encoder)


@pytest.mark.parametrize(
    "check", [nb06.check_layer_norm, nb06.check_feed_forward, nb06.check_encoder_layer, nb06.check_encoder]
)
def test_a_stub_is_reported_as_not_implemented_yet(check):
    with pytest.raises(CheckFailed, match="is not implemented yet"):
        check(StubModule)


class EncoderLayerWithSublayersInALoop(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.pre_ln = norm_first
        self.norm1, self.norm2 = reference.LayerNorm(d_model), reference.LayerNorm(d_model)
        self.self_attention = reference.MultiHeadAttention(d_model, num_heads)
        self.feed_forward = reference.FeedForward(d_model, d_ff)

    def forward(self, x, mask=None):
        sublayers = [(self.norm1, lambda h: self.self_attention(h, mask=mask)[0]), (self.norm2, self.feed_forward)]
        for norm, sublayer in sublayers:
            x = x + sublayer(norm(x)) if self.pre_ln else norm(x + sublayer(x))
        return x


def test_an_encoder_layer_written_as_a_loop_over_its_sublayers_passes():
    nb06.check_encoder_layer(EncoderLayerWithSublayersInALoop)


class EncoderLayerWithDropoutModules(nn.Module):
    """Dropout as the paper has it, in nn.Dropout modules, which eval mode turns off."""

    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = reference.MultiHeadAttention(d_model, num_heads)
        self.feed_forward = reference.FeedForward(d_model, d_ff)
        self.norm1, self.norm2 = reference.LayerNorm(d_model), reference.LayerNorm(d_model)
        self.dropout1, self.dropout2 = nn.Dropout(0.1), nn.Dropout(0.1)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.self_attention(self.norm1(x), mask=mask)[0])
            return x + self.dropout2(self.feed_forward(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.self_attention(x, mask=mask)[0]))
        return self.norm2(x + F.dropout(self.feed_forward(x), 0.1, training=self.training))


def test_dropout_that_eval_mode_turns_off_passes():
    nb06.check_encoder_layer(EncoderLayerWithDropoutModules)


@pytest.mark.parametrize(
    ("check", "correct"),
    [
        (nb06.check_layer_norm, reference.LayerNorm),
        (nb06.check_feed_forward, reference.FeedForward),
        (nb06.check_encoder_layer, reference.EncoderLayer),
        (nb06.check_encoder, reference.Encoder),
    ],
)
def test_every_hidden_test_gives_other_weights_and_inputs_than_the_visible_one(check, correct):
    assert_hidden_tests_differ(ASSIGNMENT, check, correct)


class EncoderLayerPassingEveryArgumentByPosition(nn.Module):
    """forward(x, context=None, mask=None) by position, context given as x: a correct call."""

    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = reference.MultiHeadAttention(d_model, num_heads)
        self.feed_forward = reference.FeedForward(d_model, d_ff)
        self.norm1, self.norm2 = reference.LayerNorm(d_model), reference.LayerNorm(d_model)

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            attended, _ = self.self_attention(h, h, mask)
            x = x + attended
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attention(x, None, mask)[0])
        return self.norm2(x + self.feed_forward(x))


def test_an_encoder_layer_passing_the_context_and_the_mask_by_position_passes():
    nb06.check_encoder_layer(EncoderLayerPassingEveryArgumentByPosition)


@pytest.mark.parametrize("norm_first", [False, True])
def test_the_wirings_the_diagnosis_tries_are_built_from_pieces_that_give_pytorchs_layer(norm_first):
    """The residual wirings a failing layer is compared with use PyTorch's sublayers as PyTorch's layer does: wired
    right, they give its output, so a wrong wiring that matches is the learner's."""
    layer = nb06.built_and_perturbed(reference.EncoderLayer, 8, 2, 16, norm_first=norm_first, seed=0, call="layer")
    twin = nb06.torch_encoder_layer(layer, 2, 16, norm_first)
    x = torch.randn(2, 5, 8)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    with torch.no_grad():
        wired = nb06._wired(nb06._encoder_sublayers(twin, padding), (0, 1), x, norm_first)
        expected = twin(x, src_key_padding_mask=padding)
    torch.testing.assert_close(wired, expected, atol=1e-5, rtol=0)


class EncoderWithItsLayersInASequential(nn.Module):
    """nn.Sequential registers its layers as nn.ModuleList does; the loop hands each one the mask."""

    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.Sequential(
            *[reference.EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers)]
        )
        self.norm = reference.LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


class EncoderWithTorchsLayerNormAtTheEnd(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(
            reference.EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask=mask)
        return x if self.norm is None else self.norm(x)


@pytest.mark.parametrize("encoder", [EncoderWithItsLayersInASequential, EncoderWithTorchsLayerNormAtTheEnd])
def test_an_encoder_in_another_registered_container_or_with_torchs_final_norm_passes(encoder):
    nb06.check_encoder(encoder)


@pytest.mark.parametrize("norm_first", [False, True])
def test_the_steps_the_diagnosis_tries_give_pytorchs_layer_when_they_are_the_right_ones(norm_first):
    """A layer's steps, taken the way norm_first asks, give PyTorch's layer: a step of another kind that matches a
    learner's output is the learner's."""
    layer = nb06.built_and_perturbed(reference.EncoderLayer, 8, 2, 16, norm_first=norm_first, seed=0, call="layer")
    twin = nb06.torch_encoder_layer(layer, 2, 16, norm_first)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        h = x
        for _, norm, sublayer in nb06._encoder_sublayers(twin, None):
            h = nb06._step("pre-LN" if norm_first else "post-LN", norm, sublayer, h)
        torch.testing.assert_close(h, twin(x), atol=1e-5, rtol=0)


class LayerNormWithVarMean(nn.Module):
    """torch.var_mean unpacked in its own order, (variance, mean)."""

    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

    def forward(self, x):
        variance, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.gain + self.bias


class LayerNormWithTorchsFunction(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.gain, self.bias = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return F.layer_norm(x, self.gain.shape, self.gain, self.bias, self.eps)


class FeedForwardWithEinsumAndAnInPlaceReLU(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.activation = nn.ReLU(inplace=True)

    def forward(self, x):
        hidden = torch.einsum("...i,hi->...h", x, self.linear1.weight) + self.linear1.bias
        return torch.einsum("...h,oh->...o", self.activation(hidden), self.linear2.weight) + self.linear2.bias


class EncoderFoldingItsLayers(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(num_layers):
            self.layers.append(
                reference.EncoderLayer(d_model=d_model, num_heads=num_heads, d_ff=d_ff, norm_first=norm_first)
            )
        self.norm = reference.LayerNorm(d_model) if norm_first else None

    def forward(self, x, mask=None):
        x = functools.reduce(lambda h, layer: layer(h, mask=mask), self.layers, x)
        return x if self.norm is None else self.norm(x)


@pytest.mark.parametrize(
    ("check", "correct"),
    [
        (nb06.check_layer_norm, LayerNormWithVarMean),
        (nb06.check_layer_norm, LayerNormWithTorchsFunction),
        (nb06.check_feed_forward, FeedForwardWithEinsumAndAnInPlaceReLU),
        (nb06.check_encoder, EncoderFoldingItsLayers),
    ],
)
def test_correct_answers_in_other_styles_pass_and_stay_differentiable(check, correct):
    check(correct)


def test_the_gradient_with_nothing_taken_as_a_constant_is_nn_layer_norms():
    """The gradients a detached mean or variance would give are computed by a function that, with nothing detached,
    gives nn.LayerNorm's gradient: a correct layer norm never matches one of the detached ones by accident."""
    norm = nb06.built_and_perturbed(reference.LayerNorm, 4, seed=0, call="LayerNorm(4)").double()
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(3, 4, dtype=torch.float64)
    twin = nn.LayerNorm(4).double()
    with torch.no_grad():
        twin.weight.copy_(norm.gain)
        twin.bias.copy_(norm.bias)
    (expected,) = torch.autograd.grad(twin(x), x, upstream)
    computed = nb06._gradient_with_constants(norm, x, upstream, detach_mean=False, detach_variance=False)
    torch.testing.assert_close(computed, expected)
    for detach_mean, detach_variance in ((True, True), (True, False), (False, True)):
        detached = nb06._gradient_with_constants(norm, x, upstream, detach_mean, detach_variance)
        assert not torch.allclose(detached, expected)
