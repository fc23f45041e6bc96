"""Checks for notebook 03, multi-head attention.

Oracles: heads cut out by slicing the features (the "h separate heads" view), and ``nn.MultiheadAttention``
with the learner's weights copied in, with and without masks. Named mistakes are recognised by computing what
each would give (an nn.MultiheadAttention with the weights moved, or the reference attention on heads cut out
the wrong way) and comparing.
"""

import copy
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..reference.nb02_queries_keys_values import attention
from ..reference.pytorch_layers import torch_twin
from . import (
    CheckFailed,
    InputChangedInPlace,
    NotImplementedYet,
    built_with_seed,
    call_learner,
    check_of,
    earlier_exercises_replaced,
    expect_close,
    expect_differentiable,
    expect_own_parameters,
    expect_pair,
    expect_tensor,
    learner_facing,
    learners_namespace,
    matches,
    passed,
    passes_quietly,
    rows_sum_to,
    seeded_randn,
    shape_of,
)
from .masked_weights import expect_masked_weights
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
        if isinstance(heads, (tuple, list)):
            _name_pieces_returned(heads, x, num_heads, call)
        grouped = x.reshape(*batch, seq, num_heads, d_head)  # (..., seq, heads, d_head)
        if isinstance(heads, torch.Tensor) and heads.shape != expected.shape:
            dealt_then_swapped = x.reshape(*batch, num_heads, seq, d_head).transpose(-3, -2)
            if matches(heads, dealt_then_swapped):
                raise CheckFailed(
                    f"{call} returned shape {shape_of(heads)}: you reshaped to (..., heads, seq, d_head) first, which "
                    "deals positions out to heads, then swapped the heads and seq axes. The steps go the other way: "
                    "cut each position's features into groups, (..., seq, heads, d_head), then swap. Expected "
                    f"{shape_of(expected)}."
                )
            _name_pieces_joined_wrongly(heads, x, num_heads, expected, call)
            _name_features_interleaved(heads, x, num_heads, expected, call)
            _name_heads_in_front_of_the_batch(heads, expected, call)
            _name_axis_order(heads, grouped, expected, call)
        expect_tensor(heads, call, expected.shape, x.dtype)
        if torch.equal(heads, x.reshape(*batch, num_heads, seq, d_head)):
            raise CheckFailed(
                f"{call}: you reshaped straight to (..., heads, seq, d_head) without transposing, which deals "
                "positions out to heads. Cut each position's features into groups first, (..., seq, heads, "
                "d_head), then swap the seq and heads axes."
            )
        if not torch.equal(heads, expected):
            _name_features_interleaved(heads, x, num_heads, expected, call)
            raise CheckFailed(
                f"{call}: head i must hold features i·d_head to (i+1)·d_head - 1 of every position, in order. "
                f"Head 0 of the first sequence should be\n{expected.reshape(-1, num_heads, seq, d_head)[0, 0]}\n"
                f"but yours is\n{heads.reshape(-1, num_heads, seq, d_head)[0, 0]}"
            )
    _expect_differentiable_on(split_heads, _numbered((2, 3, 4), seed=seed), 2, call="split_heads(x, num_heads=2)")
    passed("split_heads", "head i holds features i·d_head … (i+1)·d_head - 1, for any batch shape")


def _name_pieces_returned(pieces, x: torch.Tensor, num_heads: int, call: str) -> None:
    """The split returned the heads' pieces as a tuple or list (as torch.split and torch.chunk give them)."""
    if all(isinstance(piece, torch.Tensor) for piece in pieces) and len(pieces) == num_heads:
        if all(torch.equal(piece, head) for piece, head in zip(pieces, x.chunk(num_heads, dim=-1), strict=True)):
            raise CheckFailed(
                f"{call} returned a {type(pieces).__name__} of {num_heads} tensors, the features of each head: the "
                "right pieces, not yet one tensor. Put them together along a new axis for the heads, in front of "
                "the seq axis (look up torch.stack)."
            )
    raise CheckFailed(
        f"{call} returned a {type(pieces).__name__} of {len(pieces)} items; return one tensor, (..., heads, seq, "
        "d_head)."
    )


def _name_pieces_joined_wrongly(heads: torch.Tensor, x: torch.Tensor, num_heads: int, expected, call: str) -> None:
    """The features cut into pieces of num_heads features (d_head of them), or the heads' pieces joined along an
    axis that x already has."""
    d_head = x.shape[-1] // num_heads
    if d_head != num_heads:
        small = torch.stack(x.split(num_heads, dim=-1), dim=-3)  # (..., d_head, seq, heads)
        if heads.shape == small.shape and torch.equal(heads, small):
            raise CheckFailed(
                f"{call} returned shape {shape_of(heads)}: {d_head} groups of {num_heads} consecutive features, "
                f"where there should be {num_heads} groups, one per head, of d_head = {d_head} features. "
                "torch.split takes the size of each piece, torch.chunk the number of pieces, and a reshape to "
                "(..., seq, heads, d_head) the number of heads first. Expected (..., heads, seq, d_head) = "
                f"{shape_of(expected)}."
            )
    if x.dim() >= 3:
        joined = torch.cat(x.chunk(num_heads, dim=-1), dim=-3)  # (..., batch · heads, seq, d_head) at the front
        if heads.shape == joined.shape and torch.equal(heads, joined):
            raise CheckFailed(
                f"{call} returned shape {shape_of(heads)}: the heads' pieces, each (..., seq, d_head), were joined "
                "end to end along an axis that x already has (as torch.cat does), so the heads and a batch axis "
                f"became one. Expected (..., heads, seq, d_head) = {shape_of(expected)}: put the pieces together "
                "along a new axis for the heads (look up torch.stack)."
            )


def _name_features_interleaved(heads: torch.Tensor, x: torch.Tensor, num_heads: int, expected, call: str) -> None:
    """The features reshaped to (..., seq, d_head, heads), the sizes in the other order, and then the axes moved in
    any order: each head got every num_heads-th feature, not a block of consecutive ones."""
    batch = x.shape[:-2]
    interleaved = x.unflatten(-1, (x.shape[-1] // num_heads, num_heads))  # (..., seq, d_head, heads)
    names = ("seq", "d_head", "heads")
    for order in itertools.permutations(range(3)):
        candidate = interleaved.permute(*range(len(batch)), *(len(batch) + axis for axis in order))
        if candidate.shape == heads.shape and torch.equal(candidate, heads):
            got = ", ".join(names[axis] for axis in order)
            axes = (
                ""
                if got == "heads, seq, d_head"
                else f" Your result's last three axes are then (..., {got}); expected (..., heads, seq, d_head) = "
                f"{shape_of(expected)}."
            )
            raise CheckFailed(
                f"{call}: you reshaped the features to (..., seq, d_head, heads), the two sizes in the other order, "
                "which gives head i the features i, i + heads, i + 2·heads, …: every num_heads-th feature, not a "
                "block of consecutive ones. A reshape fills its last axis fastest: reshape to (..., seq, heads, "
                f"d_head), so that each head gets d_head consecutive features, then swap the seq and heads axes.{axes}"
            )


def _name_heads_in_front_of_the_batch(heads: torch.Tensor, expected: torch.Tensor, call: str) -> None:
    """The heads axis moved to the very front, before the batch axes (movedim(-2, 0) after the reshape)."""
    if expected.dim() > 3 and matches(heads, expected.movedim(-3, 0)):
        raise CheckFailed(
            f"{call} returned shape {shape_of(heads)}: the heads axis went in front of the batch axes, to position 0. "
            f"Expected (..., heads, seq, d_head) = {shape_of(expected)}: the heads axis goes just before seq, the "
            "third axis from the end, with the batch axes, however many, in front of it."
        )


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
    expect_differentiable(call_learner(function, x, *args, call=call), call, source=x)


@learner_facing
def check_merge_heads(merge_heads: Callable, seed: int = 0) -> None:
    """Check the merge on numbered features, for shapes drawn with the seed; it must undo the split."""
    for case, (batch, seq, num_heads, d_head) in enumerate(_shapes(seed)):
        heads = _numbered((*batch, num_heads, seq, d_head), seed=seed + case)  # (..., heads, seq, d_head)
        call = f"merge_heads(x) with x of shape {shape_of(heads)} ({num_heads} heads)"
        side_by_side = torch.cat(heads.unbind(dim=-3), dim=-1)  # (..., seq, heads · d_head)
        try:
            merged = _call_for_any_batch(merge_heads, heads, core=3, expected=side_by_side, call=call)
        except (NotImplementedYet, InputChangedInPlace):
            raise
        except CheckFailed as failure:
            _name_a_fixed_head_count(merge_heads, batch, seq, num_heads, d_head, seed + case, failure)
            raise
        if isinstance(merged, torch.Tensor) and merged.shape != side_by_side.shape:
            swapped = heads.transpose(-3, -2)  # (..., seq, heads, d_head)
            for wrong, how in (
                (
                    swapped.reshape(*batch, num_heads, seq * d_head),
                    "you read the sizes of x in the split's order, (..., seq, heads, d_head), but x comes in as "
                    "(..., heads, seq, d_head): the number of heads went where the length belongs. Unpack them in "
                    "the order x has them",
                ),
                (
                    swapped.flatten(-3),
                    "the reshape joined the last three axes of (..., seq, heads, d_head) into one, seq among them. "
                    "Only heads and d_head, the last two, become each position's features",
                ),
            ):
                if matches(merged, wrong):
                    raise CheckFailed(
                        f"{call} returned shape {shape_of(merged)}: {how}. Expected (..., seq, heads · d_head) = "
                        f"{shape_of(side_by_side)}."
                    )
            for lost, how in (
                (heads.mean(dim=-3), "averages the heads"),
                (heads.sum(dim=-3), "adds the heads up"),
                (torch.cat(heads.unbind(dim=-3), dim=-2), "joins the heads one after the other along the seq axis"),
            ):
                if matches(merged, lost):
                    raise CheckFailed(
                        f"{call} returned shape {shape_of(merged)}: your merge {how}. Merging puts each position's "
                        "features from all heads side by side, (..., seq, heads · d_head) = "
                        f"{shape_of(side_by_side)}, so that W_O sees every head's features at every position."
                    )
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
        if torch.equal(merged, heads.transpose(-3, -1).reshape(*batch, seq, num_heads * d_head)):
            raise CheckFailed(
                f"{call}: you swapped the heads axis with d_head, the last, before the reshape; swap it with seq, so "
                "that (..., seq, heads, d_head) lies in memory in the order the reshape reads."
            )
        if torch.equal(merged, heads.transpose(-2, -1).reshape(*batch, seq, num_heads * d_head)):
            raise CheckFailed(
                f"{call}: you swapped seq with d_head, the last two axes, before the reshape; swap the heads axis "
                "with seq (axes -3 and -2), so that (..., seq, heads, d_head) lies in memory in the order the reshape "
                "reads."
            )
        if not torch.equal(merged, side_by_side):
            raise CheckFailed(
                f"{call}: each position must get the features of head 0, then head 1, and so on, side by side; "
                "merge_heads must undo split_heads."
            )
    _expect_differentiable_on(merge_heads, _numbered((2, 2, 3, 2), seed=seed), call="merge_heads(x)")
    passed("merge_heads", "the heads' features side by side, undoing split_heads")


def _name_a_fixed_head_count(merge_heads, batch, seq: int, num_heads: int, d_head: int, seed: int, failure) -> None:
    """The merge failed on x with num_heads heads: if it is right on x with another number of heads, it takes that
    number from somewhere other than x (a default argument, a number in the code)."""
    for other in range(1, 9):
        if other == num_heads:
            continue
        heads = _numbered((*batch, other, seq, d_head), seed=seed)  # (..., other heads, seq, d_head)
        probe = f"merge_heads(x) with x of shape {shape_of(heads)} ({other} heads)"
        try:
            merged = call_learner(merge_heads, heads, call=probe)
        except CheckFailed:
            continue
        if isinstance(merged, torch.Tensor) and matches(merged, torch.cat(heads.unbind(dim=-3), dim=-1)):
            raise CheckFailed(
                f"{failure}\nGiven x with {other} heads, {shape_of(heads)}, your merge is right: it takes the number "
                "of heads from somewhere other than x, such as a default argument or a number written in the code, "
                f"so it fails for {num_heads}. x holds the number of heads: read it from x's shape."
            ) from failure.__cause__


# Exercise 3 ---------------------------------------------------------------------------------------------

PROJECTIONS = ("query", "key", "value", "output")
ROLES = {"query": "queries", "key": "keys", "value": "values"}


def _twin_results(twin, x, context, torch_masks: dict):
    """The twin's per-head outputs and weights. PyTorch takes its masks as attn_mask ((n_q, n_k), or one per
    sentence and head, (batch · heads, n_q, n_k)) and key_padding_mask (batch, n_k), True where attention is NOT
    allowed."""
    with torch.no_grad():
        return twin(x, context, context, average_attn_weights=False, **torch_masks)  # (b, n_q, d), (b, h, n_q, n_k)


def _pair(result, call: str) -> tuple:
    """The module's (outputs, weights). The exercise asks for a tuple; a list of two is named as such."""
    if isinstance(result, list) and len(result) == 2:
        raise CheckFailed(
            f"{call} returned a list of two; return a tuple (outputs, weights), as the exercise asks: `return a, b` "
            "makes one, [a, b] makes a list."
        )
    return expect_pair(result, call)


@learner_facing
def check_multi_head_attention(MultiHeadAttention: type, seed: int = 0) -> None:
    """Check the module against nn.MultiheadAttention with copied weights: self- and cross-attention, a mask
    (n_q, n_k) shared by the batch, a padding mask (batch, 1, n_k) and a mask (batch, n_q, n_k) that differ per
    sentence, two head counts, and the mask (n_q, n_k) again for a batch of n_q sentences; then that training could
    update every projection."""
    with earlier_exercises_replaced(MultiHeadAttention.forward, "split_heads", "merge_heads"):
        for num_heads in (2, 4):
            module = _build(MultiHeadAttention, 8, num_heads, seed)
            twin = torch_twin(module, num_heads)
            # A batch of 3, unlike either head count: a mask's batch axis cannot pass for the heads axis.
            x = seeded_randn(3, 5, 8, seed=seed)  # (batch=3, n_q=5, d_model=8)
            context = seeded_randn(3, 6, 8, seed=seed + 1)  # (batch, n_k=6, d_model)
            run = _Run(module, twin, lambda heads, d_model=8: _build(MultiHeadAttention, d_model, heads, seed), seed)
            _compare(run, x, None, None, {}, "module(x)")
            _compare(run, x, context, None, {}, "module(x, context)")
            hidden = torch.ones(5, 6, dtype=torch.bool).triu(diagonal=2)  # (n_q, n_k): pairs not to attend
            what = "module(x, context, mask), a mask (n_q, n_k) shared by the batch,"
            _compare(run, x, context, ~hidden, {"attn_mask": hidden}, what)
            padding = _padding(batch=3, n_k=6, seed=seed)  # (batch, n_k): True marks padding
            allowed = ~padding[:, None, :]  # (batch, 1, n_k): the course's convention, True = may attend
            what = "module(x, context, mask), a padding mask (batch, 1, n_k),"
            _compare(run, x, context, allowed, {"key_padding_mask": padding}, what)
            allowed = ~hidden & ~padding[:, None, :]  # (batch, n_q, n_k): every query still sees keys 0 and 1
            what = "module(x, context, mask), a mask (batch, n_q, n_k) of each sentence's own,"
            _compare(run, x, context, allowed, _nn_masks(allowed, 5, 6, num_heads), what)
            # As many sentences as queries: a mask (n_q, n_k) told apart by its first size passes for one per sentence.
            square_x = seeded_randn(5, 5, 8, seed=seed + 2)  # (batch = n_q = 5, n_q, d_model)
            square_context = seeded_randn(5, 6, 8, seed=seed + 3)  # (batch, n_k, d_model)
            what = "module(x, context, mask), a mask (n_q, n_k) shared by a batch of n_q sentences,"
            _compare(run, square_x, square_context, ~hidden, {"attn_mask": hidden}, what)
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


def _build(MultiHeadAttention: type, d_model: int, num_heads: int, seed: int) -> nn.Module:
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
    if getattr(module, "num_heads", None) != num_heads:
        found = f"is {module.num_heads!r}" if hasattr(module, "num_heads") else "is missing"
        raise CheckFailed(
            f"{call}: self.num_heads {found}; keep num_heads there, under exactly that name: section 3 of this "
            "notebook, and later notebooks, read mha.num_heads."
        )
    expect_own_parameters(module, call, parts=PROJECTIONS)
    for number, name in enumerate(PROJECTIONS):
        with torch.no_grad():  # nonzero biases, so that forgetting one shows
            getattr(module, name).bias.copy_(0.1 * seeded_randn(d_model, seed=seed + number))
    return module


@dataclass
class _Run:
    """A learner's module under check, with its twin (nn.MultiheadAttention holding its weights), a way to build
    another of the learner's modules with another head count (seeded like it), and the check's seed."""

    module: nn.Module
    twin: nn.MultiheadAttention
    build: Callable[..., nn.Module]  # (heads, d_model=8)
    seed: int


def _nn_masks(allowed: torch.Tensor, n_q: int, n_k: int, num_heads: int) -> dict:
    """nn.MultiheadAttention's attn_mask for a mask of the course's (True where a query may attend): the mask
    (n_q, n_k) as it is, one (batch, n_q or 1, n_k) copied for each head of each sentence, sentence by sentence,
    (batch · heads, n_q, n_k), both with True where attention is NOT allowed."""
    if allowed.dim() == 2:
        return {"attn_mask": ~allowed}
    return {"attn_mask": (~allowed.expand(allowed.shape[0], n_q, n_k)).repeat_interleave(num_heads, dim=0)}


def _right_with(module, twin, x, keys_from, mask, torch_masks: dict, probe: str, pass_context: bool = True) -> bool:
    """Whether the learner's module, called with x, keys_from and the mask, computes what the twin computes with
    its own masks; False if it raises. Without ``pass_context``, keys_from is x and the module gets no context."""
    kwargs = ({"context": keys_from} if pass_context else {}) | ({} if mask is None else {"mask": mask})
    try:
        with torch.no_grad():
            outputs, weights = _pair(call_learner(module, x, call=probe, **kwargs), probe)
    except CheckFailed:
        return False
    expected_outputs, expected_weights = _twin_results(twin, x, keys_from, torch_masks)
    return matches(weights, expected_weights) and matches(outputs, expected_outputs)


def _compare(run: _Run, x, context, allowed, torch_masks: dict, what: str) -> None:
    module, twin = run.module, run.twin
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
    except (NotImplementedYet, InputChangedInPlace):  # named already; the inputs are changed, so no probing
        raise
    except CheckFailed as failure:
        _diagnose_truth_value(failure, context, allowed)
        _diagnose_inputs(run, x, context, allowed, torch_masks, call, failure)
        if context is None and allowed is None:
            _diagnose_context_default(run, x, call, failure)
        _diagnose_sizes(run, x, context, allowed, call, failure)
        if context is None and allowed is None:
            _diagnose_matrix_transpose(run, call, failure)
            _diagnose_sum_without_keepdim(run, call, failure)
            _diagnose_values_first(run, call, failure)
            _diagnose_output_before_merge(run, x, call, failure)
            _diagnose_split_before_projecting(run, x, call, failure)
        if "may attend to no key at all" in str(failure):  # the reference attention refused the mask it got
            raise CheckFailed(
                f"{failure}\nThe masks of this check let every query see at least one key, so the mask that "
                "reached attention was not the one given to your module, or not laid out as it was. Here, as in "
                "F.scaled_dot_product_attention, True means that the query may attend to the key: pass the mask on "
                "with its values as they are and its last two axes, n_q and n_k, still last; add only an axis of "
                "size 1 for the heads."
            ) from failure.__cause__
        raise
    outputs, weights = _pair(result, call)
    batch, n_q, n_k = x.shape[0], x.shape[-2], keys_from.shape[-2]
    expected_outputs, expected_weights = _twin_results(twin, x, keys_from, torch_masks)
    if isinstance(weights, torch.Tensor) and weights.shape == (batch, n_q, n_k):
        heads = [head for head in range(num_heads) if matches(weights.detach(), expected_weights[:, head])]
        what = (
            f"those of head {heads[0]} alone"
            if heads
            else "the heads' average; average them only to draw them"
            if matches(weights.detach(), expected_weights.mean(dim=1))
            else "one matrix for all the heads"
        )
        raise CheckFailed(
            f"{call}: the weights have shape {shape_of(weights)}, {what}. Return every head's weights, "
            f"(batch, heads, n_q, n_k) = {(batch, num_heads, n_q, n_k)}."
        )
    if not (matches(weights, expected_weights) and matches(outputs, expected_outputs)):
        _diagnose_mask_times_infinity(allowed, weights, call)
        _diagnose_randomness(module, x, kwargs, outputs, weights, call)
        _diagnose_own_versions(module, num_heads, x, keys_from, allowed, outputs, weights, call)
        _diagnose_inputs(run, x, context, allowed, torch_masks, call)
        _diagnose_nan(allowed, outputs, weights, call)
        _diagnose_projections(module, num_heads, x, keys_from, torch_masks, outputs, weights, call)
        _diagnose_heads_cut(module, num_heads, x, keys_from, allowed, outputs, weights, call)
        _diagnose_shapes(run, x, keys_from, allowed, outputs, weights, expected_outputs, expected_weights, call)
    expect_tensor(weights, f"{call}: the weights", (batch, num_heads, n_q, n_k), x.dtype)
    expect_tensor(outputs, f"{call}: the outputs", x.shape, x.dtype)

    if not torch.allclose(weights, expected_weights, atol=1e-5):
        _diagnose_weights(
            run, x, keys_from, allowed, torch_masks, outputs.detach(), weights.detach(), expected_weights, call
        )
    expect_close(weights, expected_weights, f"{call}: the weights of every head, compared with nn.MultiheadAttention")
    expect_close(weights.mean(dim=1), expected_weights.mean(dim=1), f"{call}: the weights averaged over heads")
    if not torch.allclose(outputs, expected_outputs, atol=1e-5):
        _diagnose_outputs(
            module, num_heads, x, keys_from, torch_masks, outputs.detach(), expected_outputs, expected_weights, call
        )
    expect_close(outputs, expected_outputs, f"{call}: the outputs, compared with nn.MultiheadAttention")
    expect_differentiable(outputs, call)


def _diagnose_shapes(run: _Run, x, keys_from, allowed, outputs, weights, expected_outputs, expected_weights, call):
    """Name a result of the wrong shape by what it holds: the pair in reverse order, the weights left with the heads
    folded into the batch axis, or the features cut into d_head heads of num_heads features."""
    if not all(isinstance(value, torch.Tensor) for value in (outputs, weights)):
        return
    if matches(outputs, expected_weights) and matches(weights, expected_outputs):
        raise CheckFailed(
            f"{call}: your module returned the pair in reverse order, (weights, outputs); return (outputs, weights)."
        )
    if matches(weights, expected_weights.flatten(0, 1)):
        raise CheckFailed(
            f"{call}: the weights have shape {shape_of(weights)}, the heads folded into the batch axis, "
            f"(batch · heads, n_q, n_k); they are right but for their shape. Unfold them back to (batch, heads, n_q, "
            f"n_k) = {shape_of(expected_weights)}, as you did for the outputs."
        )
    if weights.shape != expected_weights.shape:
        for dim, axis in ((-2, "the queries' axis"), (-1, "the keys' axis")):
            if matches(weights, torch.cat(expected_weights.unbind(dim=1), dim=dim)):
                raise CheckFailed(
                    f"{call}: the weights have shape {shape_of(weights)}: every head's weights are right, but they "
                    f"were joined end to end along {axis} (as torch.cat does). Put them together along a new axis "
                    f"for the heads (look up torch.stack): (batch, heads, n_q, n_k) = {shape_of(expected_weights)}."
                )
    names = ("batch", "heads", "n_q", "n_k")
    for order in itertools.permutations(range(4)):
        if order != (0, 1, 2, 3) and matches(weights, expected_weights.permute(*order)):
            raise CheckFailed(
                f"{call}: the weights have shape {shape_of(weights)}, their axes in the order "
                f"({', '.join(names[axis] for axis in order)}); they are right but for that order. Return them as "
                f"(batch, heads, n_q, n_k) = {shape_of(expected_weights)}."
            )
    num_heads, d_model = run.twin.num_heads, x.shape[-1]
    d_head = d_model // num_heads
    if weights.dim() == 4 and weights.shape[1] == d_head != num_heads:
        n_q, n_k = x.shape[-2], keys_from.shape[-2]
        masks = {} if allowed is None else _nn_masks(allowed, n_q, n_k, d_head)
        if matches(weights, _twin_results(torch_twin(run.module, d_head), x, keys_from, masks)[1]):
            raise CheckFailed(
                f"{call}: the weights have {d_head} heads where {num_heads} were asked: split_heads takes the number "
                f"of heads, and you gave it d_head = {d_head}, the size of each head. Pass self.num_heads."
            )


def _expect_gradients_reach_everything(module: nn.Module, x, context, seed: int) -> None:
    """Backpropagate a random loss through cross-attention: every projection's weight, and x and context (the
    layers below in a model), must get a gradient, or training could never change them."""
    x, context = x.clone().requires_grad_(), context.clone().requires_grad_()
    call = f"module(x, context), x {shape_of(x)} and context {shape_of(context)} requiring grad, then backward()"
    outputs, _ = _pair(call_learner(module, x, context=context, call=call), call)
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


def _own_versions_failing(module) -> list[str]:
    """The learner's own split_heads and merge_heads that fail their checks, where the module calls them: in a student
    release, which has no correct stand-ins to lend it. Empty where the stand-ins are lent."""
    from . import stand_ins  # None in a student release; the package sets it after loading this module

    if stand_ins is not None:
        return []
    namespace = learners_namespace(module.forward) or {}
    return [name for name in ("split_heads", "merge_heads") if not passes_quietly(check_of(name), namespace.get(name))]


def _diagnose_own_versions(module, num_heads: int, x, keys_from, allowed, outputs, weights, call: str) -> None:
    """At home the module calls the learner's own split_heads and merge_heads. If one of them fails its check and the
    module computes what correct attention gives with them, the module itself is right: say so (the note that the
    check used them, and which one to fix, is added on the way out by earlier_exercises_replaced)."""
    failing = _own_versions_failing(module)
    if not failing:
        return
    namespace = learners_namespace(module.forward) or {}
    split, merge = namespace.get("split_heads"), namespace.get("merge_heads")
    mask = None if allowed is None else allowed.unsqueeze(-3)  # (batch or 1, 1, n_q or 1, n_k)
    try:
        with torch.no_grad():
            q, k, v = (
                split(F.linear(source, getattr(module, name).weight, getattr(module, name).bias), num_heads)
                for name, source in (("query", x), ("key", keys_from), ("value", keys_from))
            )
            heads, theirs_weights = attention(q, k, v, mask)
            theirs_outputs = F.linear(merge(heads), module.output.weight, module.output.bias)
    except Exception:
        return
    if matches(weights, theirs_weights) and matches(outputs, theirs_outputs):
        listed = " and ".join(failing)
        raise CheckFailed(
            f"{call}: the rest of your module is right: it computes multi-head attention correctly with your {listed}, "
            f"so its results differ from nn.MultiheadAttention's only through {'them' if len(failing) > 1 else 'it'}."
        )


def _diagnose_values_first(run: _Run, call: str, failure: CheckFailed) -> None:
    """The module raised on module(x). values @ weights, (…, n_k, d_head) @ (…, n_q, n_k), runs only when d_head
    equals n_q: given such an x, if the module runs and its outputs are what that product gives, say so."""
    module, num_heads = run.module, run.twin.num_heads
    d_model = module.query.in_features
    d_head = d_model // num_heads
    x = seeded_randn(3, d_head, d_model, seed=run.seed + 29)  # (batch, n = d_head, d_model)
    probe = f"module(x) with x {shape_of(x)}, whose sequence is as long as d_head"
    try:
        with torch.no_grad():
            outputs, weights = _pair(call_learner(module, x, call=probe), probe)
    except CheckFailed:
        return
    expected_weights = _twin_results(run.twin, x, x, {})[1]  # (batch, heads, n, n)
    with torch.no_grad():
        v = torch.stack(F.linear(x, module.value.weight, module.value.bias).chunk(num_heads, dim=-1), dim=-3)
        reversed_product = torch.cat((v @ expected_weights).unbind(dim=-3), dim=-1)  # (batch, n, d_model)
        mistaken = F.linear(reversed_product, module.output.weight, module.output.bias)
    if matches(weights, expected_weights) and matches(outputs, mistaken):
        raise CheckFailed(
            f"{failure}\nGiven x {shape_of(x)}, whose sequence is as long as d_head, your module runs, and its "
            "outputs are values @ weights: the product goes the other way, weights (…, n_q, n_k) @ values (…, n_k, "
            "d_head), so that each query's row of weights mixes the rows of the values."
        ) from failure.__cause__


def _diagnose_output_before_merge(run: _Run, x, call: str, failure: CheckFailed) -> None:
    """The module raised on module(x). self.output applied to each head's d_head features, before the merge, needs
    a layer of d_head inputs: in a copy of the module whose self.output maps d_head → d_head features, if the module
    runs and its outputs are the merge of that layer's outputs per head, say so."""
    module, num_heads = run.module, run.twin.num_heads
    d_model = x.shape[-1]
    d_head = d_model // num_heads
    try:
        changed = copy.deepcopy(module)
        changed.output.weight = nn.Parameter(seeded_randn(d_head, d_head, seed=run.seed + 31))
        changed.output.bias = nn.Parameter(seeded_randn(d_head, seed=run.seed + 37))
    except Exception:
        return
    probe = f"module(x) with x {shape_of(x)}, in a copy whose self.output maps d_head → d_head features"
    try:
        with torch.no_grad():
            outputs, weights = _pair(call_learner(changed, x, call=probe), probe)
    except CheckFailed:
        return
    expected_weights = _twin_results(run.twin, x, x, {})[1]  # (batch, heads, n, n)
    with torch.no_grad():
        v = torch.stack(F.linear(x, module.value.weight, module.value.bias).chunk(num_heads, dim=-1), dim=-3)
        per_head = F.linear(expected_weights @ v, changed.output.weight, changed.output.bias)  # (b, heads, n, d_head)
        mistaken = torch.cat(per_head.unbind(dim=-3), dim=-1)  # (batch, n, d_model)
    if matches(weights, expected_weights) and matches(outputs, mistaken):
        raise CheckFailed(
            f"{failure}\nself.output takes d_model features, every head's side by side, and your module applies it "
            "to each head's d_head features before merging them (in a copy of your module whose self.output maps "
            "d_head → d_head features, it runs and computes just that). Merge the heads first, then apply "
            "self.output to the merged features."
        ) from failure.__cause__


def _diagnose_mask_times_infinity(allowed, weights, call: str) -> None:
    """Every weight nan under a mask, when the calls without one were right (they come first): what a mask
    multiplied by -inf gives, as 0 · -inf is nan. (Every mask of the check leaves each query a key.)"""
    if allowed is None or not (isinstance(weights, torch.Tensor) and weights.is_floating_point()):
        return
    if bool(torch.isnan(weights.detach()).all()):
        raise CheckFailed(
            f"{call}: every one of your weights is nan under this mask, and they were right without one. "
            "0 · inf is nan, so a mask multiplied by -inf, such as (~mask) * float('-inf'), puts nan wherever it "
            "is 0 (False), and one nan among a row's scores makes the softmax of the whole row nan. Hide the "
            "scores with masked_fill or torch.where, which put -inf only where the mask says and leave the "
            "other scores as they are."
        )


def _diagnose_nan(allowed, outputs, weights, call: str) -> None:
    """Weights or outputs holding nan, where nn.MultiheadAttention's have none: every mask of the check leaves each
    query a key to attend to."""
    for name, value in (("weights", weights), ("outputs", outputs)):
        if not (isinstance(value, torch.Tensor) and value.is_floating_point()):
            continue
        nan = torch.isnan(value.detach())
        if not nan.any():
            continue
        keys_left = "" if allowed is None else " (every mask of this check leaves each query a key to attend to)"
        raise CheckFailed(
            f"{call}: your {name} hold nan at {int(nan.sum())} of their {nan.numel()} entries, where "
            f"nn.MultiheadAttention's have none{keys_left}. nan comes from 0 · inf, inf - inf, or a softmax over a "
            "row of scores that are all -inf: find the step of forward that makes it."
        )


def _diagnose_randomness(module, x, kwargs: dict, outputs, weights, call: str) -> None:
    """A second call with the same inputs that gives other results: something random in forward, such as dropout,
    which a module applies in training mode (that of a new module)."""
    probe = f"{call}, a second time"
    try:
        with torch.no_grad():
            again_outputs, again_weights = _pair(call_learner(module, x, call=probe, **kwargs), probe)
    except CheckFailed:
        return
    if not all(isinstance(value, torch.Tensor) for value in (outputs, weights, again_outputs, again_weights)):
        return

    def same(again, first):  # nan equal to nan: a nan made the same way twice is no randomness
        return again.shape == first.shape and torch.allclose(again, first.detach(), atol=1e-5, equal_nan=True)

    if not (same(again_outputs, outputs) and same(again_weights, weights)):
        raise CheckFailed(
            f"{call}: two calls with the same inputs gave different results, so something random runs in forward, "
            "such as dropout, which a module applies while it is in training mode (as a new module is). This "
            "exercise has no dropout: the check compares you with nn.MultiheadAttention without dropout. Leave it out."
        )


def _diagnose_truth_value(failure: CheckFailed, context, allowed) -> None:
    """The call raised because the learner's code asked a tensor for its truth value (``context or x``, ``if mask:``).
    The calls come in order, each adding one argument: the one added last is the tensor asked."""
    cause = failure.__cause__
    if not (isinstance(cause, RuntimeError) and "Boolean value of Tensor" in str(cause)):
        return
    if allowed is not None:
        name, before = "mask", "module(x, context)"
    elif context is not None:
        name, before = "context", "module(x)"
    else:
        return
    raise CheckFailed(
        f"{failure}\n{before} ran, and this call, the first with a {name}, raised: your code asked the {name} for its "
        f"truth value (with `or`, `and`, `not` or `if {name}`), which a tensor of more than one number does not have. "
        f"To find out whether a {name} was given, compare it with None (`is None`, `is not None`)."
    ) from cause


def _diagnose_context_default(run: _Run, x, call: str, failure: CheckFailed) -> None:
    """module(x) raised: if module(x, context=x) is right, the module does not fall back on x without a context."""
    probe = "module(x, context=x)"
    if _right_with(run.module, run.twin, x, x, None, {}, probe):
        raise CheckFailed(
            f"{failure}\nGiven {probe}, your module is right: called without a context, as self-attention calls it, "
            "it must take the keys and values from x. context is None then: use x in its place."
        ) from failure.__cause__


def _diagnose_sizes(run: _Run, x, context, allowed, call: str, failure: CheckFailed) -> None:
    """The module raised without a mask: if it is right on x whose sequence is as long as d_model, it reads a size
    from the wrong axis of x."""
    if context is not None or allowed is not None:
        return  # a context as long as x is _diagnose_sources' probe
    batch, n_q, d_model = x.shape
    square = seeded_randn(batch, d_model, d_model, seed=run.seed + 11)  # (batch, n_q = d_model, d_model)
    probe = f"module(x) with x {shape_of(square)}"
    if _right_with(run.module, run.twin, square, square, None, {}, probe, pass_context=False):
        raise CheckFailed(
            f"{failure}\nGiven x {shape_of(square)}, whose sequence is as long as d_model, your module is right: it "
            f"reads a size from the wrong axis of x, the length of the sequence ({n_q} here) where d_model or d_head "
            f"belongs ({d_model} // heads), or d_model where the length belongs. x is (batch, n_q, d_model): take each "
            "size from its own axis, counted from the end."
        ) from failure.__cause__


def _diagnose_matrix_transpose(run: _Run, call: str, failure: CheckFailed) -> None:
    """The module raised on module(x). .T on the keys (batch, heads, n_k, d_head) reverses all four axes, which
    lines up with the queries only when all four sizes are equal: if, given such sizes, the module runs and its
    weights are what that reversal gives, say so."""
    module = run.build(2, d_model=4)
    x = seeded_randn(2, 2, 4, seed=run.seed + 23)  # batch = n = heads = d_head = 2: sizes under which k.T runs
    probe = f"module(x) with 2 heads and x {shape_of(x)}"
    try:
        with torch.no_grad():
            _, weights = _pair(call_learner(module, x, call=probe), probe)
    except CheckFailed:
        return
    with torch.no_grad():
        q, k = (
            torch.stack(F.linear(x, layer.weight, layer.bias).chunk(2, dim=-1), dim=-3)
            for layer in (module.query, module.key)
        )
        reversed_keys = (q @ k.permute(3, 2, 1, 0) / math.sqrt(2)).softmax(dim=-1)  # k.T: (d_head, n_k, heads, batch)
    if matches(weights, reversed_keys):
        raise CheckFailed(
            f"{failure}\n.T on a tensor of more than two axes reverses them all: on the keys (batch, heads, n_k, "
            "d_head) it gives (d_head, n_k, heads, batch), which lines up with the queries only when every size is "
            f"the same (given {probe}, where they are, your module runs). Swap only the last two axes, "
            "k.transpose(-2, -1) or k.mT."
        ) from failure.__cause__


def _diagnose_sum_without_keepdim(run: _Run, call: str, failure: CheckFailed) -> None:
    """The module raised on module(x). A softmax written by hand as e / e.sum(dim=-1) divides (…, n_q, n_k) by
    (…, n_q), which broadcasting lines up with the keys' axis; it runs only when the sizes agree: if, given all
    sizes 2, the module runs and its weights are what that division gives, say so."""
    module = run.build(2, d_model=4)
    x = seeded_randn(2, 2, 4, seed=run.seed + 23)  # batch = n = heads = d_head = 2: sizes under which it runs
    probe = f"module(x) with 2 heads and x {shape_of(x)}"
    try:
        with torch.no_grad():
            _, weights = _pair(call_learner(module, x, call=probe), probe)
    except CheckFailed:
        return
    with torch.no_grad():
        q, k = (
            torch.stack(F.linear(x, layer.weight, layer.bias).chunk(2, dim=-1), dim=-3)
            for layer in (module.query, module.key)
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(2)  # (batch, heads, n_q, n_k)
        exponentials = (scores.exp(), (scores - scores.amax(dim=-1, keepdim=True)).exp())  # with the max taken off
    if any(matches(weights, e / e.sum(dim=-1)) for e in exponentials):
        raise CheckFailed(
            f"{failure}\nYour softmax divides by e.sum(dim=-1), which drops the axis it sums over: the sums "
            "(…, n_q) then line up with the last axis of e (…, n_q, n_k), the keys', and the division runs only "
            f"when the sizes happen to agree (given {probe}, where they do, your module runs and divides that way). "
            "keepdim=True keeps the summed axis, with size 1, so that each row is divided by its own sum."
        ) from failure.__cause__


def _diagnose_split_before_projecting(run: _Run, x, call: str, failure: CheckFailed) -> None:
    """The module raised on module(x). self.query, self.key and self.value applied to x already split into heads
    need layers of d_head inputs: in a copy of the module whose three projections map d_head → d_head, if the module
    runs and computes attention on the heads of x projected that way, say so."""
    module, num_heads = run.module, run.twin.num_heads
    d_model = x.shape[-1]
    d_head = d_model // num_heads
    try:
        changed = copy.deepcopy(module)
        for number, name in enumerate(PROJECTIONS[:3]):
            layer = getattr(changed, name)
            layer.weight = nn.Parameter(seeded_randn(d_head, d_head, seed=run.seed + 53 + number))
            layer.bias = nn.Parameter(seeded_randn(d_head, seed=run.seed + 57 + number))
    except Exception:
        return
    probe = f"module(x) with x {shape_of(x)}, in a copy whose query, key and value map d_head → d_head features"
    try:
        with torch.no_grad():
            outputs, weights = _pair(call_learner(changed, x, call=probe), probe)
    except CheckFailed:
        return
    with torch.no_grad():
        heads_of_x = torch.stack(x.chunk(num_heads, dim=-1), dim=-3)  # (batch, heads, n, d_head)
        q, k, v = (
            F.linear(heads_of_x, getattr(changed, name).weight, getattr(changed, name).bias) for name in PROJECTIONS[:3]
        )
        heads, expected_weights = attention(q, k, v)
        expected_outputs = F.linear(torch.cat(heads.unbind(dim=-3), dim=-1), module.output.weight, module.output.bias)
    if matches(weights, expected_weights) and matches(outputs, expected_outputs):
        raise CheckFailed(
            f"{failure}\nself.query, self.key and self.value take d_model features, a whole position's, and your "
            "module applies them to x already split into heads, d_head features each (in a copy of your module "
            "whose three projections map d_head → d_head features, it runs and computes just that). Project x and "
            "context first, then split the projections into heads."
        ) from failure.__cause__


def _diagnose_inputs(run: _Run, x, context, allowed, torch_masks: dict, call: str, failure=None) -> None:
    """Name a mix-up of x and context, or a mask that reached attention changed; ``failure`` if the call raised."""
    if context is not None:
        _diagnose_sources(run, x, call, without_mask=allowed is None, failure=failure)
    if allowed is not None:
        _diagnose_mask(run, x, context, allowed, torch_masks, call, failure)


def _diagnose_sources(run: _Run, x, call: str, without_mask: bool, failure=None) -> None:
    # With a context as long as x, every mix-up of the two runs, and its result shows which one it is.
    context = seeded_randn(*x.shape, seed=run.seed + 7)  # (batch, n_k = n_q, d_model)
    probe = f"module(x, context) with x and context of the same shape {shape_of(x)}"
    try:
        with torch.no_grad():
            outputs, weights = _pair(call_learner(run.module, x, context=context, call=probe), probe)
    except CheckFailed:
        return
    sequences = {"x": x, "context": context}
    for sources in itertools.product(sequences, repeat=3):
        with torch.no_grad():  # nn.MultiheadAttention takes queries, keys and values from three arguments
            expected_outputs, expected_weights = run.twin(
                *(sequences[source] for source in sources), average_attn_weights=False
            )
        if not (matches(weights, expected_weights) and matches(outputs, expected_outputs)):
            continue
        if sources != ("x", "context", "context"):
            raise CheckFailed(f"{call}: {mixed_up_sources(*sources)}")
        if without_mask and failure is not None:  # right when context is as long as x; raised otherwise
            raise CheckFailed(
                f"{call}: given a context as long as x, {shape_of(x)}, your module is right; with a context of "
                "another length it raised: your code uses the length of one sequence where the other's belongs. The "
                "queries and the outputs have the length of x, n_q; the keys and values have that of context, n_k "
                "(axis -2 of each): take each size from the tensor it belongs to."
            ) from failure.__cause__
        if without_mask:  # right when context is as long as x, wrong otherwise, with no error
            raise CheckFailed(
                f"{call}: given a context as long as x, {shape_of(x)}, your module is right; with a context of "
                "another length it went wrong. It uses the length of x, n_q, where the keys and values need their "
                "own, n_k: they come from context, and take its length (context's axis 1, or -2)."
            )


def _diagnose_mask(run: _Run, x, context, allowed, torch_masks: dict, call: str, failure=None) -> None:
    """Call the module again with the mask changed the way a mistake changes it, or with other inputs on which the
    mistake is right; if it is, name the mistake."""
    module, twin = run.module, run.twin
    keys_from = x if context is None else context
    probe = f"module(x, context, mask) with a mask of shape {shape_of(allowed)}, inverted"
    if _right_with(module, twin, x, keys_from, ~allowed, torch_masks, probe):
        raise CheckFailed(
            f"{call}: your mask is inverted: attention got True where the mask given to your module is False. Here, "
            "as in F.scaled_dot_product_attention, True means that the query may attend to the key "
            "(nn.MultiheadAttention's boolean masks mean the opposite): pass the mask on as it is, with an axis for "
            "the heads."
        )
    if failure is not None and "may attend to no key at all" in str(failure):
        _diagnose_numbers_for_the_mask(run, x, keys_from, allowed, call)
    if allowed.dim() == 2:
        _diagnose_mask_told_by_size(run, x, keys_from, allowed, call, failure)
        _diagnose_mask_of_the_batch(run, x, keys_from, allowed, call)
    else:
        _diagnose_mask_per_sentence(run, x, keys_from, allowed, call, failure)


def _diagnose_numbers_for_the_mask(run: _Run, x, keys_from, allowed, call: str) -> None:
    """attention refused the mask that reached it. If the module is right once every query has a hidden key, the
    mask reached attention with a query that sees every key written as no True at all: as numbers, 0 where a key is
    visible (an additive mask, 0 and -inf, as nn.MultiheadAttention makes of a boolean one)."""
    n_q, n_k = x.shape[-2], keys_from.shape[-2]
    last_key = torch.arange(n_k) == n_k - 1  # (n_k,)
    every_row_hides = allowed & ~(allowed.all(dim=-1, keepdim=True) & last_key)  # hide the last key where none was
    probe = f"module(x, context, mask) with a mask {shape_of(every_row_hides)} that hides a key from every query"
    masks = _nn_masks(every_row_hides, n_q, n_k, run.twin.num_heads)
    if _right_with(run.module, run.twin, x, keys_from, every_row_hides, masks, probe):
        raise CheckFailed(
            f"{call}: attention refused the mask it got, saying that some query may attend to no key at all. Given "
            "the same mask with a key hidden from every query, your module is right; given this one, where some "
            "query may see every key, attention read that query's row as no key at all: the mask reached it as "
            "numbers, 0 where a key is visible, such as an additive mask (0 where visible, -inf where hidden, as "
            "nn.MultiheadAttention makes inside). attention takes the boolean mask, True where a query may attend, "
            "and reads a number as True where it is not 0. Pass the boolean mask on, with an axis for the heads."
        )


def _diagnose_mask_told_by_size(run: _Run, x, keys_from, allowed, call: str, failure=None) -> None:
    """A mask (n_q, n_k) given with as many sentences as it has rows: if the module is right with the same mask and
    fewer sentences, it took the mask's first size, equal to the batch size, for a batch axis."""
    batch, n_q = x.shape[0], allowed.shape[0]
    if batch != n_q or batch < 2:
        return
    fewer = batch - 1  # unlike n_q, and the same sentences otherwise
    probe = (
        f"module(x, context, mask) with {fewer} sentences, x {shape_of(x[:fewer])}, and the mask {shape_of(allowed)}"
    )
    if _right_with(run.module, run.twin, x[:fewer], keys_from[:fewer], allowed, {"attn_mask": ~allowed}, probe):
        what = "raised" if failure is not None else "went wrong"
        raise CheckFailed(
            f"{call}: given the same mask and {fewer} sentences, your module is right; given {batch} sentences, as "
            f"many as the mask (n_q, n_k) has rows, it {what}. Your code tells the mask's shape by its sizes, so a "
            "first axis as long as the batch passed for a batch axis: a mask (n_q, n_k) has no batch axis, whatever "
            "its sizes (notebook 04's causal mask on a batch of as many sentences as positions is one). Tell the two "
            "shapes apart by their number of axes, mask.dim(), or add the heads' axis at a position counted from "
            "the end, which suits both."
        )
    usual = 3  # the batch size of the check's other calls, which the module passed
    probe = f"module(x, context, mask) with {usual} sentences, x {shape_of(x[:usual])}, mask {shape_of(allowed)}"
    if batch > usual and _right_with(
        run.module, run.twin, x[:usual], keys_from[:usual], allowed, {"attn_mask": ~allowed}, probe
    ):
        raise CheckFailed(
            f"{call}: given the same mask and {usual} sentences, your module is right; given {fewer} or {batch}, it "
            f"is not: it takes the batch size from somewhere other than x, such as a number written in the code "
            f"({usual}, the batch size of this check's other calls). Read it from x, x.shape[0]."
        )


def _diagnose_mask_of_the_batch(run: _Run, x, keys_from, allowed, call: str) -> None:
    """A mask (n_q, n_k) that went wrong: copied for each head along its first axis (the queries'), or given its
    heads axis by counting from the front."""
    module, twin = run.module, run.twin
    num_heads, (batch, n_q, d_model), n_k = twin.num_heads, x.shape, keys_from.shape[-2]
    rows = allowed[:3]  # (3, n_k): three different rows, each with a visible key
    longer = seeded_randn(batch, num_heads * 3, d_model, seed=run.seed + 13)  # (batch, heads · 3, d_model)
    probe = f"module(x, context, mask) with x {shape_of(longer)} and a mask {shape_of(rows)}"
    for copies, how, by in (
        (
            rows.repeat_interleave(num_heads, 0),
            f"each row for {num_heads} queries in a row",
            f"repeat_interleave({num_heads}, 0)",
        ),
        (rows.repeat(num_heads, 1), f"its rows {num_heads} times over", f"repeat({num_heads}, 1)"),
    ):
        if _right_with(module, twin, longer, keys_from, rows, {"attn_mask": ~copies}, probe):
            raise CheckFailed(
                f"{call}: given x of {num_heads} · 3 positions and a mask of 3 rows, your module ran and used "
                f"{how}: it copies the mask {num_heads} times, once per head, along its first axis, as "
                f"mask.{by} does. A mask (n_q, n_k) has no batch axis: its first axis is "
                "the queries', so the copies gave it heads · n_q rows. It is the same for every sentence and every "
                "head, and broadcasting applies it to all of them without copies; only a mask (batch, n_q, n_k) "
                "has a mask per sentence."
            )
    per_sentence = torch.stack([allowed.roll(shift, dims=-1) for shift in range(batch)])  # (batch, n_q, n_k)
    probes = (
        (allowed.unsqueeze(0), {"attn_mask": ~allowed}),  # (1, n_q, n_k)
        (per_sentence, _nn_masks(per_sentence, n_q, n_k, num_heads)),
    )
    if all(
        _right_with(module, twin, x, keys_from, given, masks, f"module(x, context, mask) with a mask {shape_of(given)}")
        for given, masks in probes
    ):
        raise CheckFailed(
            f"{call}: your module is right with masks (1, n_q, n_k) and (batch, n_q, n_k), not with (n_q, n_k): "
            f"your mask of shape {shape_of(allowed)} got its heads axis in the wrong place. An axis inserted by "
            "counting from the front, such as mask[:, None] or mask.unsqueeze(1), lands between n_q and n_k when "
            "the mask has no batch axis. Count the position of the new axis from the end, which is the same for "
            "both shapes."
        )


def _diagnose_mask_per_sentence(run: _Run, x, keys_from, allowed, call: str, failure=None) -> None:
    """A mask (batch, n_q or 1, n_k) that went wrong: copied for each head in the wrong order, or with its batch axis
    lined up with the scores' heads axis, or right for one sentence only."""
    module, twin = run.module, run.twin
    num_heads, (batch, n_q, d_model), n_k = twin.num_heads, x.shape, keys_from.shape[-2]
    # The batch (3) unlike the head counts: copies in the order of repeat run, a mask without a heads axis raises.
    tiled = allowed.expand(batch, n_q, n_k).repeat(num_heads, 1, 1)  # (batch · heads, ...): sentences, then again
    probe = f"module(x, context, mask) with a mask {shape_of(allowed)}"
    if _right_with(module, twin, x, keys_from, allowed, {"attn_mask": ~tiled}, probe):
        raise CheckFailed(
            f"{call}: the masks of the sentences reached the heads of other sentences. With the heads folded into "
            "the batch axis, (batch · heads, n_q, n_k), the heads of sentence 0 come first, then those of sentence "
            "1, and so on; your copies of the mask run through all the sentences, then again (the order of "
            "mask.repeat). Copy each sentence's mask for its heads in a row (repeat_interleave), or keep the heads "
            "on an axis of their own and give the mask an axis of size 1 there."
        )
    # As many sentences as heads: a mask whose batch axis meets the scores' heads axis then runs.
    sentences = seeded_randn(num_heads, n_q, d_model, seed=run.seed + 17)
    context = seeded_randn(num_heads, n_k, d_model, seed=run.seed + 19)
    masks = allowed[torch.arange(num_heads) % batch]  # (heads, n_q or 1, n_k): sentence i's mask
    met = masks.expand(num_heads, n_q, n_k).repeat(num_heads, 1, 1)  # (heads · heads, ...): head j gets mask j
    probe = f"module(x, context, mask) with x {shape_of(sentences)}, as many sentences as heads"
    if _right_with(module, twin, sentences, context, masks, {"attn_mask": ~met}, probe):
        raise CheckFailed(
            f"{call}: your mask of shape {shape_of(allowed)} reached attention without an axis for the heads where "
            "the scores (batch, heads, n_q, n_k) have theirs, so its batch axis was lined up with their heads axis: "
            f"given {num_heads} sentences, as many as heads, your module applied sentence i's mask to head i of "
            "every sentence. PyTorch broadcasts from the last axis, so no new axis, or one added in front "
            "(mask[None]), leaves the batch axis where the heads are. Give the mask an axis of size 1 where the "
            "scores have their heads, so that each sentence's mask applies to all its heads."
        )
    if failure is None:
        return
    one = f"module(x, context, mask) with one sentence, x {shape_of(x[:1])} and a mask {shape_of(allowed[:1])}"
    masks = _nn_masks(allowed[:1], n_q, n_k, num_heads)
    if _right_with(module, twin, x[:1], keys_from[:1], allowed[:1], masks, one):
        raise CheckFailed(
            f"{call}: your module is right for one sentence and its mask, and raised for {batch}: each sentence's "
            "mask must meet that sentence's scores, (batch, heads, n_q, n_k), so the mask's batch axis must line "
            "up with theirs, with an axis of size 1 for the heads that applies it to all of them. If you copied "
            "the mask for each head (repeat_interleave), that gives (batch · heads, n_q, n_k), the layout of "
            "nn.MultiheadAttention, which only scores with the heads folded into the batch axis can take."
        )
    _diagnose_one_row_for_all_queries(run, x, keys_from, allowed, call)


def _diagnose_one_row_for_all_queries(run: _Run, x, keys_from, allowed, call: str) -> None:
    """A mask (batch, 1, n_k), one row for all the queries of a sentence, on which the module raised: if it is right
    with the same mask expanded to (batch, n_q, n_k), it expects n_q rows in every mask."""
    batch, n_q, n_k = x.shape[0], x.shape[-2], keys_from.shape[-2]
    if allowed.dim() != 3 or allowed.shape[-2] != 1 or n_q == 1:
        return
    expanded = allowed.expand(batch, n_q, n_k).clone()  # (batch, n_q, n_k): the row repeated for every query
    probe = f"module(x, context, mask) with the mask expanded to {shape_of(expanded)}"
    if _right_with(
        run.module, run.twin, x, keys_from, expanded, _nn_masks(expanded, n_q, n_k, run.twin.num_heads), probe
    ):
        raise CheckFailed(
            f"{call}: given the same mask expanded to (batch, n_q, n_k) = {shape_of(expanded)}, your module is right; "
            f"given (batch, 1, n_k) = {shape_of(allowed)}, it raised. Your code expects n_q rows in every mask, as a "
            "view or reshape to (batch, 1, n_q, n_k) does, but a mask (batch, 1, n_k) has n_q = 1: one row for all "
            "the queries of a sentence, which broadcasting applies to every query. Add an axis of size 1 for the "
            "heads and leave the mask's own sizes as they are."
        )


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

    def interleaved(features):  # → (batch, heads, seq, d_head), head i from features i, i + heads, i + 2·heads, …
        return features.unflatten(-1, (-1, num_heads)).permute(0, 3, 1, 2)

    def merged_interleaved(heads):  # the inverse of interleaved: (batch, heads, seq, d_head) → (batch, seq, d_model)
        return heads.permute(0, 2, 3, 1).flatten(-2)

    straight = "by a reshape straight to the final shape, without swapping the heads and seq axes: that"
    dealing = "deals positions out to heads, as the demonstration before Exercise 1 shows"
    every_hth = (
        "with the two sizes in the other order, (batch, seq, d_head, heads): that gives head i the features i, "
        "i + heads, i + 2·heads, …, every num_heads-th feature, not a block of consecutive ones as in "
        "nn.MultiheadAttention"
    )
    with torch.no_grad():
        q, k, v = (
            F.linear(source, getattr(module, name).weight, getattr(module, name).bias)
            for name, source in (("query", x), ("key", keys_from), ("value", keys_from))
        )
        for split, merge, mistake in (
            (dealt, merged, f"the queries, keys and values were cut into heads {straight} {dealing}"),
            (
                dealt,
                merged_without_transposing,
                f"the queries, keys and values were cut into heads, and merged back, {straight} {dealing}",
            ),
            (
                sliced,
                merged_without_transposing,
                f"the heads' outputs were merged back {straight} mixes up the positions of different heads",
            ),
            (
                interleaved,
                merged_interleaved,
                f"the queries, keys and values were cut into heads, and merged back, {every_hth}",
            ),
            (interleaved, merged, f"the queries, keys and values were cut into heads {every_hth}"),
        ):
            try:
                heads, dealt_weights = attention(split(q), split(k), split(v), mask)
            except (RuntimeError, ValueError):  # a mask that the wrong layout cannot take: not this mistake
                continue
            dealt_outputs = F.linear(merge(heads), module.output.weight, module.output.bias)
            if matches(weights, dealt_weights) and matches(outputs, dealt_outputs):
                raise CheckFailed(
                    f"{call}: {mistake}. Call split_heads and merge_heads (Exercises 1 and 2) instead of reshaping "
                    "in forward."
                )


def _diagnose_weights(
    run: _Run, x, keys_from, allowed, torch_masks: dict, outputs, weights, expected, call: str
) -> None:
    module, twin = run.module, run.twin
    num_heads, d_model = twin.num_heads, x.shape[-1]
    if torch_masks:
        unmasked = _twin_results(twin, x, keys_from, {})[1]
        if torch.allclose(weights, unmasked, atol=1e-5):
            if matches(outputs, _twin_results(twin, x, keys_from, torch_masks)[0]):
                raise CheckFailed(
                    f"{call}: your outputs are masked, but the weights you return are those of attention without "
                    "the mask. Return the weights of the masked call, the one whose outputs you use."
                )
            raise CheckFailed(
                f"{call}: the mask had no effect. Pass it on to attention; or, if you fill the scores yourself, keep "
                "what masked_fill returns: it returns a new tensor and leaves its input unchanged (assign the result, "
                "or use masked_fill_, which changes the scores in place)."
            )
        # A mask turned into numbers is added to the scores (PyTorch's float masks are): True adds 1, False 0.
        added = allowed.expand(x.shape[0], x.shape[-2], keys_from.shape[-2]).to(x.dtype)  # (batch, n_q, n_k)
        added_per_head = {"attn_mask": added.repeat_interleave(num_heads, dim=0)}  # (batch · heads, n_q, n_k)
        if torch.allclose(weights, _twin_results(twin, x, keys_from, added_per_head)[1], atol=1e-5):
            raise CheckFailed(
                f"{call}: your mask reached attention as numbers, not as booleans. A float mask is added to the "
                "scores (True adds 1, False adds 0), so nothing is hidden. Keep the mask boolean: True where a query "
                "may attend to a key."
            )
    if x.shape[-2] > 1 and rows_sum_to(weights, dim=-2) and not rows_sum_to(weights, dim=-1):
        raise CheckFailed(
            f"{call}: each head's weights sum to 1 over the queries (down every column), not over the keys: the "
            "softmax ran over the wrong axis of the scores (batch, heads, n_q, n_k). Each query shares its "
            "attention among the keys: normalise over the keys' axis."
        )
    if torch.allclose(weights, expected.softmax(dim=-1), atol=1e-5):
        raise CheckFailed(
            f"{call}: your weights are the softmax of the right weights: the softmax was applied twice, to the "
            "scores and again to the weights it gave. Apply it once, to the scores."
        )
    d_head = d_model // num_heads
    # Scores c times the right ones (q · k / √d_head) are those of queries multiplied by c: the factor, and its cause.
    for factor, mistake in (
        (
            1 / math.sqrt(num_heads),
            "divided by √d_model; each head compares d_head-dimensional queries and keys, so divide by √d_head "
            "(attention does that when given the split queries and keys)",
        ),
        (
            d_head,
            "multiplied by √d_head, not divided by it: the scale argument of attention, as of "
            "F.scaled_dot_product_attention, multiplies the scores, and its default is already 1/√d_head. Leave it "
            "out, or pass the factor that multiplies",
        ),
        (
            math.sqrt(d_model * d_head),
            "multiplied by √d_model, where they must be divided by √d_head: the scale argument of attention, as of "
            "F.scaled_dot_product_attention, multiplies the scores, and its default is already 1/√d_head",
        ),
        (
            1 / math.sqrt(d_head),
            "divided by d_head, not by √d_head, as a scale of 1/d_head gives, or queries divided by √d_head "
            "before attention, which divides by √d_head again. Scale them once, by 1/√d_head",
        ),
        (
            math.sqrt(d_head),
            "not divided by √d_head: each head compares d_head-dimensional queries and keys, whose dot products "
            "grow like √d_head (notebook 02)",
        ),
    ):
        scaled = torch_twin(module, num_heads)
        with torch.no_grad():  # the queries' rows of in_proj_weight and in_proj_bias
            scaled.in_proj_weight[:d_model] *= factor
            scaled.in_proj_bias[:d_model] *= factor
        if torch.allclose(weights, _twin_results(scaled, x, keys_from, torch_masks)[1], atol=1e-5):
            raise CheckFailed(f"{call}: the scores were {mistake}.")
    if allowed is None:
        _diagnose_scale(run, x, keys_from, weights, call)
    for mistake, mistaken_weights in _mistaken_weights(module, num_heads, x, keys_from, allowed):
        with torch.no_grad():
            mistaken = mistaken_weights()
        if matches(weights, mistaken):
            raise CheckFailed(f"{call}: {mistake}")
    if allowed is not None:
        expect_masked_weights(
            weights,
            allowed.unsqueeze(-3),  # (1 or batch, 1, n_q or 1, n_k): the same for every head
            f"{call}: the weights of every head",
            scores=_mistaken_weights(module, num_heads, x, keys_from, None, scores_only=True),
        )


def _divisor_squared(module, num_heads: int, x, keys_from, weights) -> float | None:
    """Without a mask: if the weights are the softmax of c times the right scores for some factor c > 0, the scores
    were divided by √(d_head / c²) instead of √d_head: that d_head / c², else None. c is fitted: each row's
    log-weights, centred, are c times the row's scores, centred."""
    d_head = x.shape[-1] // num_heads
    with torch.no_grad():
        q, k = (
            torch.stack(F.linear(source, layer.weight, layer.bias).chunk(num_heads, dim=-1), dim=-3)
            for layer, source in ((module.query, x), (module.key, keys_from))
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)  # (batch, heads, n_q, n_k)
        if not isinstance(weights, torch.Tensor) or weights.shape != scores.shape or not bool((weights > 0).all()):
            return None
        log_weights = weights.log()
        centred_log = log_weights - log_weights.mean(dim=-1, keepdim=True)
        centred = scores - scores.mean(dim=-1, keepdim=True)
        factor = float((centred_log * centred).sum() / (centred * centred).sum())
        if factor <= 0 or not torch.allclose(weights, (factor * scores).softmax(dim=-1), atol=1e-5):
            return None
    return d_head / factor**2


def _diagnose_scale(run: _Run, x, keys_from, weights, call: str) -> None:
    """Without a mask: weights that are the softmax of scores scaled by a wrong factor. If the factor follows a size
    of the inputs (it changes with that size, given inputs where only it changes), name the size and its axis; else
    say what the scores were divided by."""
    num_heads = run.twin.num_heads
    d_head = x.shape[-1] // num_heads
    divisor_squared = _divisor_squared(run.module, num_heads, x, keys_from, weights)
    if divisor_squared is None:
        return
    batch, n_q, d_model = x.shape

    def divisor_squared_given(module, heads, inputs):
        probe = f"module(x) with {heads} heads and x {shape_of(inputs)}"
        try:
            with torch.no_grad():
                _, given_weights = _pair(call_learner(module, inputs, call=probe), probe)
        except CheckFailed:
            return None
        return _divisor_squared(module, heads, inputs, inputs, given_weights)

    longer = seeded_randn(batch, 7, d_model, seed=run.seed + 41)  # another length of the sequence
    more = seeded_randn(7, n_q, d_model, seed=run.seed + 43)  # another batch size
    sizes = (
        (
            n_q,
            "the length of the sequence, axis -2 of the queries (batch, heads, seq, d_head)",
            lambda: (7, divisor_squared_given(run.module, num_heads, longer)),
        ),
        (
            keys_from.shape[-2],
            "the length of the keys' sequence, axis -2 of the keys (batch, heads, n_k, d_head)",
            lambda: (7, divisor_squared_given(run.module, num_heads, longer)),
        ),
        (
            num_heads,
            "the number of heads, axis 1 of the queries (batch, heads, seq, d_head)",
            lambda: (2 * num_heads, divisor_squared_given(run.build(2 * num_heads), 2 * num_heads, x)),
        ),
        (
            batch,
            "the batch size, axis 0 of the queries (batch, heads, seq, d_head)",
            lambda: (7, divisor_squared_given(run.module, num_heads, more)),
        ),
    )
    for size, what, probed in sizes:
        for power, how in ((1, f"√{size}"), (2, f"{size}")):
            if math.isclose(divisor_squared, size**power, rel_tol=1e-3):
                other_size, other = probed()
                if other is not None and math.isclose(other, other_size**power, rel_tol=1e-3):
                    raise CheckFailed(
                        f"{call}: the scores were divided by {how}: {what}, where √d_head = √{d_head} belongs. "
                        "d_head is the size of each head, the last axis of the queries (q.shape[-1])."
                    )
    raise CheckFailed(
        f"{call}: your weights are the softmax of scores {math.sqrt(d_head / divisor_squared):.3g} times the right "
        f"ones, q · kᵀ / √d_head: as if divided by √{divisor_squared:.3g} where √d_head = √{d_head} belongs. Scale by "
        "1/√d_head, the size of each head (the last axis of the queries, q.shape[-1])."
    )


def _mistaken_weights(module, num_heads: int, x, keys_from, allowed, scores_only: bool = False):
    """What common mistakes make of the weights, computed from the module's own layers the way each mistake
    computes them: pairs (what the mistake is, a function giving its weights (batch, heads, n_q, n_k)). With
    ``scores_only``, the scores q kᵀ / √d_head instead, for telling what a mask did to them."""
    d_head = x.shape[-1] // num_heads
    mask = None if allowed is None else ~allowed.unsqueeze(-3)  # (1 or batch, 1, n_q or 1, n_k): True = hidden

    def heads(features):  # (batch, seq, d_model) → (batch, heads, seq, d_head), head i from features i·d_head …
        return torch.stack(features.chunk(num_heads, dim=-1), dim=-3)

    def project(name, source, bias=True, transposed=False):
        layer = getattr(module, name)
        return F.linear(source, layer.weight.T if transposed else layer.weight, layer.bias if bias else None)

    def softmax(queries, keys, scale=None, dim=-1):
        scale = 1 / math.sqrt(d_head) if scale is None else scale
        scores = heads(queries) @ heads(keys).transpose(-2, -1) * scale  # (batch, heads, n_q, n_k)
        return scores.masked_fill(mask, float("-inf")).softmax(dim=dim) if mask is not None else scores.softmax(dim)

    def masked_scores():  # q · kᵀ / √d_head with the hidden pairs at -inf, before the softmax
        scores = heads(q) @ heads(k).transpose(-2, -1) / math.sqrt(d_head)  # (batch, heads, n_q, n_k)
        return scores if mask is None else scores.masked_fill(mask, float("-inf"))

    def causal():  # the given mask, if any, and a causal one that nobody asked for
        n_q, n_k = x.shape[-2], keys_from.shape[-2]
        later = torch.ones(n_q, n_k, dtype=torch.bool).triu(diagonal=1)  # (n_q, n_k): True = a later key
        scores = heads(q) @ heads(k).transpose(-2, -1) / math.sqrt(d_head)
        return scores.masked_fill(later if mask is None else later | mask, float("-inf")).softmax(dim=-1)

    def keys_first():  # k · qᵀ: (batch, heads, n_k, n_q), its mask transposed with it, softmax over the queries
        scores = heads(k) @ heads(q).transpose(-2, -1) / math.sqrt(d_head)
        return (scores if mask is None else scores.masked_fill(mask.transpose(-2, -1), float("-inf"))).softmax(-1)

    with torch.no_grad():
        q, k = project("query", x), project("key", keys_from)
        if scores_only:
            return heads(q) @ heads(k).transpose(-2, -1) / math.sqrt(d_head)
    return (
        (
            "the queries lack the bias of self.query: the weight alone, as in an einsum or a product with "
            "self.query.weight, leaves out the bias that nn.Linear adds. Call the layers, self.query(x), or add "
            "their .bias.",
            lambda: softmax(project("query", x, bias=False), k),
        ),
        (
            "the projections multiplied by the weights as nn.Linear stores them, (out_features, in_features), "
            "untransposed: nn.Linear computes x @ weight.T + bias. Call the layers, self.query(x), or transpose "
            "their weights.",
            lambda: softmax(project("query", x, transposed=True), project("key", keys_from, transposed=True)),
        ),
        (
            "each query's weights sum to 1 over the heads, not over the keys: the softmax ran over the heads' axis, "
            "axis 1 of the scores (batch, heads, n_q, n_k). Each query shares its attention among the keys: "
            "normalise over the keys' axis, the last.",
            lambda: softmax(q, k, dim=-3),
        ),
        (
            f"each query's weights sum to 1/√d_head = {1 / math.sqrt(d_head):.3g}, not 1: the scores were divided by "
            "√d_head after the softmax, which divided the weights instead. The scores are scaled before the softmax "
            "(attention does it for you).",
            lambda: softmax(q, k, scale=1.0) / math.sqrt(d_head),
        ),
        (
            "the keys were projected twice, self.key(self.query(context)): each projection takes the context "
            "itself (or x in self-attention).",
            lambda: softmax(q, project("key", project("query", keys_from))),
        ),
        (
            "your weights are the scores before the softmax, and their rows do not sum to 1. "
            "The weights are the softmax of the scores over the keys' axis, the last.",
            masked_scores,
        ),
        (
            "your weights are the softmax of k · qᵀ, keys × queries, whose rows belong to the keys: each row shares "
            "a key's attention among the queries. Each query's row of scores is q · kᵀ, queries first, (batch, "
            "heads, n_q, n_k), and the softmax shares it among the keys.",
            keys_first,
        ),
        (
            "your weights hide every key after the query's own position: a causal mask that the caller did not give. "
            "This module masks with the mask it is given, and only with it; a caller who wants causal attention "
            "passes a causal mask (notebook 04).",
            causal,
        ),
    )


def _diagnose_outputs(
    module, num_heads: int, x, keys_from, torch_masks: dict, outputs, expected, expected_weights, call: str
) -> None:
    """The weights are right but the outputs are not: name the mistake whose outputs they are, computed with a twin
    whose weights are changed the way the mistake changes them, or from the right weights put to the wrong use."""
    d_model = x.shape[-1]
    values = slice(2 * d_model, 3 * d_model)  # the rows of W_V in in_proj_weight

    def lacking_output(twin):
        twin.out_proj.weight.copy_(torch.eye(d_model))
        twin.out_proj.bias.zero_()

    changed_twins = (
        (lacking_output, "the outputs lack W_O: apply self.output to the merged heads."),
        (
            lambda twin: twin.out_proj.bias.zero_(),
            "the outputs lack the bias of self.output: the weight alone, as in an einsum or a product with "
            "self.output.weight, leaves out the bias that nn.Linear adds. Call the layer, self.output(...), or add "
            "its .bias.",
        ),
        (
            lambda twin: twin.out_proj.weight.copy_(twin.out_proj.weight.T.clone()),
            "the merged heads were multiplied by self.output.weight as nn.Linear stores it, (out_features, "
            "in_features), untransposed: nn.Linear computes x @ weight.T + bias. Call the layer, self.output(...), "
            "or transpose its weight.",
        ),
        (
            lambda twin: twin.in_proj_bias[values].zero_(),
            "the values lack the bias of self.value: the weight alone, as in an einsum or a product with "
            "self.value.weight, leaves out the bias that nn.Linear adds. Call the layer, self.value(context), or "
            "add its .bias.",
        ),
        (
            lambda twin: twin.in_proj_weight[values].copy_(twin.in_proj_weight[values].T.clone()),
            "the values were computed with self.value.weight as nn.Linear stores it, (out_features, in_features), "
            "untransposed: nn.Linear computes x @ weight.T + bias. Call the layer, self.value(context), or transpose "
            "its weight.",
        ),
    )
    for change, mistake in changed_twins:
        twin = torch_twin(module, num_heads)
        with torch.no_grad():
            change(twin)
        if torch.allclose(outputs, _twin_results(twin, x, keys_from, torch_masks)[0], atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}")
    twin = torch_twin(module, num_heads)
    if torch_masks and matches(outputs, _twin_results(twin, x, keys_from, {})[0]):
        raise CheckFailed(
            f"{call}: your weights are masked, but your outputs are those of attention without the mask. Take the "
            "outputs from the masked call, the one whose weights you return."
        )
    if x.shape[-2] == keys_from.shape[-2]:  # (…, n_k, n_q) meets the values (…, n_k, d_head) only when n_q = n_k
        with torch.no_grad():
            v = torch.stack(F.linear(keys_from, module.value.weight, module.value.bias).chunk(num_heads, -1), dim=-3)
            mixed = torch.cat((expected_weights.transpose(-2, -1) @ v).unbind(dim=-3), dim=-1)  # (batch, n, d_model)
            mistaken = F.linear(mixed, module.output.weight, module.output.bias)
            # each weight times its key's value, (…, n_q, n_k, d_head), summed over the queries: (…, n_k, d_head)
            over_queries = (expected_weights.unsqueeze(-1) * v.unsqueeze(-3)).sum(dim=-3)
            summed = F.linear(torch.cat(over_queries.unbind(dim=-3), dim=-1), module.output.weight, module.output.bias)
        if matches(outputs, summed):
            raise CheckFailed(
                f"{call}: your weights are right, but the weighted values were summed over the queries' axis, not "
                "over the keys': a query's output is its row of weights (…, n_q, n_k) times the values (…, n_k, "
                "d_head), summed over the n_k keys, as the product weights @ values does."
            )
        if matches(outputs, mistaken):
            raise CheckFailed(
                f"{call}: your weights are right, but they were transposed before they met the values: each output "
                "is weights (…, n_q, n_k) @ values (…, n_k, d_head), a query's row of weights mixing the rows of the "
                "values, with no transpose."
            )
    if torch.allclose(outputs - x, expected, atol=1e-5):
        raise CheckFailed(
            f"{call}: your outputs are x plus those of attention. Adding x, the residual connection, is the "
            "transformer block's step (notebook 06), not this module's: return what self.output gives."
        )
