"""The checks of notebook 07 accept the reference building blocks and model and correct answers written in other
ways, grade each exercise on its own, vary with their seed, and explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py; the solution notebook passes the checks
when CI executes it.)
"""

import math

import pytest
import torch
from torch import nn

from autograder.submissions import solved_namespace
from tests.check_probes import assert_hidden_tests_differ
from tests.stubs import StubModule
from transformer_course import checks, reference
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


class TransformerWithoutEmbedHelperCalls(nn.Module):
    """embed, encode and decode each written out, and forward not built on them."""

    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        nn.init.normal_(self.src_embedding.weight, mean=0.0, std=1 / math.sqrt(d_model))
        nn.init.normal_(self.tgt_embedding.weight, mean=0.0, std=1 / math.sqrt(d_model))
        self.encoder = reference.Encoder(num_layers, d_model, num_heads, d_ff, norm_first=norm_first)
        self.decoder = reference.Decoder(num_layers, d_model, num_heads, d_ff, norm_first=norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens, table):
        d_model = table.embedding_dim
        return table.weight[tokens] * d_model**0.5 + reference.sinusoidal_encoding(tokens.size(1), d_model)

    def encode(self, src, src_mask=None):
        d_model = self.output.in_features
        source = self.src_embedding(src) * d_model**0.5 + reference.sinusoidal_encoding(src.size(1), d_model)
        return self.encoder(source, mask=src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        target = self.embed(tgt, table=self.tgt_embedding)
        return self.output(self.decoder(target, memory=memory, memory_mask=src_mask, self_mask=tgt_mask))

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        d_model = self.output.in_features
        source = self.src_embedding(src) * d_model**0.5 + reference.sinusoidal_encoding(src.size(1), d_model)
        target = self.tgt_embedding(tgt) * d_model**0.5 + reference.sinusoidal_encoding(tgt.size(1), d_model)
        memory = self.encoder(source, mask=src_mask)
        return self.output(self.decoder(target, memory=memory, memory_mask=src_mask, self_mask=tgt_mask))


class TransformerInForwardOnly(TransformerWithoutEmbedHelperCalls):
    """Right logits from forward, but no encode and decode of its own: notebook 08 could not translate with it."""

    embed = encode = decode = None


def test_checks_accept_the_reference_layer_stack_and_model():
    nb07.check_decoder_layer(reference.DecoderLayer)
    nb07.check_decoder(reference.Decoder)
    nb07.check_transformer(reference.Transformer)  # the model notebook 08 imports is notebook 07's model


def test_checks_accept_correct_answers_written_differently():
    nb07.check_decoder_layer(DecoderLayerPassingEverythingByKeyword)
    nb07.check_decoder(DecoderPassingEverythingByKeyword)
    nb07.check_transformer(TransformerWithoutEmbedHelperCalls)


def test_a_model_computing_everything_in_forward_is_told_that_notebook_08_needs_encode_and_decode():
    with pytest.raises(CheckFailed, match="needs the methods embed, encode, decode: notebook 08 calls"):
        nb07.check_transformer(TransformerInForwardOnly)


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
    x, memory, self_mask, source_real = nb07._inputs(seed=0)
    with torch.no_grad():
        sublayers = nb07._decoder_sublayers(twin, memory, self_mask, source_real)
        wired = nb06._wired(sublayers, (0, 1, 2), x, norm_first)
        expected = twin(x, memory, **nb07._twin_masks(self_mask, source_real))
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


class TransformerBuildingItsPartsInAnotherOrder(nn.Module):
    """Correct, with the parts made in another order than the reference's (so other random weights at the start),
    the tables filled by hand, the embedding through F.embedding and a forward with keywords."""

    def __init__(self, src_vocab, tgt_vocab, d_model=64, num_heads=4, d_ff=256, num_layers=2, norm_first=False):
        super().__init__()
        self.output = nn.Linear(d_model, tgt_vocab)
        self.decoder = reference.Decoder(num_layers, d_model, num_heads, d_ff, norm_first=norm_first)
        self.encoder = reference.Encoder(num_layers, d_model, num_heads, d_ff, norm_first=norm_first)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        with torch.no_grad():
            for table in (self.tgt_embedding, self.src_embedding):
                table.weight.copy_(torch.randn_like(table.weight) / math.sqrt(d_model))

    def embed(self, tokens, table):
        d_model = table.weight.shape[1]
        vectors = nn.functional.embedding(tokens, table.weight)  # (batch, seq, d_model)
        return math.sqrt(d_model) * vectors + reference.sinusoidal_encoding(tokens.shape[1], d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(x=self.embed(src, self.src_embedding), mask=src_mask)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None):
        hidden = self.decoder(self.embed(tgt, self.tgt_embedding), memory, self_mask=tgt_mask, memory_mask=src_mask)
        return self.output(hidden)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.decode(
            tgt=tgt, memory=self.encode(src=src, src_mask=src_mask), tgt_mask=tgt_mask, src_mask=src_mask
        )


def test_a_transformer_making_its_parts_in_another_order_passes_and_is_compared_with_the_same_weights():
    """The check gives the model its own weights, drawn by name: a student release's recorded oracle results then
    answer a correct model whatever order its __init__ makes the parts in."""
    nb07.check_transformer(TransformerBuildingItsPartsInAnotherOrder)
    models = []
    for cls in (reference.Transformer, TransformerBuildingItsPartsInAnotherOrder):
        model = nb07.built_and_perturbed(cls, 11, 13, 8, 2, 16, 2, norm_first=True, seed=0, call="model")
        nb07._set_weights(model, seed=0)
        models.append(nb07._weights_given(model))
    reference_weights, other_weights = models
    assert reference_weights.keys() == other_weights.keys()
    assert all(torch.equal(reference_weights[name], other_weights[name]) for name in reference_weights)


DECODER_NOT_PASSING_NORM_FIRST = """
class Decoder(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return x if self.norm is None else self.norm(x)
"""


def test_at_home_a_decoder_whose_layers_miss_norm_first_is_named_by_the_transformers_check(monkeypatch):
    """In a student release (no stand-ins) the model is built from the learner's own Decoder: a Decoder that keeps
    norm_first from its layers is named, not the Transformer, which passed it on."""
    monkeypatch.setattr(checks, "stand_ins", None)
    namespace = solved_namespace(ASSIGNMENT)
    exec(DECODER_NOT_PASSING_NORM_FIRST, namespace)
    with pytest.raises(CheckFailed, match="self.decoder's layers compute post-LN, though it has its final norm"):
        nb07.check_transformer(namespace["Transformer"])


class DecoderWithAPostLNFirstLayer(nn.Module):
    def __init__(self, num_layers, d_model, num_heads, d_ff, norm_first=False):
        super().__init__()
        orders = [False] + [norm_first] * (num_layers - 1)
        self.layers = nn.ModuleList(reference.DecoderLayer(d_model, num_heads, d_ff, order) for order in orders)
        self.norm = reference.LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return x if self.norm is None else self.norm(x)


def test_a_decoder_with_one_layer_of_the_other_order_is_told_which():
    with pytest.raises(CheckFailed, match="layer 1 computes post-LN, though norm_first=True asks for pre-LN"):
        nb07.check_decoder(DecoderWithAPostLNFirstLayer)
