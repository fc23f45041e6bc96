"""Checks for notebook 01, self-attention as weighted averaging.

Oracles: ``torch.softmax``; ``F.scaled_dot_product_attention`` with ``scale=1`` (identity values give the
weights themselves); closed-form values worked out by hand.
"""

import math
import numbers
from collections.abc import Callable

import torch

from . import (
    TRUTH_VALUE_CRASH,
    CheckFailed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_tensor,
    learner_facing,
    matches,
    passed,
    pytorch_attention,
    rows_sum_to,
    seeded_randn,
    shape_of,
)
from .recordings import oracle

BATCH_HINT = (
    "It works on one sequence but not on a batch: the positions are always axis -2 and the features axis -1, "
    "whatever leading batch axes come first, so name the axes counted from the end."
)
MATRIX_HINT = (
    " Some operations are for 2-D matrices only: torch.mm and x.t() refuse more axes, an einsum operand written "
    "with two letters and no `...` fits exactly two axes, and x.T reverses all the axes, moving the batch axes too."
)
REORDER_HINT = " x[perm] reorders axis 0: on a batch that is the batch axis, not the positions."


@oracle
def unscaled_self_attention(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The oracle: (outputs, weights) of self-attention with the scores x xᵀ unscaled, from PyTorch's attention."""
    return pytorch_attention(x, x, x, mask=None, scale=1.0)  # (..., seq, d), (..., seq, seq)


def _named(message: str) -> CheckFailed:
    """A failure whose message names the mistake in full, batches included: _on_batch passes it on as it is."""
    failure = CheckFailed(message)
    failure.names_the_mistake = True
    return failure


def _on_batch(check: Callable[[], None], culprit: str) -> None:
    """Run a check on batched inputs, adding the usual batching hint, and its usual culprit, to its failure."""
    try:
        check()
    except CheckFailed as failure:
        if getattr(failure, "names_the_mistake", False):
            raise
        raise CheckFailed(f"{failure}\n{BATCH_HINT}{culprit}") from failure


# Exercise 1 ---------------------------------------------------------------------------------------------

# Large scores, one row per way to go wrong: a shift by anything but each row's own maximum gives nan in some row,
# and each of the shifts in SHIFTS gives nan in a different set of rows.
LARGE_SCORES = torch.tensor(
    [
        [1000.0, 0.0, -1000.0],
        [-1000.0, -1000.0, -1000.0],
        [100.0, 0.0, 0.0],
        [1000.0, 1000.0, 999.0],
        [-1000.0, -1000.0, 0.0],
    ]
)  # (5, 3)
LARGE_CALL = (
    "softmax(scores, dim=-1) with scores = [[1000, 0, -1000], [-1000, -1000, -1000], [100, 0, 0], "
    "[1000, 1000, 999], [-1000, -1000, 0]]"
)
SUBTRACT_THE_ROW_MAXIMUM = (
    "Subtract the maximum of each row (along dim, keepdim=True) before exponentiating: every shifted score is then "
    "at most 0, the largest exponential of each row is exp(0) = 1, and the softmax is unchanged."
)
# What each wrong shift does to LARGE_SCORES, in the learner's words (float32's largest number is about 3.4e38,
# so exp(s) is inf for s above about 88.7, and exp(s) is 0 for s below about -103).
SHIFTS = {
    "none": (
        "your weights are what exponentiating the scores without a shift gives: exp(1000) and exp(100) overflow "
        "float32 to inf (and inf / inf is nan), while every exponential of the row of -1000s underflows to 0 "
        "(and 0 / 0 is nan). " + SUBTRACT_THE_ROW_MAXIMUM
    ),
    "whole-tensor maximum": (
        "your weights are what subtracting the maximum of the whole tensor (1000) gives: the rows [-1000, -1000, "
        "-1000], [100, 0, 0] and [-1000, -1000, 0] lie far below it, all their exponentials underflow to 0, and "
        "each of them becomes 0 / 0 = nan. Subtract the maximum of each row (along dim, keepdim=True), not of the "
        "whole tensor: then every row has an exponential of exactly 1."
    ),
    "whole-tensor minimum": (
        "your weights are what subtracting the minimum of the whole tensor (-1000) gives: that raises every score "
        "by 1000, so the exponential of every score above about -911 overflows to inf (inf / inf is nan). "
        + SUBTRACT_THE_ROW_MAXIMUM
    ),
    "row minimum": (
        "your weights are what subtracting each row's minimum gives: the other scores of the row stay large and "
        "positive (the row [1000, 0, -1000] becomes [2000, 1000, 0]), so their exponentials overflow to inf "
        "(inf / inf is nan). Subtract the maximum instead: every shifted score is then at most 0, the largest "
        "exponential of each row is exp(0) = 1, and the softmax is unchanged."
    ),
    "row mean": (
        "your weights are what subtracting each row's mean gives: a score far above its row's mean still "
        "overflows (the row [1000, 0, -1000] has mean 0, and exp(1000) is inf). Subtract the maximum instead: "
        "every shifted score is then at most 0, the largest exponential of each row is exp(0) = 1, and the "
        "softmax is unchanged."
    ),
}


@oracle
def wrongly_shifted_softmaxes(scores: torch.Tensor) -> dict[str, torch.Tensor]:
    """What the softmax of ``scores`` along the last axis comes out as in float32 with each shift of SHIFTS."""
    shifts = {
        "none": torch.zeros(()),
        "whole-tensor maximum": scores.max(),
        "whole-tensor minimum": scores.min(),
        "row minimum": scores.amin(dim=-1, keepdim=True),
        "row mean": scores.mean(dim=-1, keepdim=True),
    }
    results = {}
    for name, shift in shifts.items():
        exps = torch.exp(scores - shift)  # may overflow to inf or underflow to 0: that is what is being shown
        results[name] = exps / exps.sum(dim=-1, keepdim=True)
    return results


# Scores that tell a shift by the position of each row's maximum (what max(dim)[1] holds) from no shift at all:
# exp(89.5) overflows float32, exp(89.5 - 3) does not, and the maximum of the second row is at position 0.
INDEX_PROBE = torch.tensor([[0.0, 0.0, 0.0, 89.5], [89.5, 0.0, 0.0, 0.0]])  # (2, 4)
INDEX_CALL = "softmax(scores, dim=-1) with scores = [[0, 0, 0, 89.5], [89.5, 0, 0, 0]]"
SHIFT_BY_INDICES = (
    "your weights are what subtracting the position of each row's maximum gives, not its value: "
    "scores.max(dim=dim) returns a pair (values, indices), and [1] is the indices. A shift by such a small number "
    "leaves exp(1000) overflowing to inf, so the weights are nan (inf / inf) on [1000, 0, -1000] as without a "
    "shift, and on [[0, 0, 0, 89.5], [89.5, 0, 0, 0]] only the second row, whose maximum is at position 0, "
    "overflows. Take the values, [0] or .values, or use torch.amax."
)


@oracle
def softmax_shifted_by_indices(scores: torch.Tensor) -> torch.Tensor:
    """The float32 softmax along the last axis of ``scores`` shifted by the position of each row's maximum."""
    exps = torch.exp(scores - scores.argmax(dim=-1, keepdim=True))  # may overflow: that is what is being shown
    return exps / exps.sum(dim=-1, keepdim=True)


@oracle
def softmax_with_the_maximum_of_the_last_axis(scores: torch.Tensor, dim: int) -> torch.Tensor:
    """The softmax along ``dim`` of ``scores`` shifted by the maximum along the last axis, not along dim."""
    exps = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@oracle
def softmax_with_the_maximum_of_each_slice(scores: torch.Tensor, dim: int) -> torch.Tensor:
    """The softmax along ``dim`` of ``scores`` shifted by the maximum of each slice scores[i] of the first axis."""
    exps = torch.exp(scores - scores.amax(dim=tuple(range(1, scores.ndim)), keepdim=True))
    return exps / exps.sum(dim=dim, keepdim=True)


@learner_facing
def check_softmax(softmax: Callable, seed: int = 0, shape: tuple[int, ...] = (2, 3, 5)) -> None:
    """Check a numerically stable softmax(scores, dim=-1) against torch.softmax and closed-form values."""
    scores = 3 * seeded_randn(*shape, seed=seed)  # (*shape)
    for dim in (-1, 0, 1):
        _check_softmax_values(softmax, scores, dim)

    _check_default_dim(softmax)

    _check_softmax_large_scores(softmax)

    scores64 = seeded_randn(3, 4, seed=seed + 1, dtype=torch.float64)  # (3, 4)
    weights64 = _call_softmax(softmax, scores64, -1, "softmax(scores, dim=-1) on float64 scores")
    expect_tensor(weights64, "softmax", scores64.shape, torch.float64)
    passed("softmax", "matches torch.softmax along every dim, stays finite for scores of ±1000")


def _call_softmax(softmax: Callable, scores: torch.Tensor, dim: int | None, call: str):
    """Call the learner's softmax, without a dim if ``dim`` is None; name the two crashes a softmax commonly has, a
    reduction that lost its axis and torch.max's (values, indices) pair used as a tensor."""
    try:
        if dim is None:
            return call_learner(softmax, scores, call=call)
        return call_learner(softmax, scores, dim=dim, call=call)
    except CheckFailed as failure:
        error = failure.__cause__
        if dim is not None and isinstance(error, RuntimeError) and "must match the size of tensor" in str(error):
            axis = dim % scores.ndim
            kept = [1 if i == axis else size for i, size in enumerate(scores.shape)]
            dropped = [size for i, size in enumerate(scores.shape) if i != axis]
            raise CheckFailed(
                f"{failure}\nPyTorch could not line up two shapes. In a softmax that usually means that the maximum "
                f"or the sum along dim does not have its axis where the scores have it. Along dim={dim}, scores of "
                f"shape {shape_of(scores)} reduce to shape {shape_of(kept)} with keepdim=True, which broadcasts "
                f"against the scores whatever dim is. Without keepdim=True the axis is gone, shape "
                f"{shape_of(dropped)}, and unsqueeze(-1) puts it back at the end, shape {shape_of([*dropped, 1])}, "
                "which is its place only for dim=-1."
            ) from error
        if isinstance(error, TypeError) and "torch.return_types." in str(error):
            raise CheckFailed(
                f"{failure}\ntorch.max and torch.min (and scores.max, scores.min) called with a dim return a pair, "
                "(values, indices), not a tensor: use the pair's .values, or torch.amax and torch.amin, which "
                "return the values only."
            ) from error
        raise


KEEP_THE_DEFAULT_DIM = (
    "Keep the stub's default, `dim: int = -1`: a call without dim, as in the cell after this check, must normalise "
    "along the last axis."
)


def _check_default_dim(softmax: Callable) -> None:
    """softmax(scores) without a dim normalises along the last axis, the stub's default."""
    scores = torch.log(torch.tensor([[1.0, 2.0, 3.0, 4.0]]))  # (1, 4): the softmax along the last axis is 0.1 .. 0.4
    call = "softmax(scores) without dim, with scores = log([[1, 2, 3, 4]])"
    try:
        weights = _call_softmax(softmax, scores, None, call)
    except CheckFailed as failure:
        error = failure.__cause__
        if isinstance(error, TypeError) and "missing" in str(error) and "'dim'" in str(error):
            raise CheckFailed(f"{failure}\nsoftmax must work without a dim too. {KEEP_THE_DEFAULT_DIM}") from error
        raise
    expect_tensor(weights, "softmax", scores.shape, scores.dtype)
    if torch.allclose(weights, torch.ones_like(scores)):  # the softmax along dim 0, where each column has one score
        raise CheckFailed(
            f"{call} gives [[1, 1, 1, 1]], where the last axis gives [[0.1, 0.2, 0.3, 0.4]]: your weights sum to 1 "
            f"along dim 0, so your default dim is not the last axis. {KEEP_THE_DEFAULT_DIM}"
        )
    expect_close(weights, torch.tensor([[0.1, 0.2, 0.3, 0.4]]), call)


def _check_softmax_values(softmax: Callable, scores: torch.Tensor, dim: int) -> None:
    call = f"softmax(scores, dim={dim}) with scores of shape {shape_of(scores)}"
    weights = _call_softmax(softmax, scores, dim, call)
    _name_swapped_axes(weights, scores, dim, call)
    expect_tensor(weights, "softmax", scores.shape, scores.dtype)
    if not rows_sum_to(weights, dim=dim):
        summed_axes = [axis for axis in range(scores.ndim) if rows_sum_to(weights, dim=axis)]
        if summed_axes:
            counted_from_the_end = (
                f" A negative dim counts from the end: for scores with {scores.ndim} axes, dim={dim} is axis "
                f"{dim % scores.ndim}, and PyTorch's reductions take a negative dim as it is."
                if dim < 0
                else ""
            )
            raise CheckFailed(
                f"{call}: your weights sum to 1 along dim {summed_axes[0]}, but they must sum to 1 along "
                f"dim={dim}, the `dim` argument.{counted_from_the_end} Take both the maximum and the sum along "
                "that axis."
            )
        if rows_sum_to(weights.exp(), dim=dim):
            raise CheckFailed(
                f"{call}: your results are the logarithms of the softmax (a log-softmax): their exponentials sum "
                f"to 1 along dim={dim}, and none of them is above 0. Return the weights themselves: the "
                "exponentials of the shifted scores divided by their sum."
            )
        raise CheckFailed(
            f"{call}: the weights do not sum to 1 along dim={dim}. Divide the exponentials by their sum "
            "along the same dim (keepdim=True)."
        )
    if dim % scores.ndim != scores.ndim - 1 and torch.allclose(
        weights, softmax_with_the_maximum_of_the_last_axis(scores, dim), atol=1e-5
    ):
        raise CheckFailed(
            f"{call}: you subtracted the maximum along the last axis but summed along dim={dim}. The shift cancels "
            "only if it is the same number for every entry that is summed together: take the maximum along dim "
            "too (keepdim=True)."
        )
    if (
        scores.ndim > 2
        and dim % scores.ndim == 0
        and torch.allclose(weights, softmax_with_the_maximum_of_each_slice(scores, dim), atol=1e-5)
    ):
        raise CheckFailed(
            f"{call}: you subtracted one maximum per slice scores[i] of the first axis, but along dim={dim} the "
            "entries of different slices are summed together. (A loop `for row in scores` walks over the first "
            f"axis: on scores of shape {shape_of(scores)} each `row` is a {shape_of(scores.shape[1:])} slice, not "
            "a row.) The shift cancels only if it is the same number for every entry that is summed together: take "
            "the maximum along dim (keepdim=True)."
        )
    try:
        expect_close(weights, torch.softmax(scores, dim=dim), f"{call}, compared with torch.softmax")
    except CheckFailed as failure:
        if torch.allclose(weights, torch.softmax(scores / scores.amax(dim=dim, keepdim=True), dim=dim), atol=1e-5):
            raise CheckFailed(
                f"{failure}\nYou divided the scores by their maximum; subtract it instead. Subtracting one number "
                "from every score of a row leaves the softmax unchanged (the factor exp(-maximum) cancels between "
                "the exponentials and their sum); dividing the scores changes the weights."
            ) from failure
        raise CheckFailed(
            f"{failure}\nYour weights sum to 1 along dim={dim} but are not the softmax of the scores: each weight "
            "is exp(score) divided by the sum of exp(score) along dim. Subtracting one number from every score of "
            "a row leaves that unchanged; leaving out exp, or dividing, scaling or otherwise changing the scores "
            "before exp, changes the weights."
        ) from failure


def _name_swapped_axes(weights, scores: torch.Tensor, dim: int, call: str) -> None:
    """Fail with what it is if the weights are the softmax along dim with that axis moved to the end."""
    if not isinstance(weights, torch.Tensor) or weights.shape == scores.shape:
        return
    correct = torch.softmax(scores, dim=dim)
    for moved, how in ((correct.transpose(dim, -1), "swapped"), (correct.movedim(dim, -1), "moved")):
        if matches(weights, moved):
            raise CheckFailed(
                f"{call} returned shape {shape_of(weights)}, not the shape of the scores: your weights are the "
                f"softmax along dim={dim}, with that axis {how} to the end and never put back. Move it back before "
                "returning (the same operation, reversed), or take the maximum and the sum along dim directly, "
                "which needs no moving at all."
            )


def _shifts_by_indices(softmax: Callable) -> bool:
    """Whether the learner's softmax behaves on INDEX_PROBE as a shift by the positions of the row maxima does."""
    try:
        weights = _call_softmax(softmax, INDEX_PROBE.clone(), -1, INDEX_CALL)
    except CheckFailed:
        return False
    expected = softmax_shifted_by_indices(INDEX_PROBE)
    return isinstance(weights, torch.Tensor) and torch.allclose(weights, expected, atol=1e-5, equal_nan=True)


def _check_softmax_large_scores(softmax: Callable) -> None:
    weights = _call_softmax(softmax, LARGE_SCORES, -1, LARGE_CALL)
    expect_tensor(weights, "softmax", LARGE_SCORES.shape, LARGE_SCORES.dtype)
    if not torch.isfinite(weights).all():
        for shift, result in wrongly_shifted_softmaxes(LARGE_SCORES).items():
            if torch.allclose(weights, result, atol=1e-5, equal_nan=True):
                if shift == "none" and _shifts_by_indices(softmax):
                    raise CheckFailed(f"{LARGE_CALL} gives nan or inf: {SHIFT_BY_INDICES}")
                raise CheckFailed(f"{LARGE_CALL} gives nan or inf: {SHIFTS[shift]}")
        raise CheckFailed(
            f"{LARGE_CALL} gives nan or inf: an exponential overflowed to inf (in float32, exp of a number above "
            "about 88.7 does) or all the exponentials of a row underflowed to 0 (0 / 0 is nan). "
            + SUBTRACT_THE_ROW_MAXIMUM
        )
    try:
        expect_close(weights, torch.softmax(LARGE_SCORES, dim=-1), f"{LARGE_CALL}, compared with torch.softmax")
    except CheckFailed as failure:
        raise CheckFailed(
            f"{failure}\nYour softmax matches torch.softmax for moderate scores but not for these large ones. "
            "Subtracting one number from every score of a row leaves the softmax unchanged; anything else done to "
            "large scores (clipping them to a range, for example) changes the weights."
        ) from failure


# Exercise 2 ---------------------------------------------------------------------------------------------


@oracle
def weights_with_x_reshaped_for_its_transpose(x: torch.Tensor) -> torch.Tensor:
    """softmax(x @ x.reshape(..., d, seq)) over the last axis: the weights when reshape stands in for a transpose."""
    *batch, seq, d = x.shape
    return torch.softmax(x @ x.reshape(*batch, d, seq), dim=-1)  # (..., seq, seq)


@learner_facing
def check_attention_weights(attention_weights: Callable, seed: int = 0) -> None:
    """Check the (..., seq, seq) weights softmax_j(x_i · x_j) on one sequence, a batch and closed-form values."""
    with earlier_exercises_replaced(attention_weights, "softmax"):
        try:
            _check_weights_on(attention_weights, seeded_randn(5, 3, seed=seed))
        except CheckFailed as failure:
            if failure.__cause__ is not None:  # it crashed on one sequence: does it work on a batch of them?
                _expect_crash_of_one_batch_axis(lambda x: _check_weights_on(attention_weights, x), failure, seed)
            raise
        _on_batch(lambda: _check_weights_on(attention_weights, seeded_randn(2, 4, 5, 3, seed=seed + 1)), MATRIX_HINT)

        two_unit_vectors = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # (2, 2)
        weights = call_learner(attention_weights, two_unit_vectors, call="attention_weights([[1, 0], [0, 1]])")
        e = math.e
        expected = torch.tensor([[e / (e + 1), 1 / (e + 1)], [1 / (e + 1), e / (e + 1)]])
        expect_close(weights, expected, "attention_weights([[1, 0], [0, 1]]) (scores [[1, 0], [0, 1]])")
    passed("attention_weights", "rows sum to 1 over the keys and match softmax(x xᵀ), also for batches")


ONE_BATCH_AXIS = (
    "Yet it works on a batch {shape}: your code works only with exactly one batch axis in front. Count the axes "
    "from the end (-2 for the positions, -1 for the features), so that a single sequence (seq, d) works too; "
    "torch.bmm, for one, takes 3-D tensors only."
)
A_BATCH_AXIS_NEEDED = (
    "Yet it works on batches {shape} and {deeper}: your code needs at least one batch axis in front, and a single "
    "sequence (seq, d) has none. Count the axes from the end (-2 for the positions, -1 for the features), so that "
    "a single sequence works too; a loop `for s in x`, for one, walks over the first axis, which on a single "
    "sequence is the positions, so that each s is one vector."
)


def _expect_crash_of_one_batch_axis(check_on: Callable, failure: CheckFailed, seed: int) -> None:
    """After a crash on a single sequence, fail with what it is if the same code is right on a 3-D batch
    (``check_on(x)`` checks the learner's code on x): code for exactly one batch axis, or for at least one."""
    batch = seeded_randn(2, 5, 3, seed=seed + 2)  # (batch 2, seq 5, d 3)
    try:
        check_on(batch)
    except CheckFailed:
        return
    deeper = seeded_randn(2, 2, 5, 3, seed=seed + 3)  # (2, batch 2, seq 5, d 3)
    try:
        check_on(deeper)
    except CheckFailed:
        raise CheckFailed(f"{failure}\n{ONE_BATCH_AXIS.format(shape=shape_of(batch))}") from failure.__cause__
    needed = A_BATCH_AXIS_NEEDED.format(shape=shape_of(batch), deeper=shape_of(deeper))
    raise CheckFailed(f"{failure}\n{needed}") from failure.__cause__


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
        for axis in range(len(batch)):
            if rows_sum_to(weights, dim=axis):
                raise _named(
                    f"{call}: your weights sum to 1 along axis {axis} of the scores, shape {shape_of(weights)}, "
                    f"a batch axis, not the keys axis (the last). A dim counted from the front, such as dim={axis}, "
                    "names another axis as soon as batch axes come in front (on one sequence the scores have two "
                    "axes, and dim=1 is the last); count from the end, dim=-1, to name the keys axis for a "
                    "sequence and for any batch."
                )
        raise CheckFailed(
            f"{call}: the rows of your weights do not sum to 1. Turn the scores x_i · x_j into weights "
            "with softmax over the keys axis (dim=-1)."
        )
    expected = unscaled_self_attention(x)[1]
    if seq != d and torch.allclose(weights, weights_with_x_reshaped_for_its_transpose(x), atol=1e-5):
        raise CheckFailed(
            f"{call}: your scores are x @ x.reshape(..., {d}, {seq}), not x xᵀ. reshape (and view) regroups the "
            "entries in the order they lie in memory, so it gives the right shape without swapping any axes: "
            "row i of the result is not the vector x_i. Swap the last two axes with a transpose instead "
            "(torch.transpose or .mT)."
        )
    scalings = {  # what dividing the scores by each gives: x / c**0.5 has the dot products x_i · x_j / c
        "√d": unscaled_self_attention(x / d**0.25)[1],
        f"d = {d}": unscaled_self_attention(x / d**0.5)[1],
    }
    for divisor, scaled in scalings.items():
        if torch.allclose(weights, scaled, atol=1e-5) and not torch.allclose(weights, expected, atol=1e-5):
            raise CheckFailed(
                f"{call}: you divided the scores by {divisor}. In this notebook the weights come from the plain "
                "dot products x_i · x_j, with no scaling; scaling arrives with queries and keys in notebook 02."
            )
    try:
        expect_close(weights, expected, f"{call}, compared with softmax(x xᵀ)")
    except CheckFailed as failure:
        raise CheckFailed(
            f"{failure}\nYour rows sum to 1, but they are not the softmax of the plain dot products x_i · x_j: "
            "take the scores as they are, with no scaling or other change, and the softmax over the keys (dim=-1)."
        ) from failure


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_self_attention(self_attention: Callable, seed: int = 0) -> None:
    """Check y = W x, each output a weighted average of all inputs, for one sequence and a batch."""
    with earlier_exercises_replaced(self_attention, "softmax", "attention_weights"):
        try:
            _check_outputs_on(self_attention, seeded_randn(5, 3, seed=seed))
        except CheckFailed as failure:
            if failure.__cause__ is not None:  # it crashed on one sequence: does it work on a batch of them?
                _expect_crash_of_one_batch_axis(lambda x: _check_outputs_on(self_attention, x), failure, seed)
            raise
        _on_batch(lambda: _check_outputs_on(self_attention, seeded_randn(2, 4, 5, 3, seed=seed + 1)), MATRIX_HINT)
        try:  # other sizes, so that sizes written into the code as numbers do not pass
            _check_outputs_on(self_attention, seeded_randn(3, 7, 2, seed=seed + 3))
        except CheckFailed as failure:
            raise CheckFailed(f"{failure}\n{OTHER_SIZES}") from failure.__cause__
    passed("self_attention", "every output is the weighted average of all inputs, also for batches")


OTHER_SIZES = (
    "Your code is right for sequences of 5 positions with 3 features, one alone and a batch (2, 4, 5, 3) of them, "
    "but not for this batch of sequences of 7 positions with 2 features. Is a size written into it as a number, "
    "as in reshape(-1, 5, 3) or range(5)? Take every size from x.shape, so that the code fits any sentence."
)


def _check_outputs_on(self_attention: Callable, x: torch.Tensor) -> None:
    *batch, seq, d = x.shape
    call = f"self_attention(x) with x of shape {shape_of(x)} (seq={seq}, d={d})"
    try:
        outputs = call_learner(self_attention, x, call=call)
    except CheckFailed as failure:
        if isinstance(failure.__cause__, RuntimeError):
            _name_product_crash(self_attention, failure)
        raise
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
    if torch.allclose(outputs, expected / seq, atol=1e-6) and not torch.allclose(outputs, expected, atol=1e-5):
        raise CheckFailed(
            f"{call}: your outputs are the weighted averages divided by seq={seq}. The rows of the weights already "
            "sum to 1, so weights @ x is the average; dividing by n averages twice."
        )
    for computed, mistake in _outputs_of_slips(x, expected, weights):
        if matches(outputs, computed) and not torch.allclose(outputs, expected, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}")
    lowest, highest = x.amin(dim=-2, keepdim=True), x.amax(dim=-2, keepdim=True)  # (..., 1, d)
    if (outputs < lowest - 1e-5).any() or (outputs > highest + 1e-5).any():
        raise CheckFailed(
            f"{call}: some outputs lie outside the range of the inputs, so they are not weighted averages of "
            f"them. {EACH_OUTPUT}"
        )
    try:
        expect_close(outputs, expected, f"{call}, compared with softmax(x xᵀ) x")
    except CheckFailed as failure:
        raise CheckFailed(f"{failure}\n{EACH_OUTPUT}") from failure


EACH_OUTPUT = (
    "Each output must be weights @ x, with the weights of attention_weights(x) (rows summing to 1), and nothing added."
)


def _outputs_of_slips(x: torch.Tensor, expected: torch.Tensor, weights: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
    """What common slips make of self-attention's outputs on x, each with its mistake in the learner's words.
    ``expected`` and ``weights`` are the oracle's outputs and weights on x."""
    scores = x @ x.mT  # (..., seq, seq), not normalised
    seq = x.shape[-2]
    return [
        (
            expected + x,
            "your outputs are the weighted averages plus x itself: that is a residual connection, which "
            "comes in notebook 06. Self-attention alone returns weights @ x.",
        ),
        (
            weights.sum(dim=-2).unsqueeze(-1) * x,
            "your output j is x_j times the total weight that all the queries "
            "give key j (the sum of column j of the weights): the sum ran over the queries. Output i sums over the "
            "keys j, y_i = Σ_j w_ij x_j, which is the matrix product weights @ x.",
        ),
        (
            scores @ x,
            "your outputs are the raw scores x xᵀ times x, so they are not weighted averages. Multiply by "
            "the normalised weights (rows summing to 1), not by the raw scores.",
        ),
        (
            scores.exp() @ x,
            "your outputs are the exponentials of the scores times x, not divided by their sums, so "
            "they are not weighted averages. Multiply by the normalised weights (rows summing to 1).",
        ),
        (
            x.mean(dim=-2, keepdim=True).expand_as(x),
            "every output is the plain mean of the inputs: those are the uniform weights 1/n "
            f"(here 1/{seq}) of section 2. Self-attention averages with the weights of attention_weights(x), "
            "a different row for each position.",
        ),
    ]


# Products that crash on x (seq, d) with seq ≠ d and run when seq = d, what they compute then, and their mistake.
WRONG_PRODUCTS = {
    "x @ weights": "the weights come first: (seq, seq) @ (seq, d) gives one d-dimensional output per position, "
    "y = weights @ x",
    "weights * x": "`*` multiplies entry by entry; the weighted sum is a matrix product, weights @ x",
    "weights @ x.mT": "x.mT, of shape (d, seq), has the axes of x swapped; the weights (seq, seq) multiply x itself, "
    "(seq, d), so that each output is a d-dimensional vector",
    "(weights * x[..., None, :, :]).sum(-2)": "`*` lines up the shapes from the last axis, so the keys axis of the "
    "weights (their last) met the features axis of x, not its positions. For the products w_ij x_j the weights "
    "need an axis of their own for the features, weights[..., None] of shape (..., seq, seq, 1), before the sum "
    "over the keys j (dim=-2); the matrix product weights @ x does both in one step",
}


@oracle
def wrong_products(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """What each product of WRONG_PRODUCTS gives on a square x (seq = d), with the weights softmax(x xᵀ)."""
    weights = unscaled_self_attention(x)[1]  # (..., seq, seq)
    return {
        "x @ weights": x @ weights,
        "weights * x": weights * x,
        "weights @ x.mT": weights @ x.mT,
        "(weights * x[..., None, :, :]).sum(-2)": (weights * x[..., None, :, :]).sum(-2),
    }


def _name_product_crash(self_attention: Callable, failure: CheckFailed) -> None:
    """A crash on shapes: on a square x, where the shapes fit anyway, see which wrong product the code computes."""
    square = seeded_randn(4, 4, seed=7)  # (seq 4, d 4)
    try:
        outputs = call_learner(self_attention, square, call="self_attention(x) with x of shape (4, 4)")
    except CheckFailed:
        return
    for product, result in wrong_products(square).items():
        if isinstance(outputs, torch.Tensor) and outputs.shape == result.shape and matches(outputs, result):
            raise CheckFailed(
                f"{failure}\nOn a square x, where the shapes happen to fit, your code computes {product}: "
                f"{WRONG_PRODUCTS[product]}."
            ) from failure.__cause__


# Exercise 4 ---------------------------------------------------------------------------------------------


def running_sum(x: torch.Tensor) -> torch.Tensor:
    """A function that depends on the order of positions: y_i = x_1 + ... + x_i."""
    return x.cumsum(dim=-2)  # (..., seq, d)


# What common slips make of the gap, by the name running_sum_gaps gives them, in the learner's words.
GAP_MISTAKES = {
    "one side reordered": "you reordered the positions on one side only; reorder them on both sides, the input "
    "before f and the output f(x) after it, with the same perm",
    "inverse permutation": "you reordered the output by the inverse permutation (argsort of perm); reorder the "
    "input and the output by the same perm",
    "signed maximum": "you took the largest signed difference; take the absolute value of every difference, then "
    "the largest of them",
    "mean": "you averaged the absolute differences; the gap is the largest of them, not their mean",
    "norm": "you took the norm of all the differences; the gap is the largest absolute difference, not a norm",
    "sum": "you added up the absolute differences; the gap is the largest of them, not their sum",
    "relative": "you divided by the largest absolute value of f(x); the gap is the largest absolute difference "
    "itself, not relative to the size of f(x)",
    "difference of maxima": "you compared the largest entry of each side, and a maximum says nothing about where "
    "each value stands; take the differences entry by entry first, then the largest absolute one",
}


@oracle
def running_sum_gaps(x: torch.Tensor, perm: torch.Tensor) -> dict[str, float]:
    """The equivariance gap of running_sum at (x, perm) under "gap", and what each slip of GAP_MISTAKES gives."""
    reordered_first = running_sum(x[..., perm, :])  # (..., seq, d)
    differences = reordered_first - running_sum(x)[..., perm, :]  # (..., seq, d)
    return {
        "gap": differences.abs().max().item(),
        "one side reordered": (reordered_first - running_sum(x)).abs().max().item(),
        "inverse permutation": (reordered_first - running_sum(x)[..., perm.argsort(), :]).abs().max().item(),
        "signed maximum": differences.max().item(),
        "mean": differences.abs().mean().item(),
        "norm": differences.norm().item(),
        "sum": differences.abs().sum().item(),
        "relative": (differences.abs().max() / running_sum(x).abs().max()).item(),
        "difference of maxima": abs(reordered_first.max() - running_sum(x)[..., perm, :].max()).item(),
    }


@learner_facing
def check_equivariance_gap(equivariance_gap: Callable, seed: int = 0) -> None:
    """Check the gap max |f(x[perm]) - f(x)[perm]| on hand-worked values and on self-attention."""
    # Worked by hand on the first feature: x = 4, 2, 1; x[perm] = 1, 4, 2 with running sum 1, 5, 7;
    # f(x) = 4, 6, 7, so f(x)[perm] = 7, 4, 6; differences -6, 1, 1; the largest absolute one is 6.
    x = torch.tensor([[4.0, 40.0, 400.0], [2.0, 20.0, 200.0], [1.0, 10.0, 100.0]])  # (seq 3, d 3)
    perm = torch.tensor([2, 0, 1])
    gap = _gap_of(equivariance_gap, running_sum, x, perm, "running_sum")
    if gap == 0:
        _name_a_gap_of_0(equivariance_gap, perm)
    worked_call = (
        "equivariance_gap(running_sum, x, perm) with x = [[4, 40, 400], [2, 20, 200], [1, 10, 100]], perm = [2, 0, 1]"
    )
    _expect_gap(gap, 600.0, worked_call, slips=running_sum_gaps(x, perm))

    batch = torch.stack([x, 2 * x])  # (batch 2, seq 3, d 3): the gap of 2x is twice that of x, 1200
    _on_batch(
        lambda: _expect_batch_gap(_gap_of(equivariance_gap, running_sum, batch, perm, "running_sum")), REORDER_HINT
    )

    # Drawn with the seed, so that no formula fitted to the worked example passes: the gap by its definition.
    drawn = 100 * seeded_randn(3, 5, 2, seed=seed + 1)  # (batch 3, seq 5, d 2)
    order = torch.randperm(5, generator=torch.Generator().manual_seed(seed + 1))
    _expect_gap(
        _gap_of(equivariance_gap, running_sum, drawn, order, "running_sum"),
        running_sum_gaps(drawn, order)["gap"],
        f"equivariance_gap(running_sum, x, perm) with x (3, 5, 2) and perm {order.tolist()} drawn at random",
    )

    sequences = seeded_randn(2, 6, 4, seed=seed)  # (batch 2, seq 6, d 4)
    shuffle = torch.randperm(6, generator=torch.Generator().manual_seed(seed))

    def self_attention(x: torch.Tensor) -> torch.Tensor:
        return unscaled_self_attention(x)[0]  # (..., seq, d)

    gap = _gap_of(equivariance_gap, self_attention, sequences, shuffle, "self-attention")
    if not 0 <= gap < 1e-4:
        raise CheckFailed(
            f"equivariance_gap(self_attention, x, perm) is {gap:.3g} for a batch of shape (2, 6, 4), but "
            "self-attention is permutation-equivariant, so the gap must be about 0 (up to rounding)."
        )
    _expect_small_gap(equivariance_gap, seed)
    _expect_python_number(equivariance_gap, x, perm, worked_call)
    passed("equivariance_gap", "a running sum is not permutation-equivariant, self-attention is")


SMALL_SCALE = 1e-5  # a running sum this small has a gap far below 1e-3 and far above rounding (float64)


def _expect_small_gap(equivariance_gap: Callable, seed: int) -> None:
    """Fail unless a small gap that is not 0 comes back as it is: a function that is almost, but not quite,
    permutation-equivariant (a running sum times 1e-5, in float64), drawn with the seed."""
    x = seeded_randn(2, 5, 3, seed=seed + 2, dtype=torch.float64)  # (batch 2, seq 5, d 3)
    order = torch.randperm(5, generator=torch.Generator().manual_seed(seed + 2))
    if torch.equal(order, torch.arange(5)):  # reordering nothing would give a gap of 0
        order = order.roll(1)

    def slightly_ordered(x: torch.Tensor) -> torch.Tensor:
        return SMALL_SCALE * running_sum(x)  # (..., seq, d)

    expected = SMALL_SCALE * running_sum_gaps(x, order)["gap"]
    call = (
        f"equivariance_gap(f, x, perm) with f(x) = {SMALL_SCALE:g} * running_sum(x), x (2, 5, 3) in float64 and "
        f"perm {order.tolist()} drawn at random"
    )
    gap = _gap_of(equivariance_gap, slightly_ordered, x, order, "f")
    if gap == 0:
        raise CheckFailed(
            f"{call}: expected {expected:.3g}, got 0. The gap is small, but a small gap is still a gap: f depends "
            "a little on the order, and only rounding errors (about 1e-7 in float32) may count as 0. Return the "
            "largest absolute difference as it is, without rounding small values to 0."
        )
    _expect_gap(gap, expected, call)


def _expect_python_number(equivariance_gap: Callable, x: torch.Tensor, perm: torch.Tensor, call: str) -> None:
    """Fail if the gap comes back as a tensor (of one element), where the docstring asks for a Python float."""
    gap = call_learner(equivariance_gap, running_sum, x, perm, call=call)
    if isinstance(gap, torch.Tensor):
        raise _named(
            f"{call} returned the right value, but as a tensor of shape {shape_of(gap)}, not a Python float as the "
            "docstring asks: the gap is one number, to print, compare or store. Take it out of the tensor with "
            ".item()."
        )


# The worked example with its middle row negated: the largest entry of each side then differs (500 and 400), so
# comparing the maxima no longer gives 0, while reordering the features, or nothing, still does.
SIGNED_PROBE = torch.tensor([[4.0, 40.0, 400.0], [-2.0, -20.0, -200.0], [1.0, 10.0, 100.0]])  # (seq 3, d 3)


def _name_a_gap_of_0(equivariance_gap: Callable, perm: torch.Tensor) -> None:
    """Fail with what a gap of 0 for the running sum on the worked example comes from, told apart by behaviour."""
    worked = "equivariance_gap(running_sum, x, perm) is 0, but a running sum over positions depends on their order"
    probe_gap = _gap_of(equivariance_gap, running_sum, SIGNED_PROBE, perm, "running_sum")
    if math.isclose(probe_gap, running_sum_gaps(SIGNED_PROBE, perm)["difference of maxima"], rel_tol=1e-5):
        raise CheckFailed(
            f"{worked}. On x = [[4, 40, 400], [2, 20, 200], [1, 10, 100]] both sides have the same largest entry "
            f"(700), and on the same x with its middle row negated your gap is {probe_gap:g}, the difference of "
            f"the two largest entries: {GAP_MISTAKES['difference of maxima']}."
        )
    raise CheckFailed(
        f"{worked}, so reordering the positions must change it. Reorder the positions (axis -2), not the "
        "features (axis -1): a running sum treats every feature alike, so reordering the features gives a gap of "
        "0, as does reordering nothing."
    )


def _gap_of(equivariance_gap: Callable, f: Callable, x: torch.Tensor, perm: torch.Tensor, f_name: str) -> float:
    call = f"equivariance_gap({f_name}, x, perm) with x of shape {shape_of(x)}"
    try:
        gap = call_learner(equivariance_gap, f, x, perm, call=call)
    except CheckFailed as failure:
        if isinstance(failure.__cause__, RuntimeError) and TRUTH_VALUE_CRASH in str(failure.__cause__):
            _name_a_truth_value_crash(equivariance_gap, failure)
        raise
    if isinstance(gap, torch.Tensor):
        if gap.numel() != 1:
            if x.ndim > 2 and tuple(gap.shape) == tuple(x.shape[:-2]):
                raise _named(
                    f"{call} returned a tensor of shape {shape_of(gap)}, one value per sequence of the batch; "
                    "return one number, the largest absolute difference over all entries, batch axes included."
                )
            raise _named(
                f"{call} returned a tensor of shape {shape_of(gap)}; return one number, the largest absolute "
                "difference over all entries."
            )
        return gap.item()
    if _is_values_and_indices(gap):
        raise _named(
            f"{call} returned the pair (values, indices) that .{type(gap).__name__}(dim=...) returns, not a "
            "number. Return one number, the largest absolute difference over all entries, as a Python number "
            "(.item())."
        )
    if not isinstance(gap, numbers.Real):  # a Python or a NumPy number
        raise _named(f"{call} returned {type(gap).__name__}; return one number (a float).")
    return float(gap)


def _is_values_and_indices(result) -> bool:
    """Whether ``result`` is a pair (values, indices) as torch.max with a dim returns it. By its attributes, not its
    type: graded, a learner's object reaches the check as a stand-in that keeps only its type's name."""
    try:
        return isinstance(result.values, torch.Tensor) and isinstance(result.indices, torch.Tensor)
    except Exception:
        return False


# The worked example of check_equivariance_gap, reduced to its first feature: with one number per row, Python's
# built-in max can compare rows; its gap, worked by hand there, is 6.
ONE_FEATURE = torch.tensor([[4.0], [2.0], [1.0]])  # (seq 3, d 1)


def _name_a_truth_value_crash(equivariance_gap: Callable, failure: CheckFailed) -> None:
    """A crash on the truth value of a tensor (call_learner says where such crashes come from): say so when the
    learner's code is right once every row holds one number, as with Python's built-in max."""
    try:
        gap = call_learner(
            equivariance_gap, running_sum, ONE_FEATURE, torch.tensor([2, 0, 1]), call="a gap with one feature"
        )
        right_with_one_feature = math.isclose(float(gap), 6.0, rel_tol=1e-5)
    except Exception:
        right_with_one_feature = False
    if right_with_one_feature:
        raise CheckFailed(
            f"{failure}\nOn the same x with one feature, [[4], [2], [1]], your gap is 6, the right one: there each row "
            "holds one number. Python's built-in max walks over the first axis and compares whole rows with `>`, "
            "which for rows of several numbers gives a tensor of True and False, not one answer. Use the tensor's "
            "own .max(), which takes the largest of all its entries."
        ) from failure.__cause__


def _expect_batch_gap(gap: float) -> None:
    """The gap on the batch of the worked example's x and 2x: 1200, that of 2x."""
    call = "equivariance_gap(running_sum, x, perm) on a batch of the same x and 2x"
    if math.isclose(gap, 600.0, rel_tol=1e-5):
        raise _named(
            f"{call}: expected 1200, got 600, the gap of the sequence x alone; the sequence 2x has the gap 1200. "
            "The gap is the largest absolute difference over the whole batch: every sequence, position and feature."
        )
    _expect_gap(gap, 1200.0, call)


def _expect_gap(gap: float, expected: float, call: str, slips: dict[str, float] | None = None) -> None:
    if gap < 0:
        raise CheckFailed(f"{call} is {gap:g}, a negative gap; take the absolute difference before the maximum.")
    if math.isclose(gap, expected, rel_tol=1e-5):
        return
    if gap != expected and gap in (math.floor(expected), round(expected)):
        raise CheckFailed(
            f"{call}: expected {expected:g}, got {gap:g}, the gap without its fraction: int(...) and round(...) "
            "keep a whole number only. Return the difference as it is, a float (.item())."
        )
    for slip, mistake in GAP_MISTAKES.items():
        if slips is not None and math.isclose(gap, slips[slip], rel_tol=1e-5):
            raise CheckFailed(f"{call}: expected {expected:g}, got {gap:g}: {mistake}.")
    raise CheckFailed(
        f"{call}: expected {expected:g}, got {gap:g}. Reorder the positions (axis -2) of the input by perm before "
        "f, reorder the positions of f(x) by the same perm after f, and return the largest absolute difference "
        "between the two."
    )
