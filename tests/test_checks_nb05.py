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


@torch.no_grad()
def encoding_from_complex_numbers(length, d, n=10000.0):
    angles = torch.outer(torch.arange(length).float(), torch.pow(n, -torch.arange(0, d, 2) / d))  # (length, d/2)
    turns = torch.polar(torch.ones_like(angles), angles)  # cos + i sin
    return torch.stack([turns.imag, turns.real], dim=-1).reshape(length, d)


def encoding_in_float64_then_float32(length, d, n=10000.0):
    angles = torch.arange(length, dtype=torch.float64)[:, None] / n ** (torch.arange(0, d, 2).double() / d)
    encoding = torch.empty(length, d // 2, 2, dtype=torch.float64)
    encoding[..., 0], encoding[..., 1] = angles.sin(), angles.cos()
    return encoding.flatten(1).float()


def shift_matrix_by_blocks(delta, d, n=10000.0):
    blocks = []
    for i in range(0, d, 2):
        angle = delta / n ** (i / d)
        blocks.append(torch.tensor([[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]]))
    return torch.block_diag(*blocks)


def shift_matrix_as_an_exponential(delta, d, n=10000.0):
    pairs = torch.arange(0, d, 2)
    generator = torch.zeros(d, d)  # turns every pair at its own rate
    generator[pairs, pairs + 1] = n ** (-pairs / d)
    generator[pairs + 1, pairs] = -(n ** (-pairs / d))
    return torch.linalg.matrix_exp(delta * generator)


def shift_matrix_fitted_by_least_squares(delta, d, n=10000.0):
    """Found numerically, not from the formula: off-block entries are tiny but not 0."""
    spread = [k * 7919.3 for k in range(200)]  # far apart, so that even the slowest pairs turn a lot between them
    before = torch.cat([nb05.encoding_by_formula(1, d, n=n, first_position=t) for t in spread]).double()  # P(t)
    after = torch.cat([nb05.encoding_by_formula(1, d, n=n, first_position=t + delta) for t in spread]).double()
    return torch.linalg.lstsq(before, after).solution.T.float()


class LearnedWithParameterIndexing(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if x.shape[-2] > self.embedding.num_embeddings:
            raise ValueError("too long")
        return x + self.embedding.weight[: x.shape[-2]]


class LearnedWithBufferedPositions(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)
        self.register_buffer("positions", torch.arange(max_len), persistent=False)

    def forward(self, x):
        *leading, seq, _ = x.shape
        if seq > len(self.positions):
            raise ValueError(f"{seq} positions, max_len is {len(self.positions)}")
        return self.embedding(self.positions[:seq]).expand(*leading, -1, -1) + x


class LearnedFromAZeroTable(nn.Module):
    """Starts with no position signal; the check sets the table itself, so zeros must not look like a mistake."""

    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)
        nn.init.zeros_(self.embedding.weight)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise ValueError("too long")
        return x + self.embedding(torch.arange(seq, device=x.device))


def shift_matrix_from_a_rotation_generator_by_kron(delta, d, n=10000.0):
    frequencies = n ** (-torch.arange(d // 2) / (d // 2))  # 2i/d == i/(d/2)
    turn = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])
    cos, sin = torch.diag(torch.cos(delta * frequencies)), torch.diag(torch.sin(delta * frequencies))
    return torch.kron(cos, torch.eye(2)) + torch.kron(sin, turn)


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb05.check_sinusoidal_encoding, encoding_with_exp_and_stack),
        (nb05.check_sinusoidal_encoding, encoding_from_complex_numbers),
        (nb05.check_sinusoidal_encoding, encoding_in_float64_then_float32),
        (nb05.check_shift_matrix, shift_matrix_by_blocks),
        (nb05.check_shift_matrix, shift_matrix_as_an_exponential),
        (nb05.check_shift_matrix, shift_matrix_fitted_by_least_squares),
        (nb05.check_shift_matrix, shift_matrix_from_a_rotation_generator_by_kron),
        (nb05.check_learned_positional_embedding, LearnedWithParameterIndexing),
        (nb05.check_learned_positional_embedding, LearnedWithBufferedPositions),
        (nb05.check_learned_positional_embedding, LearnedFromAZeroTable),
    ],
)
def test_checks_accept_correct_answers_written_differently(check, answer):
    for seed in (0, 1, 2, 3):
        check(answer, seed=seed)


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


def test_the_rotation_oracle_shifts_the_formula_oracle_and_is_the_identity_at_zero():
    rotation = nb05.rotation_by_formula(3, 8, n=100.0)
    shifted = nb05.encoding_by_formula(20, 8, n=100.0) @ rotation.T  # rows R P(t)
    assert torch.allclose(shifted, nb05.encoding_by_formula(20, 8, n=100.0, first_position=3), atol=1e-5)
    assert torch.equal(nb05.rotation_by_formula(0, 6, n=10000.0), torch.eye(6))


def test_a_float64_encoding_is_told_to_return_float32_not_to_keep_an_input_dtype():
    def in_float64(length, d, n=10000.0):
        return nb05.encoding_by_formula(length, d, n=n).double()

    with pytest.raises(CheckFailed, match="return float32, PyTorch's default dtype") as failure:
        nb05.check_sinusoidal_encoding(in_float64)
    assert "input" not in str(failure.value)


class LengthFromTheFirstAxis(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if len(x) > self.embedding.num_embeddings:
            raise ValueError("too long")
        return x + self.embedding(torch.arange(x.shape[-2]))


def test_the_length_limit_alone_names_a_check_of_len_x():
    """Beyond the forward cases, the limit itself is tried on a (batch, seq, d) input whose batch is not seq."""
    with pytest.raises(CheckFailed, match=r"ValueError for x of shape \(11, 6\) but IndexError for x of shape "):
        nb05._expect_value_error_beyond_max_len(LengthFromTheFirstAxis(10, 6), seed=0)


def test_the_shift_check_draws_a_fractional_shift_and_a_whole_one_up_to_zero_from_the_seed():
    calls = []

    def recorded(delta, d, n=10000.0):
        calls.append(delta)
        return nb05.rotation_by_formula(delta, d, n=n)

    for seed in (0, 1, 2, 3):
        nb05.check_shift_matrix(recorded, seed=seed)
    drawn = [calls[k : k + 6][4:] for k in range(0, len(calls), 6)]
    assert all(fractional != int(fractional) and whole <= 0 for fractional, whole in drawn)
    assert drawn[0] != drawn[2] and any(whole == 0 for _, whole in drawn) and any(whole < 0 for _, whole in drawn)


def test_the_encoding_oracle_takes_a_fractional_first_position():
    shifted = nb05.encoding_by_formula(4, 6, n=100.0, first_position=0.5)
    rotation = nb05.rotation_by_formula(0.5, 6, n=100.0)
    assert torch.allclose(nb05.encoding_by_formula(4, 6, n=100.0) @ rotation.T, shifted, atol=1e-6)
