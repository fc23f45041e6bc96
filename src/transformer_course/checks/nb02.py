"""Checks for notebook 02, queries, keys and values: scaled dot-product attention.

Oracles: ``torch.distributions.Categorical(...).entropy()``; ``F.scaled_dot_product_attention`` (through
``pytorch_attention``), for the module with the check's own seeded W_Q, W_K, W_V, written into the learner's
projections and applied by ``F.linear`` (no bias); ``torch.autograd.gradcheck``; closed-form values.
"""

import itertools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from . import (
    CheckFailed,
    NotImplementedYet,
    built_with_seed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_differentiable,
    expect_masked_weights,
    expect_own_parameters,
    expect_pair,
    expect_tensor,
    learner_facing,
    matches,
    passed,
    pytorch_attention,
    rows_sum_to,
    seeded_randn,
    shape_of,
)

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
    entropy = call_learner(attention_entropy, weights, call=call)
    rows = weights.shape[:-1]
    if isinstance(entropy, torch.Tensor) and entropy.shape != rows:
        if entropy.shape == (*rows, 1):
            raise CheckFailed(f"{call} returned shape {shape_of(entropy)}: drop the summed axis (no keepdim).")
        if weights.dim() > 1 and entropy.shape == (*weights.shape[:-2], weights.shape[-1]):
            raise CheckFailed(
                f"{call} returned shape {shape_of(entropy)}, one number per key: you summed over the queries axis "
                f"(dim -2). Each row of weights, one query's, sums over the keys, the last axis: expected shape "
                f"{shape_of(rows)}."
            )
        if entropy.dim() == 0 and matches(entropy, expected.mean()):
            raise CheckFailed(
                f"{call} returned a single number, the mean of the rows' entropies. Return one entropy per row, "
                f"shape {shape_of(rows)}: the experiment averages them itself."
            )
        if entropy.dim() == 0:
            raise CheckFailed(
                f"{call} returned a single number: you summed over every axis. Return one entropy per row, summing "
                f"over the keys (the last axis) only: expected shape {shape_of(rows)}."
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
    proportional = {  # wrong answers that are the entropy times a constant
        -1.0: "exactly its negative. H(w) = -Σ_j w_j log w_j: mind the minus sign (log w ≤ 0, so -w log w ≥ 0)",
        1 / math.log(2): "the entropy in bits: you used log base 2. Use the natural logarithm, so that it is in nats",
        1 / math.log(10): "you used log base 10. Use the natural logarithm, so that the entropy is in nats",
        1 / weights.shape[-1]: "the entropy divided by the number of keys: you averaged over the keys. Sum them",
    }
    for factor, mistake in proportional.items():
        if matches(entropy, factor * expected):
            raise CheckFailed(f"{first_row}: {mistake}.")
    if matches(entropy, -(weights * torch.log1p(weights)).sum(dim=-1)):
        raise CheckFailed(
            f"{first_row}: that is -Σ w log(1 + w). The logarithm is of w itself; adding 1 inside it changes every "
            "term, not only the zero weights. For a zero weight, the term is 0 (see the hint: look up "
            "torch.special.xlogy, or use torch.where)."
        )
    if (entropy < -1e-6).any():
        raise CheckFailed(
            f"{first_row}, and some rows are negative: an entropy never is, since each term -w log w is ≥ 0 for "
            "0 ≤ w ≤ 1. Compare your formula, term by term, with H(w) = -Σ_j w_j log w_j, with the natural log."
        )
    expect_close(entropy, expected, call)


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

    _check_gradients(scaled_dot_product_attention, seed)
    passed(
        "scaled_dot_product_attention",
        "matches PyTorch's attention with and without a mask, for any batch shape, and its gradients are right",
    )


def _check_attention_on(sdpa: Callable, q, k, v, mask) -> None:
    d_k, n_k = q.shape[-1], k.shape[-2]
    with_mask = "" if mask is None else f" and a mask of shape {shape_of(mask)}"
    call = (
        f"scaled_dot_product_attention(q, k, v{', mask' if mask is not None else ''}) with q {shape_of(q)}, "
        f"k {shape_of(k)}, v {shape_of(v)}{with_mask}"
    )
    args = (q, k, v) if mask is None else (q, k, v, mask)
    try:
        result = call_learner(sdpa, *args, call=call)
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        _name_truth_value_of_a_tensor(failure, "mask")
        _diagnose_batch_axes(sdpa, q, k, v, mask, str(failure))
        raise
    outputs, weights = expect_pair(result, call)
    outputs_shape, weights_shape = (*q.shape[:-1], v.shape[-1]), (*q.shape[:-1], n_k)
    _expect_outputs_then_weights(outputs, weights, outputs_shape, weights_shape, call)
    expect_tensor(weights, "the weights of scaled_dot_product_attention", weights_shape, q.dtype)
    expect_tensor(outputs, "the outputs of scaled_dot_product_attention", outputs_shape, q.dtype)

    if mask is not None:
        without_mask = "scaled_dot_product_attention(q, k, v) with the same q, k and v, no mask"
        masked_fill = "(Tensor.masked_fill returns a new tensor and leaves the one it was called on as it was.)"
        _expect_mask_used(weights, lambda: call_learner(sdpa, q, k, v, call=without_mask), mask, call, masked_fill)
        expect_masked_weights(weights, mask, call, scores=q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]))
    if not rows_sum_to(weights):
        if rows_sum_to(weights, 1 / math.sqrt(d_k)):
            raise CheckFailed(
                f"{call}: each row of weights sums to 1/√d_k: you scaled after the softmax. Scale the scores."
            )
        if rows_sum_to(weights, dim=-2):
            raise CheckFailed(
                f"{call}: your weights sum to 1 over the queries axis (dim -2); each query's row must sum to 1 "
                "over the keys (softmax with dim=-1)."
            )
        raise CheckFailed(f"{call}: the rows of your weights do not sum to 1 over the keys.")
    _diagnose_scale(q, k, v, mask, weights, call)
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
    if not torch.allclose(weights, expected_weights, atol=1e-5):
        _diagnose_batch_axes(sdpa, q, k, v, mask, f"{call}: the weights differ from PyTorch's.", weights)
    expect_close(weights, expected_weights, f"{call}: the weights, compared with PyTorch's")
    expect_close(outputs, expected_outputs, f"{call}: the outputs (weights @ v), compared with PyTorch's")


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


def _diagnose_batch_axes(sdpa: Callable, q, k, v, mask, failure: str, weights=None) -> None:
    """Name the mistakes that make attention right for one sequence and wrong for a batch: k.T, which on a
    tensor of more than two axes reverses them all, and axes counted from the front (``weights``, the learner's
    on q, k, v if it returned any, tell whether the scale was one of them)."""
    _diagnose_transpose_of_all_axes(sdpa, failure)
    axes = "k.transpose(-2, -1) and softmax(dim=-1)"
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
                f"axes. Count the axes from the end, {axes}, so that any batch shape works."
            )


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
            "number of batch axes. Count the axes from the end, k.transpose(-2, -1) and softmax(dim=-1), so that "
            "any batch shape works."
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
            _diagnose_more_batch_axes(sdpa, q, k, v, failure)
        raise
    expect_tensor(outputs, "the outputs of scaled_dot_product_attention", (1, 3, 2), q.dtype)
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


@learner_facing
def check_single_head_attention(SingleHeadAttention: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check the projections (without bias), self-attention, cross-attention, masking and gradients of the module.

    The projections may be nn.Linear layers or nn.Parameter matrices, in either layout: the check finds them by
    their names and writes its own seeded weights into them, so that what a correct module returns depends on the
    check's seed alone, whatever the order in which the learner created them.
    """
    with earlier_exercises_replaced(SingleHeadAttention.forward, "scaled_dot_product_attention"):
        module = built_with_seed(SingleHeadAttention, D_MODEL, 4, 5, seed=seed, call=MODULE)
        expect_own_parameters(module, MODULE, parts=tuple(OUT_FEATURES))
        matrices = _set_projections(module, seed)
        x = seeded_randn(2, 3, D_MODEL, seed=seed)  # (batch, n_q=3, d_model)
        context = seeded_randn(2, 7, D_MODEL, seed=seed + 1)  # (batch, n_k=7, d_model)
        _check_module_on(module, matrices, x, None, None, "module(x)", seed)
        _check_module_on(module, matrices, x, context, None, "module(x, context)", seed)
        mask = seeded_randn(3, 7, seed=seed + 2) > 0  # (n_q, n_k)
        mask[:, 0] = True
        _check_module_on(module, matrices, x, context, mask, "module(x, context, mask)", seed)
        _check_gradients_reach_projections(module, x, context)
    passed("SingleHeadAttention", "its own W_Q, W_K, W_V without bias; self- and cross-attention; masks; gradients")


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
    self.<name> applied to x is F.linear(x, matrix). Biases stay as they are: a bias of zeros is no mistake."""
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


def _check_module_on(module: nn.Module, matrices: dict, x, context, mask, call: str, seed: int) -> None:
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
        if context is not None:
            _diagnose_sources(module, matrices, x, call, seed)
        if context is None and mask is None and isinstance(failure.__cause__, RuntimeError):
            _diagnose_untransposed_weights(type(module), failure, seed)
        raise
    outputs, weights = expect_pair(result, call)
    with torch.no_grad():  # the projections as the notebook defines them: x W, no bias
        q = F.linear(x, matrices["query"])  # (batch, n_q, d_k)
        k = F.linear(keys_from, matrices["key"])  # (batch, n_k, d_k)
        v = F.linear(keys_from, matrices["value"])  # (batch, n_k, d_v)
        expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
    _expect_outputs_then_weights(outputs, weights, expected_outputs.shape, expected_weights.shape, call)
    if not (matches(weights, expected_weights) and matches(outputs, expected_outputs)):
        if mask is not None and isinstance(weights, torch.Tensor) and weights.shape == expected_weights.shape:
            without_mask = "module(x, context) with the same x and context, no mask"
            _expect_mask_used(
                weights,
                lambda: call_learner(module, x, context=context, call=without_mask),
                mask,
                call,
                "Does forward pass mask on to scaled_dot_product_attention?",
            )
        if context is not None:
            _diagnose_sources(module, matrices, x, call, seed)
        _diagnose_projections(module, matrices, x, keys_from, mask, outputs, weights, call)
    expect_tensor(weights, "the weights", expected_weights.shape, x.dtype)
    expect_tensor(outputs, "the outputs", expected_outputs.shape, x.dtype)
    expect_close(weights, expected_weights, f"{call}: the weights")
    expect_close(outputs, expected_outputs, f"{call}: the outputs")


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
        keys_by_query = pytorch_attention(q, F.linear(keys_from, matrices["query"]), v, mask=mask, scale=None)
        if matches(weights, keys_by_query[1]):
            raise CheckFailed(f"{call}: the keys were made with self.query; use their own projection self.key.")
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
    maps = {id(_projection(module, name)) for name in OUT_FEATURES} | {id(bias) for bias in biases.values()}
    others = [f"self.{name} {shape_of(p)}" for name, p in module.named_parameters() if id(p) not in maps]
    if others:
        raise CheckFailed(
            f"{call}: the results are not those of attention with the three maps alone, and your module has other "
            f"parameters: {', '.join(others)}. The notebook's projections are W_Q, W_K and W_V and nothing else, "
            "with no bias: Q = X W_Q, K = C W_K, V = C W_V. Is one of the others added in forward?"
        )


def _diagnose_untransposed_weights(SingleHeadAttention: type, failure: CheckFailed, seed: int) -> None:  # noqa: N803
    """After a crash on shapes: in a module whose sizes are all equal, where x @ linear.weight runs, see whether
    the code multiplies by the nn.Linear weights as they are stored, (d_out, d_model), untransposed."""
    side = 4
    try:
        module = built_with_seed(SingleHeadAttention, side, side, side, seed=seed, call="SingleHeadAttention(4, 4, 4)")
    except CheckFailed:
        return
    parts = [getattr(module, name, None) for name in OUT_FEATURES]
    if not all(isinstance(part, nn.Linear) for part in parts):
        return
    x = seeded_randn(2, 3, side, seed=seed + 5)  # (batch, n, d_model = d_k = d_v = 4)
    matrices = [seeded_randn(side, side, seed=seed + 20 + number) for number in range(3)]  # (d_out, d_model)
    with torch.no_grad():
        for part, matrix in zip(parts, matrices, strict=True):
            part.weight.copy_(matrix)
        expected_outputs, expected_weights = pytorch_attention(
            *(x @ matrix for matrix in matrices), mask=None, scale=None
        )
    call = "module(x) with d_model = d_k = d_v = 4"
    try:
        outputs, weights = expect_pair(call_learner(module, x, call=call), call)
    except CheckFailed:
        return
    if matches(weights, expected_weights) and matches(outputs, expected_outputs):
        raise CheckFailed(
            f"{failure}\nWith d_model = d_k = d_v, where the shapes fit, your module computes x @ self.query.weight: "
            "nn.Linear stores its weight as (d_out, d_model), so x @ weight multiplies by the transpose of its map. "
            "Call the layer, self.query(x), or use x @ W.T."
        ) from failure.__cause__


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
