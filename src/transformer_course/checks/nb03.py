"""Checks for notebook 03, multi-head attention.

Oracles: heads cut out by slicing the features (the "h separate heads" view), and ``nn.MultiheadAttention``
with the learner's weights copied in, with and without masks. Named mistakes are recognised by computing what
each would give (an nn.MultiheadAttention with the weights moved, or the reference attention on heads cut out
the wrong way) and comparing.
"""

import itertools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..reference.nb02_queries_keys_values import attention
from ..reference.pytorch_layers import torch_twin
from . import (
    CheckFailed,
    NotImplementedYet,
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
    passed,
    seeded_randn,
    shape_of,
)
from .nb02 import mixed_up_sources

# Exercises 1 and 2 ---------------------------------------------------------------------------------------


def _shapes(seed: int) -> list[tuple[tuple[int, ...], int, int, int]]:
    """(batch shape, seq, heads, d_head) for four cases drawn with the seed: no batch axis, one, two, and one
    more with a single batch axis. seq, heads and d_head are at least 2, so that mixing any two of them up shows."""
    generator = torch.Generator().manual_seed(seed)

    def size(low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (), generator=generator))

    return [
        (tuple(size(1, 3) for _ in range(batch_axes)), size(2, 5), size(2, 4), size(2, 3))
        for batch_axes in (1, 0, 2, 1)
    ]


def _numbered(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """A tensor of the distinct numbers 0, 1, ... in an order drawn with the seed: where each number lands
    shows where it was taken from."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randperm(math.prod(shape), generator=generator).to(torch.float32).reshape(shape)


def _batch_axes(batch: tuple[int, ...]) -> str:
    return {0: "no batch axis", 1: "one batch axis"}.get(len(batch), f"{len(batch)} batch axes")


def _call_for_any_batch(function: Callable, x: torch.Tensor, *args, core: int, expected: torch.Tensor, call: str):
    """The learner's split or merge of x: its last ``core`` axes are the function's to rearrange, any before them
    batch axes. If it crashes or returns the wrong shape, and it is right on the same numbers given exactly one batch
    axis, say that it works for one batch axis only."""
    try:
        result = call_learner(function, x, *args, call=call)
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        cause = failure.__cause__
        what = "raised an error" if cause is None else f"raised {type(cause).__name__}: {cause}"
        _expect_not_one_batch_axis_only(function, x, args, core, expected, call, what)
        if isinstance(cause, TypeError) and "float" in str(cause):
            raise CheckFailed(
                f"{failure}\nA size must be an int: d_model / num_heads is a float even when the division is exact; "
                "integer division, //, gives an int."
            ) from cause
        raise
    if isinstance(result, torch.Tensor) and result.shape != expected.shape:
        _expect_not_one_batch_axis_only(function, x, args, core, expected, call, f"returned shape {shape_of(result)}")
    return result


def _expect_not_one_batch_axis_only(function, x, args, core: int, expected, call: str, what: str) -> None:
    batch = tuple(x.shape[:-core])
    if len(batch) == 1:
        return
    one_axis = x.reshape(-1, *x.shape[-core:])  # the same numbers, with their batch axes (or none) made into one
    expected_one_axis = expected.reshape(-1, *expected.shape[len(batch) :])
    probe = f"{call}, its batch axes made into one, {shape_of(one_axis)}"
    try:
        result = call_learner(function, one_axis, *args, call=probe)
    except CheckFailed:
        return
    if isinstance(result, torch.Tensor) and torch.equal(result, expected_one_axis):
        raise CheckFailed(
            f"{call} {what}. Given the same numbers with exactly one batch axis, {shape_of(one_axis)}, it is right: "
            "your code assumes exactly one batch axis (it counts axes from the front, or folds the batch axes into "
            f"one). This x has {_batch_axes(batch)}, and the expected result is {shape_of(expected)}: the function "
            "must take any number of batch axes. Count the axes it works on from the end, with negative positions "
            "(-1 is the last axis), and keep the leading ones as they come."
        )


AXES_SPLIT = ("seq", "heads", "d_head")  # the last three axes of x reshaped to (..., seq, heads, d_head)


@learner_facing
def check_split_heads(split_heads: Callable, seed: int = 0) -> None:
    """Check the split on numbered features, for head counts, lengths and batch shapes drawn with the seed."""
    for case, (batch, seq, num_heads, d_head) in enumerate(_shapes(seed)):
        x = _numbered((*batch, seq, num_heads * d_head), seed=seed + case)  # (..., seq, d_model)
        call = f"split_heads(x, num_heads={num_heads}) with x of shape {shape_of(x)}"
        expected = torch.stack(x.chunk(num_heads, dim=-1), dim=-3)  # head i: features i·d_head … by slicing
        heads = _call_for_any_batch(split_heads, x, num_heads, core=2, expected=expected, call=call)
        grouped = x.reshape(*batch, seq, num_heads, d_head)  # (..., seq, heads, d_head)
        if isinstance(heads, torch.Tensor) and heads.shape != expected.shape:
            _name_axis_order(heads, grouped, expected, call)
        expect_tensor(heads, call, expected.shape, x.dtype)
        if torch.equal(heads, x.reshape(*batch, num_heads, seq, d_head)):
            raise CheckFailed(
                f"{call}: you reshaped straight to (..., heads, seq, d_head) without transposing, which deals "
                "positions out to heads. Cut each position's features into groups first, (..., seq, heads, "
                "d_head), then swap the seq and heads axes."
            )
        if not torch.equal(heads, expected):
            raise CheckFailed(
                f"{call}: head i must hold features i·d_head to (i+1)·d_head - 1 of every position, in order. "
                f"Head 0 of the first sequence should be\n{expected.reshape(-1, num_heads, seq, d_head)[0, 0]}\n"
                f"but yours is\n{heads.reshape(-1, num_heads, seq, d_head)[0, 0]}"
            )
    _expect_differentiable_on(split_heads, _numbered((2, 3, 4), seed=seed), 2, call="split_heads(x, num_heads=2)")
    passed("split_heads", "head i holds features i·d_head … (i+1)·d_head - 1, for any batch shape")


def _name_axis_order(heads: torch.Tensor, grouped: torch.Tensor, expected: torch.Tensor, call: str) -> None:
    """The result has the wrong shape: if it is the grouped features with their last three axes in another order,
    say which order."""
    leading = list(range(grouped.dim() - 3))
    for order in itertools.permutations(range(3)):
        candidate = grouped.permute(*leading, *(len(leading) + axis for axis in order))
        if candidate.shape == heads.shape and torch.equal(candidate, heads):
            got = ", ".join(AXES_SPLIT[axis] for axis in order)
            raise CheckFailed(
                f"{call} returned shape {shape_of(heads)}: its last three axes are (..., {got}). Expected "
                f"(..., heads, seq, d_head) = {shape_of(expected)}: move the heads axis in front of the seq axis, "
                "and leave d_head last."
            )
    raise CheckFailed(
        f"{call} returned shape {shape_of(heads)}; expected (..., heads, seq, d_head) = {shape_of(expected)}, "
        "with the batch axes of x, however many, in front."
    )


def _expect_differentiable_on(function: Callable, x: torch.Tensor, *args, call: str) -> None:
    """split_heads and merge_heads are steps of a layer that is trained: what they return must carry gradients."""
    x = x.clone().requires_grad_()
    call = f"{call} with x {shape_of(x)} that requires grad"
    result = call_learner(function, x, *args, call=call)
    expect_differentiable(result, call)
    # A view made under torch.no_grad() still says it requires grad, but it is a leaf that no gradient leaves.
    try:
        (gradient,) = torch.autograd.grad(result, x, torch.ones_like(result), allow_unused=True)
    except RuntimeError:  # "element 0 of tensors does not require grad": such a view has no graph behind it
        gradient = None
    if gradient is None:
        raise CheckFailed(
            f"{call}: no gradient flows from the result back to x, so training could not update anything before it. "
            "Remove torch.no_grad() or .detach() from the computation; keep every step a PyTorch operation on x."
        )


@learner_facing
def check_merge_heads(merge_heads: Callable, seed: int = 0) -> None:
    """Check the merge on numbered features, for shapes drawn with the seed; it must undo the split."""
    for case, (batch, seq, num_heads, d_head) in enumerate(_shapes(seed)):
        heads = _numbered((*batch, num_heads, seq, d_head), seed=seed + case)  # (..., heads, seq, d_head)
        call = f"merge_heads(x) with x of shape {shape_of(heads)} ({num_heads} heads)"
        side_by_side = torch.cat(heads.unbind(dim=-3), dim=-1)  # (..., seq, heads · d_head)
        merged = _call_for_any_batch(merge_heads, heads, core=3, expected=side_by_side, call=call)
        if isinstance(merged, torch.Tensor) and merged.shape != side_by_side.shape:
            raise CheckFailed(
                f"{call} returned shape {shape_of(merged)}; expected (..., seq, heads · d_head) = "
                f"{shape_of(side_by_side)}, with the batch axes of x, however many, in front."
            )
        expect_tensor(merged, call, side_by_side.shape, heads.dtype)
        if torch.equal(merged, heads.reshape(*batch, seq, num_heads * d_head)):
            raise CheckFailed(
                f"{call}: you reshaped straight to (..., seq, heads · d_head) without transposing, which mixes "
                "positions of different heads. Swap the heads and seq axes back first, to (..., seq, heads, d_head), "
                "then reshape."
            )
        if not torch.equal(merged, side_by_side):
            raise CheckFailed(
                f"{call}: each position must get the features of head 0, then head 1, and so on, side by side; "
                "merge_heads must undo split_heads."
            )
    _expect_differentiable_on(merge_heads, _numbered((2, 2, 3, 2), seed=seed), call="merge_heads(x)")
    passed("merge_heads", "the heads' features side by side, undoing split_heads")


# Exercise 3 ---------------------------------------------------------------------------------------------

PROJECTIONS = ("query", "key", "value", "output")
ROLES = {"query": "queries", "key": "keys", "value": "values"}


def _twin_results(twin, x, context, torch_masks: dict):
    """The twin's per-head outputs and weights. PyTorch takes its masks as attn_mask ((n_q, n_k), or one per
    sentence and head, (batch · heads, n_q, n_k)) and key_padding_mask (batch, n_k), True where attention is NOT
    allowed."""
    with torch.no_grad():
        return twin(x, context, context, average_attn_weights=False, **torch_masks)  # (b, n_q, d), (b, h, n_q, n_k)


@learner_facing
def check_multi_head_attention(MultiHeadAttention: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check the module against nn.MultiheadAttention with copied weights: self- and cross-attention, a mask
    (n_q, n_k) shared by the batch, a padding mask (batch, 1, n_k) and a mask (batch, n_q, n_k) that differ per
    sentence, two head counts; then that training could update every projection."""
    with earlier_exercises_replaced(MultiHeadAttention.forward, "split_heads", "merge_heads"):
        for num_heads in (2, 4):
            module = _build(MultiHeadAttention, 8, num_heads, seed)
            twin = torch_twin(module, num_heads)
            # A batch of 3, unlike either head count: a mask's batch axis cannot pass for the heads axis.
            x = seeded_randn(3, 5, 8, seed=seed)  # (batch=3, n_q=5, d_model=8)
            context = seeded_randn(3, 6, 8, seed=seed + 1)  # (batch, n_k=6, d_model)
            _compare(module, twin, x, None, None, {}, "module(x)", seed)
            _compare(module, twin, x, context, None, {}, "module(x, context)", seed)
            hidden = torch.ones(5, 6, dtype=torch.bool).triu(diagonal=2)  # (n_q, n_k): pairs not to attend
            what = "module(x, context, mask), a mask (n_q, n_k) shared by the batch,"
            _compare(module, twin, x, context, ~hidden, {"attn_mask": hidden}, what, seed)
            padding = _padding(batch=3, n_k=6, seed=seed)  # (batch, n_k): True marks padding
            allowed = ~padding[:, None, :]  # (batch, 1, n_k): the course's convention, True = may attend
            what = "module(x, context, mask), a padding mask (batch, 1, n_k),"
            _compare(module, twin, x, context, allowed, {"key_padding_mask": padding}, what, seed)
            allowed = ~hidden & ~padding[:, None, :]  # (batch, n_q, n_k): every query still sees keys 0 and 1
            per_head = (~allowed).repeat_interleave(num_heads, dim=0)  # (batch · heads, n_q, n_k), True = hidden
            what = "module(x, context, mask), a mask (batch, n_q, n_k) of each sentence's own,"
            _compare(module, twin, x, context, allowed, {"attn_mask": per_head}, what, seed)
            _expect_gradients_reach_everything(module, x, context, seed)
    passed(
        "MultiHeadAttention",
        "equals nn.MultiheadAttention with the same weights, with and without masks; gradients reach every projection",
    )


def _padding(batch: int, n_k: int, seed: int) -> torch.Tensor:
    """(batch, n_k), True at the padding: 0, 1, 2, ... padded positions, one count per sentence in an order drawn
    with the seed, so that every sentence has a mask of its own."""
    generator = torch.Generator().manual_seed(seed)
    lengths = n_k - torch.randperm(batch, generator=generator)  # (batch,)
    return torch.arange(n_k) >= lengths[:, None]  # (batch, n_k)


def _build(MultiHeadAttention: type, d_model: int, num_heads: int, seed: int) -> nn.Module:  # noqa: N803
    call = f"MultiHeadAttention(d_model={d_model}, num_heads={num_heads})"
    module = built_with_seed(MultiHeadAttention, d_model, num_heads, seed=seed, call=call)
    for name in PROJECTIONS:
        layer = getattr(module, name, None)
        if not isinstance(layer, nn.Linear) or layer.bias is None:
            raise CheckFailed(f"{call} needs an nn.Linear with bias named self.{name}.")
        if (layer.in_features, layer.out_features) != (d_model, d_model):
            raise CheckFailed(
                f"{call}: self.{name} maps {layer.in_features} → {layer.out_features} features; every "
                f"projection maps d_model → d_model ({d_model} → {d_model}), all heads at once."
            )
    expect_own_parameters(module, call, parts=PROJECTIONS)
    for number, name in enumerate(PROJECTIONS):
        with torch.no_grad():  # nonzero biases, so that forgetting one shows
            getattr(module, name).bias.copy_(0.1 * seeded_randn(d_model, seed=seed + number))
    return module


def _compare(module, twin, x, context, allowed, torch_masks: dict, what: str, seed: int) -> None:
    num_heads = twin.num_heads
    keys_from = x if context is None else context
    kwargs = {} if context is None else {"context": context}
    if allowed is not None:
        kwargs["mask"] = allowed
    call = f"{what} with {num_heads} heads, x {shape_of(x)}"
    call += "" if context is None else f", context {shape_of(context)}"
    call += "" if allowed is None else f", mask {shape_of(allowed)}"
    try:
        result = call_learner(module, x, call=call, **kwargs)  # with gradients: it must be trainable
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        _diagnose_inputs(module, twin, x, context, allowed, torch_masks, call, seed)
        if "may attend to no key at all" in str(failure):  # the reference attention refused the mask it got
            raise CheckFailed(
                f"{failure}\nThe masks of this check let every query see at least one key, so the mask that "
                "reached attention was not the one given to your module. Here, as in F.scaled_dot_product_attention, "
                "True means that the query may attend to the key: pass the mask on with an axis added, not changed."
            ) from failure.__cause__
        raise
    outputs, weights = expect_pair(result, call)
    batch, n_q, n_k = x.shape[0], x.shape[-2], keys_from.shape[-2]
    if isinstance(weights, torch.Tensor) and weights.shape == (batch, n_q, n_k):
        raise CheckFailed(
            f"{call}: the weights have shape {shape_of(weights)}; return every head's weights, "
            f"(batch, heads, n_q, n_k) = {(batch, num_heads, n_q, n_k)}. Average them only to draw them."
        )
    expected_outputs, expected_weights = _twin_results(twin, x, keys_from, torch_masks)
    if not (matches(weights, expected_weights) and matches(outputs, expected_outputs)):
        _diagnose_inputs(module, twin, x, context, allowed, torch_masks, call, seed)
        _diagnose_projections(module, num_heads, x, keys_from, torch_masks, outputs, weights, call)
        _diagnose_heads_cut(module, num_heads, x, keys_from, allowed, outputs, weights, call)
    expect_tensor(weights, f"{call}: the weights", (batch, num_heads, n_q, n_k), x.dtype)
    expect_tensor(outputs, f"{call}: the outputs", x.shape, x.dtype)

    if not torch.allclose(weights, expected_weights, atol=1e-5):
        _diagnose_weights(module, twin, x, keys_from, allowed, torch_masks, weights, call)
    expect_close(weights, expected_weights, f"{call}: the weights of every head, compared with nn.MultiheadAttention")
    expect_close(weights.mean(dim=1), expected_weights.mean(dim=1), f"{call}: the weights averaged over heads")
    if not torch.allclose(outputs, expected_outputs, atol=1e-5):
        without_output = torch_twin(module, num_heads)
        with torch.no_grad():
            without_output.out_proj.weight.copy_(torch.eye(x.shape[-1]))
            without_output.out_proj.bias.zero_()
        if torch.allclose(outputs, _twin_results(without_output, x, keys_from, torch_masks)[0], atol=1e-5):
            raise CheckFailed(f"{call}: the outputs lack W_O: apply self.output to the merged heads.")
    expect_close(outputs, expected_outputs, f"{call}: the outputs, compared with nn.MultiheadAttention")
    expect_differentiable(outputs, call)


def _expect_gradients_reach_everything(module: nn.Module, x, context, seed: int) -> None:
    """Backpropagate a random loss through cross-attention: every projection's weight, and x and context (the
    layers below in a model), must get a gradient, or training could never change them."""
    x, context = x.clone().requires_grad_(), context.clone().requires_grad_()
    call = f"module(x, context), x {shape_of(x)} and context {shape_of(context)} requiring grad, then backward()"
    outputs, _ = expect_pair(call_learner(module, x, context=context, call=call), call)
    expect_differentiable(outputs, call)
    cotangent = seeded_randn(*outputs.shape, seed=seed + 9)  # the gradient of a random loss
    parts = {f"self.{name}.weight": getattr(module, name).weight for name in PROJECTIONS} | {"x": x, "context": context}
    try:
        gradients = torch.autograd.grad(outputs, list(parts.values()), cotangent, allow_unused=True)
    except RuntimeError:  # outputs that claim to require grad but have no graph behind them
        gradients = [None] * len(parts)
    for part, gradient in zip(parts, gradients, strict=True):
        if gradient is None or not gradient.abs().sum() > 0:
            raise CheckFailed(
                f"{call}: no gradient reaches {part} from the outputs, so training could never change "
                f"{'it' if part.startswith('self') else 'what comes before it'}. Somewhere between {part} and the "
                "outputs the computation left autograd (.detach(), torch.no_grad(), .data, .item() or a trip "
                "through NumPy): keep every step a PyTorch operation on the tensors you were given."
            )


def _diagnose_inputs(module, twin, x, context, allowed, torch_masks: dict, call: str, seed: int) -> None:
    """Name a mix-up of x and context, or a mask that reached attention inverted or with its axes misplaced."""
    if context is not None:
        _diagnose_sources(module, twin, x, call, seed)
    if allowed is not None:
        _diagnose_mask(module, twin, x, context, allowed, torch_masks, call)


def _diagnose_sources(module, twin, x, call: str, seed: int) -> None:
    # With a context as long as x, every mix-up of the two runs, and its result shows which one it is.
    context = seeded_randn(*x.shape, seed=seed + 7)  # (batch, n_k = n_q, d_model)
    probe = f"module(x, context) with x and context of the same shape {shape_of(x)}"
    try:
        with torch.no_grad():
            outputs, weights = expect_pair(call_learner(module, x, context=context, call=probe), probe)
    except CheckFailed:
        return
    sequences = {"x": x, "context": context}
    for sources in itertools.product(sequences, repeat=3):
        if sources == ("x", "context", "context"):
            continue
        with torch.no_grad():  # nn.MultiheadAttention takes queries, keys and values from three arguments
            expected_outputs, expected_weights = twin(
                *(sequences[source] for source in sources), average_attn_weights=False
            )
        if matches(weights, expected_weights) and matches(outputs, expected_outputs):
            raise CheckFailed(f"{call}: {mixed_up_sources(*sources)}")


def _diagnose_mask(module, twin, x, context, allowed, torch_masks: dict, call: str) -> None:
    """Call the module again with the mask changed the way a mistake changes it (inverted, or given the axis it
    lacked); if that gives the right result, name the mistake."""
    inverted = (
        ~allowed,
        "your mask is inverted: attention got True where the mask given to your module is False. Here, as in "
        "F.scaled_dot_product_attention, True means that the query may attend to the key (nn.MultiheadAttention's "
        "boolean masks mean the opposite): pass the mask on as it is, with an axis for the heads.",
    )
    if allowed.dim() == 3:  # (batch, n_q or 1, n_k): without a heads axis, its batch axis meets the scores' heads
        misplaced = (
            allowed.unsqueeze(-3),  # (batch, 1, n_q or 1, n_k)
            f"your mask of shape {shape_of(allowed)} reached attention without an axis for the heads, so its "
            "batch axis was lined up with the heads axis of the scores (batch, heads, n_q, n_k): PyTorch "
            "broadcasts from the last axis. Give the mask an axis of size 1 where the scores have their heads, "
            "so that each sentence's mask applies to all its heads.",
        )
    else:  # (n_q, n_k): an axis inserted at the front lands between n_q and n_k
        misplaced = (
            allowed.unsqueeze(0),  # (1, n_q, n_k)
            f"your mask of shape {shape_of(allowed)} got its heads axis in the wrong place: an axis inserted by "
            "counting from the front, such as mask[:, None] or mask.unsqueeze(1), lands between n_q and n_k when "
            "the mask has no batch axis. The mask may come as (n_q, n_k) or (batch, n_q, n_k): count the position "
            "of the new axis from the end, which is the same for both.",
        )
    keys_from = x if context is None else context
    expected_outputs, expected_weights = _twin_results(twin, x, keys_from, torch_masks)
    for given, mistake in (inverted, misplaced):
        probe = f"module(x, context, mask) with a mask of shape {shape_of(given)}"
        try:
            with torch.no_grad():
                outputs, weights = expect_pair(
                    call_learner(module, x, context=keys_from, mask=given, call=probe), probe
                )
        except CheckFailed:
            continue
        if matches(weights, expected_weights) and matches(outputs, expected_outputs):
            raise CheckFailed(f"{call}: {mistake}")


def _diagnose_projections(module, num_heads: int, x, keys_from, torch_masks: dict, outputs, weights, call: str):
    """Name a projection used in place of another (the keys computed with self.query): a twin holding that layer's
    weights in the other's place computes what the module did."""
    d_model = x.shape[-1]
    for role, used in itertools.permutations(PROJECTIONS[:3], 2):
        twin = torch_twin(module, num_heads)
        with torch.no_grad():  # in_proj_weight stacks W_Q, W_K, W_V; copy the layer used into the role's rows
            rows = slice(PROJECTIONS.index(role) * d_model, (PROJECTIONS.index(role) + 1) * d_model)
            twin.in_proj_weight[rows] = getattr(module, used).weight
            twin.in_proj_bias[rows] = getattr(module, used).bias
        expected_outputs, expected_weights = _twin_results(twin, x, keys_from, torch_masks)
        if matches(weights, expected_weights) and matches(outputs, expected_outputs):
            raise CheckFailed(
                f"{call}: the {ROLES[role]} were computed with self.{used}, the layer of the {ROLES[used]}. Each "
                f"role has its own projection: self.{role} for the {ROLES[role]}."
            )


def _diagnose_heads_cut(module, num_heads: int, x, keys_from, allowed, outputs, weights, call: str) -> None:
    """Name heads cut out of the projections, or merged back, by a reshape without the transpose, written inline
    in forward (the check lends correct split_heads and merge_heads, so it is not theirs): compute what that gives
    with the reference attention and the module's own weights, and compare."""
    d_model = x.shape[-1]
    mask = None if allowed is None else allowed.unsqueeze(-3)  # (batch or 1, 1, n_q or 1, n_k)

    def dealt(features):  # (batch, seq, d_model) → (batch, heads, seq, d_head) with no transpose
        return features.reshape(features.shape[0], num_heads, features.shape[1], -1)

    def sliced(features):  # (batch, seq, d_model) → (batch, heads, seq, d_head), head i from features i·d_head …
        return torch.stack(features.chunk(num_heads, dim=-1), dim=-3)

    def merged_without_transposing(heads):  # (batch, heads, seq, d_head) → (batch, seq, d_model)
        return heads.reshape(heads.shape[0], heads.shape[2], d_model)

    def merged(heads):
        return torch.cat(heads.unbind(dim=-3), dim=-1)

    with torch.no_grad():
        q, k, v = (
            F.linear(source, getattr(module, name).weight, getattr(module, name).bias)
            for name, source in (("query", x), ("key", keys_from), ("value", keys_from))
        )
        for split, merge, mistake in (
            (dealt, merged, "the queries, keys and values were cut into heads"),
            (dealt, merged_without_transposing, "the queries, keys and values were cut into heads, and merged back,"),
            (sliced, merged_without_transposing, "the heads' outputs were merged back"),
        ):
            try:
                heads, dealt_weights = attention(split(q), split(k), split(v), mask)
            except (RuntimeError, ValueError):  # a mask that the wrong layout cannot take: not this mistake
                continue
            dealt_outputs = F.linear(merge(heads), module.output.weight, module.output.bias)
            if matches(weights, dealt_weights) and matches(outputs, dealt_outputs):
                effect = (
                    "mixes up the positions of different heads"
                    if split is sliced
                    else "deals positions out to heads, as the demonstration before Exercise 1 shows"
                )
                raise CheckFailed(
                    f"{call}: {mistake} by a reshape straight to the final shape, without swapping the heads and "
                    f"seq axes: that {effect}. Call split_heads and merge_heads (Exercises 1 and 2) instead of "
                    "reshaping in forward."
                )


def _diagnose_weights(module, twin, x, keys_from, allowed, torch_masks: dict, weights, call: str) -> None:
    num_heads, d_model = twin.num_heads, x.shape[-1]
    if torch_masks:
        unmasked = _twin_results(twin, x, keys_from, {})[1]
        if torch.allclose(weights, unmasked, atol=1e-5):
            raise CheckFailed(f"{call}: the mask had no effect; pass it on to attention.")
        # A mask turned into numbers is added to the scores (PyTorch's float masks are): True adds 1, False 0.
        added = allowed.expand(x.shape[0], x.shape[-2], keys_from.shape[-2]).to(x.dtype)  # (batch, n_q, n_k)
        added_per_head = {"attn_mask": added.repeat_interleave(num_heads, dim=0)}  # (batch · heads, n_q, n_k)
        if torch.allclose(weights, _twin_results(twin, x, keys_from, added_per_head)[1], atol=1e-5):
            raise CheckFailed(
                f"{call}: your mask reached attention as numbers, not as booleans. A float mask is added to the "
                "scores (True adds 1, False adds 0), so nothing is hidden. Keep the mask boolean: True where a query "
                "may attend to a key."
            )
    scaled_by_d_model = torch_twin(module, num_heads)
    with torch.no_grad():  # scores divided by √d_model = those of queries shrunk by √heads, divided by √d_head
        scaled_by_d_model.in_proj_weight[:d_model] /= math.sqrt(num_heads)
        scaled_by_d_model.in_proj_bias[:d_model] /= math.sqrt(num_heads)
    if torch.allclose(weights, _twin_results(scaled_by_d_model, x, keys_from, torch_masks)[1], atol=1e-5):
        raise CheckFailed(
            f"{call}: the scores were divided by √d_model; each head compares d_head-dimensional queries and "
            "keys, so divide by √d_head (attention does that when given the split queries and keys)."
        )
