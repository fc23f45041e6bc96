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


@wrong_answer("LearnedPositionalEmbedding", message="The positions' vectors must stay in the graph")
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
