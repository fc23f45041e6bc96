"""The checks of notebook 06 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py.)
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.stubs import StubModule
from transformer_course import reference
from transformer_course.checks import CheckFailed, nb06


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
