"""Checks for notebook 05, positional encoding.

Oracles: every entry of the encoding computed one at a time with ``math.sin`` and ``math.cos`` from the
formula; closed-form values (position 0 is 0, 1, 0, 1, ...); the shift property P(t + Δ) = R(Δ) P(t) itself.
"""

import math
import random
from collections.abc import Callable

import torch
from torch import nn

from . import (
    CheckFailed,
    built_with_seed,
    call_learner,
    expect_close,
    expect_tensor,
    learner_facing,
    passed,
    seeded_randn,
    shape_of,
)
from .recordings import oracle

# The exponent of column j's angle, as the notebook defines it ("2i/d") and as common mistakes write it.
EXPONENTS = {"2i/d": lambda j, d: 2 * (j // 2) / d, "i/d": lambda j, d: (j // 2) / d, "j/d": lambda j, d: j / d}


@oracle
def encoding_by_formula(
    length: int, d: int, *, n: float, first_position: int = 0, exponent: str = "2i/d"
) -> torch.Tensor:
    """P(k, 2i) = sin(k / n^(2i/d)), P(k, 2i+1) = cos(k / n^(2i/d)), one entry at a time, shape (length, d).

    ``first_position`` and ``exponent`` (a key of EXPONENTS) let the checks reproduce common mistakes and name them.
    """

    def entry(k: int, j: int) -> float:
        angle = (k + first_position) / n ** EXPONENTS[exponent](j, d)
        return math.sin(angle) if j % 2 == 0 else math.cos(angle)

    return torch.tensor([[entry(k, j) for j in range(d)] for k in range(length)], dtype=torch.float32)


# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_sinusoidal_encoding(sinusoidal_encoding: Callable, seed: int = 0) -> None:
    """Check the vectorised encoding entry by entry, for several lengths, sizes and bases n, and one of each drawn
    from the seed."""
    rng = random.Random(seed)
    drawn = (rng.randint(2, 40), 2 * rng.randint(1, 20), float(rng.randint(50, 20000)))
    for length, d, n in [(10, 8, None), (50, 16, 100.0), (1, 2, None), (7, 6, 10000.0), (33, 64, 500.0), drawn]:
        args = (length, d) if n is None else (length, d, n)
        call = f"sinusoidal_encoding({', '.join(map(str, args))})"
        encoding = expect_tensor(
            call_learner(sinusoidal_encoding, *args, call=call), "sinusoidal_encoding", (length, d), torch.float32
        )
        expected = encoding_by_formula(length, d, n=10000.0 if n is None else n)
        if not torch.allclose(encoding, expected, atol=1e-5):
            _diagnose(encoding, length, d, 10000.0 if n is None else n, call)
        expect_close(encoding, expected, f"{call}, compared with the formula entry by entry")
    passed("sinusoidal_encoding", "every entry follows the formula, for any length, even d and base n")


def _diagnose(encoding: torch.Tensor, length: int, d: int, n: float, call: str) -> None:
    swapped = encoding_by_formula(length, d, n=n)[:, [j ^ 1 for j in range(d)]]  # columns 2i and 2i+1 exchanged
    halves = torch.cat([encoding_by_formula(length, d, n=n)[:, 0::2], encoding_by_formula(length, d, n=n)[:, 1::2]], 1)
    mistakes = [
        (swapped, "sin and cos are swapped: even columns 2i hold the sine, odd columns 2i+1 the cosine"),
        (
            halves,
            "the sines fill the first half and the cosines the second; interleave them: sine in column 2i, "
            "cosine in column 2i+1 of the same frequency",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="i/d"),
            "the exponent uses i/d; it is 2i/d, where 2i is the even column of the pair",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="j/d"),
            "the cosine column 2i+1 uses its own index in the exponent; both columns of a pair share 2i/d",
        ),
        (encoding_by_formula(length, d, n=n, first_position=1), "positions start at 1; the first position is k = 0"),
        (encoding_by_formula(length, d, n=10000.0), f"the base n={n} was ignored; use the n argument, not 10000"),
    ]
    for wrong, mistake in mistakes:
        if encoding.shape == wrong.shape and torch.allclose(encoding, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_shift_matrix(shift_matrix: Callable, seed: int = 0) -> None:
    """Check P(t + Δ) = R(Δ) P(t) for every position t, and that R(Δ) only rotates pairs of columns."""
    for delta, d, n in [(1, 8, 10000.0), (3, 16, 100.0), (-2, 8, 10000.0), (5, 4, 10.0)]:
        call = f"shift_matrix({delta}, {d}, {n})"
        rotation = expect_tensor(
            call_learner(shift_matrix, delta, d, n, call=call), "shift_matrix", (d, d), torch.float32
        )
        positions = encoding_by_formula(30, d, n=n)  # (t, d): rows are P(t)
        shifted = positions @ rotation.T  # row t is R(Δ) P(t)
        target = encoding_by_formula(30, d, n=n, first_position=delta)  # row t is P(t + Δ)
        if torch.allclose(positions @ rotation, target, atol=1e-4) and not torch.allclose(shifted, target, atol=1e-4):
            raise CheckFailed(
                f"{call} rotates the wrong way: it maps P(t) to P(t - Δ). The 2×2 block for a pair "
                "(sin ωt, cos ωt) is [[cos ωΔ, sin ωΔ], [-sin ωΔ, cos ωΔ]]."
            )
        off_blocks = rotation.clone()
        for i in range(0, d, 2):
            off_blocks[i : i + 2, i : i + 2] = 0
        if off_blocks.abs().max() > 1e-6:
            raise CheckFailed(
                f"{call} mixes columns of different frequencies; only the two columns 2i and 2i+1 of each pair "
                "mix, so R(Δ) is block diagonal with 2×2 blocks."
            )
        expect_close(shifted, target, f"{call} applied to P(t) for t = 0 … 29, compared with P(t + Δ)", atol=1e-4)
    passed("shift_matrix", "R(Δ) P(t) = P(t + Δ) for every t: a shift is a rotation of each pair")


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_learned_positional_embedding(LearnedPositionalEmbedding: type, seed: int = 0) -> None:  # noqa: N803
    """Check x + E[position] for batches and single sequences, the gradient, and the length limit."""
    call = "LearnedPositionalEmbedding(max_len=10, d=6)"
    module = built_with_seed(LearnedPositionalEmbedding, 10, 6, seed=seed, call=call)
    table = getattr(module, "embedding", None)
    if not isinstance(table, nn.Embedding) or (table.num_embeddings, table.embedding_dim) != (10, 6):
        raise CheckFailed(
            "LearnedPositionalEmbedding(max_len=10, d=6) needs self.embedding = nn.Embedding(10, 6): one "
            "learned vector per position."
        )
    for shape in [(2, 4, 6), (7, 6), (3, 2, 10, 6)]:
        x = seeded_randn(*shape, seed=seed)
        call = f"module(x) with x of shape {shape_of(x)}"
        out = expect_tensor(call_learner(module, x, call=call), "the output", x.shape, x.dtype)
        positions = table.weight[: shape[-2]]  # (seq, d)
        if torch.allclose(out, positions.expand_as(out), atol=1e-6):
            raise CheckFailed(f"{call} returned the position vectors alone; add them to x.")
        by_first_axis = x + table.weight[: x.shape[0]].reshape(x.shape[0], *[1] * (x.ndim - 2), 6)
        if x.ndim > 2 and torch.allclose(out, by_first_axis):
            raise CheckFailed(f"{call}: you indexed positions along the first axis; positions are axis -2.")
        expect_close(out, x + positions, f"{call}, compared with x + embedding.weight[:seq]")
    module.zero_grad()
    module(seeded_randn(2, 4, 6, seed=seed)).sum().backward()
    grad = table.weight.grad if table.weight.grad is not None else torch.zeros_like(table.weight)
    used = grad.abs().sum(dim=-1) > 0  # (max_len,): which positions' vectors got a gradient
    if not used[:4].all() or used[4:].any():
        raise CheckFailed("only the vectors of positions 0 … seq-1 may get a gradient: look them up, do not copy them.")
    try:
        module(seeded_randn(11, 6, seed=seed))
    except ValueError:
        pass
    except Exception as error:
        raise CheckFailed(
            f"module(x) for 11 positions with max_len=10 raised {type(error).__name__}; raise a ValueError that "
            "says the sequence is longer than max_len."
        ) from error
    else:
        raise CheckFailed(
            "module(x) for 11 positions with max_len=10 must raise a ValueError: there is no 11th vector."
        )
    passed("LearnedPositionalEmbedding", "adds one learned vector per position, and stops at max_len")
