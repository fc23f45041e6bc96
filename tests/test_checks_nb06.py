"""The checks of notebook 06 accept correct answers written in different ways, vary with their seed, and explain
stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py.)
"""

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
