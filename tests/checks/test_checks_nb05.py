"""The checks of notebook 05 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py.)
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


def encoding_with_positions_from_linspace(length, d, n=10000.0):
    """torch.linspace from 0 to length - 1 makes the whole positions 0 … length - 1, as torch.arange does."""
    angles = torch.linspace(0, length - 1, length)[:, None] * n ** (-torch.arange(0, d, 2) / d)  # (length, d/2)
    encoding = torch.empty(length, d)
    encoding[:, ::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


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


class LearnedThroughAnAliasOfTheWeight(nn.Module):
    """self.table is the embedding's own weight, not a copy: it follows the table, so it is right."""

    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)
        self.table = self.embedding.weight

    def forward(self, x):
        if x.shape[-2] > len(self.table):
            raise ValueError("too long")
        return x + self.table[: x.shape[-2]]


class SequenceTooLong(ValueError):
    """A learner's own error for a sequence longer than the table: a ValueError still."""


class LearnedRaisingItsOwnValueError(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise SequenceTooLong(f"{seq} positions, but max_len={self.embedding.num_embeddings}")
        return x + self.embedding(torch.arange(seq))


@torch.no_grad()
def shift_matrix_by_fancy_indexing(delta, d, n=10000.0):
    angles = delta * torch.pow(n, -torch.arange(d // 2) * 2 / d)  # (d/2,)
    rotation, pairs = torch.zeros(d, d), torch.arange(0, d, 2)
    rotation[pairs, pairs] = rotation[pairs + 1, pairs + 1] = torch.cos(angles)
    rotation[pairs, pairs + 1], rotation[pairs + 1, pairs] = torch.sin(angles), -torch.sin(angles)
    return rotation


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
        (nb05.check_sinusoidal_encoding, encoding_with_positions_from_linspace),
        (nb05.check_shift_matrix, shift_matrix_by_blocks),
        (nb05.check_shift_matrix, shift_matrix_as_an_exponential),
        (nb05.check_shift_matrix, shift_matrix_fitted_by_least_squares),
        (nb05.check_shift_matrix, shift_matrix_from_a_rotation_generator_by_kron),
        (nb05.check_shift_matrix, shift_matrix_by_fancy_indexing),
        (nb05.check_learned_positional_embedding, LearnedThroughAnAliasOfTheWeight),
        (nb05.check_learned_positional_embedding, LearnedWithParameterIndexing),
        (nb05.check_learned_positional_embedding, LearnedWithBufferedPositions),
        (nb05.check_learned_positional_embedding, LearnedFromAZeroTable),
        (nb05.check_learned_positional_embedding, LearnedRaisingItsOwnValueError),
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


def test_columns_in_another_order_are_named_as_such():
    def encoding_with_two_sines_exchanged(length, d, n=10000.0):
        encoding = nb05.encoding_by_formula(length, d, n=n)
        return encoding[:, [2, 1, 0, *range(3, d)]]

    with pytest.raises(CheckFailed, match=r"your columns are the formula's, in another order \(your column 0 is the"):
        nb05.check_sinusoidal_encoding(encoding_with_two_sines_exchanged)


def test_a_shift_matrix_for_cosines_then_sines_is_named_too():
    def shift_matrix_for_cosines_first(delta, d, n=10000.0):
        angles = delta * n ** (-torch.arange(0, d, 2) / d)
        cos, sin = torch.diag(torch.cos(angles)), torch.diag(torch.sin(angles))
        return torch.cat([torch.cat([cos, -sin], dim=1), torch.cat([sin, cos], dim=1)], dim=0)

    with pytest.raises(CheckFailed, match="an encoding with the cosines in the first half and the sines in the second"):
        nb05.check_shift_matrix(shift_matrix_for_cosines_first)


def test_position_vectors_from_elsewhere_than_the_table_are_told_to_come_from_it():
    class LearnedAddingItsOwnSeededVectors(nn.Module):
        def __init__(self, max_len, d):
            super().__init__()
            self.embedding = nn.Embedding(max_len, d)

        def forward(self, x):
            seq = x.shape[-2]
            if seq > self.embedding.num_embeddings:
                raise ValueError("too long")
            return x + torch.randn(seq, x.shape[-1], generator=torch.Generator().manual_seed(0))

    with pytest.raises(CheckFailed, match="none of the vectors added to x is a row of self.embedding.weight"):
        nb05.check_learned_positional_embedding(LearnedAddingItsOwnSeededVectors)


def test_the_second_call_that_tells_a_table_made_in_forward_leaves_the_global_generator_as_it_was():
    class LearnedWithATableMadeInForward(nn.Module):
        def __init__(self, max_len, d):
            super().__init__()
            self.embedding = nn.Embedding(max_len, d)

        def forward(self, x):
            return x + nn.Embedding(*self.embedding.weight.shape)(torch.arange(x.shape[-2]))

    torch.manual_seed(0)
    with pytest.raises(CheckFailed, match="gave different results in two calls"):
        nb05.check_learned_positional_embedding(LearnedWithATableMadeInForward)
    after_the_check = torch.rand(3)
    module = LearnedWithATableMadeInForward(10, 6)  # the check builds its module with a generator of its own
    torch.manual_seed(0)
    module(torch.zeros(2, 4, 6))  # the one call the check makes with the global generator, as the notebook would
    assert torch.equal(after_the_check, torch.rand(3))


def test_positions_and_frequencies_both_columns_are_told_they_lie_along_one_axis_too():
    def encoding_with_both_columns(length, d, n=10000.0):
        angles = torch.arange(length)[:, None] * (n ** (-torch.arange(0, d, 2) / d))[:, None]
        encoding = torch.zeros(length, d)
        encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
        return encoding

    with pytest.raises(CheckFailed, match="Your 10 positions and 4 frequencies lie along the same axis"):
        nb05.check_sinusoidal_encoding(encoding_with_both_columns)


def test_a_shift_by_int_delta_is_named_a_whole_step_not_blocks_left_as_the_identity():
    """At a fractional Δ under 1, int(Δ) makes R(0): every block the identity, which is a whole-step mistake."""

    def shift_by_int_delta(delta, d, n=10000.0):
        return nb05.rotation_by_formula(int(delta), d, n=n)

    for seed in (0, 1, 2, 3):
        with pytest.raises(CheckFailed, match="Δ need not be a whole number") as failure:
            nb05.check_shift_matrix(shift_by_int_delta, seed=seed)
        assert "never filled in" not in str(failure.value)
    with pytest.raises(CheckFailed, match=r"your matrix is R\(0\), a shift by 0 whole positions"):
        nb05._diagnose_rotation(nb05.rotation_by_formula(0, 8, n=100.0), 0.5, 8, 100.0, "shift_matrix(0.5, 8, 100.0)")


def test_tiny_computed_angles_are_not_taken_for_blocks_never_filled_in():
    """A block of a tiny angle is within rounding of the identity; only an exact identity or zero is named."""
    tiny = nb05.rotation_by_formula(1e-9, 8, n=10000.0)
    nb05._diagnose_missing_blocks(tiny, nb05.rotation_by_formula(1, 8, n=10000.0), 1, "shift_matrix(1, 8, 10000.0)")


def test_a_zero_table_returning_x_alone_is_not_called_a_snapshot_of_the_table():
    class LearnedFromZerosAddingNothing(nn.Module):
        def __init__(self, max_len, d):
            super().__init__()
            self.embedding = nn.Embedding(max_len, d)
            nn.init.zeros_(self.embedding.weight)

        def forward(self, x):
            if x.shape[-2] > self.embedding.num_embeddings:
                raise ValueError("too long")
            return x + 0

    with pytest.raises(CheckFailed) as failure:
        nb05.check_learned_positional_embedding(LearnedFromZerosAddingNothing)
    assert "snapshot" not in str(failure.value)


def test_the_first_axis_crash_of_a_two_dimensional_input_is_not_called_the_last_axis():
    """seq = x.shape[1] gives a (7, 6) input 6 positions, as many as d, but (2, 4, 6) worked: the leading axes
    are the mistake, and the message says so."""

    class LengthFromAxisOne(nn.Module):
        def __init__(self, max_len, d):
            super().__init__()
            self.embedding = nn.Embedding(max_len, d)

        def forward(self, x):
            return x + self.embedding(torch.arange(x.shape[1]))

    with pytest.raises(CheckFailed, match="x may have any number of leading axes") as failure:
        nb05.check_learned_positional_embedding(LengthFromAxisOne)
    assert "x.shape[-1] is d" not in str(failure.value)


def test_sines_and_cosines_concatenated_along_the_first_axis_are_named_as_stacked_there():
    def encoding_concatenated_on_the_first_axis(length, d, n=10000.0):
        angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) / d)
        return torch.cat([angles.sin(), angles.cos()]).reshape(length, d)  # (2 · length, d/2) reshaped

    with pytest.raises(CheckFailed, match=r"stacked \(or concatenated\) along the first axis"):
        nb05.check_sinusoidal_encoding(encoding_concatenated_on_the_first_axis)


def test_a_cosine_taken_in_place_first_is_named_too():
    def encoding_with_the_cosine_taken_in_place(length, d, n=10000.0):
        angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) / d)
        encoding = torch.zeros(length, d)
        encoding[:, 1::2] = angles.cos_()
        encoding[:, 0::2] = angles.sin_()
        return encoding

    with pytest.raises(CheckFailed, match=r"the even columns hold sin\(cos\(angle\)\)"):
        nb05.check_sinusoidal_encoding(encoding_with_the_cosine_taken_in_place)


def test_a_shift_matrix_whose_cosines_were_taken_from_the_sines_is_named():
    def shift_with_the_sine_taken_in_place(delta, d, n=10000.0):
        angles = delta * n ** (-torch.arange(0, d, 2) / d)
        sin = angles.sin_()  # the angles are now their sines
        cos = angles.cos()
        return torch.block_diag(*[torch.tensor([[c, s], [-s, c]]) for c, s in zip(cos, sin, strict=True)])

    with pytest.raises(CheckFailed, match=r"the diagonal of your blocks holds cos\(sin ω_iΔ\)"):
        nb05.check_shift_matrix(shift_with_the_sine_taken_in_place)


def test_a_vector_of_d_angles_on_a_sub_grid_is_named_too():
    def shift_broadcasting_d_angles(delta, d, n=10000.0):
        angles = delta / n ** (torch.arange(d) / d)
        rotation = torch.zeros(d, d)
        rotation[0::2, 0::2] = angles.cos()
        return rotation

    with pytest.raises(CheckFailed, match="you assigned it a vector of 8 angles, one per column of R"):
        nb05.check_shift_matrix(shift_broadcasting_d_angles)


def test_a_backwards_rotation_is_not_called_a_lost_sign():
    """R(-Δ) at a negative Δ is a lost sign only when the positive Δ before it shifted forward."""

    def shift_backwards(delta, d, n=10000.0):
        return nb05.rotation_by_formula(-delta, d, n=n)

    with pytest.raises(CheckFailed, match="rotates the wrong way") as failure:
        nb05.check_shift_matrix(shift_backwards)
    assert "sign of Δ is lost" not in str(failure.value)


class LengthCheckedOnTheFirstTwoAxes(nn.Module):
    """Checks a 4-D input's axis 1 as well as axis -2: a sequence of max_len runs, a batch of them does not, and it
    does not count every vector either."""

    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if x.ndim == 4 or x.shape[-2] > self.embedding.num_embeddings:
            raise ValueError("too long")
        return x + self.embedding(torch.arange(x.shape[-2]))


def test_a_length_check_that_stops_a_batch_of_max_len_sequences_is_not_called_an_off_by_one():
    with pytest.raises(CheckFailed, match="reads more than the positions of one sequence") as failure:
        nb05.check_learned_positional_embedding(LengthCheckedOnTheFirstTwoAxes)
    assert "exactly max_len" not in str(failure.value) and "every sequence" not in str(failure.value)


def test_a_column_of_positions_is_named_when_the_result_has_the_wrong_shape_too():
    """For x of shape (7, 6), the (7, 1, 6) vectors broadcast to (7, 7, 6) without an error."""

    class ColumnOfPositions(nn.Module):
        def __init__(self, max_len, d):
            super().__init__()
            self.embedding = nn.Embedding(max_len, d)

        def forward(self, x):
            return x + self.embedding(torch.arange(x.shape[-2])[:, None])

    out = ColumnOfPositions(10, 6)(torch.zeros(7, 6))
    weight = out[:, 0]  # (7, 6): the vectors of positions 0 … 6
    with pytest.raises(CheckFailed, match=r"returned shape \(7, 7, 6\)\. You looked up a column of positions"):
        nb05._diagnose_learned_shape(out, torch.zeros(7, 6), weight, "module(x) with x of shape (7, 6)")


def test_the_trig_variants_of_the_oracles_are_the_functions_they_name():
    angle = 3 / 100 ** (2 / 4)  # position 3, pair 1 of d = 4, n = 100
    encoding = nb05.encoding_by_formula(4, 4, n=100.0, trig="sin, cos(sin)")
    assert encoding[3, 2] == pytest.approx(math.sin(angle)) and encoding[3, 3] == pytest.approx(
        math.cos(math.sin(angle))
    )
    rotation = nb05.rotation_by_formula(3, 4, n=100.0, trig="cos(sin), cos(sin)")
    assert rotation[2, 3] == pytest.approx(math.cos(math.sin(angle)))
    assert rotation[3, 2] == pytest.approx(-math.cos(math.sin(angle)))
