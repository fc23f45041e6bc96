"""Checks for notebook 05, positional encoding.

Oracles: every entry of the encoding and of the shift matrix computed one at a time with ``math.sin`` and
``math.cos`` from the formulas; closed-form values (position 0 is 0, 1, 0, 1, ...); the shift property
P(t + Δ) = R(Δ) P(t) itself; PyTorch's autograd for which rows of the learned table get gradients.
"""

import math
import random
import re
from collections.abc import Callable

import torch
from torch import nn

from . import (
    CheckFailed,
    built_with_seed,
    call_learner,
    expect_close,
    expect_differentiable,
    expect_tensor,
    learner_facing,
    passed,
    seeded_randn,
    shape_of,
)
from .recordings import oracle

# The exponent e of column j's angle t / n^e, as the notebook defines it ("2i/d", where 2i is the even column of
# j's pair) and as common mistakes write it: the exponent of the odd column's own index, of the pair's index i,
# of the pair's odd column for both columns (torch.arange(1, d, 2)), with the 2 counted twice (2 · 2i / d), with
# the sign flipped (frequencies inverted), 0 for every pair (an integer division 2i // d), d/2 exponents spread
# evenly from 0 to 1 inclusive (torch.linspace(0, 1, d // 2)), 2i/d divided by ln 10 or ln 2 (a frequency
# exp(-(2i/d) log10 n) or exp(-(2i/d) log2 n)), 2i without the /d (which, with the positions divided by d,
# is n ** 2i / d computed without parentheses), or 2i/(d-1), divided by the last column's index.
EXPONENTS = {
    "2i/d": lambda j, d: 2 * (j // 2) / d,
    "i/d": lambda j, d: (j // 2) / d,
    "(2i+1)/d": lambda j, d: (2 * (j // 2) + 1) / d,
    "4i/d": lambda j, d: 4 * (j // 2) / d,
    "j/d": lambda j, d: j / d,
    "-2i/d": lambda j, d: -2 * (j // 2) / d,
    "0": lambda j, d: 0.0,
    "0 to 1": lambda j, d: (j // 2) / (d // 2 - 1) if d > 2 else 0.0,
    "2i/d / ln 10": lambda j, d: 2 * (j // 2) / d / math.log(10),
    "2i/d / ln 2": lambda j, d: 2 * (j // 2) / d / math.log(2),
    "2i": lambda j, d: 2 * (j // 2),
    "2i/(d-1)": lambda j, d: 2 * (j // 2) / (d - 1),
}

# The two functions of the angle that a pair holds: (sine column, cosine column) of the encoding, (diagonal,
# above the diagonal) of a block of R(Δ). Besides the right ones, those that a sine or cosine taken in place leaves:
# angles.sin_() overwrites the angles with their sines, so a cosine taken afterwards is cos(sin(angle)), and a
# name given to the result of sin_() is the angles tensor itself, which a later cos_() changes too.
TRIG = {
    "sin, cos": (math.sin, math.cos),
    "cos, sin": (math.cos, math.sin),
    "sin, cos(sin)": (math.sin, lambda angle: math.cos(math.sin(angle))),
    "sin(cos), cos": (lambda angle: math.sin(math.cos(angle)), math.cos),
    "cos(sin), cos(sin)": (lambda angle: math.cos(math.sin(angle)),) * 2,
    "sin(cos), sin(cos)": (lambda angle: math.sin(math.cos(angle)),) * 2,
    "cos(sin), sin": (lambda angle: math.cos(math.sin(angle)), math.sin),
    "cos, sin(cos)": (math.cos, lambda angle: math.sin(math.cos(angle))),
}

# Angles converted between degrees and radians, when they were radians already: (factor, its name, which way).
DEGREE_CONVERSIONS = [
    (math.pi / 180, "π/180", "from degrees to radians (torch.deg2rad, math.radians)"),
    (180 / math.pi, "180/π", "from radians to degrees (torch.rad2deg, math.degrees)"),
]

# The frequency of a logarithm in the wrong base: exp(-(2i/d) log_b n) = n^(-(2i/d) / ln b).
WRONG_LOGARITHMS = {  # exponent: (what divides 2i/d, the logarithm that divides it so, its base)
    "2i/d / ln 10": ("ln 10 ≈ 2.303", "log10(n)", "base-10"),
    "2i/d / ln 2": ("ln 2 ≈ 0.693", "log2(n)", "base-2"),
}


@oracle
def encoding_by_formula(
    length: int,
    d: int,
    *,
    n: float,
    first_position: float = 0,
    exponent: str = "2i/d",
    position_step: float = 1,
    trig: str = "sin, cos",
) -> torch.Tensor:
    """P(t, 2i) = sin(t / n^(2i/d)), P(t, 2i+1) = cos(t / n^(2i/d)), one entry at a time, shape (length, d).

    ``first_position`` (any real number: P(t + Δ) for a fractional shift Δ), ``exponent`` (a key of EXPONENTS),
    ``position_step`` (row t at position first_position + t · step) and ``trig`` (a key of TRIG: the functions of
    the angle in the even and the odd column) let the checks reproduce common mistakes and name them.
    """
    even, odd = TRIG[trig]

    def entry(t: int, j: int) -> float:
        angle = (first_position + t * position_step) * n ** -EXPONENTS[exponent](j, d)  # n ** -e: no overflow
        return even(angle) if j % 2 == 0 else odd(angle)

    return torch.tensor([[entry(t, j) for j in range(d)] for t in range(length)], dtype=torch.float32)


@oracle
def rotation_by_formula(
    delta: float, d: int, *, n: float, exponent: str = "2i/d", trig: str = "cos, sin"
) -> torch.Tensor:
    """R(Δ), shape (d, d): block i (rows and columns 2i, 2i+1) is [[cos ω_i Δ, sin ω_i Δ], [-sin ω_i Δ, cos ω_i Δ]]
    with ω_i = 1 / n^(2i/d), one entry at a time; zero outside the blocks. ``exponent`` as in encoding_by_formula;
    ``trig`` (a key of TRIG) the functions of the angle on the diagonal and beside it."""
    on, beside = TRIG[trig]
    rotation = [[0.0] * d for _ in range(d)]
    for i in range(0, d, 2):
        angle = delta * n ** -EXPONENTS[exponent](i, d)
        rotation[i][i], rotation[i][i + 1] = on(angle), beside(angle)
        rotation[i + 1][i], rotation[i + 1][i + 1] = -beside(angle), on(angle)
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
    if not (result.dtype.is_floating_point or result.dtype.is_complex or result.dtype == torch.bool):
        raise CheckFailed(
            f"{call} returned a {result.dtype} tensor; return float32, PyTorch's default dtype. An integer tensor "
            "holds whole numbers only, so sines and cosines stored in it lose their fractions. A tensor "
            "made from whole numbers is an integer one (torch.arange(5), and zeros_like or empty_like of it): make "
            "the table with torch.zeros or torch.empty and a shape, which give float32, or convert with .float()."
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
        encoding = _encoding_or_named_crash(sinusoidal_encoding, args, call)
        expected = encoding_by_formula(length, d, n=10000.0 if n is None else n)
        _diagnose_transposed(encoding, expected, call)
        encoding = _expect_float32(encoding, call, (length, d))
        if not torch.allclose(encoding, expected, atol=1e-5):
            _diagnose_encoding(encoding, length, d, 10000.0 if n is None else n, call)
        expect_close(encoding, expected, f"{call}, compared with the formula entry by entry")
    passed("sinusoidal_encoding", "every entry follows the formula, for any length, even d and base n")


def _diagnose_transposed(encoding, expected: torch.Tensor, call: str) -> None:
    """Name an encoding of shape (d, length): one row per dimension and one column per position."""
    length, d = expected.shape
    if not isinstance(encoding, torch.Tensor) or length == d or tuple(encoding.shape) != (d, length):
        return
    values = encoding.T.is_floating_point() and torch.allclose(encoding.T.float(), expected, atol=1e-5)
    raise CheckFailed(
        f"{call} returned shape ({d}, {length}), one row per dimension and one column per position"
        + (": its values are right, transposed" if values else "")
        + f". The encoding has one row per position and one column per dimension: ({length}, {d}), row t being "
        "the vector P(t) of position t."
    )


def _in_place_growth(error: BaseException) -> str | None:
    """What went wrong when an in-place operation's result is larger than the tensor it writes into."""
    sizes = re.search(r"output with shape \[([\d, ]*)\] doesn't match the broadcast shape \[([\d, ]*)\]", str(error))
    if sizes is None:
        return None
    return (
        f"An operation in place (a method ending in _, such as mul_ or div_, or *=, /=) writes its result into "
        f"the tensor it is called on, and that tensor, of shape ({sizes[1]}), cannot grow to the shape "
        f"({sizes[2]}) of the result. Use the operator or function that makes a new tensor (*, /, torch.mul)."
    )


def _encoding_or_named_crash(sinusoidal_encoding: Callable, args: tuple, call: str):
    """sinusoidal_encoding(*args), with the crashes of common mistakes named (see _encoding_crash_named)."""
    try:
        return call_learner(sinusoidal_encoding, *args, call=call)
    except CheckFailed as failure:
        error, (length, d) = failure.__cause__, args[:2]
        named = _encoding_crash_named(str(error), length, d) if isinstance(error, RuntimeError) else None
        named = named or _in_place_growth(error)
        if named is not None:
            raise CheckFailed(f"{failure}\n{named}") from error
        raise


def _encoding_crash_named(error: str, length: int, d: int) -> str | None:
    """What PyTorch's error says went wrong, when its sizes are those of a common mistake: angles laid out
    (d/2, length), the error then reporting both layouts; positions and frequencies on one axis (both 1-D, or both
    columns), whose product pairs length entries with d/2; the (length, d/2) sines assigned to every other row
    rather than every other column; angles with more or fewer columns than the d/2 frequencies."""
    half = d // 2
    expected, transposed = f"{length}, {half}", f"{half}, {length}"
    if length != half and expected in error and transposed in error:
        return (
            f"Your angles have shape ({transposed}), one row per frequency; the encoding has one row per position, "
            f"so the angles must be ({expected}): positions down the rows, frequencies along the columns."
        )
    sizes = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)", error)
    if length != half and sizes and {int(sizes[1]), int(sizes[2])} == {length, half}:
        return (
            f"Your {length} positions and {half} frequencies lie along the same axis, so broadcasting pairs them "
            f"entry by entry, and {length} entries cannot pair with {half}. Every position meets every frequency "
            f"when the positions form a column, shape ({length}, 1), and the frequencies a row, shape ({half},): "
            f"their product is then the ({length}, {half}) table of angles."
        )
    assigned = re.search(r"Target sizes: \[(\d+), (\d+)\]\.\s+Tensor sizes: \[(\d+), (\d+)\]", error)
    if assigned is None:
        return None
    target, given = (int(assigned[1]), int(assigned[2])), (int(assigned[3]), int(assigned[4]))
    if target[1] == d and target[0] in {length // 2, (length + 1) // 2} and given == (length, half):
        return (
            f"You assigned ({length}, {half}) sines or cosines to every other row of the encoding, a ({target[0]}, "
            f"{d}) slice: a step in the first index picks every other row, that is every other position. Sines and "
            "cosines alternate along the columns, the second index, and every row gets both."
        )
    if target == (length, half) and given[0] == length and given[1] != half:
        stop = " (torch.arange stops before its end value)" if given[1] == half + 1 else ""
        return (
            f"Your angles have {given[1]} columns, one per frequency, but d = {d} columns make {half} pairs, so "
            f"{half} frequencies: 2i runs over 0, 2, …, {d - 2}{stop}."
        )
    return None


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
        (
            torch.stack([right[:, 0::2], right[:, 1::2]]).reshape(length, d),
            "the sines and cosines were stacked (or concatenated) along the first axis and then reshaped to "
            f"({length}, {d}): reshape takes the entries in their order in memory, so a row holds the sines, or "
            "the cosines, of two positions. Stack them along a new last axis, (length, d/2, 2), so that each "
            "angle's sine and cosine sit side by side, and then reshape",
        ),
        (
            encoding_by_formula(length, d, n=n, trig="sin, cos(sin)"),
            "the odd columns hold cos(sin(angle)), the cosine of the sine: the angles had been replaced by their "
            "sines when the cosines were taken. A method ending in _, such as sin_(), writes its result into the "
            "tensor it is called on; torch.sin(angles) or angles.sin() make a new tensor",
        ),
        (
            encoding_by_formula(length, d, n=n, trig="sin(cos), cos"),
            "the even columns hold sin(cos(angle)), the sine of the cosine: the angles had been replaced by their "
            "cosines when the sines were taken. A method ending in _, such as cos_(), writes its result into the "
            "tensor it is called on; torch.cos(angles) or angles.cos() make a new tensor",
        ),
        (cosines, "both columns of each pair hold the cosine; the even column 2i holds the sine of the same angle"),
        (
            torch.cat([right[:, 0::2], right[:, 1::2]], 1),
            "the sines fill the first half and the cosines the second; interleave them: sine in column 2i, "
            "cosine in column 2i+1 of the same frequency",
        ),
        (
            torch.cat([right[:, 1::2], right[:, 0::2]], 1),
            "the cosines fill the first half and the sines the second; interleave them: sine in column 2i, "
            "cosine in column 2i+1 of the same frequency",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="i/d"),
            "the exponent uses i/d; it is 2i/d, where 2i is the even column of the pair",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="(2i+1)/d"),
            "the exponent is (2i+1)/d, from the odd columns 1, 3, 5, …; both columns of pair i share the exponent "
            "2i/d of the even column (0, 2/d, 4/d, …)",
        ),
        *(
            (
                encoding_by_formula(length, d, n=n, exponent=exponent),
                f"your exponents are 2i/d divided by {divisor}, as in exp(-(2i/d) · {logarithm}), which takes the "
                f"{base} logarithm; n^(-2i/d) is exp(-(2i/d) · ln n), with the natural logarithm (math.log, "
                "torch.log)",
            )
            for exponent, (divisor, logarithm, base) in WRONG_LOGARITHMS.items()
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="2i", position_step=1 / d),
            "your angles are t / (d · n^(2i)), not t / n^(2i/d): the power n ** 2i was taken before the division by "
            "d, because ** binds more tightly than /. The whole exponent 2i/d needs parentheses",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="0 to 1"),
            "the exponents run from 0 up to 1 included (as torch.linspace(0, 1, d // 2) spreads them); 2i/d goes "
            "up in steps of 2/d and stops one step short of 1, at (d-2)/d",
        ),
        (
            encoding_by_formula(length, d, n=n, exponent="2i/(d-1)"),
            "the exponent is 2i/(d-1); it is 2i/d, divided by d itself, not by the last column's index d-1",
        ),
        *(
            (
                encoding_by_formula(length, d, n=n, position_step=factor),
                f"your angles are t / n^(2i/d) times {factor_name}: they were converted {conversion}, but t / "
                "n^(2i/d) is an angle in radians already, the unit that torch.sin and torch.cos take",
            )
            for factor, factor_name, conversion in DEGREE_CONVERSIONS
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
        *_evenly_spread_positions(length, d, n),
        (encoding_by_formula(length, d, n=10000.0), f"the base n={n} was ignored; use the n argument, not 10000"),
        (
            encoding_by_formula(length, d, n=float(length)),
            f"the base of the powers is the sequence length, {length}; it is n ({n:g} here), the same for every "
            "length. The length only says how many positions get a row",
        ),
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
    _diagnose_column_order(encoding, right, call)


def _evenly_spread_positions(length: int, d: int, n: float) -> list[tuple[torch.Tensor, str]]:
    """The encodings of positions spread evenly from 0 to ``length`` or to 1, as torch.linspace spreads them, with
    what went wrong; none for a single position, which is 0 either way."""
    if length < 2:
        return []
    arange = "the positions are the whole numbers 0, 1, …, length - 1, one per row (look up torch.arange)"
    spreads = [
        (length, f"{length} positions spread evenly from 0 to {length} included, {length / (length - 1):.4g} apart"),
        (1, f"{length} positions spread evenly from 0 to 1, {1 / (length - 1):.4g} apart"),
    ]
    return [
        (
            encoding_by_formula(length, d, n=n, position_step=last / (length - 1)),
            f"your rows are at {spread} (as torch.linspace(0, {last}, {length}) makes them); {arange}",
        )
        for last, spread in spreads
    ]


def _diagnose_column_order(encoding: torch.Tensor, right: torch.Tensor, call: str) -> None:
    """Name an encoding whose columns are the right ones in another order than the formula's."""
    d = right.shape[1]
    found = []  # for each of the learner's columns, the formula's column it equals
    for j in range(d):
        equal = [k for k in range(d) if torch.allclose(encoding[:, j], right[:, k], atol=1e-5)]
        if not equal:
            return
        found.append(equal[0])
    if sorted(found) != list(range(d)):
        return
    pairs = [found[j] // 2 for j in range(0, d, 2)]  # the formula's pair that each of the learner's pairs holds
    if all(found[j] == 2 * pairs[j // 2] + j % 2 for j in range(d)):  # whole pairs, sine first, reordered
        moved = "; ".join(f"your pair {i} turns like the formula's pair {k}" for i, k in enumerate(pairs) if i != k)
        raise CheckFailed(
            f"{call}: your pairs of columns are the formula's, in another order ({moved}). Pair i turns by "
            "ω_i = 1 / n^(2i/d): pair 0 is the fastest, one radian per position, and each later pair is slower."
        )
    moved = "; ".join(f"your column {j} is the formula's column {k}" for j, k in enumerate(found) if j != k)
    raise CheckFailed(
        f"{call}: your columns are the formula's, in another order ({moved}). The layout is interleaved: column "
        "2i holds sin(t / n^(2i/d)) and column 2i+1 the cosine of the same angle."
    )


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_shift_matrix(shift_matrix: Callable, seed: int = 0) -> None:
    """Check P(t + Δ) = R(Δ) P(t) for every position t, and that R(Δ) only rotates pairs of columns, for fixed
    cases and two drawn from the seed: a fractional Δ, and a whole Δ from -3 to 0."""
    rng = random.Random(seed)
    fractional = (rng.choice([-1, 1]) * (rng.randint(0, 3) + rng.choice([0.25, 0.5, 0.75])), 2 * rng.randint(2, 12))
    whole = (rng.randint(-3, 0), 2 * rng.randint(1, 12))
    drawn = [(delta, d, float(rng.randint(10, 20000))) for delta, d in (fractional, whole)]
    shifted_forward = []  # the positive Δ for which R(Δ) P(t) = P(t + Δ)
    for delta, d, n in [(1, 8, 10000.0), (3, 16, 100.0), (-2, 8, 10000.0), (5, 4, 10.0), *drawn]:
        call = f"shift_matrix({delta}, {d}, {n})"
        rotation = _expect_float32(_rotation_or_named_crash(shift_matrix, delta, d, n, call), call, (d, d))
        positions = encoding_by_formula(30, d, n=n)  # (t, d): rows are P(t)
        shifted = positions @ rotation.T  # row t is R(Δ) P(t)
        target = encoding_by_formula(30, d, n=n, first_position=delta)  # row t is P(t + Δ)
        if torch.allclose(positions @ rotation, target, atol=1e-4) and not torch.allclose(shifted, target, atol=1e-4):
            if delta < 0 and shifted_forward:
                raise CheckFailed(
                    f"{call} turns as R({-delta}) does: the sign of Δ is lost (abs(Δ), or a row of the encoding "
                    f"table, whose positions are 0 or more). Your matrix was right for Δ = {shifted_forward[0]}, "
                    "but a negative Δ shifts back: block i turns by the negative angle ω_i Δ, and "
                    "sin(-a) = -sin(a) flips the sines beside the diagonal."
                )
            raise CheckFailed(
                f"{call} rotates the wrong way: it maps P(t) to P(t - Δ). The 2×2 block for a pair "
                "(sin ωt, cos ωt) is [[cos ωΔ, sin ωΔ], [-sin ωΔ, cos ωΔ]]."
            )
        off_blocks = rotation.clone()
        for i in range(0, d, 2):
            off_blocks[i : i + 2, i : i + 2] = 0
        if off_blocks.abs().max() > 1e-4:  # a numerically computed R (lstsq, matrix_exp) has tiny ones
            _diagnose_half_layout(rotation, delta, d, n, call)
            _diagnose_overlapping_blocks(rotation, delta, d, n, call)
            _diagnose_broadcast_sub_grids(rotation, delta, d, n, call)
            raise CheckFailed(
                f"{call} mixes columns of different frequencies; only the two columns 2i and 2i+1 of each pair "
                "mix, so R(Δ) is block diagonal with 2×2 blocks."
            )
        if not torch.allclose(shifted, target, atol=1e-4):
            _diagnose_rotation(rotation, delta, d, n, call)
        expect_close(shifted, target, f"{call} applied to P(t) for t = 0 … 29, compared with P(t + Δ)", atol=1e-4)
        if delta > 0:
            shifted_forward.append(delta)
    passed("shift_matrix", "R(Δ) P(t) = P(t + Δ) for every t: a shift is a rotation of each pair")


def _diagnose_half_layout(rotation: torch.Tensor, delta: float, d: int, n: float, call: str) -> None:
    """Name the R(Δ) of an encoding laid out in halves, sines in one half and cosines in the other: each pair's
    block sits on columns i and i + d/2, not 2i and 2i+1."""
    right = rotation_by_formula(delta, d, n=n)
    evens, odds = list(range(0, d, 2)), list(range(1, d, 2))
    layouts = {
        "the sines in the first half and the cosines in the second": evens + odds,
        "the cosines in the first half and the sines in the second": odds + evens,
    }
    for layout, order in layouts.items():  # column c of that layout holds the interleaved column order[c]
        if torch.allclose(rotation, right[order][:, order], atol=1e-5):
            raise CheckFailed(
                f"{call}: your R(Δ) turns column i together with column i + d/2, the layout of an encoding with "
                f"{layout}. This notebook's encoding interleaves them, sine in column 2i and cosine in column 2i+1, "
                "so block i sits on rows and columns 2i and 2i+1."
            )


def _diagnose_overlapping_blocks(rotation: torch.Tensor, delta: float, d: int, n: float, call: str) -> None:
    """Name the R(Δ) whose block for pair i was written at rows and columns i and i+1, so that each block
    overwrites part of the one before."""
    right = rotation_by_formula(delta, d, n=n)
    overlapping = torch.zeros(d, d)
    for i in range(d // 2):
        overlapping[i : i + 2, i : i + 2] = right[2 * i : 2 * i + 2, 2 * i : 2 * i + 2]
    if torch.allclose(rotation, overlapping, atol=1e-5):
        raise CheckFailed(
            f"{call}: the block of pair i sits at rows and columns i and i+1, so the blocks overlap, each "
            "overwriting part of the one before. Pair i is the columns 2i and 2i+1, and its block belongs at rows "
            "and columns 2i and 2i+1."
        )


def _diagnose_broadcast_sub_grids(rotation: torch.Tensor, delta: float, d: int, n: float, call: str) -> None:
    """Name the sub-grids rotation[r::2, c::2] that hold their d/2 values in every row: a vector assigned to a
    strided sub-grid broadcasts along its rows, where torch.diag of it would fill only the diagonal."""
    right = rotation_by_formula(delta, d, n=n)
    broadcast = [
        f"rotation[{rows}::2, {columns}::2]"
        for rows in (0, 1)
        for columns in (0, 1)
        if torch.allclose(
            rotation[rows::2, columns::2],
            torch.diagonal(right[rows::2, columns::2]).expand(d // 2, d // 2),  # every row: the block values
            atol=1e-5,
        )
        and not torch.allclose(rotation[rows::2, columns::2], right[rows::2, columns::2], atol=1e-5)
    ]
    if broadcast:
        listed = " and ".join([", ".join(broadcast[:-1]), broadcast[-1]] if len(broadcast) > 1 else broadcast)
        raise CheckFailed(
            f"{call}: every row of {listed} holds the values of all {d // 2} pairs, one per column: a vector of "
            f"shape ({d // 2},) assigned to a ({d // 2}, {d // 2}) sub-grid broadcasts along every row. Pair i's "
            "value belongs only where row and column are both pair i's, on the sub-grid's diagonal; look up "
            "torch.diag, which turns a vector into a diagonal matrix."
        )


def _rotation_or_named_crash(shift_matrix: Callable, delta: float, d: int, n: float, call: str):
    """shift_matrix(delta, d, n), with a TypeError for a fractional Δ named: range() and matrix powers count whole
    steps only; and a list of blocks given to torch.block_diag, which takes them one argument each."""
    try:
        return call_learner(shift_matrix, delta, d, n, call=call)
    except CheckFailed as failure:
        error = failure.__cause__
        # The error's text alone tells it: in grading, the learner's code runs in a process of its own, and only
        # the error's class and message cross over.
        nested = re.search(r"expected Tensor as element \d+ in argument \d+, but got (list|tuple)", str(error))
        if isinstance(error, TypeError) and nested:
            raise CheckFailed(
                f"{failure}\nA PyTorch function that takes several tensors got a {nested[1]} where it expected a "
                "tensor. torch.block_diag takes each block as an argument of its own, torch.block_diag(a, b, c), "
                f"not one {nested[1]} of blocks: unpack it into the arguments with *. torch.stack and torch.cat take "
                f"one sequence of tensors, not a {nested[1]} of {nested[1]}s."
            ) from error
        sizes = re.search(r"Target sizes: \[(\d+), (\d+)\]\.\s+Tensor sizes: \[(\d+)(?:, (\d+))?\]", str(error))
        half = d // 2
        if (
            isinstance(error, RuntimeError)
            and sizes
            and (int(sizes[1]), int(sizes[2])) == (half, half)
            and int(sizes[3]) != half
            and sizes[4] in (None, sizes[3])
        ):
            angles = int(sizes[3])
            made = "a vector of" if sizes[4] is None else f"a matrix of shape ({angles}, {angles}), made from"
            also = (
                ", one per column of R"
                if angles == d
                else (" (torch.arange stops before its end value)" if angles == half + 1 else "")
            )
            raise CheckFailed(
                f"{failure}\nA strided sub-grid of R such as rotation[0::2, 0::2] is ({half}, {half}), one row and "
                f"one column per pair, but you assigned it {made} {angles} angles{also}. d = {d} columns make "
                f"{half} pairs, so {half} angles ω_i Δ: 2i runs over 0, 2, …, {d - 2}."
            ) from error
        growth = _in_place_growth(error)
        if growth is not None:
            raise CheckFailed(f"{failure}\n{growth}") from error
        if isinstance(failure.__cause__, TypeError) and delta != int(delta):
            raise CheckFailed(
                f"{failure}\nΔ need not be a whole number: a shift by Δ = {delta} positions is a rotation too, by the "
                "angle ω_i Δ in block i. What counts in whole positions (a loop over range(Δ), a power of R(1), a row "
                "of the encoding table) cannot make it; compute the angles ω_i Δ from Δ itself."
            ) from failure.__cause__
        raise


IN_PLACE_TRIG = (
    "A method ending in _, such as sin_() or cos_(), writes its result into the tensor it is called on and returns "
    "that same tensor; torch.sin(angles) or angles.sin() make a new one and leave the angles as they were"
)


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
            rotation_by_formula(delta, d, n=n, exponent="(2i+1)/d"),
            "the exponent is (2i+1)/d, from the odd columns 1, 3, 5, …; pair i's exponent is 2i/d, from its first "
            "column (0, 2/d, 4/d, …)",
        ),
        *(
            (
                rotation_by_formula(delta, d, n=n, exponent=exponent),
                f"your exponents are 2i/d divided by {divisor}, as in exp(-(2i/d) · {logarithm}), which takes the "
                f"{base} logarithm; n^(-2i/d) is exp(-(2i/d) · ln n), with the natural logarithm (math.log, "
                "torch.log)",
            )
            for exponent, (divisor, logarithm, base) in WRONG_LOGARITHMS.items()
        ),
        (
            rotation_by_formula(delta / d, d, n=n, exponent="2i"),
            "your angles are Δ / (d · n^(2i)), not Δ / n^(2i/d): the power n ** 2i was taken before the division by "
            "d, because ** binds more tightly than /. The whole exponent 2i/d needs parentheses",
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
        (
            rotation_by_formula(delta, d, n=n, exponent="2i/(d-1)"),
            "the exponent is 2i/(d-1); it is 2i/d, divided by d itself, not by the last column's index d-1",
        ),
        *(
            (
                rotation_by_formula(delta * factor, d, n=n),
                f"your angles are ω_i Δ times {factor_name}: they were converted {conversion}, but ω_i Δ is an "
                "angle in radians already, the unit that torch.sin and torch.cos take",
            )
            for factor, factor_name, conversion in DEGREE_CONVERSIONS
        ),
        *(
            (rotation_by_formula(delta, d, n=n, trig=trig), f"{what}. {IN_PLACE_TRIG}")
            for trig, what in [
                (
                    "cos(sin), cos(sin)",
                    "every entry of your blocks is ±cos(sin ω_iΔ): your sines and cosines are one tensor, the "
                    "angles, which sin_() overwrote with their sines and cos_() then with the cosines of those",
                ),
                (
                    "sin(cos), sin(cos)",
                    "every entry of your blocks is ±sin(cos ω_iΔ): your sines and cosines are one tensor, the "
                    "angles, which cos_() overwrote with their cosines and sin_() then with the sines of those",
                ),
                (
                    "cos(sin), sin",
                    "the diagonal of your blocks holds cos(sin ω_iΔ), the cosine of the sine: the angles had been "
                    "replaced by their sines when the cosines were taken",
                ),
                (
                    "cos, sin(cos)",
                    "beside the diagonal your blocks hold ±sin(cos ω_iΔ), the sine of the cosine: the angles had "
                    "been replaced by their cosines when the sines were taken",
                ),
            ]
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
    _diagnose_missing_blocks(rotation, right, delta, call)


def _diagnose_missing_blocks(rotation: torch.Tensor, right: torch.Tensor, delta: float, call: str) -> None:
    """Name the pairs whose blocks are exactly zero, or exactly the identity where pair i should turn: blocks never
    filled in, as a return inside the loop over the pairs or a loop that stops early leaves them. (Exactly: a
    computed block of a tiny angle is close to the identity, but its sine is not 0.)"""
    d = rotation.shape[0]
    blocks = [(rotation[i : i + 2, i : i + 2], right[i : i + 2, i : i + 2]) for i in range(0, d, 2)]
    for name, empty in [("zero", torch.zeros(2, 2)), ("the identity (a turn by 0)", torch.eye(2))]:
        pairs = [
            i
            for i, (block, wanted) in enumerate(blocks)
            if torch.equal(block, empty) and not torch.allclose(wanted, empty, atol=1e-5)
        ]
        if name != "zero" and len(pairs) == len(blocks):  # R(0) whatever Δ: int(Δ) of a fractional Δ, named later
            continue
        if name == "zero" and len(pairs) == len(blocks):
            raise CheckFailed(
                f"{call} returned a matrix of zeros: none of the {len(blocks)} blocks was filled in. R(Δ) turns every "
                "pair i by its own angle ω_i Δ, so every pair needs its block."
            )
        if pairs:
            listed = " and ".join(
                [", ".join(map(str, pairs[:-1])), str(pairs[-1])] if len(pairs) > 1 else [str(pairs[0])]
            )
            which = "the 2×2 blocks of pairs" if len(pairs) > 1 else "the 2×2 block of pair"
            are = "are" if len(pairs) > 1 else "is"
            raise CheckFailed(
                f"{call}: {which} {listed} {are} {name}, as if never filled in; R({delta}) turns every pair i = 0 … "
                f"{d // 2 - 1} by its own angle ω_i Δ, so every pair needs its block. A return inside the loop "
                "over the pairs, or a loop that stops early, leaves blocks out."
            )


# Exercise 3 ---------------------------------------------------------------------------------------------

MAX_LEN, D = 10, 6


@learner_facing
def check_learned_positional_embedding(LearnedPositionalEmbedding: type, seed: int = 0) -> None:
    """Check x + E[position] for inputs with 0, 1 and 2 leading axes, which rows of the table get gradients, and
    the length limit, also for a batch whose size differs from the length."""
    call = f"LearnedPositionalEmbedding(max_len={MAX_LEN}, d={D})"
    module = built_with_seed(LearnedPositionalEmbedding, MAX_LEN, D, seed=seed, call=call)
    table = getattr(module, "embedding", None)
    if not isinstance(table, nn.Embedding) or (table.num_embeddings, table.embedding_dim) != (MAX_LEN, D):
        swapped = isinstance(table, nn.Embedding) and (table.num_embeddings, table.embedding_dim) == (D, MAX_LEN)
        raise CheckFailed(
            f"{call} needs self.embedding = nn.Embedding({MAX_LEN}, {D}): one learned vector per position."
            + (
                f" Yours is nn.Embedding({D}, {MAX_LEN}), the arguments swapped: the number of vectors (max_len, "
                "one per position) comes first, the size of each vector (d) second."
                if swapped
                else ""
            )
        )
    made = table.weight.detach().clone()  # the table as __init__ left it, before the check writes its own values
    with torch.no_grad():  # a table of the check's own values, so that one initialised to zeros shows its rows too
        table.weight.copy_(seeded_randn(MAX_LEN, D, seed=seed + 1))
    worked: list[tuple[int, ...]] = []  # the shapes of x for which forward gave the right result
    # (12, 3, 6): more sequences in the batch than max_len, each shorter than it; (3, 2, 10, 6): exactly max_len.
    for shape in [(2, 4, D), (7, D), (3, 2, MAX_LEN, D), (12, 3, D)]:
        x = seeded_randn(*shape, seed=seed)
        call = f"module(x) with x of shape {shape_of(x)}"
        out = _forward(module, x, call, worked)
        _diagnose_learned_shape(out, x, table.weight.detach(), call)
        out = expect_tensor(out, call, x.shape, x.dtype)
        positions = table.weight[: shape[-2]]  # (seq, d)
        if not torch.allclose(out, x + positions, atol=1e-5):
            _diagnose_learned(module, out, x, table.weight.detach(), made, call)
        expect_close(out, x + positions, f"{call}, compared with x + embedding.weight[:seq]")
        worked.append(shape)
    _expect_gradients_of_the_first_rows(module, table, seed)
    _expect_value_error_beyond_max_len(module, seed)
    passed("LearnedPositionalEmbedding", "adds one learned vector per position, and stops at max_len")


def _diagnose_learned(
    module: nn.Module, out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, made: torch.Tensor, call: str
) -> None:
    """Name the mistake whose output a wrong result equals, if it is one of the common ones; ``made`` is the table
    as the module's __init__ left it, before the check wrote its own values into it."""
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
    if torch.allclose(out, x * math.sqrt(D) + weight[:seq], atol=1e-5):
        raise CheckFailed(
            f"{call} returned x · √d + the position vectors: x was multiplied by √d = √{D} before adding. This "
            "module only adds, x + E[0 … seq-1]. (The √d_model of the original transformer scales the word "
            "embeddings; notebook 07's model does that itself, before it adds the positions.)"
        )
    try:
        with torch.random.fork_rng():  # a table made in forward draws from the global generator: leave it as it was
            again = call_learner(module, x, call=f"{call}, a second time")
    except CheckFailed:
        again = None
    if isinstance(again, torch.Tensor) and again.shape == out.shape and not torch.allclose(again, out, atol=1e-6):
        raise CheckFailed(
            f"{call} gave different results in two calls with the same x: the vectors added change from call to "
            "call, as those of a table made anew inside forward do (it starts random each time, and it is not "
            "among the module's parameters, so training never changes it). Look the positions up in "
            "self.embedding, made once in __init__."
        )
    snapshot = made[:seq]  # (seq, d): what a lookup in __init__ gave; a table made of zeros would look like x alone
    if (
        snapshot.abs().max() > 0
        and not torch.allclose(snapshot, weight[:seq], atol=1e-5)
        and torch.allclose(out, x + snapshot, atol=1e-5)
    ):
        raise CheckFailed(
            f"{call} added the vectors self.embedding held when the module was made, not those it holds now (the "
            "check wrote values of its own into the table afterwards): vectors looked up or copied in __init__ are "
            "a snapshot, which training would never change. Look the positions up in forward, at every call."
        )
    added = (out - x).reshape(-1, D)  # (positions of every sequence, d): the vectors the module added
    if not any(torch.allclose(vector, row, atol=1e-5) for vector in added for row in weight):
        raise CheckFailed(
            f"{call}: none of the vectors added to x is a row of self.embedding.weight (the check wrote values of "
            "its own into it). The position vectors must come from self.embedding, called on the positions."
        )


def _diagnose_learned_shape(out, x: torch.Tensor, weight: torch.Tensor, call: str) -> None:
    """Name a result of the wrong shape that is x plus position vectors with an extra axis: a batch axis of their
    own, (1, seq, d), or one from looking up a column of positions, (seq, 1, d)."""
    if not isinstance(out, torch.Tensor) or out.shape == x.shape or not out.is_floating_point():
        return
    seq = x.shape[-2]
    if out.shape == (1, *x.shape) and torch.allclose(out, x + weight[:seq], atol=1e-5):
        raise CheckFailed(
            f"{call} returned shape {shape_of(out)}: your position vectors have an axis of their own in front, "
            f"({', '.join(map(str, (1, seq, D)))}), and adding them gave the result that axis too. A (seq, d) tensor "
            "of position vectors broadcasts over any leading axes of x by itself, and x + it keeps x's shape."
        )
    vectors = weight[:seq, None, :]  # (seq, 1, d): what a column of positions looks up
    try:
        column = x + vectors  # x beside them, where their shapes broadcast
    except RuntimeError:
        return
    if out.shape == column.shape and torch.allclose(out, column, atol=1e-5):
        raise CheckFailed(f"{call} returned shape {shape_of(out)}. {COLUMN_LOOKUP.format(seq=seq, d=D)}")


# What an nn.Embedding returns for a column of positions.
COLUMN_LOOKUP = (
    "You looked up a column of positions, shape ({seq}, 1): nn.Embedding gives one d-vector for each index, "
    "keeping the index tensor's shape, so a ({seq}, 1) tensor of positions gives ({seq}, 1, {d}) vectors, which "
    "do not line up with x. Look up a 1-D tensor of the positions, shape ({seq},), which gives ({seq}, {d})."
)


def _looks_up_a_column(module: nn.Module, seq: int) -> bool:
    """Whether module(x) for a zero x of shape (seq, d) returns the vectors of a (seq, 1) column of positions,
    shape (seq, seq, d): entry [t, u] is position t's vector."""
    weight = module.embedding.weight.detach()
    try:
        out = module(torch.zeros(seq, D))
    except Exception:
        return False
    expected = weight[:seq, None, :].expand(seq, seq, D)
    return isinstance(out, torch.Tensor) and out.shape == expected.shape and torch.allclose(out, expected, atol=1e-5)


def _adds_the_whole_table(module: nn.Module) -> bool:
    """Whether module(x) for a zero x of max_len positions returns every row of the table."""
    weight = module.embedding.weight.detach()
    try:
        out = module(torch.zeros(MAX_LEN, D))
    except Exception:
        return False
    return isinstance(out, torch.Tensor) and out.shape == weight.shape and torch.allclose(out, weight, atol=1e-5)


def _raises_value_error(module: nn.Module, shape: tuple[int, ...]) -> bool:
    """Whether module(x) raises ValueError for an x of this shape."""
    try:
        module(torch.zeros(shape))
    except ValueError:
        return True
    except Exception:
        return False
    return False


def _counts_every_vector(module: nn.Module, call: str, error: BaseException) -> None:
    """Name a length check that counts the vectors of the whole batch: one sequence of max_len positions runs, but
    2 sequences of 6 (12 vectors, each axis of x at most max_len) raise ValueError."""
    many = (2, MAX_LEN // 2 + 1, D)
    if _runs(module, (MAX_LEN, D)) and _raises_value_error(module, many):
        raise CheckFailed(
            f"{call} raised ValueError, and so does x of shape {shape_of(many)}, but a single sequence of shape "
            f"{shape_of((MAX_LEN, D))} works: the length check counts the vectors of every sequence in the batch "
            f"({many[0]} × {many[1]} = {many[0] * many[1]} > max_len={MAX_LEN}; x.numel() // d and "
            "x.shape[:-1].numel() count them all). The positions of one sequence are x.shape[-2], whatever the "
            "number of leading axes."
        ) from error


def _forward(module: nn.Module, x: torch.Tensor, call: str, worked: list[tuple[int, ...]]):
    """module(x), with a crash named where it shows a common mistake: a length check that stops a sequence of
    max_len positions or reads the batch axis, or positions taken from an axis that only 3-D inputs get right."""
    try:
        return call_learner(module, x, call=call)
    except CheckFailed as failure:
        error, seq = failure.__cause__, x.shape[-2]
        if isinstance(error, ValueError) and x.ndim > 2 and seq <= MAX_LEN:
            _counts_every_vector(module, call, error)
        if isinstance(error, ValueError) and seq == MAX_LEN and _runs(module, (MAX_LEN, D)):
            raise CheckFailed(
                f"{call} raised ValueError, but a single sequence of shape {shape_of((MAX_LEN, D))} works: the "
                "length check reads more than the positions of one sequence. The positions are x.shape[-2], "
                "whatever the number of leading axes."
            ) from error
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
        sizes = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)", str(error))
        if (
            isinstance(error, RuntimeError)
            and sizes
            and seq != MAX_LEN
            and {int(sizes[1]), int(sizes[2])} == {seq, MAX_LEN}
            and _adds_the_whole_table(module)
        ):
            raise CheckFailed(
                f"{failure}\nThose sizes are the {seq} positions of x and the {MAX_LEN} rows of the table: you added "
                f"all {MAX_LEN} position vectors, those of positions 0 … {MAX_LEN - 1}. A sequence of {seq} "
                f"positions takes the vectors of its own positions, 0 … {seq - 1}, only."
            ) from error
        if error is not None and _looks_up_a_column(module, seq):
            raise CheckFailed(f"{failure}\n{COLUMN_LOOKUP.format(seq=seq, d=D)}") from error
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
        if isinstance(error, RuntimeError) and seq != D and _runs(module, (*x.shape[:-2], D, D)):
            raise CheckFailed(
                f"{failure}\nWith {D} positions, as many as d = {D}, your module runs: it takes the number of "
                "positions from the last axis, or from d. x is (..., seq, d): the number of positions is "
                "x.shape[-2]; x.shape[-1] is d, the size of each vector."
            ) from error
        raise


def _runs(module: nn.Module, shape: tuple[int, ...]) -> bool:
    """Whether module(x) returns, without an exception, for an x of this shape."""
    try:
        module(torch.zeros(shape))
    except Exception:
        return False
    return True


def _expect_gradients_of_the_first_rows(module: nn.Module, table: nn.Embedding, seed: int) -> None:
    """The result is in the graph, and the backward pass reaches exactly the rows of positions 0 … seq-1."""
    call = "module(x) with x of shape (2, 4, 6)"
    module.zero_grad()
    out = call_learner(module, seeded_randn(2, 4, D, seed=seed), call=call)
    expect_differentiable(out, call)
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
        except Exception as error:
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
