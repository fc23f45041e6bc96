"""Wrong answers to notebook 05: the sinusoidal encoding, its shift matrix, learned position embeddings."""

import math

import torch
from torch import nn

from wrong_answers import wrong_answer

ASSIGNMENT = "05_positional_encoding"

# Exercise 1: sinusoidal_encoding -------------------------------------------------------------------------


@wrong_answer("sinusoidal_encoding", message="sin and cos are swapped")
def encoding_with_sin_and_cos_swapped(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.cos(angles)
    encoding[:, 1::2] = torch.sin(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="the exponent uses i/d")
def encoding_with_exponent_i_over_d(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(d // 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="interleave them")
def encoding_with_sines_then_cosines(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) / d)
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)


@wrong_answer("sinusoidal_encoding", message="both columns of a pair share 2i/d")
def encoding_with_own_exponent_per_column(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(d) / d)
    encoding = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles[:, 1::2])
    return encoding


@wrong_answer("sinusoidal_encoding", message="the base n=100.0 was ignored")
def encoding_ignoring_n(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / 10000 ** (torch.arange(0, d, 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="positions start at 1")
def encoding_from_position_one(length, d, n=10000.0):
    angles = torch.arange(1, length + 1)[:, None] / n ** (torch.arange(0, d, 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="the frequencies are inverted")
def encoding_with_inverted_frequencies(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] * n ** (torch.arange(0, d, 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="every pair turns by one radian per position")
def encoding_with_integer_division_in_the_exponent(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) // d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="return float32, PyTorch's default dtype")
def encoding_in_float64(length, d, n=10000.0):
    positions = torch.arange(length, dtype=torch.float64)[:, None]
    angles = positions / n ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    encoding = torch.zeros(length, d, dtype=torch.float64)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


# Exercise 2: shift_matrix --------------------------------------------------------------------------------


@wrong_answer("shift_matrix", message="rotates the wrong way")
def shift_rotating_backwards(delta, d, n=10000.0):
    rotation = torch.zeros(d, d)
    for i in range(0, d, 2):
        angle = delta / n ** (i / d)
        rotation[i : i + 2, i : i + 2] = torch.tensor(
            [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
        )
    return rotation


@wrong_answer("shift_matrix", message="every block turns by Δ radians")
def shift_with_one_frequency_for_all_pairs(delta, d, n=10000.0):
    rotation = torch.zeros(d, d)
    for i in range(0, d, 2):
        angle = float(delta)
        rotation[i : i + 2, i : i + 2] = torch.tensor(
            [[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]]
        )
    return rotation


@wrong_answer("shift_matrix", message="mixes columns of different frequencies")
def shift_as_one_big_rotation(delta, d, n=10000.0):
    angle = float(delta)
    rotation = torch.eye(d) * math.cos(angle)
    rotation[0, -1], rotation[-1, 0] = math.sin(angle), -math.sin(angle)
    return rotation


@wrong_answer("shift_matrix", message="your matrix is R(1), whatever Δ")
def shift_without_delta(delta, d, n=10000.0):
    angles = n ** (-torch.arange(0, d, 2) / d)
    rotation = torch.zeros(d, d)
    rotation[0::2, 0::2] = torch.diag(torch.cos(angles))
    rotation[0::2, 1::2] = torch.diag(torch.sin(angles))
    rotation[1::2, 0::2] = torch.diag(-torch.sin(angles))
    rotation[1::2, 1::2] = torch.diag(torch.cos(angles))
    return rotation


@wrong_answer("shift_matrix", message="the frequencies are inverted: ω_i = 1 / n^(2i/d)")
def shift_with_inverted_frequencies(delta, d, n=10000.0):
    angles = delta * n ** (torch.arange(0, d, 2) / d)
    rotation = torch.zeros(d, d)
    rotation[0::2, 0::2] = torch.diag(torch.cos(angles))
    rotation[0::2, 1::2] = torch.diag(torch.sin(angles))
    rotation[1::2, 0::2] = torch.diag(-torch.sin(angles))
    rotation[1::2, 1::2] = torch.diag(torch.cos(angles))
    return rotation


@wrong_answer("shift_matrix", message="the exponent uses i/d; it is 2i/d, where i counts the pairs")
def shift_with_exponent_i_over_d(delta, d, n=10000.0):
    angles = delta / n ** (torch.arange(d // 2) / d)
    return torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])


@wrong_answer("shift_matrix", message="the diagonal of each block holds sin")
def shift_with_sines_on_the_diagonal(delta, d, n=10000.0):
    angles = delta / n ** (torch.arange(0, d, 2) / d)
    return torch.block_diag(*[torch.stack([a.sin(), a.cos(), -a.cos(), a.sin()]).reshape(2, 2) for a in angles])


@wrong_answer("shift_matrix", message="the right sizes but not the right signs")
def shift_with_the_same_sign_on_both_sines(delta, d, n=10000.0):
    angles = delta / n ** (torch.arange(0, d, 2) / d)
    return torch.block_diag(*[torch.stack([a.cos(), a.sin(), a.sin(), a.cos()]).reshape(2, 2) for a in angles])


@wrong_answer("shift_matrix", message="on the diagonal but nothing beside it")
def shift_with_cosines_only(delta, d, n=10000.0):
    angles = delta / n ** (torch.arange(0, d, 2) / d)
    return torch.diag(torch.cos(angles).repeat_interleave(2))


@wrong_answer("shift_matrix", message="the base n=100.0 was ignored")
def shift_ignoring_n(delta, d, n=10000.0):
    angles = delta / 10000 ** (torch.arange(0, d, 2) / d)
    return torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])


@wrong_answer("shift_matrix", message="return float32, PyTorch's default dtype")
def shift_in_float64(delta, d, n=10000.0):
    blocks = []
    for i in range(0, d, 2):
        angle = delta / n ** (i / d)
        block = [[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]]
        blocks.append(torch.tensor(block, dtype=torch.float64))
    return torch.block_diag(*blocks)


# Exercise 3: LearnedPositionalEmbedding ------------------------------------------------------------------


@wrong_answer("LearnedPositionalEmbedding", message="add them to x")
class PositionsWithoutTheInput(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if x.shape[-2] > self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        return self.embedding(torch.arange(x.shape[-2])).expand_as(x)


@wrong_answer("LearnedPositionalEmbedding", message="positions are axis -2")
class PositionsAlongTheFirstAxis(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if x.shape[0] > self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        positions = self.embedding(torch.arange(x.shape[0]))  # (first axis, d)
        return x + positions.reshape(x.shape[0], *[1] * (x.ndim - 2), x.shape[-1])


@wrong_answer("LearnedPositionalEmbedding", message="must raise a ValueError")
class PositionsWithoutALengthCheck(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = min(x.shape[-2], self.embedding.num_embeddings)
        return x + torch.cat([self.embedding.weight[:seq], x.new_zeros(x.shape[-2] - seq, x.shape[-1])])


@wrong_answer("LearnedPositionalEmbedding", message="needs self.embedding = nn.Embedding(10, 6)")
class PositionsAsAFixedTable(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.register_buffer("table", torch.randn(max_len, d))

    def forward(self, x):
        if x.shape[-2] > self.table.shape[0]:
            raise ValueError("longer than max_len")
        return x + self.table[: x.shape[-2]]


@wrong_answer("LearnedPositionalEmbedding", message="the length check reads the wrong axis")
class PositionsCheckedWithLen(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if len(x) > self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        return x + self.embedding(torch.arange(x.shape[-2]))


@wrong_answer("LearnedPositionalEmbedding", message="the length check reads the wrong axis")
class PositionsCheckedOnAxisOne(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if x.shape[1] > self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        return x + self.embedding(torch.arange(x.shape[-2]))


@wrong_answer("LearnedPositionalEmbedding", message="x may have any number of leading axes")
class PositionsAlwaysOnAxisOne(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = x.shape[1]  # right for (batch, seq, d) only
        if seq > self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        return x + self.embedding(torch.arange(seq))


@wrong_answer("LearnedPositionalEmbedding", message="for exactly max_len=10 positions")
class PositionsStoppingOneShort(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if x.shape[-2] >= self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        return x + self.embedding(torch.arange(x.shape[-2]))


@wrong_answer("LearnedPositionalEmbedding", message="returned a tensor that does not require gradients")
class PositionsFromTheWeightsData(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        return x + self.embedding.weight.data[:seq]


@wrong_answer("LearnedPositionalEmbedding", message="raised AssertionError; raise a ValueError")
class PositionsCheckedWithAssert(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        assert x.shape[-2] <= self.embedding.num_embeddings, "longer than max_len"
        return x + self.embedding(torch.arange(x.shape[-2]))


# Added after the second review ---------------------------------------------------------------------------


@wrong_answer("sinusoidal_encoding", message="the exponent is 4i/d: the 2 is counted twice")
def encoding_with_the_two_counted_twice(length, d, n=10000.0):
    even_columns = torch.arange(0, d, 2)  # 0, 2, 4, ...: already 2i
    angles = torch.arange(length)[:, None] / n ** (2 * even_columns / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


@wrong_answer("sinusoidal_encoding", message="both columns of each pair hold the sine")
def encoding_with_sines_only(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.sin(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="the exponents run from 0 up to 1 included")
def encoding_with_exponents_from_linspace(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** torch.linspace(0, 1, d // 2)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


@wrong_answer("sinusoidal_encoding", message="the angles must be (10, 4): positions down the rows")
def encoding_with_angles_one_row_per_frequency(length, d, n=10000.0):
    angles = torch.arange(length)[None, :] / n ** (torch.arange(0, d, 2)[:, None] / d)  # (d/2, length)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


@wrong_answer("shift_matrix", message="the exponent is 4i/d: the 2 is counted twice")
def shift_with_the_two_counted_twice(delta, d, n=10000.0):
    rotation = torch.zeros(d, d)
    for i in range(0, d, 2):
        angle = delta / n ** (2 * i / d)
        rotation[i : i + 2, i : i + 2] = torch.tensor(
            [[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]]
        )
    return rotation


@wrong_answer("shift_matrix", message="the exponents run from 0 up to 1 included")
def shift_with_exponents_from_linspace(delta, d, n=10000.0):
    angles = delta * n ** (-torch.linspace(0, 1, d // 2))
    return torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])


@wrong_answer("shift_matrix", message="Δ need not be a whole number")
def shift_as_a_power_of_one_step(delta, d, n=10000.0):
    angles = n ** (-torch.arange(0, d, 2) / d)  # one position's turn per pair
    one_step = torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])
    return torch.linalg.matrix_power(one_step, int(delta))


@wrong_answer("shift_matrix", message="Δ need not be a whole number")
def shift_by_repeated_steps(delta, d, n=10000.0):
    angles = n ** (-torch.arange(0, d, 2) / d)
    one_step = torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])
    rotation = torch.eye(d)
    for _ in range(abs(delta)):
        rotation = rotation @ (one_step if delta > 0 else one_step.T)
    return rotation


@wrong_answer("LearnedPositionalEmbedding", message="positions start at 0")
class PositionsFromOne(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        return x + self.embedding(torch.arange(1, seq + 1))


@wrong_answer("LearnedPositionalEmbedding", message="nn.Embedding takes integer indices")
class PositionsAsFloats(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        return x + self.embedding(torch.arange(seq, dtype=x.dtype))


@wrong_answer("LearnedPositionalEmbedding", message="compares with the wrong number (embedding_dim is d")
class PositionsLimitedByTheWidth(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.embedding_dim:
            raise ValueError("longer than max_len")
        return x + self.embedding(torch.arange(seq))


@wrong_answer("LearnedPositionalEmbedding", message="padding_idx=0 freezes position 0's vector at zero")
class PositionsWithAPaddingRow(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d, padding_idx=0)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise ValueError("longer than max_len")
        return x + self.embedding(torch.arange(seq))


# Found by the third review ------------------------------------------------------------------------------


@wrong_answer("sinusoidal_encoding", message="your rows are at 10 positions spread evenly from 0 to 10 included")
def encoding_with_positions_from_linspace(length, d, n=10000.0):
    angles = torch.linspace(0, length, length)[:, None] / n ** (torch.arange(0, d, 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="the cosines fill the first half and the sines the second")
def encoding_with_cosines_then_sines(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (2 * torch.arange(d // 2) / d)
    return torch.cat([angles.cos(), angles.sin()], dim=-1)


@wrong_answer("sinusoidal_encoding", message="your pairs of columns are the formula's, in another order")
def encoding_with_the_slowest_pair_first(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(d - 2, -1, -2) / d)
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)


@wrong_answer("shift_matrix", message="turns column i together with column i + d/2")
def shift_matrix_for_an_encoding_in_halves(delta, d, n=10000.0):
    angles = delta * n ** (-torch.arange(0, d, 2) / d)
    cos, sin = torch.diag(torch.cos(angles)), torch.diag(torch.sin(angles))
    return torch.cat([torch.cat([cos, sin], dim=1), torch.cat([-sin, cos], dim=1)], dim=0)


@wrong_answer("LearnedPositionalEmbedding", message="x was multiplied by √d = √6 before adding")
class EmbeddingScalingXBySqrtD(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq, d = x.shape[-2:]
        if seq > self.embedding.num_embeddings:
            raise ValueError(f"{seq} positions, but only {self.embedding.num_embeddings} are learned")
        return x * math.sqrt(d) + self.embedding(torch.arange(seq))


@wrong_answer("LearnedPositionalEmbedding", message="gave different results in two calls with the same x")
class EmbeddingWithATableMadeInForward(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        max_len, d = self.embedding.num_embeddings, self.embedding.embedding_dim
        seq = x.shape[-2]
        if seq > max_len:
            raise ValueError(f"{seq} positions, but only {max_len} are learned")
        table = nn.Embedding(max_len, d)
        return x + table(torch.arange(seq))


# Found by the fourth review -----------------------------------------------------------------------------


@wrong_answer("sinusoidal_encoding", message="positions and 4 frequencies lie along the same axis")
def encoding_with_positions_not_a_column(length, d, n=10000.0):
    positions = torch.arange(length)  # (length,), a row like the frequencies
    angles = positions * n ** (-torch.arange(0, d, 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


@wrong_answer("sinusoidal_encoding", message="a step in the first index picks every other row")
def encoding_with_a_step_along_the_rows(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] * n ** (-torch.arange(0, d, 2) / d)  # (length, d/2)
    encoding = torch.zeros(length, d)
    encoding[0::2] = torch.sin(angles)
    encoding[1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="Your angles have 5 columns, one per frequency, but d = 8")
def encoding_with_one_frequency_too_many(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d + 1, 2) / d)  # 2i up to d included
    encoding = torch.zeros(length, d)
    encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


@wrong_answer("sinusoidal_encoding", message="the power n ** 2i was taken before the division by d")
def encoding_with_the_exponent_unbracketed(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** torch.arange(0, d, 2) / d
    encoding = torch.zeros(length, d)
    encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


@wrong_answer("sinusoidal_encoding", message="the exponent is (2i+1)/d, from the odd columns")
def encoding_with_the_odd_columns_exponents(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(1, d, 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


@wrong_answer("sinusoidal_encoding", message="divided by ln 10 ≈ 2.303, as in exp(-(2i/d) · log10(n))")
def encoding_with_a_base_ten_logarithm(length, d, n=10000.0):
    frequencies = torch.exp(-torch.arange(0, d, 2) * math.log10(n) / d)
    angles = torch.arange(length)[:, None] * frequencies
    encoding = torch.zeros(length, d)
    encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


@wrong_answer("sinusoidal_encoding", message="divided by ln 2 ≈ 0.693, as in exp(-(2i/d) · log2(n))")
def encoding_with_a_base_two_logarithm(length, d, n=10000.0):
    frequencies = torch.exp(-torch.arange(0, d, 2) * math.log2(n) / d)
    angles = torch.arange(length)[:, None] * frequencies
    encoding = torch.zeros(length, d)
    encoding[:, 0::2], encoding[:, 1::2] = angles.sin(), angles.cos()
    return encoding


@wrong_answer("shift_matrix", message="the 2×2 blocks of pairs 1, 2 and 3 are zero, as if never filled in")
def shift_returned_inside_the_loop(delta, d, n=10000.0):
    rotation = torch.zeros(d, d)
    for i in range(0, d, 2):
        angle = delta / n ** (i / d)
        rotation[i, i], rotation[i, i + 1] = math.cos(angle), math.sin(angle)
        rotation[i + 1, i], rotation[i + 1, i + 1] = -math.sin(angle), math.cos(angle)
        return rotation


@wrong_answer("shift_matrix", message="blocks of pairs 2 and 3 are the identity (a turn by 0), as if never filled")
def shift_with_a_loop_over_half_the_columns(delta, d, n=10000.0):
    rotation = torch.eye(d)
    for i in range(0, d // 2, 2):
        angle = delta / n ** (i / d)
        rotation[i : i + 2, i : i + 2] = torch.tensor(
            [[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]]
        )
    return rotation


@wrong_answer("shift_matrix", message="returned a matrix of zeros: none of the 4 blocks was filled in")
def shift_with_start_and_step_confused_in_range(delta, d, n=10000.0):
    rotation = torch.zeros(d, d)
    for i in range(d // 2, 2):  # meant: d // 2 pairs, in steps of 2
        angle = delta / n ** (2 * i / d)
        rotation[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
            [[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]]
        )
    return rotation


@wrong_answer("shift_matrix", message="assigned to a (4, 4) sub-grid broadcasts along every row")
def shift_with_vectors_on_strided_sub_grids(delta, d, n=10000.0):
    angles = delta * n ** (-torch.arange(0, d, 2) / d)
    rotation = torch.zeros(d, d)
    rotation[0::2, 0::2] = torch.cos(angles)
    rotation[0::2, 1::2] = torch.sin(angles)
    rotation[1::2, 0::2] = -torch.sin(angles)
    rotation[1::2, 1::2] = torch.cos(angles)
    return rotation


@wrong_answer("shift_matrix", message="pair i's exponent is 2i/d, from its first column")
def shift_with_the_odd_columns_exponents(delta, d, n=10000.0):
    angles = delta / n ** (torch.arange(1, d, 2) / d)
    return torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])


@wrong_answer("shift_matrix", message="divided by ln 10 ≈ 2.303, as in exp(-(2i/d) · log10(n))")
def shift_with_a_base_ten_logarithm(delta, d, n=10000.0):
    angles = delta * torch.exp(-torch.arange(0, d, 2) * math.log10(n) / d)
    return torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])


@wrong_answer("shift_matrix", message="your angles are Δ / (d · n^(2i)), not Δ / n^(2i/d)")
def shift_with_the_exponent_unbracketed(delta, d, n=10000.0):
    angles = delta * n ** -torch.arange(0, d, 2) / d
    return torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])


@wrong_answer("shift_matrix", message="torch.block_diag takes each block as an argument of its own")
def shift_with_the_blocks_in_one_list(delta, d, n=10000.0):
    angles = delta / n ** (torch.arange(0, d, 2) / d)
    blocks = [torch.tensor([[a.cos(), a.sin()], [-a.sin(), a.cos()]]) for a in angles]
    return torch.block_diag(blocks)


@wrong_answer("LearnedPositionalEmbedding", message="the number of positions is x.shape[-2]; x.shape[-1] is d")
class EmbeddingWithTheLengthFromTheLastAxis(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = x.shape[-1]
        if seq > self.embedding.num_embeddings:
            raise ValueError(f"{seq} positions, but only {self.embedding.num_embeddings} are learned")
        return x + self.embedding(torch.arange(seq))


@wrong_answer("LearnedPositionalEmbedding", message="vectors looked up or copied in __init__ are a snapshot")
class EmbeddingLookedUpOnceInInit(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)
        self.table = self.embedding(torch.arange(max_len))  # looked up once, to save time in forward

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise ValueError(f"{seq} positions, but only {self.embedding.num_embeddings} are learned")
        return x + self.table[:seq]


@wrong_answer("LearnedPositionalEmbedding", message="Yours is nn.Embedding(6, 10), the arguments swapped")
class EmbeddingWithItsArgumentsSwapped(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(d, max_len)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise ValueError(f"{seq} positions, but only {self.embedding.num_embeddings} are learned")
        return x + self.embedding(torch.arange(seq))


@wrong_answer("sinusoidal_encoding", message="stacked (or concatenated) along the first axis and then reshaped")
def encoding_stacked_on_the_first_axis(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) / d)
    return torch.stack([angles.sin(), angles.cos()]).reshape(length, d)


@wrong_answer("sinusoidal_encoding", message="the odd columns hold cos(sin(angle)), the cosine of the sine")
def encoding_with_the_sine_taken_in_place(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) / d)
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = angles.sin_()
    encoding[:, 1::2] = angles.cos_()
    return encoding


@wrong_answer("sinusoidal_encoding", message="the exponent is 2i/(d-1); it is 2i/d")
def encoding_with_the_exponent_over_d_minus_one(length, d, n=10000.0):
    angles = torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) / (d - 1))
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="converted from degrees to radians (torch.deg2rad")
def encoding_with_angles_converted_to_radians(length, d, n=10000.0):
    angles = torch.deg2rad(torch.arange(length)[:, None] / n ** (torch.arange(0, d, 2) / d))
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="cannot grow to the shape (10, 4) of the result")
def encoding_with_the_positions_multiplied_in_place(length, d, n=10000.0):
    positions = torch.arange(length, dtype=torch.float32)[:, None]  # (length, 1)
    angles = positions.mul_(n ** (-torch.arange(0, d, 2) / d))
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="its values are right, transposed")
def encoding_transposed(length, d, n=10000.0):
    angles = torch.arange(length)[None, :] / n ** (torch.arange(0, d, 2)[:, None] / d)  # (d/2, length)
    encoding = torch.zeros(d, length)
    encoding[0::2] = torch.sin(angles)
    encoding[1::2] = torch.cos(angles)
    return encoding


@wrong_answer("sinusoidal_encoding", message="sines and cosines stored in it lose their fractions")
def encoding_in_an_integer_table(length, d, n=10000.0):
    positions = torch.arange(length)[:, None]  # (length, 1), integers
    angles = positions / n ** (torch.arange(0, d, 2) / d)
    encoding = torch.zeros_like(positions).repeat(1, d)  # (length, d), integers like the positions
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding


@wrong_answer("shift_matrix", message="the block of pair i sits at rows and columns i and i+1, so the blocks overlap")
def shift_with_overlapping_blocks(delta, d, n=10000.0):
    rotation = torch.zeros(d, d)
    for i in range(d // 2):
        angle = delta / n ** (2 * i / d)
        rotation[i : i + 2, i : i + 2] = torch.tensor(
            [[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]]
        )
    return rotation


@wrong_answer("shift_matrix", message="every entry of your blocks is ±cos(sin ω_iΔ)")
def shift_with_the_sines_and_cosines_taken_in_place(delta, d, n=10000.0):
    angles = delta * n ** (-torch.arange(0, d, 2) / d)
    sin = angles.sin_()
    cos = angles.cos_()
    rotation = torch.zeros(d, d)
    rotation[0::2, 0::2], rotation[0::2, 1::2] = torch.diag(cos), torch.diag(sin)
    rotation[1::2, 0::2], rotation[1::2, 1::2] = torch.diag(-sin), torch.diag(cos)
    return rotation


@wrong_answer("shift_matrix", message="made from 8 angles, one per column of R. d = 8 columns make 4 pairs")
def shift_with_one_angle_per_column(delta, d, n=10000.0):
    angles = delta / n ** (torch.arange(d) / d)
    rotation = torch.zeros(d, d)
    rotation[0::2, 0::2], rotation[0::2, 1::2] = torch.diag(angles.cos()), torch.diag(angles.sin())
    rotation[1::2, 0::2], rotation[1::2, 1::2] = torch.diag(-angles.sin()), torch.diag(angles.cos())
    return rotation


@wrong_answer("shift_matrix", message="your angles are ω_i Δ times π/180")
def shift_with_angles_converted_to_radians(delta, d, n=10000.0):
    angles = torch.deg2rad(delta * n ** (-torch.arange(0, d, 2) / d))
    return torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])


@wrong_answer("shift_matrix", message="turns as R(2) does: the sign of Δ is lost")
def shift_from_the_encoding_of_the_distance(delta, d, n=10000.0):
    distance = abs(delta)
    angles = distance * n ** (-torch.arange(0, d, 2) / d)
    return torch.block_diag(*[torch.stack([a.cos(), a.sin(), -a.sin(), a.cos()]).reshape(2, 2) for a in angles])


@wrong_answer("LearnedPositionalEmbedding", message="you added all 10 position vectors, those of positions 0 … 9")
class EmbeddingAddingTheWholeTable(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if x.shape[-2] > self.embedding.num_embeddings:
            raise ValueError("too long")
        return x + self.embedding.weight


@wrong_answer("LearnedPositionalEmbedding", message="You looked up a column of positions, shape (4, 1)")
class EmbeddingOfAColumnOfPositions(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise ValueError("too long")
        return x + self.embedding(torch.arange(seq)[:, None])


@wrong_answer("LearnedPositionalEmbedding", message="your position vectors have an axis of their own in front")
class EmbeddingWithABatchAxisOfItsOwn(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        seq = x.shape[-2]
        if seq > self.embedding.num_embeddings:
            raise ValueError("too long")
        return x + self.embedding(torch.arange(seq)).unsqueeze(0)


@wrong_answer(
    "LearnedPositionalEmbedding", message="the length check counts the vectors of every sequence in the batch"
)
class EmbeddingCountingEveryVector(nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.embedding = nn.Embedding(max_len, d)

    def forward(self, x):
        if x.numel() // x.shape[-1] > self.embedding.num_embeddings:
            raise ValueError("too long")
        return x + self.embedding(torch.arange(x.shape[-2]))


@wrong_answer("sinusoidal_encoding", message="the base of the powers is the sequence length")
def sinusoidal_encoding_with_the_length_as_base(length, d, n=10000.0):
    positions = torch.arange(length, dtype=torch.float32)[:, None]
    frequencies = float(length) ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = positions * frequencies
    encoding = torch.zeros(length, d)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles)
    return encoding
