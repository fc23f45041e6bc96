"""Checks for notebook 02, queries, keys and values: scaled dot-product attention.

Oracles: ``torch.distributions.Categorical(...).entropy()``; ``F.scaled_dot_product_attention`` (through
``pytorch_attention``), for the module with the check's own seeded W_Q, W_K, W_V, written into the learner's
projections and applied by ``F.linear`` (no bias); ``torch.autograd.gradcheck``; closed-form values.
"""

import itertools
import math
import re
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from . import (
    CheckFailed,
    NotImplementedYet,
    broadcast_shape,
    built_with_seed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_differentiable,
    expect_own_parameters,
    expect_pair,
    expect_tensor,
    learner_facing,
    matches,
    name_python_number_given_to_torch,
    passed,
    pytorch_attention,
    rows_sum_to,
    seeded_randn,
    shape_of,
)
from .masked_weights import expect_masked_weights

# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_attention_entropy(attention_entropy: Callable, seed: int = 0) -> None:
    """Check the entropy -Σ_j w_ij log w_ij of each row against closed forms and torch.distributions."""
    uniform = torch.full((2, 4), 0.25)  # (rows, keys)
    _expect_entropy(attention_entropy, uniform, torch.full((2,), math.log(4)), "uniform rows of 4 weights (0.25 each)")

    with_zeros = torch.tensor([[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])  # (2, 4)
    expected = torch.tensor([math.log(2), 0.0])  # (2,)
    _expect_entropy(attention_entropy, with_zeros, expected, "rows [0.5, 0.5, 0, 0] and [1, 0, 0, 0]")

    weights = torch.softmax(2 * seeded_randn(2, 3, 5, seed=seed), dim=-1)  # (2, 3, 5)
    expected = torch.distributions.Categorical(probs=weights).entropy()  # (2, 3)
    _expect_entropy(attention_entropy, weights, expected, "random weights of shape (2, 3, 5)")
    passed("attention_entropy", "one entropy per row, in nats, and 0 · log 0 counts as 0")


def _expect_entropy(attention_entropy: Callable, weights: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """Fail unless the learner's entropy of ``weights`` is ``expected``; name a wrong answer of a known form by its
    values on these weights."""
    call = f"attention_entropy(weights) for {what}"
    try:
        entropy = call_learner(attention_entropy, weights, call=call)
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        _name_tensor_given_to_math(failure, "torch.log or torch.special.xlogy")
        raise
    rows = weights.shape[:-1]
    if isinstance(entropy, torch.Tensor) and entropy.shape != rows:
        if entropy.shape == (*rows, 1):
            raise CheckFailed(f"{call} returned shape {shape_of(entropy)}: drop the summed axis (no keepdim).")
        if weights.dim() > 1 and entropy.shape == (*weights.shape[:-2], weights.shape[-1]):
            # Only the 3-D weights reach here with this shape: code that sums over dim=-2 fails on the 2-D ones.
            from_the_front = (
                " On the 2-D weights above, your sum ran over the keys: an axis counted from the front, such as dim=1, "
                "is the keys' axis only for 2-D weights. Count from the end, dim=-1."
                if weights.dim() > 2
                else ""
            )
            raise CheckFailed(
                f"{call} returned shape {shape_of(entropy)}, one number per key: you summed over the queries axis "
                f"(dim -2). Each row of weights, one query's, sums over the keys, the last axis: expected shape "
                f"{shape_of(rows)}.{from_the_front}"
            )
        if weights.dim() > 2 and matches(entropy, expected.flatten(1).sum(dim=-1)):
            raise CheckFailed(
                f"{call} returned shape {shape_of(entropy)}, one number per entry of the first axis, each the sum of "
                "the entropies of all its rows: a loop over a tensor goes over its first axis only, and each item "
                f"still holds many rows. Return one entropy per row, shape {shape_of(rows)}, summing over the keys "
                "(the last axis) only."
            )
        if entropy.dim() == 0 and matches(entropy, expected.mean()):
            raise CheckFailed(
                f"{call} returned a single number, the mean of the rows' entropies. Return one entropy per row, "
                f"shape {shape_of(rows)}: the experiment averages them itself."
            )
        if entropy.dim() == 0 and matches(entropy, expected.sum()):
            raise CheckFailed(
                f"{call} returned a single number, the sum of all the rows' entropies: the sum ran over all the "
                "weights at once. A sum without dim does that, and so does boolean indexing such as "
                "weights[weights > 0], which flattens the rows into one axis. Return one entropy per row, summing "
                f"over the keys (the last axis) only: expected shape {shape_of(rows)}. (For the zero weights, look up "
                "torch.special.xlogy or torch.where, which keep the shape.)"
            )
        if entropy.dim() == 0:
            raise CheckFailed(
                f"{call} returned a single number. Return one entropy per row, summing over the keys (the last axis) "
                f"only: expected shape {shape_of(rows)}."
            )
    expect_tensor(entropy, "attention_entropy", rows, weights.dtype)
    if torch.isnan(entropy).any() and (weights == 0).any():
        raise CheckFailed(
            f"{call} gives nan for a row with zero weights: log 0 = -inf and 0 · (-inf) = nan. A zero weight "
            "contributes 0 to the entropy (the limit of w log w as w → 0). Look up torch.special.xlogy, or skip "
            "the zeros with torch.where."
        )
    has_zeros = (weights == 0).any(dim=-1)  # (rows): rows where a term is 0 · log 0 = nan
    if has_zeros.any() and matches(entropy, torch.where(has_zeros, 0.0, expected)):
        raise CheckFailed(
            f"{call} gives 0 for every row with a zero weight, whatever its other weights: nan_to_num after the "
            "sum wipes the whole row, since one nan term makes the row's sum nan. Make each 0 · log 0 term 0 "
            "before summing (look up torch.special.xlogy, or use torch.where on the terms)."
        )
    got, want = entropy.flatten()[0].item(), expected.flatten()[0].item()
    first_row = f"{call} gives {got:.4g} for the first row, where the entropy is {want:.4g}"
    n_k = weights.shape[-1]
    proportional = [  # wrong answers that are the entropy times a constant
        (-1.0, "exactly its negative. H(w) = -Σ_j w_j log w_j: mind the minus sign (log w ≤ 0, so -w log w ≥ 0)"),
        (1 / math.log(2), "the entropy in bits: you used log base 2. Use the natural logarithm, so that it is in nats"),
        (1 / math.log(10), "you used log base 10. Use the natural logarithm, so that the entropy is in nats"),
        (1 / n_k, "the entropy divided by the number of keys: you averaged over the keys. Sum them"),
        (
            1 / math.log(n_k),
            f"the entropy divided by log n = log {n_k}, the entropy of uniform weights over the {n_k} keys: a "
            "normalised entropy, between 0 and 1. Return the entropy itself, in nats, without dividing; it is "
            "log n for uniform weights",
        ),
    ]
    for factor, mistake in proportional:
        if matches(entropy, factor * expected):
            raise CheckFailed(f"{first_row}: {mistake}.")
    if matches(entropy, -(weights * torch.log1p(weights)).sum(dim=-1)):
        raise CheckFailed(
            f"{first_row}: that is -Σ w log(1 + w). The logarithm is of w itself; adding 1 inside it changes every "
            "term, not only the zero weights. For a zero weight, the term is 0 (see the hint: look up "
            "torch.special.xlogy, or use torch.where)."
        )
    renormalised = -(weights * torch.log_softmax(weights, dim=-1)).sum(dim=-1)  # the entropy if the rows are uniform
    if matches(entropy, renormalised) and not matches(renormalised, expected):
        raise CheckFailed(
            f"{first_row}: that is -Σ w log softmax(w). The weights are probabilities already; log_softmax (or the "
            "log of a softmax) treats them as scores and normalises them once more. The logarithm is of the weights "
            "themselves."
        )
    softmaxed = torch.distributions.Categorical(probs=torch.softmax(weights, dim=-1)).entropy()
    if matches(entropy, softmaxed) and not matches(softmaxed, expected):
        raise CheckFailed(
            f"{first_row}: that is the entropy of softmax(w). The weights are probabilities already; a softmax "
            "treats them as scores and gives other, flatter probabilities: softmax([1, 0, 0, 0]) ≈ [0.48, 0.17, "
            "0.17, 0.17]. Take the entropy of the weights themselves."
        )
    if (entropy < -1e-6).any():
        raise CheckFailed(
            f"{first_row}, and some rows are negative: an entropy never is, since each term -w log w is ≥ 0 for "
            "0 ≤ w ≤ 1. Compare your formula, term by term, with H(w) = -Σ_j w_j log w_j, with the natural log."
        )
    if not torch.allclose(entropy, expected, atol=1e-5):
        _diagnose_small_weights(attention_entropy, weights, call)
        _diagnose_eps_in_the_log(attention_entropy, weights, entropy, first_row)
    expect_close(entropy, expected, call)


def _with_eps_in_the_log(weights: torch.Tensor, eps: float) -> torch.Tensor:
    """-Σ_j w_j log(w_j + eps) over the last axis, in float64: the entropy with a small number added in the log."""
    weights = weights.double()
    return -(weights * torch.log(weights + eps)).sum(dim=-1)


def _diagnose_eps_in_the_log(attention_entropy: Callable, weights: torch.Tensor, entropy, first_row: str) -> None:
    """Name -Σ w log(w + eps), whatever the eps: it lowers every row's entropy a little, not only where a weight is
    0. The eps that fits the first row is found by bisection; a call on other weights must fit it too."""
    if not (isinstance(entropy, torch.Tensor) and entropy.shape == weights.shape[:-1] and entropy.isfinite().all()):
        return
    row, got = weights.reshape(-1, weights.shape[-1])[0], entropy.flatten()[0].item()

    def first_row_with(eps: float) -> float:
        return _with_eps_in_the_log(row, eps).item()

    low, high = 1e-12, 1.0  # the row's value falls as eps grows: look for the eps that gives the learner's value
    if not first_row_with(high) < got < first_row_with(low):
        return
    for _ in range(100):
        middle = math.sqrt(low * high)
        low, high = (middle, high) if first_row_with(middle) > got else (low, middle)
    eps = math.sqrt(low * high)
    if not matches(entropy, _with_eps_in_the_log(weights, eps).to(weights.dtype)):
        return
    others = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.05, 0.15, 0.3, 0.5]], dtype=weights.dtype)  # (2, 4)
    probe = "attention_entropy(weights) for rows [0.1, 0.2, 0.3, 0.4] and [0.05, 0.15, 0.3, 0.5]"
    try:
        on_others = call_learner(attention_entropy, others, call=probe)
    except CheckFailed:
        return
    if matches(on_others, _with_eps_in_the_log(others, eps).to(others.dtype)):
        raise CheckFailed(
            f"{first_row}: that is -Σ w log(w + {eps:.2g}), here and for other weights ({probe}). The number added "
            "inside the log changes every term, not only those of the zero weights, so every row's entropy comes "
            "out a little low. Make only the zero weights' terms 0 (look up torch.special.xlogy, or use "
            "torch.where), or keep any eps far below every weight."
        )


def _diagnose_small_weights(attention_entropy: Callable, weights: torch.Tensor, call: str) -> None:
    """Name an entropy that is wrong only where some weights are small (a clamp or an eps in the log too large):
    the learner's function is right on rows whose weights are all large."""
    smallest = weights[weights > 0].min().item()
    if smallest >= 0.01:
        return
    large = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.05, 0.15, 0.3, 0.5]], dtype=weights.dtype)  # (2, 4)
    probe = "attention_entropy(weights) for rows [0.1, 0.2, 0.3, 0.4] and [0.05, 0.15, 0.3, 0.5]"
    try:
        entropy = call_learner(attention_entropy, large, call=probe)
    except CheckFailed:
        return
    if matches(entropy, torch.distributions.Categorical(probs=large).entropy()):
        raise CheckFailed(
            f"{call} is wrong, yet right for rows whose weights are all 0.05 or more ({probe}): the terms of the "
            f"small weights are off (the smallest here is {smallest:.2g}). A clamp, a threshold or an eps inside the "
            "log that is too large changes w log w for every small w, not only for w = 0. Make only the zero "
            "weights' terms 0 (look up torch.special.xlogy, or use torch.where), or keep any eps far below every "
            "weight."
        )


def _name_tensor_given_to_math(failure: CheckFailed, instead: str) -> None:
    """Name the crash of math.log(weights) or math.sqrt(tensor): Python's math module takes one number, and a
    tensor of many cannot be turned into one. (The reverse of name_python_number_given_to_torch.)"""
    cause = failure.__cause__
    if isinstance(cause, ValueError) and "only one element tensors can be converted to Python scalars" in str(cause):
        raise CheckFailed(
            f"{failure}\nThe cause: a tensor of many numbers was given where Python wants one number, as in "
            "math.log(tensor) or float(tensor). The functions of Python's math module take a single number; for a "
            f"tensor, use PyTorch's own ({instead})."
        ) from cause


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_scaled_dot_product_attention(scaled_dot_product_attention: Callable, seed: int = 0) -> None:
    """Check (outputs, weights) against PyTorch for batches, different query and key lengths, masks, and
    gradients with gradcheck."""
    q = seeded_randn(2, 3, 4, 8, seed=seed)  # (batch, heads, n_q=4, d_k=8)
    k = seeded_randn(2, 3, 6, 8, seed=seed + 1)  # (batch, heads, n_k=6, d_k=8)
    v = seeded_randn(2, 3, 6, 5, seed=seed + 2)  # (batch, heads, n_k=6, d_v=5)
    _check_attention_on(scaled_dot_product_attention, q, k, v, mask=None)

    mask = seeded_randn(4, 6, seed=seed + 3) > -0.5  # (n_q, n_k), broadcast over the batch
    mask[:, 0] = True  # every query may attend to at least one key (rows with none are notebook 04's)
    _check_attention_on(scaled_dot_product_attention, q, k, v, mask=mask)

    padding = seeded_randn(2, 1, 1, 6, seed=seed + 8) > -0.5  # (batch, 1, 1, n_k): the keys each sequence has
    padding[..., 0] = True
    try:
        _check_attention_on(scaled_dot_product_attention, q, k, v, mask=padding)
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        raise CheckFailed(
            f"{failure}\nYet it was right with the mask of shape {shape_of(mask)}: your code handles a mask of shape "
            f"(n_q, n_k) only. A mask may have batch axes too, any shape broadcastable to the scores' (..., n_q, "
            f"n_k), as this padding mask {shape_of(padding)}, which gives each sequence of the batch its own keys "
            "(notebook 04 builds such masks). Tensor.masked_fill and torch.where broadcast a mask as it is given, "
            "with no unsqueeze, view or reshape."
        ) from failure.__cause__

    _check_gradients(scaled_dot_product_attention, seed)
    passed(
        "scaled_dot_product_attention",
        "matches PyTorch's attention with and without masks, for any batch shape and d_k, and its gradients are right",
    )


def _check_attention_on(sdpa: Callable, q, k, v, mask) -> None:
    d_k, n_k = q.shape[-1], k.shape[-2]
    with_mask = "" if mask is None else f" and a mask of shape {shape_of(mask)}"
    dtype = "" if q.dtype == torch.float32 else f"{str(q.dtype).removeprefix('torch.')} "
    call = (
        f"scaled_dot_product_attention(q, k, v{', mask' if mask is not None else ''}) with {dtype}q {shape_of(q)}, "
        f"k {shape_of(k)}, v {shape_of(v)}{with_mask}"
    )
    args = (q, k, v) if mask is None else (q, k, v, mask)
    try:
        result = call_learner(sdpa, *args, call=call)
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        _name_truth_value_of_a_tensor(failure, "mask")
        name_python_number_given_to_torch(failure)
        _name_tensor_given_to_math(failure, "torch.exp, torch.sqrt and the others")
        _name_values_and_indices(failure)
        if mask is not None:
            _diagnose_mask_of_full_shape_only(sdpa, q, k, v, mask, failure)
        _diagnose_reduction_without_keepdim(sdpa, failure)
        _diagnose_batch_axes(sdpa, q, k, v, mask, str(failure), cause=failure.__cause__)
        if mask is not None:
            _diagnose_crash_with_the_mask_only(sdpa, q, k, v, mask, failure)
        raise
    outputs, weights = expect_pair(result, call)
    outputs_shape, weights_shape = (*q.shape[:-1], v.shape[-1]), (*q.shape[:-1], n_k)
    _expect_outputs_then_weights(outputs, weights, outputs_shape, weights_shape, call)
    expect_attention_tensor(weights, "weights", weights_shape, q.dtype, call)
    expect_attention_tensor(outputs, "outputs", outputs_shape, q.dtype, call)

    without_mask = "scaled_dot_product_attention(q, k, v) with the same q, k and v, no mask"
    if mask is not None:
        masked_fill = "(Tensor.masked_fill returns a new tensor and leaves the one it was called on as it was.)"
        _expect_mask_used(weights, lambda: call_learner(sdpa, q, k, v, call=without_mask), mask, call, masked_fill)
    _expect_no_nan(weights, mask, lambda: call_learner(sdpa, q, k, v, call=without_mask), call)
    scaled = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # the scores before any mask
    if mask is not None:
        _expect_no_negative_weights_where_masked(weights, mask, call)
        expect_masked_weights(weights, mask, call, scores=scaled)
    if not rows_sum_to(weights):
        if rows_sum_to(weights, 1 / math.sqrt(d_k)):
            raise CheckFailed(
                f"{call}: each row of weights sums to 1/√d_k: you scaled after the softmax. Scale the scores."
            )
        _diagnose_weights_not_softmaxed(q, k, v, mask, scaled, weights, call)
        _diagnose_softmax_axis(weights, call)
        raise CheckFailed(f"{call}: the rows of your weights do not sum to 1 over the keys.")
    _diagnose_scale(q, k, v, mask, weights, call)
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
    if not torch.allclose(weights, expected_weights, atol=1e-5):
        _diagnose_batch_axes(sdpa, q, k, v, mask, f"{call}: the weights differ from PyTorch's.", weights)
        multiple = _score_multiple(weights, expected_weights)
        if multiple is not None and not math.isclose(multiple, 1.0, rel_tol=1e-3):
            sizes = {*q.shape, *k.shape, *v.shape}
            raise CheckFailed(f"{call}: {_scores_divided_by(math.sqrt(d_k) / multiple, d_k, sizes)}")
    expect_close(weights, expected_weights, f"{call}: the weights, compared with PyTorch's")
    expect_close(outputs, expected_outputs, f"{call}: the outputs (weights @ v), compared with PyTorch's")


def expect_attention_tensor(result, what: str, shape, dtype: torch.dtype, call: str) -> None:
    """Fail unless ``result``, the ``what`` ("outputs" or "weights") of attention, is a tensor of the given shape,
    (..., n_q, d_v) or (..., n_q, n_k), and dtype; name the last two axes swapped."""
    if not isinstance(result, torch.Tensor):
        raise CheckFailed(f"{call}: the {what} must be a torch.Tensor; got {type(result).__name__}.")
    if tuple(result.shape) != tuple(shape):
        axes = "(..., n_q, d_v)" if what == "outputs" else "(..., n_q, n_k)"
        swapped = (*shape[:-2], shape[-1], shape[-2])
        found = f"{call} returned {what} of shape {shape_of(result)}; they should have shape {shape_of(shape)}, {axes}."
        if shape[-1] != shape[-2] and tuple(result.shape) == swapped:
            row = "its output" if what == "outputs" else "its weight for each key"
            found += f" The last two axes are swapped: one row per query is needed, holding {row}."
        raise CheckFailed(found)
    if result.dtype != dtype:
        raise CheckFailed(
            f"{call} returned {what} of dtype {result.dtype} for {dtype} inputs; keep the dtype of the inputs "
            "(avoid creating new tensors with a fixed dtype)."
        )


def _expect_no_nan(weights: torch.Tensor, mask, call_without_mask: Callable, call: str) -> None:
    """Fail if the weights hold nan; with a mask, name the nan that only the mask brings (0 · (-inf) = nan)."""
    if not weights.isnan().any():
        return
    if mask is not None:
        try:
            unmasked = expect_pair(call_without_mask(), call)[1]
        except CheckFailed:
            unmasked = None
        if isinstance(unmasked, torch.Tensor) and not unmasked.isnan().any():
            if weights.isnan().all():
                raise CheckFailed(
                    f"{call}: every weight is nan, and only with the mask. Multiplying the mask by -inf does that: "
                    "0 · (-inf) = nan, so (~mask) * float('-inf') gives nan at every allowed pair, not 0, and the "
                    "softmax of a row holding a nan is nan throughout. Fill the masked scores instead: look up "
                    "Tensor.masked_fill or torch.where."
                )
            raise CheckFailed(
                f"{call}: some weights are nan, and only with the mask: a score became nan, and the softmax of a "
                "row holding a nan is nan throughout. The usual causes are 0 · (-inf) = nan (multiplying by -inf) "
                "and -inf - (-inf) = nan. Fill the masked scores with -inf instead: look up Tensor.masked_fill or "
                "torch.where."
            )
    raise CheckFailed(f"{call}: some of your weights are nan, where PyTorch's are all finite.")


def _expect_no_negative_weights_where_masked(weights: torch.Tensor, mask: torch.Tensor, call: str) -> None:
    """Fail if masked pairs get a negative weight, -inf or a very negative number: a weight filled after the
    softmax, which only ever gives weights between 0 and 1."""
    blocked = weights[~mask.expand_as(weights)]
    if not (blocked.numel() and (blocked < 0).all()):
        return
    value = blocked.max().item()
    shown = "-inf" if value == -math.inf else f"{value:.3g}"
    raise CheckFailed(
        f"{call}: masked pairs get weight {shown}, not 0: the mask was applied to the weights, after the softmax. "
        "A weight is a share of the attention, between 0 and 1. Fill the masked scores with -inf before the "
        "softmax, which turns them into weights of exactly 0 and shares all the weight among the allowed keys."
    )


def _diagnose_weights_not_softmaxed(q, k, v, mask, scores: torch.Tensor, weights: torch.Tensor, call: str) -> None:
    """Name weights whose rows do not sum to 1 because they are the scores, or the logarithms of the weights."""
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    unscaled = scores * math.sqrt(q.shape[-1])
    if matches(weights, scores) or matches(weights, unscaled):
        kind = "q kᵀ / √d_k" if matches(weights, scores) else "q kᵀ, unscaled"
        raise CheckFailed(
            f"{call}: the weights you return are the scores, {kind}, not the weights: the softmax of the "
            "scaled scores, which the outputs average the values with. Return the softmax's result as the weights."
        )
    log_weights = pytorch_attention(q, k, v, mask=mask, scale=None)[1].log()
    if matches(weights, log_weights):
        raise CheckFailed(
            f"{call}: your weights are the logarithms of the right ones (log_softmax, or the log of a softmax): "
            "every one is ≤ 0 and the rows do not sum to 1. The weights are probabilities: use torch.softmax."
        )


def _diagnose_softmax_axis(weights: torch.Tensor, call: str) -> None:
    """Name weights that sum to 1 over an axis other than the keys': a softmax over that axis."""
    for axis in range(weights.dim() - 1):
        if weights.shape[axis] == 1 or not rows_sum_to(weights, dim=axis):
            continue
        if axis == weights.dim() - 2:
            raise CheckFailed(
                f"{call}: your weights sum to 1 over the queries axis (dim -2); each query's row must sum to 1 "
                "over the keys (softmax with dim=-1)."
            )
        found = (
            f"{call}: your weights sum to 1 over axis {axis}, of size {weights.shape[axis]}, a batch axis; each "
            "query's row must sum to 1 over the keys, the last axis."
        )
        implicit = 0 if weights.dim() in (0, 1, 3) else 1  # the axis that softmax picks when given no dim
        if axis == implicit:
            found += (
                f" A softmax called without dim picks axis {axis} itself for a tensor of {weights.dim()} axes, "
                "with only a warning: give it dim=-1."
            )
        else:
            found += " Give the softmax dim=-1."
        raise CheckFailed(found)


def _score_multiple(weights, expected_weights: torch.Tensor) -> float | None:
    """The number c such that the learner's weights are the softmax of c times the scores behind
    ``expected_weights`` (each row's log-weights are c times the expected ones, plus a constant), if there is one.
    It tells by how much the learner's scores were scaled, whatever the number; None if no such c fits."""
    if not (isinstance(weights, torch.Tensor) and weights.shape == expected_weights.shape):
        return None
    if not weights.isfinite().all() or ((weights > 0) & (expected_weights == 0)).any():
        return None
    usable = (weights > 1e-30) & (expected_weights > 1e-30)  # float32's normal range, where log is precise
    if not (usable.sum(dim=-1) >= 2).all():
        return None

    def centred(log_w: torch.Tensor) -> torch.Tensor:  # each row's log-weights minus their mean: no normaliser
        log_w = log_w.masked_fill(~usable, 0.0)
        mean = log_w.sum(dim=-1, keepdim=True) / usable.sum(dim=-1, keepdim=True)
        return (log_w - mean).masked_fill(~usable, 0.0)

    got, want = centred(weights.double().log()), centred(expected_weights.double().log())
    spread = (want**2).sum()
    if spread < 1e-12:
        return None
    multiple = ((got * want).sum() / spread).item()
    if (got - multiple * want).abs().max() > 1e-3 * max(1.0, got.abs().max().item()) or multiple < 1e-3:
        return None
    return multiple


def _as_written(number: float) -> str:
    """A divisor as a learner would recognise it: 16, √5, or 2.71."""
    for root, shown in ((number, "{}"), (number**2, "√{}")):
        if abs(root - round(root)) < 1e-3 * root and round(root) > 0:
            return shown.format(round(root))
    return f"{number:.3g}"


def _scores_divided_by(divisor: float, d_k: int, sizes: set[int] | None = None) -> str:
    """What went wrong when the scores were divided by ``divisor``, not by √d_k. Given ``sizes``, those of the
    inputs' axes, say when the divisor is no size of theirs nor its root: a number fixed in advance."""
    if divisor < 1:
        return f"the scores were multiplied by {_as_written(1 / divisor)}; divide them by √d_k = √{d_k}."
    found = f"the scores were divided by {_as_written(divisor)}, not by √d_k = √{d_k}."
    whole = [round(value) for value in (divisor, divisor**2) if abs(value - round(value)) < 1e-3 * value]
    fixed = sizes is not None and whole and not any(value in sizes for value in whole)
    if math.isclose(divisor, 2 * d_k, rel_tol=1e-3):
        found += (
            " That is 2 · d_k: `x / d_k ** 1/2` is `(x / d_k ** 1) / 2`, since ** binds tighter than / and the "
            "divisions go from left to right. A square root is ** 0.5 (or math.sqrt)."
        )
    elif math.isclose(divisor, d_k / 2, rel_tol=1e-3):
        found += (
            " That is d_k / 2: `d_k ** 1/2` is `(d_k ** 1) / 2`, since ** binds tighter than /. A square root is "
            "** 0.5 (or math.sqrt)."
        )
    elif fixed:
        found += (
            f" No axis of these inputs has size {' or '.join(str(value) for value in whole)}: your scale does not "
            "follow the inputs. Take d_k from them, q.shape[-1], inside the function; a number written into it, or "
            "a variable from outside it (such as the notebook's d_k, which the experiment of section 3 leaves at "
            "1024), stays the same whatever the inputs."
        )
    return found


def _diagnose_mask_of_full_shape_only(sdpa: Callable, q, k, v, mask, failure: CheckFailed) -> None:
    """After a crash with a mask that broadcasts, name code that is right with a mask of the scores' full shape:
    boolean indexing, scores[~mask] = ..., which does not broadcast."""
    full_shape = (*broadcast_shape(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    full = mask.expand(full_shape).clone()
    call = (
        f"scaled_dot_product_attention(q, k, v, mask) with the same q, k, v and the mask expanded to {shape_of(full)}"
    )
    try:
        weights = expect_pair(call_learner(sdpa, q, k, v, full, call=call), call)[1]
    except CheckFailed:
        return
    if matches(weights, pytorch_attention(q, k, v, mask=mask, scale=None)[1]):
        raise CheckFailed(
            f"{failure}\nThe cause: your code needs a mask of the scores' full shape, {shape_of(full)}: with the "
            f"mask expanded to it, the same call is right. A mask only broadcastable to the scores, as this "
            f"{shape_of(mask)} one, must work too, and boolean indexing such as scores[~mask] = ... does not "
            "broadcast. Look up Tensor.masked_fill or torch.where, which do."
        ) from failure.__cause__


def _diagnose_reduction_without_keepdim(sdpa: Callable, failure: CheckFailed) -> None:
    """After a crash, name a softmax written by hand that divides by a sum over the keys, or subtracts their
    maximum, taken without keepdim: with as many keys as queries it runs, and uses at column j the sum or maximum
    of row j, not of its own row."""
    if not isinstance(failure.__cause__, RuntimeError):
        return
    q, k, v = seeded_randn(4, 8, seed=21), seeded_randn(4, 8, seed=22), seeded_randn(4, 5, seed=23)
    call = "scaled_dot_product_attention(q, k, v) with q (4, 8), k (4, 8), v (4, 5)"
    try:
        weights = expect_pair(call_learner(sdpa, q, k, v, call=call), call)[1]
    except CheckFailed:
        return
    expected = pytorch_attention(q, k, v, mask=None, scale=None)[1]  # (4, 4)
    if not (isinstance(weights, torch.Tensor) and weights.shape == expected.shape and (weights > 0).all()):
        return
    if matches(weights, expected):
        return
    # log(w_ij / expected_ij) = a_i + b_j, when column j was shifted or divided by a number of row j's.
    ratio = (weights.double() / expected.double()).log()
    per_row = ratio.mean(dim=-1, keepdim=True)  # a_i, plus the mean of b
    per_column = (ratio - per_row).mean(dim=0)  # b_j, less their mean
    if not torch.allclose(ratio, per_row + per_column, atol=1e-4):
        return
    scores = (q @ k.T).double() / math.sqrt(q.shape[-1])  # (4, 4)
    sums, maxima = scores.logsumexp(dim=-1), scores.amax(dim=-1)  # log Σ_j e^(s_ij) and max_j s_ij, per row i
    reductions = {  # what each reduction does to column j, and how to keep its axis
        "a sum over the keys": (-(sums - sums.mean()), "(keepdim=True)"),  # row j's sum divides column j
        "the maximum over the keys": (  # row j's maximum is subtracted from column j
            -(maxima - maxima.mean()),
            "(keepdim=True, as in torch.amax(scores, dim=-1, keepdim=True))",
        ),
    }
    found = [
        (name, keep) for name, (effect, keep) in reductions.items() if torch.allclose(per_column, effect, atol=1e-4)
    ]
    if not found:
        return
    (taken, keep), *_ = found
    raise CheckFailed(
        f"{failure}\nThe cause: your softmax uses {taken} taken without keepdim=True. That reduction, one number "
        "per query, of shape (..., n_q), lines up with the last axis of the scores, the keys', not with their rows: "
        f"with as many keys as queries the call runs and combines each column j with the number of row j ({call} "
        f"shows it), and here it fails. Keep the reduced axis {keep}, or use torch.softmax."
    ) from failure.__cause__


def _name_values_and_indices(failure: CheckFailed) -> None:
    """Name the crash of scores - scores.max(dim=-1): with a dim, max returns the pair (values, indices)."""
    cause = failure.__cause__
    found = re.search(r"torch\.return_types\.(\w+)", str(cause))
    if not isinstance(cause, TypeError) or found is None:
        return
    name = found.group(1)
    alone = name in ("max", "min")  # torch.amax and torch.amin return the values alone
    instead = f", or use torch.a{name}(..., dim=-1, keepdim=True), which returns the values alone" if alone else ""
    raise CheckFailed(
        f"{failure}\nThe cause: Tensor.{name}(dim=...) returns a pair, (values, indices), not a tensor. Take its "
        f".values{instead}."
    ) from cause


def _diagnose_crash_with_the_mask_only(sdpa: Callable, q, k, v, mask, failure: CheckFailed) -> None:
    """After a crash with a mask, name code that is right without one: what it does with the mask is the cause."""
    call = "scaled_dot_product_attention(q, k, v) with the same q, k, v and no mask"
    try:
        outputs, weights = expect_pair(call_learner(sdpa, q, k, v, call=call), call)
    except CheckFailed:
        return
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=None, scale=None)
    if matches(weights, expected_weights) and matches(outputs, expected_outputs):
        scores_shape = (*broadcast_shape(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
        raise CheckFailed(
            f"{failure}\nThe cause is what your code does with the mask: without it, the same call is right. This "
            f"mask, boolean of shape {shape_of(mask)}, already broadcasts to the scores' shape "
            f"{shape_of(scores_shape)}, and Tensor.masked_fill and torch.where take it as it is: no unsqueeze, view "
            "or transpose is needed."
        ) from failure.__cause__


def _name_truth_value_of_a_tensor(failure: CheckFailed, argument: str) -> None:
    """Name the crash of `if mask:` or `context or x`: Python asks a tensor of many numbers for one truth value."""
    cause = failure.__cause__
    if isinstance(cause, RuntimeError) and "Boolean value of Tensor" in str(cause):
        raise CheckFailed(
            f"{failure}\nThe cause: `if {argument}:` or `{argument} or ...` asks the tensor {argument} for a single "
            "truth value, which a tensor of many numbers does not have. To ask whether it was given, test whether "
            "it is None."
        ) from cause


def _expect_outputs_then_weights(outputs, weights, outputs_shape, weights_shape, call: str) -> None:
    """Fail if the pair came back in the other order: outputs of the weights' shape and weights of the outputs'."""
    if (
        tuple(outputs_shape) != tuple(weights_shape)
        and isinstance(outputs, torch.Tensor)
        and isinstance(weights, torch.Tensor)
        and tuple(outputs.shape) == tuple(weights_shape)
        and tuple(weights.shape) == tuple(outputs_shape)
    ):
        raise CheckFailed(
            f"{call} returns (weights, outputs): the first has the weights' shape {shape_of(weights_shape)} and the "
            f"second the outputs' {shape_of(outputs_shape)}. Return (outputs, weights), the outputs first."
        )


def _expect_mask_used(
    weights: torch.Tensor, call_without_mask: Callable, mask: torch.Tensor, call: str, unused_because: str
) -> None:
    """Name the two mistakes that leave the mask's meaning out: a mask that changes nothing (compared with the
    learner's own call without it, ``call_without_mask()``), and an inverted one (the allowed pairs get no weight,
    the blocked ones all). ``weights`` has the expected shape."""
    try:
        unmasked = expect_pair(call_without_mask(), call)[1]
    except CheckFailed:
        unmasked = None
    if isinstance(unmasked, torch.Tensor) and matches(weights, unmasked):
        raise CheckFailed(
            f"{call}: the weights are the same as without the mask: the mask changed nothing. Pairs where it is "
            f"False must get zero weight. {unused_because}"
        )
    allowed = mask.expand_as(weights)
    finite = weights.nan_to_num(0.0)  # an inverted mask blocks every key of a row that allows them all: nan
    rows = ~allowed.all(dim=-1)  # (..., n_q): rows that block at least one key
    if rows.any() and (finite[allowed & rows[..., None]] == 0).all() and (finite[~allowed] > 0).any():
        raise CheckFailed(
            f"{call}: the pairs the mask allows get no weight and the blocked ones get it all: your mask is "
            "inverted. Here, as in F.scaled_dot_product_attention, True means the query may attend to the key "
            "(nn.MultiheadAttention uses the opposite): block the scores where the mask is False."
        )


def _diagnose_scale(q, k, v, mask, weights: torch.Tensor, call: str) -> None:
    d_k, n_k, d_v = q.shape[-1], k.shape[-2], v.shape[-1]
    wrong_scales = {
        1.0: "you did not scale the scores: divide q kᵀ by √d_k",
        1 / math.sqrt(n_k): "you divided by √(number of keys); divide by √d_k, the key dimension q.shape[-1]",
        1 / math.sqrt(d_v): "you divided by √d_v; the scale is √d_k, the dimension of queries and keys",
        1 / d_k: "you divided by d_k; divide by its square root √d_k",
        math.sqrt(d_k): "you multiplied the scores by √d_k; divide them by √d_k",
    }
    for scale, mistake in wrong_scales.items():
        if torch.allclose(weights, pytorch_attention(q, k, v, mask=mask, scale=scale)[1], atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    unit_q, unit_k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)  # the cosine similarity's vectors, length 1
    keep_lengths = (
        "q and k were divided by their lengths, so the scores are cosine similarities, between -1 and 1. The "
        "scores of scaled dot-product attention keep the lengths, q · k / √d_k: a longer query gives a sharper "
        "look-up, as in section 1"
    )
    cosines = {1.0: keep_lengths, None: f"{keep_lengths}; you also divided the cosines by √d_k"}
    candidates = {scale: pytorch_attention(unit_q, unit_k, v, mask=mask, scale=scale)[1] for scale in cosines}
    for scale, mistake in cosines.items():
        if matches(weights, candidates[scale]):
            raise CheckFailed(f"{call}: {mistake}.")


def _diagnose_batch_axes(sdpa: Callable, q, k, v, mask, failure: str, weights=None, cause=None) -> None:
    """Name the mistakes that make attention right for one sequence and wrong for a batch: k.T, which on a
    tensor of more than two axes reverses them all, torch.bmm (``cause``, the crash, names it), and axes counted
    from the front (``weights``, the learner's on q, k, v if it returned any, tell whether the scale was one of
    them)."""
    _diagnose_transpose_of_all_axes(sdpa, failure)
    axes = AXES_FROM_THE_END
    bmm = ""
    if isinstance(cause, RuntimeError) and re.search(r"batch\d must be a 3D tensor", str(cause)):
        bmm = " torch.bmm takes exactly one batch axis (3-D tensors); @ and torch.matmul take any number."
    for axis in range(q.dim() - 1):
        scale = 1 / math.sqrt(q.shape[axis])
        if q.shape[axis] != q.shape[-1] and matches(weights, pytorch_attention(q, k, v, mask=mask, scale=scale)[1]):
            axes = (
                f"k.transpose(-2, -1), softmax(dim=-1) and the scale √q.shape[-1] (your scores were divided by "
                f"√q.shape[{axis}] = √{q.shape[axis]}, not by √d_k = √{q.shape[-1]})"
            )
    while q.dim() > 2:  # the same inputs with fewer batch axes
        q, k, v = q[0], k[0], v[0]
        mask = mask[0] if mask is not None and mask.dim() > q.dim() else mask
        call = f"scaled_dot_product_attention(q, k, v) with q {shape_of(q)}, k {shape_of(k)}, v {shape_of(v)}"
        args = (q, k, v) if mask is None else (q, k, v, mask)
        try:
            outputs, weights = expect_pair(call_learner(sdpa, *args, call=call), call)
        except CheckFailed:
            continue
        expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
        if matches(weights, expected_weights) and matches(outputs, expected_outputs):
            raise CheckFailed(
                f"{failure}\nYet it is right for q {shape_of(q)}: your attention depends on the number of batch "
                f"axes. Count the axes from the end, {axes}, so that any batch shape works.{bmm}"
            ) from cause


AXES_FROM_THE_END = "k.transpose(-2, -1), softmax(dim=-1) and d_k = q.shape[-1]"


def _diagnose_transpose_of_all_axes(sdpa: Callable, failure: str) -> None:
    # With batch = n_k = d_k = 3, q @ k.T runs without error on a batch, so its result shows whether k.T was used.
    q = seeded_randn(3, 2, 3, seed=11)  # (batch=3, n_q=2, d_k=3)
    k = seeded_randn(3, 3, 3, seed=12)  # (batch=3, n_k=3, d_k=3)
    v = seeded_randn(3, 3, 2, seed=13)  # (batch=3, n_k=3, d_v=2)
    call = "scaled_dot_product_attention(q, k, v) with q (3, 2, 3), k (3, 3, 3), v (3, 3, 2)"
    try:
        outputs, weights = expect_pair(call_learner(sdpa, q, k, v, call=call), call)
    except CheckFailed:
        return
    k_reversed = k.permute(2, 1, 0).mT  # q @ k.T is q @ k_reversed.mT
    if matches(weights, pytorch_attention(q, k_reversed, v, mask=None, scale=None)[1]):
        raise CheckFailed(
            f"{failure}\nThe cause: {call} gives the weights of q @ k.T. On a tensor of more than two axes .T "
            "reverses all the axes, batch axes included, not just the last two: (batch, n_k, d_k) becomes "
            "(d_k, n_k, batch). Use k.transpose(-2, -1) or k.mT, which swap only the last two axes."
        )


def _diagnose_more_batch_axes(sdpa: Callable, q, k, v, failure: CheckFailed) -> None:
    """After a crash on one batch axis, name code that is right with two: axes counted from the front."""
    q, k, v = q[None], k[None], v[None]  # (1, batch, n, d): a heads axis in front
    call = f"scaled_dot_product_attention(q, k, v) with q {shape_of(q)}, k {shape_of(k)}, v {shape_of(v)}"
    try:
        outputs, weights = expect_pair(call_learner(sdpa, q, k, v, call=call), call)
    except CheckFailed:
        return
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=None, scale=None)
    if matches(weights, expected_weights) and matches(outputs, expected_outputs):
        raise CheckFailed(
            f"{failure}\nYet it is right for q {shape_of(q)}, with two batch axes: your attention depends on the "
            f"number of batch axes. Count the axes from the end, {AXES_FROM_THE_END}, so that any batch shape "
            "works."
        ) from failure.__cause__


def _diagnose_float64_only(sdpa: Callable, q, k, v, failure: CheckFailed) -> None:
    """After a crash on float64 inputs, name code that is right on the same inputs in float32: it makes a float32
    tensor somewhere and then meets a float64 one."""
    q, k, v = (tensor.detach().float() for tensor in (q, k, v))
    call = "scaled_dot_product_attention(q, k, v) with the same q, k, v in float32"
    try:
        outputs, weights = expect_pair(call_learner(sdpa, q, k, v, call=call), call)
    except CheckFailed:
        return
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=None, scale=None)
    if matches(weights, expected_weights) and matches(outputs, expected_outputs):
        raise CheckFailed(
            f"{failure}\nThe cause: your code fails only with float64 inputs; the same call in float32 is right. "
            "Somewhere it makes a float32 tensor (with .float(), dtype=torch.float32, or a new tensor made without "
            "a dtype) and then combines it with a float64 one. Keep the inputs' dtype throughout."
        ) from failure.__cause__


def _check_gradients(sdpa: Callable, seed: int) -> None:
    q = seeded_randn(1, 3, 4, seed=seed + 4, dtype=torch.float64).requires_grad_()  # (batch, n_q, d_k)
    k = seeded_randn(1, 5, 4, seed=seed + 5, dtype=torch.float64).requires_grad_()  # (batch, n_k, d_k)
    v = seeded_randn(1, 5, 2, seed=seed + 6, dtype=torch.float64).requires_grad_()  # (batch, n_k, d_v)
    call = "scaled_dot_product_attention(q, k, v) with float64 q (1, 3, 4), k (1, 5, 4), v (1, 5, 2) that require grad"
    try:
        outputs, _ = expect_pair(call_learner(sdpa, q, k, v, call=call), call)
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        if failure.__cause__ is not None:
            _name_values_and_indices(failure)
            _diagnose_more_batch_axes(sdpa, q, k, v, failure)
            _diagnose_float64_only(sdpa, q, k, v, failure)
        raise
    expect_attention_tensor(outputs, "outputs", (1, 3, 2), q.dtype, call)
    # The values too, with another d_k than the calls before: a d_k fixed in advance shows here.
    _check_attention_on(sdpa, q.detach(), k.detach(), v.detach(), mask=None)
    expect_differentiable(outputs, call)
    cotangent = seeded_randn(*outputs.shape, seed=seed + 7, dtype=outputs.dtype)  # a random loss's gradient
    gradients = torch.autograd.grad(outputs, (q, k, v), cotangent, allow_unused=True)
    unreached = [name for name, grad in zip("qkv", gradients, strict=True) if grad is None or not grad.abs().sum() > 0]
    if unreached:
        raise CheckFailed(
            f"{call}: no gradient reaches {' or '.join(unreached)} from the outputs. Some step is not "
            "differentiable: a .detach(), torch.no_grad(), .item() or a detour through NumPy cuts the computation "
            "graph, so the projections before it could never learn."
        )
    check = "torch.autograd.gradcheck on scaled_dot_product_attention in float64"
    try:
        correct = torch.autograd.gradcheck(lambda q, k, v: sdpa(q, k, v)[0], (q, k, v), raise_exception=False)
    except Exception as error:
        raise CheckFailed(
            f"{check} raised {type(error).__name__}: {error}. Keep every step a differentiable tensor "
            "operation (no .item(), .numpy() or .detach()) and keep the input dtype."
        ) from error
    if not correct:
        raise CheckFailed(f"{check}: the gradients differ from numerical ones; some step is not differentiable.")


# Exercise 3 ---------------------------------------------------------------------------------------------

D_MODEL = 6
OUT_FEATURES = {"query": 4, "key": 4, "value": 5}  # d_k, d_k, d_v: each projection maps D_MODEL to these
MODULE = "SingleHeadAttention(d_model=6, d_k=4, d_v=5)"
MADE = {"query": "queries", "key": "keys", "value": "values"}  # what each projection makes
EQUAL_SIZE = 4  # d_model = d_k = d_v of the second module the check builds, where mixed-up shapes still fit


@learner_facing
def check_single_head_attention(SingleHeadAttention: type, seed: int = 0) -> None:
    """Check the projections (without bias), self-attention, cross-attention, masking and gradients of the module.

    The projections may be nn.Linear layers or nn.Parameter matrices, in either layout: the check finds them by
    their names and writes its own seeded weights into them, so that what a correct module returns depends on the
    check's seed alone, whatever the order in which the learner created them.
    """
    with earlier_exercises_replaced(SingleHeadAttention.forward, "scaled_dot_product_attention"):
        try:
            module = built_with_seed(SingleHeadAttention, D_MODEL, 4, 5, seed=seed, call=MODULE)
        except NotImplementedYet:
            raise
        except CheckFailed as failure:
            _name_missing_super_init(failure)
            raise
        expect_own_parameters(module, MODULE, parts=tuple(OUT_FEATURES))
        x = seeded_randn(2, 3, D_MODEL, seed=seed)  # (batch, n_q=3, d_model)
        context = seeded_randn(2, 7, D_MODEL, seed=seed + 1)  # (batch, n_k=7, d_model)
        _expect_queries_and_keys_can_learn(module, x, context)
        matrices = _set_projections(module, seed)
        learners = (SingleHeadAttention, module)
        _check_module_on(learners, matrices, x, None, None, "module(x)", seed)
        _check_module_on(learners, matrices, x, context, None, "module(x, context)", seed)
        mask = seeded_randn(3, 7, seed=seed + 2) > 0  # (n_q, n_k)
        mask[:, 0] = True
        _check_module_on(learners, matrices, x, context, mask, "module(x, context, mask)", seed)
        _expect_context_second(module, x, context)
        _check_gradients_reach_projections(module, x, context)
        _expect_no_other_parameters(module)
    passed("SingleHeadAttention", "its own W_Q, W_K, W_V without bias; self- and cross-attention; masks; gradients")


def _name_missing_super_init(failure: CheckFailed) -> None:
    """Name the crash of a module that assigns a layer before calling nn.Module's own __init__."""
    cause = failure.__cause__
    if isinstance(cause, AttributeError) and "before Module.__init__() call" in str(cause):
        raise CheckFailed(
            f"{failure}\nThe cause: __init__ must call super().__init__() first, before it assigns any layer or "
            "parameter: that call sets up where nn.Module keeps them."
        ) from cause


def _expect_queries_and_keys_can_learn(module: nn.Module, x, context) -> None:
    """Fail if self.query and self.key start at zero, on the module as built (before the check writes weights of
    its own): every score is then 0, and the gradient reaching each is proportional to the other, so neither
    receives any and training never moves them. A backward pass shows it."""
    tensors = {name: _projection(module, name) for name in ("query", "key")}
    if any(tensor.detach().any() for tensor in tensors.values()):
        return
    call = f"{MODULE} as built: module(x, context) with x {shape_of(x)} and context {shape_of(context)}"
    module.zero_grad()
    try:
        outputs, _ = expect_pair(call_learner(module, x, context=context, call=call), call)
        (outputs * seeded_randn(*outputs.shape, seed=98)).sum().backward()
    except Exception:
        module.zero_grad()
        return
    grads = [tensor.grad for tensor in tensors.values()]
    module.zero_grad()
    if all(grad is None or not grad.any() for grad in grads):
        raise CheckFailed(
            f"{MODULE}: self.query and self.key start at zero. Every score q · k is then 0, and the gradient that "
            "reaches each of them is proportional to the other, so a backward pass on your module as built gives "
            "both a gradient of 0: training could never move them. Start them from random values (nn.Linear does "
            "so itself; for an nn.Parameter, look up torch.randn)."
        )


def _expect_no_other_parameters(module: nn.Module) -> None:
    """Fail if the module trains parameters besides its three maps, such as biases: the results match while they
    are zero, as nn.init.zeros_ leaves them, but training would move them."""
    maps = {id(_projection(module, name)) for name in OUT_FEATURES}
    others = [
        (name, parameter)
        for name, parameter in module.named_parameters()
        if id(parameter) not in maps and parameter.requires_grad
    ]
    if not others:
        return
    listed = ", ".join(f"self.{name} {shape_of(parameter)}" for name, parameter in others)
    zero = all(not parameter.detach().any() for _, parameter in others)
    now = "They are zero now, so the results match" if zero else "They change nothing in the results here"
    raise CheckFailed(
        f"{MODULE} trains parameters besides its three maps: {listed}. {now}, but training would move them. The "
        "exercise asks for three maps without bias, d_model · (2 d_k + d_v) numbers in all, as the cell after it "
        "counts. Look up the bias argument of nn.Linear."
    )


def _projection(module: nn.Module, name: str) -> torch.Tensor:
    """The learnable matrix of self.<name>: an nn.Linear's weight, (d_out, d_model), or an nn.Parameter of shape
    (d_model, d_out) or (d_out, d_model); fail with what the check needs if it is neither."""
    part, d_out = getattr(module, name, None), OUT_FEATURES[name]
    needs = (
        f"The check gives self.query, self.key and self.value weights of its own, to know what your module should "
        f"return, so it needs each to be an nn.Linear without bias or an nn.Parameter matrix of shape "
        f"(d_model, d_out), here ({D_MODEL}, {d_out})"
    )
    if isinstance(part, nn.Linear):
        if (part.in_features, part.out_features) != (D_MODEL, d_out):
            raise CheckFailed(
                f"{MODULE}: self.{name} maps {part.in_features} → {part.out_features} features; it should map "
                f"d_model={D_MODEL} → {d_out}."
            )
        return part.weight
    if isinstance(part, nn.Parameter):
        if tuple(part.shape) not in ((D_MODEL, d_out), (d_out, D_MODEL)):
            raise CheckFailed(
                f"{MODULE}: self.{name} has shape {shape_of(part)}; it should map d_model={D_MODEL} → {d_out}: "
                f"shape ({D_MODEL}, {d_out}), applied as x @ W."
            )
        return part
    if isinstance(part, torch.Tensor):
        raise CheckFailed(
            f"{MODULE}: self.{name} is a plain tensor, so it is not among module.parameters() and an optimizer "
            "would never train it. Wrap it in nn.Parameter (look it up), or use an nn.Linear."
        )
    found = "nothing" if part is None else f"a {type(part).__name__}"
    raise CheckFailed(f"{MODULE}: self.{name} is {found}. {needs}.")


def _set_projections(module: nn.Module, seed: int) -> dict[str, torch.Tensor]:
    """Write seeded matrices into the projections; return them in nn.Linear's layout, (d_out, d_model), so that
    self.<name> applied to x is F.linear(x, matrix). Biases stay as they are: one that is not zero shows in the
    results, and _expect_no_other_parameters names one of zeros."""
    matrices = {}
    with torch.no_grad():
        for number, (name, d_out) in enumerate(OUT_FEATURES.items()):
            matrix = seeded_randn(d_out, D_MODEL, seed=seed + 10 + number)  # (d_out, d_model)
            tensor = _projection(module, name)
            tensor.copy_(matrix if tensor.shape == matrix.shape else matrix.T)
            matrices[name] = matrix
    return matrices


def _bias(module: nn.Module, name: str) -> torch.Tensor | None:
    return getattr(getattr(module, name), "bias", None)


def _check_module_on(learners: tuple, matrices: dict, x, context, mask, call: str, seed: int) -> None:
    """Check module(x, context, mask) against attention with the check's matrices. ``learners`` is the learner's
    class and the module built from it: the class builds a second module, of equal sizes, to name projections
    applied the wrong way round or mixed up, where the shapes of the first do not fit. (Build it from the class, not
    from type(module): while grading, the module is a stand-in for the learner's, and its type is not their class.)"""
    SingleHeadAttention, module = learners
    keys_from = x if context is None else context
    kwargs = {} if context is None else {"context": context}
    if mask is not None:
        kwargs["mask"] = mask
    call = f"{call} with x {shape_of(x)}" + ("" if context is None else f" and context {shape_of(context)}")
    try:
        result = call_learner(module, x, call=call, **kwargs)
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        _name_truth_value_of_a_tensor(failure, "context" if mask is None else "mask")
        if context is None:
            _diagnose_context_used_while_none(module, matrices, x, mask, failure)
        if context is not None:
            _diagnose_sources(module, matrices, x, call, seed)
        if isinstance(failure.__cause__, RuntimeError):
            found = _diagnose_on_equal_sizes(SingleHeadAttention, module, seed)
            if found is not None:
                raise CheckFailed(f"{failure}\n{found}") from failure.__cause__
        raise
    outputs, weights = expect_pair(result, call)
    with torch.no_grad():  # the projections as the notebook defines them: x W, no bias
        q = F.linear(x, matrices["query"])  # (batch, n_q, d_k)
        k = F.linear(keys_from, matrices["key"])  # (batch, n_k, d_k)
        v = F.linear(keys_from, matrices["value"])  # (batch, n_k, d_v)
        expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
    _expect_outputs_then_weights(outputs, weights, expected_outputs.shape, expected_weights.shape, call)
    if not (matches(weights, expected_weights) and matches(outputs, expected_outputs)):
        fits = isinstance(weights, torch.Tensor) and weights.shape == expected_weights.shape
        if mask is None and fits:
            _expect_no_mask_of_its_own(weights, expected_weights, call)
        if mask is not None and fits:
            without_mask = "module(x, context) with the same x and context, no mask"
            _expect_mask_used(
                weights,
                lambda: call_learner(module, x, context=context, call=without_mask),
                mask,
                call,
                "Does forward pass mask on to scaled_dot_product_attention?",
            )
            _expect_no_nan(weights, mask, lambda: call_learner(module, x, context=context, call=without_mask), call)
        if context is not None:
            _diagnose_sources(module, matrices, x, call, seed)
        _diagnose_projections(module, matrices, x, keys_from, mask, outputs, weights, call)
        if isinstance(outputs, torch.Tensor) and outputs.shape != expected_outputs.shape:
            found = _diagnose_on_equal_sizes(SingleHeadAttention, module, seed)
            if found is not None:
                raise CheckFailed(
                    f"{call} returned outputs of shape {shape_of(outputs)}, not {shape_of(expected_outputs)}.\n{found}"
                )
    expect_attention_tensor(weights, "weights", expected_weights.shape, x.dtype, call)
    expect_attention_tensor(outputs, "outputs", expected_outputs.shape, x.dtype, call)
    expect_close(weights, expected_weights, f"{call}: the weights")
    expect_close(outputs, expected_outputs, f"{call}: the outputs")


def _diagnose_context_used_while_none(module: nn.Module, matrices: dict, x, mask, failure: CheckFailed) -> None:
    """After module(x) crashed, name a forward that is right given context=x: it uses context while it is None."""
    call = f"module(x, context=x) with the same x {shape_of(x)}"
    kwargs = {"context": x} if mask is None else {"context": x, "mask": mask}
    try:
        outputs, weights = expect_pair(call_learner(module, x, call=call, **kwargs), call)
    except CheckFailed:
        return
    with torch.no_grad():
        projected = (F.linear(x, matrices[name]) for name in OUT_FEATURES)
        expected_outputs, expected_weights = pytorch_attention(*projected, mask=mask, scale=None)
    if matches(weights, expected_weights) and matches(outputs, expected_outputs):
        raise CheckFailed(
            f"{failure}\nYet {call} is right: your forward fails only when context is None, so it uses context "
            "before putting x in its place (or never does). Test `context is None` first, and take the keys and "
            "values from x then."
        ) from failure.__cause__


def _expect_no_mask_of_its_own(weights: torch.Tensor, expected_weights: torch.Tensor, call: str) -> None:
    """Fail if, given no mask, the module still gives no weight to the keys after each query's position."""
    n_q, n_k = weights.shape[-2:]
    later = torch.ones(n_q, n_k, dtype=torch.bool).triu(1)  # (n_q, n_k): key j after query i
    if later.any() and (weights[..., later] == 0).all() and (expected_weights[..., later] > 0).any():
        raise CheckFailed(
            f"{call}: given no mask, every query gives zero weight to the keys after its own position: your module "
            "masks them itself. This head uses only the mask it is given, and none here; masks that hide later "
            "positions are notebook 04's."
        )


def _expect_context_second(module: nn.Module, x, context) -> None:
    """Fail unless forward takes context as its second parameter, as the exercise gives it: the other calls pass
    context and mask by name, which would not show forward(x, mask=None, context=None)."""
    by_name = f"module(x, context=context) with x {shape_of(x)} and context {shape_of(context)}"
    by_position = (
        f"module(x, context), with context passed by position, x {shape_of(x)} and context {shape_of(context)}"
    )
    order = (
        "module(x, context=context) is right, but with context as the second argument, module(x, context), {}: "
        "forward's parameters must come in the order the exercise gives, forward(x, context=None, mask=None), "
        "since code that uses the module may pass context by position."
    )
    outputs, weights = expect_pair(call_learner(module, x, context=context, call=by_name), by_name)
    try:
        result = expect_pair(call_learner(module, x, context, call=by_position), by_position)
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        raise CheckFailed(f"{failure}\n{order.format('it fails')}") from failure.__cause__
    if not (matches(result[1], weights.detach()) and matches(result[0], outputs.detach())):
        raise CheckFailed(f"{by_position}: {order.format('its results differ')}")


def _diagnose_projections(module: nn.Module, matrices: dict, x, keys_from, mask, outputs, weights, call: str) -> None:
    """Name a mistake in the projections or the scale by computing what it gives."""
    with torch.no_grad():
        q = F.linear(x, matrices["query"])  # (batch, n_q, d_k)
        k = F.linear(keys_from, matrices["key"])  # (batch, n_k, d_k)
        v = F.linear(keys_from, matrices["value"])  # (batch, n_k, d_v)
        biases = {name: _bias(module, name) for name in OUT_FEATURES}
        if any(bias is not None for bias in biases.values()):
            with_bias = pytorch_attention(
                F.linear(x, matrices["query"], biases["query"]),
                F.linear(keys_from, matrices["key"], biases["key"]),
                F.linear(keys_from, matrices["value"], biases["value"]),
                mask=mask,
                scale=None,
            )
            if matches(weights, with_bias[1]) and matches(outputs, with_bias[0]):
                raise CheckFailed(
                    f"{call}: your projections add a bias; the notebook's projections have none: Q = X W_Q, "
                    "K = C W_K, V = C W_V, with nothing added. Look up the bias argument of nn.Linear."
                )
        # The mix-ups whose shapes fit here: queries and keys (d_k) made with either of self.query and self.key.
        made_with = [pair + ("value",) for pair in itertools.product(("query", "key"), repeat=2)]
        mixed = {
            used: pytorch_attention(
                F.linear(x, matrices[used[0]]), F.linear(keys_from, matrices[used[1]]), v, mask=mask, scale=None
            )
            for used in made_with
            if used != tuple(OUT_FEATURES)
        }
        for used, (mixed_outputs, mixed_weights) in mixed.items():
            if matches(weights, mixed_weights) and matches(outputs, mixed_outputs):
                raise CheckFailed(f"{call}: {mixed_up_projections(used)}")
        d_k = q.shape[-1]
        wrong_scales = {
            1 / d_k: (
                f"the scores were divided by d_k = {d_k}, not by √d_k: they were scaled twice. "
                "scaled_dot_product_attention divides by √d_k already; give it the projections as they are"
            ),
            1.0: "the scores were not divided by √d_k. Compute the attention with scaled_dot_product_attention",
            1 / math.sqrt(D_MODEL): (
                f"the scores were divided by √d_model = √{D_MODEL}, not by √d_k = √{d_k}: the scale is the "
                "dimension of the queries and keys, after the projections. Compute the attention with "
                "scaled_dot_product_attention"
            ),
        }
        for scale, mistake in wrong_scales.items():
            if matches(weights, pytorch_attention(q, k, v, mask=mask, scale=scale)[1]):
                raise CheckFailed(f"{call}: {mistake}.")
        multiple = _score_multiple(weights, pytorch_attention(q, k, v, mask=mask, scale=None)[1])
        if multiple is not None and not math.isclose(multiple, 1.0, rel_tol=1e-3):
            raise CheckFailed(
                f"{call}: {_scores_divided_by(math.sqrt(d_k) / multiple, d_k)} Compute the attention with "
                "scaled_dot_product_attention, which scales them already."
            )
    maps = {id(_projection(module, name)) for name in OUT_FEATURES} | {id(bias) for bias in biases.values()}
    others = [f"self.{name} {shape_of(p)}" for name, p in module.named_parameters() if id(p) not in maps]
    if others:
        raise CheckFailed(
            f"{call}: the results are not those of attention with the three maps alone, and your module has other "
            f"parameters: {', '.join(others)}. The notebook's projections are W_Q, W_K and W_V and nothing else, "
            "with no bias: Q = X W_Q, K = C W_K, V = C W_V. Is one of the others added in forward?"
        )


def mixed_up_projections(used: tuple[str, str, str]) -> str:
    """What went wrong when the queries, keys and values were made with the projections ``used``, in that order
    (names among self.query, self.key, self.value), not each with its own."""
    wrong = [(own, by) for own, by in zip(OUT_FEATURES, used, strict=True) if own != by]
    if len(wrong) == 1:
        own, by = wrong[0]
        return f"the {MADE[own]} were made with self.{by}; use their own projection self.{own}."
    made = ", ".join(f"the {MADE[own]} with self.{by}" for own, by in wrong[1:])
    own, by = wrong[0]
    return (
        f"the {MADE[own]} were made with self.{by}, {made}. Each has its own projection: self.query makes the "
        "queries, self.key the keys and self.value the values."
    )


def _diagnose_on_equal_sizes(SingleHeadAttention: type, module: nn.Module, seed: int) -> str | None:
    """Build a second module, with d_model = d_k = d_v, where projections applied the wrong way round or mixed up
    still fit, and return what its self-attention shows: the matrices multiplied untransposed, or a projection
    used for another's part; None if it shows neither. ``module`` is the check's, whose shapes tell in which
    layout each of its matrices is stored."""
    stored_as_linear = {name: _projection(module, name).shape[-1] == D_MODEL for name in OUT_FEATURES}
    side, call = EQUAL_SIZE, f"SingleHeadAttention({EQUAL_SIZE}, {EQUAL_SIZE}, {EQUAL_SIZE})"
    try:
        square = built_with_seed(SingleHeadAttention, side, side, side, seed=seed, call=call)
    except CheckFailed:
        return None
    parts = {name: getattr(square, name, None) for name in OUT_FEATURES}
    tensors = {name: part.weight if isinstance(part, nn.Linear) else part for name, part in parts.items()}
    if not all(isinstance(tensor, nn.Parameter) and tensor.shape == (side, side) for tensor in tensors.values()):
        return None
    matrices = {name: seeded_randn(side, side, seed=seed + 20 + number) for number, name in enumerate(OUT_FEATURES)}
    x = seeded_randn(2, 3, side, seed=seed + 5)  # (batch, n, d_model = d_k = d_v)
    with torch.no_grad():
        for name, tensor in tensors.items():  # in the layout of the check's module: x W is F.linear(x, matrix)
            tensor.copy_(matrices[name] if stored_as_linear[name] else matrices[name].T)
        for part in parts.values():  # a bias is another mistake, named once the shapes fit
            if isinstance(getattr(part, "bias", None), nn.Parameter):
                part.bias.zero_()
        projected = {name: F.linear(x, matrix) for name, matrix in matrices.items()}  # x W, as the notebook has it
        untransposed = pytorch_attention(*(x @ matrix for matrix in matrices.values()), mask=None, scale=None)
        mixed = {
            used: pytorch_attention(*(projected[name] for name in used), mask=None, scale=None)
            for used in itertools.product(OUT_FEATURES, repeat=3)
            if used != tuple(OUT_FEATURES)
        }
    probe = f"module(x) with d_model = d_k = d_v = {side}"
    try:
        outputs, weights = expect_pair(call_learner(square, x, call=probe), probe)
    except CheckFailed:
        return None
    where = f"A second module of yours, with d_model = d_k = d_v = {side}, where the shapes fit, shows why:"
    if matches(weights, untransposed[1]) and matches(outputs, untransposed[0]):
        return f"{where} {_applied_the_wrong_way_round(module)}"
    for used, (mixed_outputs, mixed_weights) in mixed.items():
        if matches(weights, mixed_weights) and matches(outputs, mixed_outputs):
            return f"{where} {mixed_up_projections(used)}"
    return None


def _applied_the_wrong_way_round(module: nn.Module) -> str:
    """What went wrong when the projections multiply x by the transposes of their maps, said for the kind of
    self.query the check's module has (its sizes D_MODEL and d_k differ, so its shape tells its layout)."""
    query, d_k = module.query, OUT_FEATURES["query"]
    if isinstance(query, nn.Linear):
        return (
            "it multiplies x by self.query.weight as it is stored: nn.Linear stores its weight as (d_out, d_model), "
            "so x @ weight multiplies by the transpose of its map. Call the layer, self.query(x), or use x @ W.T."
        )
    if query.shape[-1] == D_MODEL:
        return (
            f"it multiplies x by self.query as it is stored, x @ W, with W of shape (d_k, d_model) = ({d_k}, "
            f"{D_MODEL}): x @ W needs (d_model, d_k) = ({D_MODEL}, {d_k}). Make each matrix (d_model, d_out), as "
            "W_Q above, or multiply by W.T."
        )
    return (
        f"it multiplies x by the transpose of self.query, of shape (d_model, d_k) = ({D_MODEL}, {d_k}): x @ W.T, "
        "or F.linear(x, W), which computes x @ W.T. A matrix of shape (d_model, d_out) is applied as x @ W."
    )


def _diagnose_sources(module: nn.Module, matrices: dict, x, call: str, seed: int) -> None:
    """Name the sequence each of queries, keys and values came from, when that is what went wrong: with a
    context as long as x, every mix-up of the two runs, and its result shows which one it is."""
    context = seeded_randn(*x.shape, seed=seed + 3)  # (batch, n_k = n_q, d_model)
    probe = f"module(x, context) with x and context of the same shape {shape_of(x)}"
    try:
        outputs, weights = expect_pair(call_learner(module, x, context=context, call=probe), probe)
    except CheckFailed:
        return
    sequences = {"x": x, "context": context}
    for sources in itertools.product(sequences, repeat=3):
        if sources == ("x", "context", "context"):
            continue
        with torch.no_grad():
            projected = (
                F.linear(sequences[source], matrices[name]) for source, name in zip(sources, OUT_FEATURES, strict=True)
            )
            expected_outputs, expected_weights = pytorch_attention(*projected, mask=None, scale=None)
        if matches(weights, expected_weights) and matches(outputs, expected_outputs):
            raise CheckFailed(f"{call}: {mixed_up_sources(*sources)}")


def mixed_up_sources(queries: str, keys: str, values: str) -> str:
    """What went wrong when the queries, keys and values of cross-attention came from these sequences ("x" or
    "context"); notebook 03's check says it the same way."""
    if (queries, keys, values) == ("x", "x", "x"):
        found = "the queries, keys and values all came from x: context was not used."
    else:
        found = f"the queries came from {queries}, the keys from {keys} and the values from {values}."
    return (
        f"{found} In cross-attention the queries come from x, the sequence being updated (one output per position "
        "of x), and the keys and values both come from context (one key and one value per position of context)."
    )


def _check_gradients_reach_projections(module: nn.Module, x, context) -> None:
    call = f"module(x, context) with x {shape_of(x)} and context {shape_of(context)}"
    module.zero_grad()
    outputs, _ = expect_pair(call_learner(module, x, context=context, call=call), call)
    expect_differentiable(outputs, call)
    (outputs * seeded_randn(*outputs.shape, seed=99)).sum().backward()
    for name in OUT_FEATURES:
        grad = _projection(module, name).grad
        if grad is None or grad.abs().sum() == 0:
            raise CheckFailed(f"self.{name} receives no gradient, so it cannot learn: is it used in forward?")
    module.zero_grad()
