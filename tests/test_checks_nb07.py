"""The checks of notebook 07 accept the reference building blocks and model and correct answers written in other
ways, grade each exercise on its own, vary with their seed, and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py; the solution notebook passes the checks
when CI executes it.)
"""

import math

import pytest
import torch
from torch import nn

from autograder.submissions import solved_namespace
from tests.check_probes import assert_hidden_tests_differ
from tests.stubs import StubModule
from transformer_course import reference
from transformer_course.checks import CheckFailed, nb06, nb07

ASSIGNMENT = "07_decoder_and_full_model"


class DecoderLayerPassingEverythingByKeyword(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.pre_ln = norm_first
        self.norm1, self.norm2, self.norm3 = (reference.LayerNorm(d_model) for _ in range(3))
        self.self_attention = reference.MultiHeadAttention(d_model, num_heads)
        self.cross_attention = reference.MultiHeadAttention(d_model, num_heads)
        self.feed_forward = reference.FeedForward(d_model, d_ff)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        sublayers = [
            (self.norm1, lambda h: self.self_attention(x=h, mask=self_mask)[0]),
            (self.norm2, lambda h: self.cross_attention(x=h, context=memory, mask=memory_mask)[0]),
            (self.norm3, self.feed_forward),
        ]
        for norm, sublayer in sublayers:
            x = x + sublayer(norm(x)) if self.pre_ln else norm(x + sublayer(x))
        return x


class DecoderPassingEverythingByKeyword(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(
            [reference.DecoderLayer(d_model, num_heads, d_ff, norm_first=norm_first) for _ in range(num_layers)]
        )
        self.norm = reference.LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x=x, memory=memory, memory_mask=memory_mask, self_mask=self_mask)
        return x if self.norm is None else self.norm(x)


class TransformerInOneMethod(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        nn.init.normal_(self.src_embedding.weight, mean=0.0, std=1 / math.sqrt(d_model))
        nn.init.normal_(self.tgt_embedding.weight, mean=0.0, std=1 / math.sqrt(d_model))
        self.encoder = reference.Encoder(num_layers, d_model, num_heads, d_ff, norm_first=norm_first)
        self.decoder = reference.Decoder(num_layers, d_model, num_heads, d_ff, norm_first=norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        d_model = self.output.in_features
        source = self.src_embedding(src) * d_model**0.5 + reference.sinusoidal_encoding(src.size(1), d_model)
        target = self.tgt_embedding(tgt) * d_model**0.5 + reference.sinusoidal_encoding(tgt.size(1), d_model)
        memory = self.encoder(source, mask=src_mask)
        return self.output(self.decoder(target, memory=memory, memory_mask=src_mask, self_mask=tgt_mask))


def test_checks_accept_the_reference_layer_stack_and_model():
    nb07.check_decoder_layer(reference.DecoderLayer)
    nb07.check_decoder(reference.Decoder)
    nb07.check_transformer(reference.Transformer)  # the model notebook 08 imports is notebook 07's model


def test_checks_accept_correct_answers_written_differently():
    nb07.check_decoder_layer(DecoderLayerPassingEverythingByKeyword)
    nb07.check_decoder(DecoderPassingEverythingByKeyword)
    nb07.check_transformer(TransformerInOneMethod)


@pytest.mark.parametrize("stubs", [("DecoderLayer",), ("Decoder", "DecoderLayer")])
def test_a_correct_transformer_gets_its_points_while_earlier_exercises_are_stubs(stubs):
    namespace = solved_namespace(ASSIGNMENT) | dict.fromkeys(stubs, StubModule)
    nb07.check_transformer(namespace["Transformer"])


@pytest.mark.parametrize("check", [nb07.check_decoder_layer, nb07.check_decoder, nb07.check_transformer])
def test_a_stub_is_reported_as_not_implemented_yet(check):
    with pytest.raises(CheckFailed, match="is not implemented yet"):
        check(StubModule)


@pytest.mark.parametrize(
    ("check", "correct"),
    [
        (nb07.check_decoder_layer, reference.DecoderLayer),
        (nb07.check_decoder, reference.Decoder),
        (nb07.check_transformer, reference.Transformer),
    ],
)
def test_every_hidden_test_gives_other_weights_and_inputs_than_the_visible_one(check, correct):
    assert_hidden_tests_differ(ASSIGNMENT, check, correct)


@pytest.mark.parametrize("norm_first", [False, True])
def test_the_wirings_the_diagnosis_tries_are_built_from_pieces_that_give_pytorchs_layer(norm_first):
    """The residual wirings a failing layer is compared with use PyTorch's sublayers as PyTorch's layer does: wired
    right, they give its output, so a wrong wiring that matches is the learner's."""
    layer = nb07.built_and_perturbed(reference.DecoderLayer, 8, 2, 16, norm_first=norm_first, seed=0, call="layer")
    twin = nb07._layer_twin(layer, norm_first)
    x, memory, causal, source_real = nb07._inputs(seed=0)
    with torch.no_grad():
        sublayers = nb07._decoder_sublayers(twin, memory, causal, source_real)
        wired = nb06._wired(sublayers, (0, 1, 2), x, norm_first)
        expected = twin(x, memory, tgt_mask=~causal, memory_key_padding_mask=~source_real)
    torch.testing.assert_close(wired, expected, atol=1e-5, rtol=0)


class DecoderLayerPassingEveryArgumentByPosition(nn.Module):
    """forward(x, context=None, mask=None) by position, the context given: a correct call."""

    def __init__(self, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attention = reference.MultiHeadAttention(d_model, num_heads)
        self.cross_attention = reference.MultiHeadAttention(d_model, num_heads)
        self.feed_forward = reference.FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = (reference.LayerNorm(d_model) for _ in range(3))

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attention(h, h, self_mask)[0]
            x = x + self.cross_attention(self.norm2(x), memory, memory_mask)[0]
            return x + self.feed_forward(self.norm3(x))
        x = self.norm1(x + self.self_attention(x, None, self_mask)[0])
        x = self.norm2(x + self.cross_attention(x, memory, memory_mask)[0])
        return self.norm3(x + self.feed_forward(x))


def test_a_decoder_layer_passing_contexts_and_masks_by_position_passes():
    nb07.check_decoder_layer(DecoderLayerPassingEveryArgumentByPosition)
