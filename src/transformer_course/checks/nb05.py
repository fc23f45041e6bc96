"""Checks for notebook 05, positional encoding.

Oracles: every entry of the encoding and of the shift matrix computed one at a time with ``math.sin`` and
``math.cos`` from the formulas; closed-form values (position 0 is 0, 1, 0, 1, ...); the shift property
P(t + Δ) = R(Δ) P(t) itself; PyTorch's autograd for which rows of the learned table get gradients.
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

# The exponent e of column j's angle t / n^e, as the notebook defines it ("2i/d", where 2i is the even column of
# j's pair) and as common mistakes write it: the exponent of the odd column's own index, of the pair's index i,
# with the 2 counted twice (2 · 2i / d), with the sign flipped (frequencies inverted), 0 for every pair (an integer
# division 2i // d), or d/2 exponents spread evenly from 0 to 1 inclusive (torch.linspace(0, 1, d // 2)).
EXPONENTS = {
    "2i/d": lambda j, d: 2 * (j // 2) / d,
    "i/d": lambda j, d: (j // 2) / d,
    "4i/d": lambda j, d: 4 * (j // 2) / d,
    "j/d": lambda j, d: j / d,
    "-2i/d": lambda j, d: -2 * (j // 2) / d,
    "0": lambda j, d: 0.0,
    "0 to 1": lambda j, d: (j // 2) / (d // 2 - 1) if d > 2 else 0.0,
}


@oracle
def encoding_by_formula(
    length: int, d: int, *, n: float, first_position: float = 0, exponent: str = "2i/d"
) -> torch.Tensor:
    """P(t, 2i) = sin(t / n^(2i/d)), P(t, 2i+1) = cos(t / n^(2i/d)), one entry at a time, shape (length, d).

    ``first_position`` (any real number: P(t + Δ) for a fractional shift Δ) and ``exponent`` (a key of EXPONENTS)
    let the checks reproduce common mistakes and name them.
    """

    def entry(t: int, j: int) -> float:
        angle = (t + first_position) / n ** EXPONENTS[exponent](j, d)
        return math.sin(angle) if j % 2 == 0 else math.cos(angle)

    return torch.tensor([[entry(t, j) for j in range(d)] for t in range(length)], dtype=torch.float32)


@oracle
def rotation_by_formula(delta: float, d: int, *, n: float, exponent: str = "2i/d") -> torch.Tensor:
    """R(Δ), shape (d, d): block i (rows and columns 2i, 2i+1) is [[cos ω_i Δ, sin ω_i Δ], [-sin ω_i Δ, cos ω_i Δ]]
    with ω_i = 1 / n^(2i/d), one entry at a time; zero outside the blocks. ``exponent`` as in encoding_by_formula."""
    rotation = [[0.0] * d for _ in range(d)]
    for i in range(0, d, 2):
        angle = delta / n ** EXPONENTS[exponent](i, d)
        rotation[i][i], rotation[i][i + 1] = math.cos(angle), math.sin(angle)
        rotation[i + 1][i], rotation[i + 1][i + 1] = -math.sin(angle), math.cos(angle)
    return torch.tensor(rotation, dtype=torch.float32)


def _expect_float32(result, call: str, shape: tuple[int, ...]) -> torch.Tensor:
    """A tensor of the given shape in float32. These exercises take no tensor whose dtype they could keep: the
    result is float32 because that is PyTorch's default, so the message says where another dtype comes from."""
    expect_tensor(result, call, shape, getattr(result, "dtype", torch.float32))  # a tensor, of the right shape
    if result.dtype == torch.float64:
        raise CheckFailed(
            f"{call} returned a float64 tensor; return float32, PyTorch's default dtype. float64 comes from a "
            "tensor made with dtype=torch.float64 or .double(), or from NumPy, whose arrays are float64 by default: "
            "make your tensors without a dtype (or with dtype=torch.float32), or convert the result with .float()."
        )
    if result.dtype != torch.float32:
        raise CheckFailed(f"{call} returned a {result.dtype} tensor; return float32, PyTorch's default dtype.")
    return result


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
        encoding = _expect_float32(_encoding_or_named_crash(sinusoidal_encoding, args, call), call, (length, d))
        expected = encoding_by_formula(length, d, n=10000.0 if n is None else n)
        if not torch.allclose(encoding, expected, atol=1e-5):
            _diagnose_encoding(encoding, length, d, 10000.0 if n is None else n, call)
        expect_close(encoding, expected, f"{call}, compared with the formula entry by entry")
    passed("sinusoidal_encoding", "every entry follows the formula, for any length, even d and base n")


def _encoding_or_named_crash(sinusoidal_encoding: Callable, args: tuple, call: str):
    """sinusoidal_encoding(*args), with the crash of angles laid out (d/2, length) named: PyTorch's error then
    reports both layouts, the (length, d/2) that the columns expect and the (d/2, length) it got."""
    try:
        return call_learner(sinusoidal_encoding, *args, call=call)
    except CheckFailed as failure:
        error, (length, d) = failure.__cause__, args[:2]
        expected, transposed = f"{length}, {d // 2}", f"{d // 2}, {length}"
        if isinstance(error, RuntimeError) and length != d // 2 and expected in str(error) and transposed in str(error):
            raise CheckFailed(
                f"{failure}\nYour angles have shape ({transposed}), one row per frequency; the encoding has one row "
                f"per position, so the angles must be ({expected}): positions down the rows, frequencies along the "
                "columns."
            ) from error
        raise


def _diagnose_encoding(encoding: torch.Tensor, length: int, d: int, n: float, call: str) -> None:
    """Name the mistake whose output the learner's encoding equals, if it is one of the common ones."""
    right = encoding_by_formula(length, d, n=n)
    sines, cosines = right[:, 0::2].repeat_interleave(2, 1), right[:, 1::2].repeat_interleave(2, 1)  # (length, d)
    mistakes = [
        (
            right[:, [j ^ 1 for j in range(d)]],
            "sin and cos are swapped: even columns 2i hold the sine, odd columns 2i+1 the cosine",
        ),
        (sines, "both columns of each pair hold the sine; the odd column 2i+1 holds the cosine of the same angle"),
        (cosines, "both columns of each pair hold the cosine; the even column 2i holds the sine of the same angle"),
        (
            torch.cat([right[:, 0::2], right[:, 1::2]], 1),
            "the sines fill the first half and the cosines the second; interleave them: sine in column 2i, "
            "cosine in column 2i+1 of the same frequency",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="i/d"),
            "the exponent uses i/d; it is 2i/d, where 2i is the even column of the pair",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="0 to 1"),
            "the exponents run from 0 up to 1 included (as torch.linspace(0, 1, d // 2) spreads them); 2i/d goes "
            "up in steps of 2/d and stops one step short of 1, at (d-2)/d",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="j/d"),
            "the cosine column 2i+1 uses its own index in the exponent; both columns of a pair share 2i/d",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="-2i/d"),
            "the frequencies are inverted: the angle is t / n^(2i/d), so that later pairs turn more slowly; yours "
            "is t · n^(2i/d), and later pairs turn faster",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="0"),
            "every pair turns by one radian per position: the exponent 2i/d came out 0 for every pair (an "
            "integer division // rounds it down), or the frequencies 1 / n^(2i/d) are missing",
        ),
        (encoding_by_formula(length, d, n=n, first_position=1), "positions start at 1; the first position is t = 0"),
        (encoding_by_formula(length, d, n=10000.0), f"the base n={n} was ignored; use the n argument, not 10000"),
        # After the base: 100^(4i/d) = 10000^(2i/d), and a 4i/d answer already fails at n = 10000.
        (
            encoding_by_formula(length, d, n=n, exponent="4i/d"),
            "the exponent is 4i/d: the 2 is counted twice. The exponent is 2i/d, where 2i is the index of the even "
            "column itself; if you step through the even columns 0, 2, 4, …, those numbers are already 2i",
        ),
    ]
    for wrong, mistake in mistakes:
        if torch.allclose(encoding, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_shift_matrix(shift_matrix: Callable, seed: int = 0) -> None:
    """Check P(t + Δ) = R(Δ) P(t) for every position t, and that R(Δ) only rotates pairs of columns, for fixed
    cases and two drawn from the seed: a fractional Δ, and a whole Δ from -3 to 0."""
    rng = random.Random(seed)
    fractional = (rng.choice([-1, 1]) * (rng.randint(0, 3) + rng.choice([0.25, 0.5, 0.75])), 2 * rng.randint(2, 12))
    whole = (rng.randint(-3, 0), 2 * rng.randint(1, 12))
    drawn = [(delta, d, float(rng.randint(10, 20000))) for delta, d in (fractional, whole)]
    for delta, d, n in [(1, 8, 10000.0), (3, 16, 100.0), (-2, 8, 10000.0), (5, 4, 10.0), *drawn]:
        call = f"shift_matrix({delta}, {d}, {n})"
        rotation = _expect_float32(_rotation_or_named_crash(shift_matrix, delta, d, n, call), call, (d, d))
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
        if off_blocks.abs().max() > 1e-4:  # a numerically computed R (lstsq, matrix_exp) has tiny ones
            raise CheckFailed(
                f"{call} mixes columns of different frequencies; only the two columns 2i and 2i+1 of each pair "
                "mix, so R(Δ) is block diagonal with 2×2 blocks."
            )
        if not torch.allclose(shifted, target, atol=1e-4):
            _diagnose_rotation(rotation, delta, d, n, call)
        expect_close(shifted, target, f"{call} applied to P(t) for t = 0 … 29, compared with P(t + Δ)", atol=1e-4)
    passed("shift_matrix", "R(Δ) P(t) = P(t + Δ) for every t: a shift is a rotation of each pair")


def _rotation_or_named_crash(shift_matrix: Callable, delta: float, d: int, n: float, call: str):
    """shift_matrix(delta, d, n), with a TypeError for a fractional Δ named: range() and matrix powers count whole
    steps only."""
    try:
        return call_learner(shift_matrix, delta, d, n, call=call)
    except CheckFailed as failure:
        if isinstance(failure.__cause__, TypeError) and delta != int(delta):
            raise CheckFailed(
                f"{failure}\nΔ need not be a whole number: a shift by Δ = {delta} positions is a rotation too, by the "
                "angle ω_i Δ in block i. What counts in whole positions (a loop over range(Δ), a power of R(1), a row "
                "of the encoding table) cannot make it; compute the angles ω_i Δ from Δ itself."
            ) from failure.__cause__
        raise


def _diagnose_rotation(rotation: torch.Tensor, delta: float, d: int, n: float, call: str) -> None:
    """Name the mistake of a block-diagonal R(Δ) that does not shift, if it is one of the common ones."""
    right = rotation_by_formula(delta, d, n=n)
    pairs = torch.arange(0, d, 2)
    diagonal, above = rotation[pairs, pairs], rotation[pairs, pairs + 1]  # (d/2,) each: cos ωΔ and sin ωΔ if right
    below, last = rotation[pairs + 1, pairs], rotation[pairs + 1, pairs + 1]  # -sin ωΔ and cos ωΔ if right
    cos, sin = right[pairs, pairs], right[pairs, pairs + 1]

    def close(a: torch.Tensor, b: torch.Tensor) -> bool:
        return torch.allclose(a, b, atol=1e-5)

    if close(diagonal, sin) and close(last, sin) and close(above.abs(), cos.abs()) and close(below.abs(), cos.abs()):
        raise CheckFailed(
            f"{call}: the diagonal of each block holds sin ω_iΔ and the corners cos ω_iΔ; it is the other way "
            "round, [[cos ωΔ, sin ωΔ], [-sin ωΔ, cos ωΔ]] (at Δ = 0, R must be the identity)."
        )
    if close(rotation.abs(), right.abs()):
        raise CheckFailed(
            f"{call}: the entries have the right sizes but not the right signs; block i is "
            "[[cos ω_iΔ, sin ω_iΔ], [-sin ω_iΔ, cos ω_iΔ]], with the minus sign on the sine below the diagonal only."
        )
    if close(diagonal, cos) and close(last, cos) and close(above, torch.zeros_like(above)):
        raise CheckFailed(
            f"{call}: the blocks hold cos ω_iΔ on the diagonal but nothing beside it; a rotation also needs "
            "sin ω_iΔ above the diagonal and -sin ω_iΔ below it."
        )
    whole_steps = [
        (
            rotation_by_formula(steps, d, n=n),
            f"your matrix is R({steps}), a shift by {steps} whole positions; here Δ = {delta}, and Δ need not be a "
            "whole number: block i turns by the angle ω_i Δ for any real Δ. Counting whole steps (a loop over "
            "range(Δ), a power of R(1), int(Δ)) cannot make a fractional shift",
        )
        for steps in sorted({math.trunc(delta), math.floor(delta), round(delta)})
        if steps != delta
    ]
    mistakes = [
        *whole_steps,
        (
            rotation_by_formula(1, d, n=n),
            f"your matrix is R(1), whatever Δ: here Δ = {delta}, and block i turns by the angle ω_i Δ, not ω_i",
        ),
        (
            rotation_by_formula(delta, d, n=n, exponent="-2i/d"),
            "the frequencies are inverted: ω_i = 1 / n^(2i/d), so that later pairs turn more slowly; yours is "
            "n^(2i/d), and later pairs turn faster",
        ),
        (
            rotation_by_formula(delta, d, n=n, exponent="i/d"),
            "the exponent uses i/d; it is 2i/d, where i counts the pairs and 2i is the pair's first column",
        ),
        (
            rotation_by_formula(delta, d, n=n, exponent="0 to 1"),
            "the exponents run from 0 up to 1 included (as torch.linspace(0, 1, d // 2) spreads them); 2i/d goes "
            "up in steps of 2/d and stops one step short of 1, at (d-2)/d",
        ),
        (
            rotation_by_formula(delta, d, n=n, exponent="0"),
            "every block turns by Δ radians: the exponent 2i/d came out 0 for every pair (an integer division // "
            "rounds it down), or the frequencies 1 / n^(2i/d) are missing",
        ),
        (rotation_by_formula(delta, d, n=10000.0), f"the base n={n} was ignored; use the n argument, not 10000"),
        # After the base: 100^(4i/d) = 10000^(2i/d), and a 4i/d answer already fails at n = 10000.
        (
            rotation_by_formula(delta, d, n=n, exponent="4i/d"),
            "the exponent is 4i/d: the 2 is counted twice. The exponent is 2i/d, where 2i is the pair's first "
            "column itself; if you step through the first columns 0, 2, 4, …, those numbers are already 2i",
        ),
    ]
    for wrong, mistake in mistakes:
        if not close(wrong, right) and close(rotation, wrong):
            raise CheckFailed(f"{call}: {mistake}.")


# Exercise 3 ---------------------------------------------------------------------------------------------

MAX_LEN, D = 10, 6


@learner_facing
def check_learned_positional_embedding(LearnedPositionalEmbedding: type, seed: int = 0) -> None:  # noqa: N803
    """Check x + E[position] for inputs with 0, 1 and 2 leading axes, which rows of the table get gradients, and
    the length limit, also for a batch whose size differs from the length."""
    call = f"LearnedPositionalEmbedding(max_len={MAX_LEN}, d={D})"
    module = built_with_seed(LearnedPositionalEmbedding, MAX_LEN, D, seed=seed, call=call)
    table = getattr(module, "embedding", None)
    if not isinstance(table, nn.Embedding) or (table.num_embeddings, table.embedding_dim) != (MAX_LEN, D):
        raise CheckFailed(
            f"{call} needs self.embedding = nn.Embedding({MAX_LEN}, {D}): one learned vector per position."
        )
    with torch.no_grad():  # a table of the check's own values, so that one initialised to zeros shows its rows too
        table.weight.copy_(seeded_randn(MAX_LEN, D, seed=seed + 1))
    worked: list[tuple[int, ...]] = []  # the shapes of x for which forward gave the right result
    # (12, 3, 6): more sequences in the batch than max_len, each shorter than it; (3, 2, 10, 6): exactly max_len.
    for shape in [(2, 4, D), (7, D), (3, 2, MAX_LEN, D), (12, 3, D)]:
        x = seeded_randn(*shape, seed=seed)
        call = f"module(x) with x of shape {shape_of(x)}"
        out = expect_tensor(_forward(module, x, call, worked), call, x.shape, x.dtype)
        positions = table.weight[: shape[-2]]  # (seq, d)
        if not torch.allclose(out, x + positions, atol=1e-5):
            _diagnose_learned(out, x, table.weight.detach(), call)
        expect_close(out, x + positions, f"{call}, compared with x + embedding.weight[:seq]")
        worked.append(shape)
    _expect_gradients_of_the_first_rows(module, table, seed)
    _expect_value_error_beyond_max_len(module, seed)
    passed("LearnedPositionalEmbedding", "adds one learned vector per position, and stops at max_len")


def _diagnose_learned(out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, call: str) -> None:
    """Name the mistake whose output a wrong result equals, if it is one of the common ones."""
    seq = x.shape[-2]
    if torch.allclose(out, weight[:seq].expand_as(out), atol=1e-6):
        raise CheckFailed(f"{call} returned the position vectors alone; add them to x.")
    if x.ndim > 2 and x.shape[0] <= MAX_LEN:
        by_first_axis = x + weight[: x.shape[0]].reshape(x.shape[0], *[1] * (x.ndim - 2), D)
        if torch.allclose(out, by_first_axis, atol=1e-5):
            raise CheckFailed(f"{call}: you indexed positions along the first axis; positions are axis -2.")
    if seq < MAX_LEN and torch.allclose(out, x + weight[1 : seq + 1], atol=1e-5):
        raise CheckFailed(
            f"{call} added the vectors of positions 1 … {seq}; positions start at 0, so a sequence of {seq} "
            f"positions uses the vectors of positions 0 … {seq - 1}."
        )


def _forward(module: nn.Module, x: torch.Tensor, call: str, worked: list[tuple[int, ...]]):
    """module(x), with a crash named where it shows a common mistake: a length check that stops a sequence of
    max_len positions or reads the batch axis, or positions taken from an axis that only 3-D inputs get right."""
    try:
        return call_learner(module, x, call=call)
    except CheckFailed as failure:
        error, seq = failure.__cause__, x.shape[-2]
        if isinstance(error, ValueError) and seq == MAX_LEN:
            raise CheckFailed(
                f"{call} raised ValueError for exactly max_len={MAX_LEN} positions; positions 0 … {MAX_LEN - 1} "
                "all have a vector, so only a sequence longer than max_len is too long."
            ) from error
        if isinstance(error, ValueError) and x.ndim > 2 and x.shape[0] > MAX_LEN >= seq:
            raise CheckFailed(
                f"{call} raised ValueError, but x holds {x.shape[0]} sequences of {seq} positions, within "
                f"max_len={MAX_LEN}: the length check reads the wrong axis. len(x) and x.shape[0] count the batch; "
                "the positions are axis -2, whatever the number of leading axes."
            ) from error
        if isinstance(error, ValueError) and D < seq < MAX_LEN and _runs(module, (*x.shape[:-2], D, D)):
            raise CheckFailed(
                f"{call} raised ValueError for {seq} positions, within max_len={MAX_LEN} (and {D} positions "
                "worked): the length check compares with the wrong number (embedding_dim is d; num_embeddings is "
                "max_len)."
            ) from error
        if isinstance(error, (RuntimeError, IndexError)) and "indices" in str(error) and "Long" in str(error):
            raise CheckFailed(
                f"{failure}\nnn.Embedding takes integer indices: the positions you look up must be an integer "
                "(int64) tensor, not a float one."
            ) from error
        three_d = [shape for shape in worked if len(shape) == 3]
        if error is not None and x.ndim != 3 and three_d:
            raise CheckFailed(
                f"{failure}\nx of shape {shape_of(three_d[0])} worked: x may have any number of leading axes, "
                "(..., seq, d), so take the length from axis -2 and add a (seq, d) tensor, which broadcasts."
            ) from error
        raise


def _runs(module: nn.Module, shape: tuple[int, ...]) -> bool:
    """Whether module(x) returns, without an exception, for an x of this shape."""
    try:
        module(torch.zeros(shape))
    except Exception:  # noqa: BLE001 - any exception means no
        return False
    return True


def _expect_gradients_of_the_first_rows(module: nn.Module, table: nn.Embedding, seed: int) -> None:
    """The result is in the graph, and the backward pass reaches exactly the rows of positions 0 … seq-1."""
    call = "module(x) with x of shape (2, 4, 6)"
    module.zero_grad()
    out = call_learner(module, seeded_randn(2, 4, D, seed=seed), call=call)
    if not out.requires_grad:
        raise CheckFailed(
            f"{call} returned a tensor that carries no gradient, although the table's weights require one. The "
            "positions' vectors must stay in the graph: .data and .detach() cut them out of it, and so does "
            "torch.no_grad(); then training never updates them."
        )
    out.sum().backward()
    grad = table.weight.grad if table.weight.grad is not None else torch.zeros_like(table.weight)
    used = (grad.abs().sum(dim=-1) > 0).tolist()  # (max_len,): which positions' vectors got a gradient
    if not any(used):
        raise CheckFailed(
            f"{call}: the backward pass gave self.embedding no gradient; the vectors you add must come from it."
        )
    if used == [False] + [True] * 3 + [False] * (MAX_LEN - 4) and table.padding_idx == 0:
        raise CheckFailed(
            f"{call}: position 0's vector got no gradient, so training never changes it: padding_idx=0 freezes "
            "position 0's vector at zero; a position table has no padding row."
        )
    if used != [True] * 4 + [False] * (MAX_LEN - 4):
        got = [position for position, is_used in enumerate(used) if is_used]
        raise CheckFailed(
            f"{call}: the vectors of positions {got} got a gradient; with 4 positions, exactly those of positions "
            "0 … 3 must: add the vectors of the sequence's positions, and no others."
        )


def _expect_value_error_beyond_max_len(module: nn.Module, seed: int) -> None:
    """11 positions raise ValueError, with 0, 1 or 2 leading axes, whose sizes differ from the length."""
    outcomes = {}  # shape -> the exception raised, or None
    for shape in [(11, D), (2, 11, D), (3, 2, 11, D)]:
        try:
            module(seeded_randn(*shape, seed=seed))
            outcomes[shape] = None
        except Exception as error:  # noqa: BLE001 - any other exception is the learner's, and named below
            outcomes[shape] = error
    raised = [shape for shape, error in outcomes.items() if isinstance(error, ValueError)]
    if len(raised) == len(outcomes):
        return
    missed, error = next((shape, error) for shape, error in outcomes.items() if not isinstance(error, ValueError))
    what = "nothing" if error is None else type(error).__name__
    if raised:
        raise CheckFailed(
            f"module(x) with max_len={MAX_LEN} raised ValueError for x of shape {shape_of(raised[0])} but {what} "
            f"for x of shape {shape_of(missed)}, also 11 positions: the length check reads the wrong axis. "
            "len(x) and x.shape[0] are the batch of a (batch, seq, d) input; the positions are axis -2, whatever "
            "the number of leading axes."
        ) from error
    if error is not None:
        raise CheckFailed(
            f"module(x) for 11 positions with max_len={MAX_LEN} raised {what}; raise a ValueError that says the "
            "sequence is longer than max_len."
        ) from error
    raise CheckFailed(
        f"module(x) for 11 positions with max_len={MAX_LEN} must raise a ValueError: there is no 11th vector."
    )
