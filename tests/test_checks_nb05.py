"""The checks of notebook 05 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py.)
"""

import math

import pytest
import torch
from torch import nn

from tests.stubs import StubModule, raise_not_implemented
from transformer_course.checks import CheckFailed, nb05


def encoding_with_exp_and_stack(length, d, n=10000.0):
    frequencies = torch.exp(torch.arange(0, d, 2) * (-math.log(n) / d))  # (d/2,)
    angles = torch.outer(torch.arange(length, dtype=torch.float32), frequencies)  # (length, d/2)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(-2)  # interleaved


def shift_matrix_by_blocks(delta, d, n=10000.0):
    blocks = []
    for i in range(0, d, 2):
        angle = delta / n ** (i / d)
        blocks.append(torch.tensor([[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]]))
    return torch.block_diag(*blocks)


class LearnedWithParameterIndexing(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if x.shape[-2] > self.embedding.num_embeddings:
            raise ValueError("too long")
        return x + self.embedding.weight[: x.shape[-2]]


def test_checks_accept_correct_answers_written_differently():
    nb05.check_sinusoidal_encoding(encoding_with_exp_and_stack)
    nb05.check_shift_matrix(shift_matrix_by_blocks)
    nb05.check_learned_positional_embedding(LearnedWithParameterIndexing)


def test_the_formula_oracle_has_the_closed_form_values():
    encoding = nb05.encoding_by_formula(3, 4, n=10000.0)
    assert encoding[0].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert encoding[2, 0] == pytest.approx(math.sin(2)) and encoding[2, 3] == pytest.approx(math.cos(2 / 100))


@pytest.mark.parametrize(
    ("check", "stub"),
    [
        (nb05.check_sinusoidal_encoding, raise_not_implemented),
        (nb05.check_shift_matrix, raise_not_implemented),
        (nb05.check_learned_positional_embedding, StubModule),
    ],
)
def test_a_stub_is_reported_as_not_implemented_yet(check, stub):
    with pytest.raises(CheckFailed, match="is not implemented yet"):
        check(stub)
