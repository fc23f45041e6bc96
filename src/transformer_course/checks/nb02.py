"""Checks for notebook 02, queries, keys and values: scaled dot-product attention.

Oracles: ``torch.distributions.Categorical(...).entropy()``; ``F.scaled_dot_product_attention`` (through
``pytorch_attention``), for the module with the learner's W_Q, W_K, W_V applied by ``F.linear`` (no bias);
``torch.autograd.gradcheck``; closed-form values.
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
    expect_masked_weights,
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
    entropy = _entropy_of(attention_entropy, uniform, "uniform rows of 4 weights")
    if torch.allclose(entropy, torch.full((2,), math.log2(4))):
        raise CheckFailed(
            "attention_entropy of a uniform row of 4 weights is 2 = log₂ 4: you used log base 2. "
            "Use the natural logarithm, torch.log, so the entropy is in nats (log 4 ≈ 1.386)."
        )
    if torch.allclose(entropy, torch.full((2,), math.log(4) / 4)):
        raise CheckFailed(
            "attention_entropy of a uniform row of 4 weights is log(4)/4: you averaged over the keys. "
            "Sum -w log w over the keys instead."
        )
    expect_close(entropy, torch.full((2,), math.log(4)), "attention_entropy of uniform rows of 4 (log 4)")

    with_zeros = torch.tensor([[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])  # (2, 4)
    entropy = _entropy_of(attention_entropy, with_zeros, "rows [0.5, 0.5, 0, 0] and [1, 0, 0, 0]")
    if torch.isnan(entropy).any():
        raise CheckFailed(
            "attention_entropy gives nan for a row with zero weights: log 0 = -inf and 0 · (-inf) = nan. "
            "A zero weight contributes 0 to the entropy (the limit of w log w as w → 0): use "
            "torch.special.xlogy(w, w), or torch.where to skip the zeros."
        )
    expect_close(entropy, torch.tensor([math.log(2), 0.0]), "attention_entropy of [0.5, 0.5, 0, 0] and [1, 0, 0, 0]")

    weights = torch.softmax(2 * seeded_randn(2, 3, 5, seed=seed), dim=-1)  # (2, 3, 5)
    entropy = _entropy_of(attention_entropy, weights, "random weights of shape (2, 3, 5)")
    expected = torch.distributions.Categorical(probs=weights).entropy()  # (2, 3)
    expect_close(entropy, expected, "attention_entropy of random weights, compared with torch.distributions")
    passed("attention_entropy", "one entropy per row, in nats, and 0 · log 0 counts as 0")


def _entropy_of(attention_entropy: Callable, weights: torch.Tensor, what: str) -> torch.Tensor:
    call = f"attention_entropy(weights) for {what}"
    entropy = call_learner(attention_entropy, weights, call=call)
    expected_shape = weights.shape[:-1]
    if isinstance(entropy, torch.Tensor) and entropy.shape == (*expected_shape, 1):
        raise CheckFailed(f"{call} returned shape {shape_of(entropy)}: drop the summed axis (no keepdim).")
    expect_tensor(entropy, "attention_entropy", expected_shape, weights.dtype)
    if (entropy < -1e-6).any():
        raise CheckFailed(f"{call} is negative; an entropy never is. It is -Σ w log w: mind the minus sign.")
    return entropy


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
        _diagnose_batch_axes(sdpa, q, k, v, mask, str(failure))
        raise
    outputs, weights = expect_pair(result, call)
    expect_tensor(weights, "the weights of scaled_dot_product_attention", (*q.shape[:-1], n_k), q.dtype)
    expect_tensor(outputs, "the outputs of scaled_dot_product_attention", (*q.shape[:-1], v.shape[-1]), q.dtype)

    if mask is not None:
        expect_masked_weights(weights, mask, call)
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
        _diagnose_batch_axes(sdpa, q, k, v, mask, f"{call}: the weights differ from PyTorch's.")
    expect_close(weights, expected_weights, f"{call}: the weights, compared with PyTorch's")
    expect_close(outputs, expected_outputs, f"{call}: the outputs (weights @ v), compared with PyTorch's")


def _diagnose_scale(q, k, v, mask, weights: torch.Tensor, call: str) -> None:
    d_k, n_k, d_v = q.shape[-1], k.shape[-2], v.shape[-1]
    wrong_scales = {
        1.0: "you did not scale the scores: divide q kᵀ by √d_k",
        1 / math.sqrt(n_k): "you divided by √(number of keys); divide by √d_k, the key dimension q.shape[-1]",
        1 / math.sqrt(d_v): "you divided by √d_v; the scale is √d_k, the dimension of queries and keys",
        1 / d_k: "you divided by d_k; divide by its square root √d_k",
    }
    for scale, mistake in wrong_scales.items():
        if torch.allclose(weights, pytorch_attention(q, k, v, mask=mask, scale=scale)[1], atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")


def _diagnose_batch_axes(sdpa: Callable, q, k, v, mask, failure: str) -> None:
    """Name the mistakes that make attention right for one sequence and wrong for a batch: k.T, which on a
    tensor of more than two axes reverses them all, and axes counted from the front."""
    _diagnose_transpose_of_all_axes(sdpa, failure)
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
                "axes. Count the axes from the end, k.transpose(-2, -1) and softmax(dim=-1), so that any batch "
                "shape works."
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


def _check_gradients(sdpa: Callable, seed: int) -> None:
    q = seeded_randn(1, 3, 4, seed=seed + 4, dtype=torch.float64).requires_grad_()  # (batch, n_q, d_k)
    k = seeded_randn(1, 5, 4, seed=seed + 5, dtype=torch.float64).requires_grad_()  # (batch, n_k, d_k)
    v = seeded_randn(1, 5, 2, seed=seed + 6, dtype=torch.float64).requires_grad_()  # (batch, n_k, d_v)
    call = "torch.autograd.gradcheck on scaled_dot_product_attention in float64"
    try:
        correct = torch.autograd.gradcheck(lambda q, k, v: sdpa(q, k, v)[0], (q, k, v), raise_exception=False)
    except Exception as error:
        raise CheckFailed(
            f"{call} raised {type(error).__name__}: {error}. Keep every step a differentiable tensor "
            "operation (no .item(), .numpy() or .detach()) and keep the input dtype."
        ) from error
    if not correct:
        raise CheckFailed(f"{call}: the gradients differ from numerical ones; some step is not differentiable.")


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_single_head_attention(SingleHeadAttention: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check the projections (without bias), self-attention, cross-attention and masking of the module."""
    with earlier_exercises_replaced(SingleHeadAttention.forward, "scaled_dot_product_attention"):
        call = "SingleHeadAttention(d_model=6, d_k=4, d_v=5)"
        module = built_with_seed(SingleHeadAttention, 6, 4, 5, seed=seed, call=call)
        _check_projections(module)
        _set_projections(module, seed)
        x = seeded_randn(2, 3, 6, seed=seed)  # (batch, n_q=3, d_model)
        context = seeded_randn(2, 7, 6, seed=seed + 1)  # (batch, n_k=7, d_model)
        _check_module_on(module, x, None, None, "module(x)", seed)
        _check_module_on(module, x, context, None, "module(x, context)", seed)
        mask = seeded_randn(3, 7, seed=seed + 2) > 0  # (n_q, n_k)
        mask[:, 0] = True
        _check_module_on(module, x, context, mask, "module(x, context, mask)", seed)
        _check_gradients_reach_projections(module, x, context)
    passed("SingleHeadAttention", "its own W_Q, W_K, W_V without bias; self- and cross-attention; masks")


def _check_projections(module: nn.Module) -> None:
    expected = {"query": (6, 4), "key": (6, 4), "value": (6, 5)}
    for name, (d_in, d_out) in expected.items():
        layer = getattr(module, name, None)
        if not isinstance(layer, nn.Linear):
            raise CheckFailed(
                f"SingleHeadAttention(d_model=6, d_k=4, d_v=5) needs an nn.Linear named self.{name}; "
                f"found {type(layer).__name__ if layer is not None else 'nothing'}."
            )
        if (layer.in_features, layer.out_features) != (d_in, d_out):
            raise CheckFailed(
                f"SingleHeadAttention(d_model=6, d_k=4, d_v=5): self.{name} maps {layer.in_features} → "
                f"{layer.out_features} features; it should map d_model={d_in} → {d_out}."
            )


def _set_projections(module: nn.Module, seed: int) -> None:
    """Give the projections' weights seeded values, the same whatever the order in which the learner created them,
    so that the expected results of a correct module depend on the check's seed alone. Biases stay as they are: a
    bias of zeros is no mistake."""
    with torch.no_grad():
        for number, name in enumerate(("query", "key", "value")):
            layer = getattr(module, name)
            layer.weight.copy_(seeded_randn(*layer.weight.shape, seed=seed + 10 + number))


def _check_module_on(module: nn.Module, x, context, mask, call: str, seed: int) -> None:
    keys_from = x if context is None else context
    kwargs = {} if context is None else {"context": context}
    if mask is not None:
        kwargs["mask"] = mask
    call = f"{call} with x {shape_of(x)}" + ("" if context is None else f" and context {shape_of(context)}")
    try:
        result = call_learner(module, x, call=call, **kwargs)
    except NotImplementedYet:
        raise
    except CheckFailed:
        if context is not None:
            _diagnose_sources(module, x, call, seed)
        raise
    outputs, weights = expect_pair(result, call)
    with torch.no_grad():  # the projections as the notebook defines them: x W, no bias
        q = F.linear(x, module.query.weight)  # (batch, n_q, d_k)
        k = F.linear(keys_from, module.key.weight)  # (batch, n_k, d_k)
        v = F.linear(keys_from, module.value.weight)  # (batch, n_k, d_v)
        expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
    if not (matches(weights, expected_weights) and matches(outputs, expected_outputs)):
        if context is not None:
            _diagnose_sources(module, x, call, seed)
        _diagnose_projections(module, x, keys_from, mask, outputs, weights, call)
    expect_tensor(weights, "the weights", expected_weights.shape, x.dtype)
    expect_tensor(outputs, "the outputs", expected_outputs.shape, x.dtype)
    expect_close(weights, expected_weights, f"{call}: the weights")
    expect_close(outputs, expected_outputs, f"{call}: the outputs")


def _diagnose_projections(module: nn.Module, x, keys_from, mask, outputs, weights, call: str) -> None:
    with torch.no_grad():
        with_bias = pytorch_attention(
            module.query(x), module.key(keys_from), module.value(keys_from), mask=mask, scale=None
        )
        keys_by_query = pytorch_attention(
            module.query(x), module.query(keys_from), module.value(keys_from), mask=mask, scale=None
        )
    if matches(weights, with_bias[1]) and matches(outputs, with_bias[0]):
        raise CheckFailed(
            f"{call}: your projections add a bias; the notebook's projections have none: Q = X W_Q, K = C W_K, "
            "V = C W_V, with nothing added. Create them with nn.Linear(d_model, d_k, bias=False) and so on."
        )
    if matches(weights, keys_by_query[1]):
        raise CheckFailed(f"{call}: the keys were made with self.query; use their own projection self.key.")


def _diagnose_sources(module: nn.Module, x, call: str, seed: int) -> None:
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
            q_from, k_from, v_from = (sequences[source] for source in sources)
            q, k, v = module.query(q_from), module.key(k_from), module.value(v_from)
            expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=None, scale=None)
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
    module.zero_grad()
    outputs, _ = module(x, context=context)
    (outputs * seeded_randn(*outputs.shape, seed=99)).sum().backward()
    for name in ("query", "key", "value"):
        grad = getattr(module, name).weight.grad
        if grad is None or grad.abs().sum() == 0:
            raise CheckFailed(f"self.{name} receives no gradient, so it cannot learn: is it used in forward?")
    module.zero_grad()
