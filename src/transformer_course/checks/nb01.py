"""Checks for notebook 01, self-attention as weighted averaging.

Oracles: ``torch.softmax``; ``F.scaled_dot_product_attention`` with ``scale=1`` (identity values give the
weights themselves); closed-form values worked out by hand.
"""

import math
from collections.abc import Callable

import torch

from . import (
    CheckFailed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_tensor,
    learner_facing,
    passed,
    pytorch_attention,
    rows_sum_to,
    seeded_randn,
    shape_of,
)
from .recordings import oracle

BATCH_HINT = (
    "It works on one sequence but not on a batch: the positions are always axis -2 and the features axis -1, "
    "whatever leading batch axes come first (use x.transpose(-2, -1) or x.mT, not x.T, and x[..., perm, :])."
)


@oracle
def unscaled_self_attention(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The oracle: (outputs, weights) of self-attention with the scores x xᵀ unscaled, from PyTorch's attention."""
    return pytorch_attention(x, x, x, mask=None, scale=1.0)  # (..., seq, d), (..., seq, seq)


def _on_batch(check: Callable[[], None]) -> None:
    """Run a check on batched inputs, adding the usual batching hint to its failure."""
    try:
        check()
    except CheckFailed as failure:
        raise CheckFailed(f"{failure}\n{BATCH_HINT}") from failure


# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_softmax(softmax: Callable, seed: int = 0, shape: tuple[int, ...] = (2, 3, 5)) -> None:
    """Check a numerically stable softmax(scores, dim=-1) against torch.softmax and closed-form values."""
    scores = 3 * seeded_randn(*shape, seed=seed)  # (*shape)
    for dim in (-1, 0, 1):
        _check_softmax_values(softmax, scores, dim)

    log_of_1_to_4 = torch.log(torch.tensor([[1.0, 2.0, 3.0, 4.0]]))  # (1, 4)
    weights = call_learner(softmax, log_of_1_to_4, dim=-1, call="softmax(log([[1, 2, 3, 4]]), dim=-1)")
    expect_close(weights, torch.tensor([[0.1, 0.2, 0.3, 0.4]]), "softmax(log([[1, 2, 3, 4]]))")

    _check_softmax_large_scores(softmax)

    scores64 = seeded_randn(3, 4, seed=seed + 1, dtype=torch.float64)  # (3, 4)
    call = "softmax(scores, dim=-1) on float64 scores"
    weights64 = call_learner(softmax, scores64, dim=-1, call=call)
    expect_tensor(weights64, "softmax", scores64.shape, torch.float64)
    passed("softmax", "matches torch.softmax along every dim, stays finite for scores of ±1000")


def _check_softmax_values(softmax: Callable, scores: torch.Tensor, dim: int) -> None:
    call = f"softmax(scores, dim={dim}) with scores of shape {shape_of(scores)}"
    weights = call_learner(softmax, scores, dim=dim, call=call)
    expect_tensor(weights, "softmax", scores.shape, scores.dtype)
    if not rows_sum_to(weights, dim=dim):
        summed_axes = [axis for axis in range(scores.ndim) if rows_sum_to(weights, dim=axis)]
        if summed_axes:
            raise CheckFailed(
                f"{call}: your weights sum to 1 along dim {summed_axes[0]}, but they must sum to 1 along "
                f"dim={dim}, the `dim` argument. Use dim in both the maximum and the sum."
            )
        raise CheckFailed(
            f"{call}: the weights do not sum to 1 along dim={dim}. Divide the exponentials by their sum "
            "along the same dim (keepdim=True)."
        )
    expect_close(weights, torch.softmax(scores, dim=dim), f"{call}, compared with torch.softmax")


def _check_softmax_large_scores(softmax: Callable) -> None:
    # Rows of very different size in one tensor: a maximum over the whole tensor is not enough.
    large = torch.tensor([[1000.0, 0.0, -1000.0], [-1000.0, -1000.0, -1000.0], [1000.0, 1000.0, 999.0]])
    call = "softmax(scores, dim=-1) with scores of ±1000"
    weights = call_learner(softmax, large, dim=-1, call=call)
    expect_tensor(weights, "softmax", large.shape, large.dtype)
    if not torch.isfinite(weights).all():
        raise CheckFailed(
            f"{call} gives nan or inf: exp(1000) overflows float32 and exp(-1000) underflows to 0. Subtract "
            "the maximum of each row (along dim, keepdim=True), not of the whole tensor, before "
            "exponentiating; the result is mathematically the same."
        )
    expect_close(weights, torch.softmax(large, dim=-1), f"{call}, compared with torch.softmax")


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_attention_weights(attention_weights: Callable, seed: int = 0) -> None:
    """Check the (..., seq, seq) weights softmax_j(x_i · x_j) on one sequence, a batch and closed-form values."""
    with earlier_exercises_replaced(attention_weights, "softmax"):
        _check_weights_on(attention_weights, seeded_randn(5, 3, seed=seed))
        _on_batch(lambda: _check_weights_on(attention_weights, seeded_randn(2, 4, 5, 3, seed=seed + 1)))

        two_unit_vectors = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # (2, 2)
        weights = call_learner(attention_weights, two_unit_vectors, call="attention_weights([[1, 0], [0, 1]])")
        e = math.e
        expected = torch.tensor([[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]])
        expect_close(weights, expected, "attention_weights([[1, 0], [0, 1]]) (scores [[1, 0], [0, 1]])")
    passed("attention_weights", "rows sum to 1 over the keys and match softmax(x xᵀ), also for batches")


def _check_weights_on(attention_weights: Callable, x: torch.Tensor) -> None:
    *batch, seq, d = x.shape
    call = f"attention_weights(x) with x of shape {shape_of(x)} (seq={seq}, d={d})"
    weights = call_learner(attention_weights, x, call=call)
    if isinstance(weights, torch.Tensor) and tuple(weights.shape) == (*batch, d, d):
        raise CheckFailed(
            f"{call} returned shape {shape_of(weights)}, features × features: that is xᵀ x. The weights "
            "compare positions with positions, so they are x xᵀ, of shape (..., seq, seq)."
        )
    expect_tensor(weights, "attention_weights", (*batch, seq, seq), x.dtype)
    if not rows_sum_to(weights, dim=-1):
        if rows_sum_to(weights, dim=-2):
            raise CheckFailed(
                f"{call}: your weights sum to 1 over the queries axis (dim -2); each query's row must sum "
                "to 1 over the keys axis (dim -1). Apply softmax with dim=-1."
            )
        raise CheckFailed(
            f"{call}: the rows of your weights do not sum to 1. Turn the scores x_i · x_j into weights "
            "with softmax over the keys axis (dim=-1)."
        )
    expected = unscaled_self_attention(x)[1]
    scaled = unscaled_self_attention(x / d**0.25)[1]  # what dividing the scores by √d gives
    if torch.allclose(weights, scaled, atol=1e-5) and not torch.allclose(weights, expected, atol=1e-5):
        raise CheckFailed(
            f"{call}: you divided the scores by √d. In this notebook the weights come from the plain dot "
            "products x_i · x_j; the scaling arrives with queries and keys in notebook 02."
        )
    expect_close(weights, expected, f"{call}, compared with softmax(x xᵀ)")


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_self_attention(self_attention: Callable, seed: int = 0) -> None:
    """Check y = W x, each output a weighted average of all inputs, for one sequence and a batch."""
    with earlier_exercises_replaced(self_attention, "softmax", "attention_weights"):
        _check_outputs_on(self_attention, seeded_randn(5, 3, seed=seed))
        _on_batch(lambda: _check_outputs_on(self_attention, seeded_randn(2, 4, 5, 3, seed=seed + 1)))
    passed("self_attention", "every output is the weighted average of all inputs, also for batches")


def _check_outputs_on(self_attention: Callable, x: torch.Tensor) -> None:
    *batch, seq, d = x.shape
    call = f"self_attention(x) with x of shape {shape_of(x)} (seq={seq}, d={d})"
    outputs = call_learner(self_attention, x, call=call)
    if isinstance(outputs, tuple):
        raise CheckFailed(f"{call} returned a tuple; return only the outputs, a tensor of shape (..., seq, d).")
    if isinstance(outputs, torch.Tensor) and tuple(outputs.shape) == (*batch, seq, seq) and seq != d:
        raise CheckFailed(
            f"{call} returned shape {shape_of(outputs)}, the shape of the weights. Return the outputs "
            "weights @ x: one d-dimensional vector per position, shape (..., seq, d)."
        )
    expect_tensor(outputs, "self_attention", x.shape, x.dtype)
    expected, weights = unscaled_self_attention(x)  # (..., seq, d), (..., seq, seq)
    if torch.allclose(outputs, weights.mT @ x, atol=1e-5) and not torch.allclose(weights, weights.mT):
        raise CheckFailed(
            f"{call}: you used the transposed weights. Output i averages the inputs with row i of the "
            "weights: y = weights @ x."
        )
    lowest, highest = x.amin(dim=-2, keepdim=True), x.amax(dim=-2, keepdim=True)  # (..., 1, d)
    if (outputs < lowest - 1e-5).any() or (outputs > highest + 1e-5).any():
        raise CheckFailed(
            f"{call}: some outputs lie outside the range of the inputs, so they are not weighted averages. "
            "Multiply by the normalised weights (rows summing to 1), not by the raw scores."
        )
    expect_close(outputs, expected, f"{call}, compared with softmax(x xᵀ) x")


# Exercise 4 ---------------------------------------------------------------------------------------------


def running_sum(x: torch.Tensor) -> torch.Tensor:
    """A function that depends on the order of positions: y_i = x_1 + ... + x_i."""
    return x.cumsum(dim=-2)  # (..., seq, d)


@learner_facing
def check_equivariance_gap(equivariance_gap: Callable, seed: int = 0) -> None:
    """Check the gap max |f(x[perm]) - f(x)[perm]| on hand-worked values and on self-attention."""
    # Worked by hand on the first feature: x = 4, 2, 1; x[perm] = 1, 4, 2 with running sum 1, 5, 7;
    # f(x) = 4, 6, 7, so f(x)[perm] = 7, 4, 6; differences -6, 1, 1; the largest absolute one is 6.
    x = torch.tensor([[4.0, 40.0, 400.0], [2.0, 20.0, 200.0], [1.0, 10.0, 100.0]])  # (seq 3, d 3)
    perm = torch.tensor([2, 0, 1])
    gap = _gap_of(equivariance_gap, running_sum, x, perm, "running_sum")
    if gap == 0:
        raise CheckFailed(
            "equivariance_gap(running_sum, x, perm) is 0, but a running sum over positions depends on their "
            "order. Reorder the positions (axis -2: x[..., perm, :]), not the features, in the input and "
            "in the output."
        )
    _expect_gap(
        gap,
        600.0,
        "equivariance_gap(running_sum, x, perm) with x = [[4, 40, 400], [2, 20, 200], [1, 10, 100]], perm = [2, 0, 1]",
    )

    batch = torch.stack([x, 2 * x])  # (batch 2, seq 3, d 3)
    _on_batch(
        lambda: _expect_gap(
            _gap_of(equivariance_gap, running_sum, batch, perm, "running_sum"),
            1200.0,
            "equivariance_gap(running_sum, x, perm) on a batch of the same x and 2x",
        )
    )

    # Drawn with the seed, so that no formula fitted to the worked example passes: the gap by its definition.
    drawn = 100 * seeded_randn(3, 5, 2, seed=seed + 1)  # (batch 3, seq 5, d 2)
    order = torch.randperm(5, generator=torch.Generator().manual_seed(seed + 1))
    expected = (running_sum(drawn[..., order, :]) - running_sum(drawn)[..., order, :]).abs().max().item()
    _on_batch(
        lambda: _expect_gap(
            _gap_of(equivariance_gap, running_sum, drawn, order, "running_sum"),
            expected,
            f"equivariance_gap(running_sum, x, perm) with x (3, 5, 2) and perm {order.tolist()} drawn at random",
        )
    )

    sequences = seeded_randn(2, 6, 4, seed=seed)  # (batch 2, seq 6, d 4)
    shuffle = torch.randperm(6, generator=torch.Generator().manual_seed(seed))

    def self_attention(x: torch.Tensor) -> torch.Tensor:
        return unscaled_self_attention(x)[0]  # (..., seq, d)

    gap = _gap_of(equivariance_gap, self_attention, sequences, shuffle, "self-attention")
    if not 0 <= gap < 1e-4:
        raise CheckFailed(
            f"equivariance_gap(self_attention, x, perm) is {gap:.3g} for a batch of shape (2, 6, 4), but "
            f"self-attention is permutation-equivariant, so the gap must be about 0.\n{BATCH_HINT}"
        )
    passed("equivariance_gap", "a running sum is not permutation-equivariant, self-attention is")


def _gap_of(equivariance_gap: Callable, f: Callable, x: torch.Tensor, perm: torch.Tensor, f_name: str) -> float:
    call = f"equivariance_gap({f_name}, x, perm) with x of shape {shape_of(x)}"
    gap = call_learner(equivariance_gap, f, x, perm, call=call)
    if isinstance(gap, torch.Tensor):
        if gap.numel() != 1:
            raise CheckFailed(
                f"{call} returned a tensor of shape {shape_of(gap)}; return one number, the largest absolute "
                "difference (for example with .abs().max())."
            )
        return gap.item()
    if not isinstance(gap, int | float):
        raise CheckFailed(f"{call} returned {type(gap).__name__}; return one number (a float).")
    return float(gap)


def _expect_gap(gap: float, expected: float, call: str) -> None:
    if gap < 0:
        raise CheckFailed(f"{call} is {gap:g}, a negative gap; take the absolute difference before the maximum.")
    if not math.isclose(gap, expected, rel_tol=1e-5):
        raise CheckFailed(
            f"{call}: expected {expected:g}, got {gap:g}. Compare f(x[..., perm, :]) with f(x)[..., perm, :]: "
            "the same permutation applied to the input before f and to the output after f, and return the "
            "largest absolute difference."
        )
