"""The checks of notebook 07 accept the reference building blocks and model, and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py; the solution notebook passes the checks
when CI executes it.)
"""

import pytest

from tests.stubs import StubModule
from transformer_course import reference
from transformer_course.checks import CheckFailed, nb07


def test_checks_accept_the_reference_layer_stack_and_model():
    nb07.check_decoder_layer(reference.DecoderLayer)
    nb07.check_decoder(reference.Decoder)
    nb07.check_transformer(reference.Transformer)  # the model notebook 08 imports is notebook 07's model


@pytest.mark.parametrize("check", [nb07.check_decoder_layer, nb07.check_decoder, nb07.check_transformer])
def test_a_stub_is_reported_as_not_implemented_yet(check):
    with pytest.raises(CheckFailed, match="is not implemented yet"):
        check(StubModule)
