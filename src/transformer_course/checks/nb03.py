"""Checks for notebook 03, multi-head attention.

Oracles: heads cut out by slicing the features (the "h separate heads" view), and ``nn.MultiheadAttention``
with the learner's weights copied in, with and without masks.
"""

import itertools
import math
from collections.abc import Callable

import torch
from torch import nn

from ..reference.pytorch_layers import torch_twin
from . import (
    CheckFailed,
    NotImplementedYet,
    built_with_seed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_pair,
    expect_tensor,
    learner_facing,
    matches,
    passed,
    seeded_randn,
    shape_of,
)
from .nb02 import mixed_up_sources

# Exercise 1 ---------------------------------------------------------------------------------------------


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


@learner_facing
def check_split_heads(split_heads: Callable, seed: int = 0) -> None:
    """Check the split on numbered features, for head counts, lengths and batch shapes drawn with the seed."""
    for case, (batch, seq, num_heads, d_head) in enumerate(_shapes(seed)):
        x = _numbered((*batch, seq, num_heads * d_head), seed=seed + case)  # (..., seq, d_model)
        call = f"split_heads(x, num_heads={num_heads}) with x of shape {shape_of(x)}"
        heads = call_learner(split_heads, x, num_heads, call=call)
        expect_tensor(heads, "split_heads", (*batch, num_heads, seq, d_head), x.dtype)
        if torch.equal(heads, x.reshape(*batch, num_heads, seq, d_head)):
            raise CheckFailed(
                f"{call}: you reshaped straight to (..., heads, seq, d_head) without transposing, which deals "
                "positions out to heads. Split the features first, reshape to (..., seq, heads, d_head), then "
                "swap the seq and heads axes: .transpose(-3, -2)."
            )
        expected = torch.stack(x.chunk(num_heads, dim=-1), dim=-3)  # head i: features i·d_head … by slicing
        if not torch.equal(heads, expected):
            raise CheckFailed(
                f"{call}: head i must hold features i·d_head to (i+1)·d_head - 1 of every position, in order. "
                f"Head 0 of the first sequence should be\n{expected.reshape(-1, num_heads, seq, d_head)[0, 0]}\n"
                f"but yours is\n{heads.reshape(-1, num_heads, seq, d_head)[0, 0]}"
            )
    passed("split_heads", "head i holds features i·d_head … (i+1)·d_head - 1, for any batch shape")


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_merge_heads(merge_heads: Callable, seed: int = 0) -> None:
    """Check the merge on numbered features, for shapes drawn with the seed; it must undo the split."""
    for case, (batch, seq, num_heads, d_head) in enumerate(_shapes(seed)):
        heads = _numbered((*batch, num_heads, seq, d_head), seed=seed + case)  # (..., heads, seq, d_head)
        call = f"merge_heads(x) with x of shape {shape_of(heads)} ({num_heads} heads)"
        merged = call_learner(merge_heads, heads, call=call)
        expect_tensor(merged, "merge_heads", (*batch, seq, num_heads * d_head), heads.dtype)
        if torch.equal(merged, heads.reshape(*batch, seq, num_heads * d_head)):
            raise CheckFailed(
                f"{call}: you reshaped straight to (..., seq, heads · d_head) without transposing, which mixes "
                "positions of different heads. First .transpose(-3, -2) to (..., seq, heads, d_head), then "
                "reshape."
            )
        side_by_side = torch.cat(heads.unbind(dim=-3), dim=-1)  # (..., seq, heads · d_head)
        if not torch.equal(merged, side_by_side):
            raise CheckFailed(
                f"{call}: each position must get the features of head 0, then head 1, and so on, side by side; "
                "merge_heads must undo split_heads."
            )
    passed("merge_heads", "the heads' features side by side, undoing split_heads")


# Exercise 3 ---------------------------------------------------------------------------------------------

PROJECTIONS = ("query", "key", "value", "output")


def _twin_results(twin, x, context, torch_masks: dict):
    """The twin's per-head outputs and weights. PyTorch takes its masks as attn_mask (n_q, n_k) and
    key_padding_mask (batch, n_k), both True where attention is NOT allowed."""
    with torch.no_grad():
        return twin(x, context, context, average_attn_weights=False, **torch_masks)  # (b, n_q, d), (b, h, n_q, n_k)


@learner_facing
def check_multi_head_attention(MultiHeadAttention: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check the module against nn.MultiheadAttention with copied weights: self- and cross-attention, an
    attention mask and a padding mask that differs per sentence, and two head counts."""
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
            _compare(module, twin, x, context, ~hidden, {"attn_mask": hidden}, "module(x, context, mask)", seed)
            padding = _padding(batch=3, n_k=6, seed=seed)  # (batch, n_k): True marks padding
            allowed = ~padding[:, None, :]  # (batch, 1, n_k): the course's convention, True = may attend
            twin_masks = {"key_padding_mask": padding}
            what = "module(x, context, mask) with a padding mask"
            _compare(module, twin, x, context, allowed, twin_masks, what, seed)
    passed("MultiHeadAttention", "equals nn.MultiheadAttention with the same weights, with and without masks")


def _padding(batch: int, n_k: int, seed: int) -> torch.Tensor:
    """(batch, n_k), True at the padding: 0, 1, 2, ... padded positions, one count per sentence in an order drawn
    with the seed, so that every sentence has a mask of its own."""
    generator = torch.Generator().manual_seed(seed)
    lengths = n_k - torch.randperm(batch, generator=generator)  # (batch,)
    return torch.arange(n_k) >= lengths[:, None]  # (batch, n_k)


def _build(MultiHeadAttention: type, d_model: int, num_heads: int, seed: int) -> nn.Module:  # noqa: N803
    call = f"MultiHeadAttention(d_model={d_model}, num_heads={num_heads})"
    module = built_with_seed(MultiHeadAttention, d_model, num_heads, seed=seed, call=call)
    for number, name in enumerate(PROJECTIONS):
        layer = getattr(module, name, None)
        if not isinstance(layer, nn.Linear) or layer.bias is None:
            raise CheckFailed(f"{call} needs an nn.Linear with bias named self.{name}.")
        if (layer.in_features, layer.out_features) != (d_model, d_model):
            raise CheckFailed(
                f"{call}: self.{name} maps {layer.in_features} → {layer.out_features} features; every "
                f"projection maps d_model → d_model ({d_model} → {d_model}), all heads at once."
            )
        with torch.no_grad():  # nonzero biases, so that forgetting one shows
            layer.bias.copy_(0.1 * seeded_randn(d_model, seed=seed + number))
    return module


def _compare(module, twin, x, context, allowed, torch_masks: dict, what: str, seed: int) -> None:
    num_heads = twin.num_heads
    keys_from = x if context is None else context
    kwargs = {} if context is None else {"context": context}
    if allowed is not None:
        kwargs["mask"] = allowed
    call = f"{what} with {num_heads} heads, x {shape_of(x)}" + (
        "" if context is None else f", context {shape_of(context)}"
    )
    try:
        with torch.no_grad():
            result = call_learner(module, x, call=call, **kwargs)
    except NotImplementedYet:
        raise
    except CheckFailed:
        _diagnose_inputs(module, twin, x, context, allowed, torch_masks, call, seed)
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
    expect_tensor(weights, "the weights", (batch, num_heads, n_q, n_k), x.dtype)
    expect_tensor(outputs, "the outputs", x.shape, x.dtype)

    if not torch.allclose(weights, expected_weights, atol=1e-5):
        _diagnose_weights(module, twin, x, keys_from, torch_masks, weights, call)
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


def _diagnose_inputs(module, twin, x, context, allowed, torch_masks: dict, call: str, seed: int) -> None:
    """Name a mix-up of x and context, or a mask that reached attention with its axes in the wrong places."""
    if context is not None:
        _diagnose_sources(module, twin, x, call, seed)
    if allowed is not None:
        _diagnose_mask_axes(module, twin, x, context, allowed, torch_masks, call)


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


def _diagnose_mask_axes(module, twin, x, context, allowed, torch_masks: dict, call: str) -> None:
    """Call the module again with the mask given the axes it lacked; if that is right, say which axis it was."""
    if allowed.dim() == 3:  # (batch, n_q or 1, n_k): without a heads axis, its batch axis meets the scores' heads
        given, mistake = (
            allowed.unsqueeze(-3),  # (batch, 1, n_q or 1, n_k)
            f"your mask of shape {shape_of(allowed)} reached attention without an axis for the heads, so its "
            "batch axis was lined up with the heads axis of the scores (batch, heads, n_q, n_k): PyTorch "
            "broadcasts from the last axis. Insert the heads axis, mask.unsqueeze(-3), so that each sentence's "
            "mask applies to all its heads.",
        )
    elif allowed.dim() == 2:  # (n_q, n_k): an axis inserted at the front lands between n_q and n_k
        given, mistake = (
            allowed.unsqueeze(0),  # (1, n_q, n_k)
            f"your mask of shape {shape_of(allowed)} got its heads axis in the wrong place: an axis inserted by "
            "counting from the front, such as mask[:, None], lands between n_q and n_k when the mask has no batch "
            "axis. Count from the end, mask.unsqueeze(-3), which works for a mask of any batch shape.",
        )
    else:
        return
    keys_from = x if context is None else context
    probe = f"module(x, context, mask) with a mask of shape {shape_of(given)}"
    try:
        with torch.no_grad():
            result = call_learner(module, x, context=keys_from, mask=given, call=probe)
        outputs, weights = expect_pair(result, probe)
    except CheckFailed:
        return
    expected_outputs, expected_weights = _twin_results(twin, x, keys_from, torch_masks)
    if matches(weights, expected_weights) and matches(outputs, expected_outputs):
        raise CheckFailed(f"{call}: {mistake}")


def _diagnose_weights(module, twin, x, keys_from, torch_masks: dict, weights, call: str) -> None:
    num_heads, d_model = twin.num_heads, x.shape[-1]
    if torch_masks:
        unmasked = _twin_results(twin, x, keys_from, {})[1]
        if torch.allclose(weights, unmasked, atol=1e-5):
            raise CheckFailed(f"{call}: the mask had no effect; pass it on to attention.")
    scaled_by_d_model = torch_twin(module, num_heads)
    with torch.no_grad():  # scores divided by √d_model = those of queries shrunk by √heads, divided by √d_head
        scaled_by_d_model.in_proj_weight[:d_model] /= math.sqrt(num_heads)
        scaled_by_d_model.in_proj_bias[:d_model] /= math.sqrt(num_heads)
    if torch.allclose(weights, _twin_results(scaled_by_d_model, x, keys_from, torch_masks)[1], atol=1e-5):
        raise CheckFailed(
            f"{call}: the scores were divided by √d_model; each head compares d_head-dimensional queries and "
            "keys, so divide by √d_head (attention does that when given the split queries and keys)."
        )
