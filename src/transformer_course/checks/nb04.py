"""Checks for notebook 04, masking.

Oracles: ``torch.nn.utils.rnn.pad_sequence`` for which positions are real; ``F.scaled_dot_product_attention``
with ``is_causal=True`` for which keys a query may see, and with an explicit mask for the results (it gives a
query with no visible key zero weights and a zero output, the course's convention); closed-form tables;
causality as a property: changing future tokens never changes earlier outputs.
"""

import math
import re
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from . import (
    CheckFailed,
    NotImplementedYet,
    NotRecorded,
    broadcast_shape,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_differentiable,
    expect_pair,
    expect_tensor,
    learner_facing,
    name_python_number_given_to_torch,
    passed,
    pytorch_attention,
    seeded_randn,
    shape_of,
)
from .masked_weights import expect_masked_weights, query_named
from .recordings import oracle


@oracle
def real_positions(lengths: torch.Tensor, *, max_len: int | None) -> torch.Tensor:
    """The oracle of padding masks: (batch, 1, max_len), True at the real positions, from PyTorch's own padding
    utility; max_len None means the longest length. A max_len below a length cuts that sequence short, as
    comparing positions with lengths does: decoder_mask's check builds masks of a wrong size to name it."""
    sizes = [int(length) for length in lengths]
    max_len = max(sizes, default=0) if max_len is None else int(max_len)
    rows = [torch.ones(size, dtype=torch.bool) for size in sizes]
    # pad_sequence pads to the longest row: the extra row of max_len makes it at least max_len long, the slice at most.
    padded = pad_sequence([*rows, torch.zeros(max_len, dtype=torch.bool)], batch_first=True)[:-1, :max_len]
    return padded[:, None, :]  # (batch, 1, max_len)


@oracle
def visible_to_causal_attention(*, n: int) -> torch.Tensor:
    """The oracle of causal masks: (n, n), True where PyTorch's causal attention lets query i see key j."""
    zeros = torch.zeros(n, 1)  # equal scores, so every visible key gets weight > 0
    return F.scaled_dot_product_attention(zeros, zeros, torch.eye(n), is_causal=True) > 0


def _call(function: Callable, *args, call: str, names: tuple[str, ...]):
    """call_learner, telling two failures more precisely: which input, named as in ``names``, was changed in place;
    and what a tensor of several values asked for one True or False (Python's and, or, not, if) means."""
    before = [arg.clone() if isinstance(arg, torch.Tensor) else None for arg in args]
    try:
        return call_learner(function, *args, call=call)
    except CheckFailed as failure:
        cause = failure.__cause__
        if isinstance(cause, RuntimeError) and "Boolean value of Tensor with more than one value" in str(cause):
            raise CheckFailed(
                f"{str(failure).rstrip('.')}. Python's `and`, `or`, `not` and `if` need a single True or False, "
                "which a tensor of several values cannot give. Combine boolean tensors element by element with "
                "&, | and ~ (torch.logical_and, logical_or, logical_not)."
            ) from cause
        changed = [
            name
            for name, copy, arg in zip(names, before, args, strict=False)
            if copy is not None and not (copy.shape == arg.shape and torch.equal(copy, arg))
        ]
        if cause is not None or isinstance(failure, NotImplementedYet) or not changed:
            raise
        one = len(changed) == 1
        listed = changed[0] if one else f"{', '.join(changed[:-1])} and {changed[-1]}"
        raise CheckFailed(
            f"{call} changed its input{'s' * (not one)} {listed} in place: after the call, the caller's {listed} "
            f"no longer hold{'s' * one} the values passed. Compute a new tensor instead (x = x / c, not x /= c or "
            "a method ending in _ such as div_), so that the caller's data stay as they were."
        ) from None


def _expect_boolean(mask, name: str, shape, call: str) -> torch.Tensor:
    """Fail unless the mask is a boolean tensor of the given shape; name an additive mask."""
    if isinstance(mask, torch.Tensor) and mask.dtype != torch.bool:
        if mask.is_floating_point() and (mask == float("-inf")).any():
            raise CheckFailed(
                f"{name} returned an additive mask (0 and -inf). Return a boolean mask, True where attention "
                "is allowed; attention turns it into scores of -inf."
            )
        empty = (
            f" It is empty here, {call}: torch.tensor of an empty list has no values to take a dtype from and makes "
            "float32, whatever the other sizes give; say dtype=torch.bool, or build the mask with tensor operations."
            if mask.numel() == 0
            else ""
        )
        raise CheckFailed(f"{call} returned dtype {mask.dtype}; return a boolean mask (dtype torch.bool).{empty}")
    return expect_tensor(mask, call, shape, torch.bool)


# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_padding_mask(padding_mask: Callable, seed: int = 0) -> None:
    """Check the mask of real positions for given lengths, with and without max_len, zero lengths included: fixed
    cases, then random ones drawn from the seed."""
    fixed = [(torch.tensor([3, 1, 4]), None), (torch.tensor([2, 0, 5, 1]), 6), (torch.tensor([0, 0]), 3)]
    for lengths, max_len in [*fixed, *_random_padding_cases(seed)]:
        expected = real_positions(lengths, max_len=max_len)  # (batch, 1, max_len)
        args = (lengths,) if max_len is None else (lengths, max_len)
        call = (
            f"padding_mask(torch.tensor({lengths.tolist()})" + ("" if max_len is None else f", max_len={max_len}") + ")"
        )
        mask = _call_padding_mask(padding_mask, lengths, args, expected.shape[-1], call)
        if isinstance(mask, torch.Tensor) and mask.shape == expected.shape[::2]:
            raise CheckFailed(
                f"{call} returned shape {shape_of(mask)}; add an axis for the queries, (batch, 1, max_len), so "
                "the mask broadcasts over every query's row of scores."
            )
        if isinstance(mask, torch.Tensor) and mask.shape == (*expected.shape[::2], 1) != expected.shape:
            raise CheckFailed(
                f"{call} returned shape {shape_of(mask)}, the axis of size 1 last; put it in the middle, "
                "(batch, 1, max_len), so that the positions are on the last axis, as the keys are in the scores "
                "(…, n_q, n_k), and the axis of size 1 broadcasts over the queries."
            )
        _diagnose_padding_axes(mask, expected, call)
        _diagnose_positions_off_by_one(padding_mask, mask, lengths, max_len, expected.shape[-1], call)
        longest = int(lengths.max()) if len(lengths) else 0
        if (
            max_len is not None
            and max_len != longest
            and isinstance(mask, torch.Tensor)
            and mask.shape == (len(lengths), 1, longest)
        ):
            raise CheckFailed(
                f"{call} returned shape {shape_of(mask)}, padded to the longest length {longest}; with "
                f"max_len={max_len} given, every row has {max_len} positions: expected {shape_of(expected)}. Use "
                "lengths.max() only when max_len is None."
            )
        if (
            max_len is None
            and isinstance(mask, torch.Tensor)
            and mask.shape != expected.shape
            and mask.shape[:2] == expected.shape[:2]
        ):
            raise CheckFailed(
                f"{call} returned shape {shape_of(mask)}; with no max_len given, max_len is the longest length, "
                f"lengths.max() = {longest}: expected {shape_of(expected)}."
            )
        rows, width = expected.shape[0], expected.shape[-1]
        if (
            isinstance(mask, torch.Tensor)
            and width > 1
            and mask.shape == (rows, width, width)
            and torch.equal(mask, expected.expand(rows, width, width))
        ):
            raise CheckFailed(
                f"{call} returned shape {shape_of(mask)}, each sentence's row repeated for every query. Return "
                f"(batch, 1, max_len), here {shape_of(expected)}: the axis of size 1 broadcasts over the queries, so "
                "the row need not be repeated."
            )
        mask = _expect_boolean(mask, "padding_mask", expected.shape, call)
        if expected.numel() and torch.equal(mask, ~expected):
            raise CheckFailed(
                f"{call}: your mask is True at the padding. In this course True means a key may be attended "
                "to: True at the real positions j < length."
            )
        if not torch.equal(expected, expected.flip(-1)) and torch.equal(mask, expected.flip(-1)):
            raise CheckFailed(
                f"{call}: your mask is True at the last positions of each row, as if the padding came first. The "
                "real words come first and the padding goes at the end: positions 0 … length-1 are real (j < length)."
            )
        one_more = real_positions(lengths + 1, max_len=expected.shape[-1])
        if not torch.equal(one_more, expected) and torch.equal(mask, one_more):
            raise CheckFailed(f"{call}: one position too many is True: positions 0 … length-1 are real (j < length).")
        one_fewer = real_positions((lengths - 1).clamp(min=0), max_len=expected.shape[-1])
        if not torch.equal(one_fewer, expected) and torch.equal(mask, one_fewer):
            raise CheckFailed(
                f"{call}: one position too few is True: the last real position, length-1, is hidden. Positions 0 … "
                "length-1 are real (j < length)."
            )
        if not torch.equal(mask, expected):
            raise CheckFailed(f"{call}: expected\n{expected.squeeze(1).int()}\ngot\n{mask.squeeze(1).int()}")
    passed("padding_mask", "True at the real positions, shape (batch, 1, max_len), zero lengths included")


def _diagnose_padding_axes(mask, expected: torch.Tensor, call: str) -> None:
    """Name a padding mask whose axes are in another order: the positions first and the sentences last, or the
    axis of size 1 in front."""
    if not isinstance(mask, torch.Tensor):
        return
    rows, width = expected.shape[0], expected.shape[-1]
    if rows != width and mask.shape == (width, 1, rows):
        raise CheckFailed(
            f"{call} returned shape {shape_of(mask)}: the positions are on the first axis and the sentences on the "
            f"last, swapped. Expected (batch, 1, max_len), here {shape_of(expected)}: one row per sentence, its "
            "positions along the last axis, as the keys are in the scores (…, n_q, n_k). (A column of positions "
            "compared with a row of lengths, say, gives the table the wrong way round.)"
        )
    if rows != 1 and mask.shape == (1, rows, width):
        raise CheckFailed(
            f"{call} returned shape {shape_of(mask)}, the axis of size 1 in front; put it in the middle, "
            f"(batch, 1, max_len), here {shape_of(expected)}. In front, it leaves the sentences on the axis of the "
            "queries: against the scores (batch, n_q, n_k), sentence i's row would mask query i of every sentence."
        )


def _diagnose_positions_off_by_one(
    padding_mask: Callable, mask, lengths: torch.Tensor, max_len: int | None, width: int, call: str
) -> None:
    """Name a range of positions one too short or one too long, such as arange(1, max_len) or arange(max_len + 1),
    by the answer called again with a max_len it must follow: with no max_len given, the longest length (so that a
    wrong default is not blamed); with one given, a larger one (so that lengths.max() used in its place, which
    gives the same width whatever max_len is, is not blamed either)."""
    if not (isinstance(mask, torch.Tensor) and mask.ndim == 3 and mask.shape[:2] == (len(lengths), 1)):
        return
    off = mask.shape[-1] - width
    if abs(off) != 1:
        return
    probe_len = width if max_len is None else width + 2
    try:
        probe = padding_mask(lengths.clone(), probe_len)
    except Exception:
        return
    if not (isinstance(probe, torch.Tensor) and probe.shape == (len(lengths), 1, probe_len + off)):
        return  # right for another max_len: some other mistake, which the caller names
    given = width
    more = mask.shape[-1] > width
    count = f"{mask.shape[-1]} positions, one {'more' if more else 'fewer'} than max_len = {given}"
    said = (
        count
        if max_len is not None
        else f"and given max_len={given} it returns {count}, so the default is not the cause"
    )
    raise CheckFailed(
        f"{call} returned shape {shape_of(mask)}, {said}. torch.arange(max_len) gives the max_len positions "
        f"0 … max_len-1; {'a range to max_len + 1' if more else 'a range that starts at 1 or stops before max_len'} "
        f"gives one {'too many' if more else 'too few'}. Expected {shape_of((len(lengths), 1, width))}."
    )


def _call_padding_mask(padding_mask: Callable, lengths: torch.Tensor, args: tuple, max_len: int, call: str):
    """Call padding_mask; a crash where the positions met the lengths on one axis says how to line them up."""
    try:
        return _call(padding_mask, *args, call=call, names=("lengths",))
    except CheckFailed as failure:
        if {max_len, len(lengths)} != _mismatched_sizes(failure) or max_len == len(lengths):
            raise
        raise CheckFailed(
            f"{str(failure).rstrip('.')}. The {max_len} positions met the {len(lengths)} lengths on one axis: "
            "broadcasting lines axes up from the right, so a (max_len,) tensor and a (batch,) one are paired "
            "position by position. Make the lengths a column, shape (batch, 1), so that comparing gives "
            "(batch, max_len)."
        ) from failure.__cause__


def _mismatched_sizes(failure: CheckFailed) -> set[int]:
    """The two sizes that a crash of broadcasting found unequal, or an empty set for another failure."""
    found = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)", str(failure.__cause__))
    return {int(found[1]), int(found[2])} if found and failure.__cause__ is not None else set()


def _random_lengths(generator: torch.Generator) -> torch.Tensor:
    """(batch,) lengths from 0 to 6 for a batch of 1 to 4 sentences; empty sentences are possible."""
    batch = int(torch.randint(1, 5, (), generator=generator))
    return torch.randint(0, 7, (batch,), generator=generator)


def _random_padding_cases(seed: int) -> list[tuple[torch.Tensor, int | None]]:
    """Three (lengths, max_len) cases drawn from the seed; max_len is None (the longest length) or up to 2 more."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for _ in range(3):
        lengths = _random_lengths(generator)
        extra = int(torch.randint(-1, 3, (), generator=generator))  # -1: no max_len given
        cases.append((lengths, None if extra < 0 else int(lengths.max()) + extra))
    return cases


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_causal_mask(causal_mask: Callable, seed: int = 0) -> None:
    """Check the causal mask against a table and PyTorch's is_causal attention, for fixed sizes and one drawn from
    the seed."""
    table = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool)
    for n in (4, 1, 7, 0, 8 + seed % 7):
        expected = table if n == 4 else visible_to_causal_attention(n=n) if n else torch.ones(0, 0, dtype=torch.bool)
        call = f"causal_mask({n})"
        mask = _expect_boolean(_call(causal_mask, n, call=call, names=("n",)), "causal_mask", (n, n), call)
        if n > 1 and torch.equal(mask, ~expected):
            raise CheckFailed(
                f"{call} is True where j > i, on the future: it marks what to hide. In this course True means a "
                "query may attend to the key, as in F.scaled_dot_product_attention (nn.MultiheadAttention's boolean "
                "masks mean the opposite): return True where j ≤ i, the diagonal included."
            )
        ahead = next((d for d in range(1, n) if torch.equal(mask, torch.ones(n, n, dtype=torch.bool).tril(d))), 0)
        if ahead:
            raise CheckFailed(
                f"{call} lets query i see keys up to i + {ahead}, {ahead} step{'s' * (ahead > 1)} into the future; "
                "query i may see keys j ≤ i only, the diagonal included."
            )
        if n > 1 and torch.equal(mask, expected.tril(-1)):
            raise CheckFailed(
                f"causal_mask({n}) hides the diagonal: a position may attend to itself (j ≤ i), only the future "
                "(j > i) is hidden."
            )
        if n > 1 and torch.equal(mask, expected.T):
            raise CheckFailed(f"causal_mask({n}) hides the past instead of the future: query i may see keys j ≤ i.")
        if not torch.equal(mask, expected):
            raise CheckFailed(f"causal_mask({n}): expected\n{expected.int()}\ngot\n{mask.int()}")
    q, k, v = (seeded_randn(2, 5, 4, seed=seed + i) for i in range(3))  # (batch, seq, d)
    ours = pytorch_attention(q, k, v, mask=causal_mask(5), scale=None)[0]
    expect_close(ours, F.scaled_dot_product_attention(q, k, v, is_causal=True), "attention with causal_mask(5)")
    passed("causal_mask", "query i sees keys j ≤ i, as PyTorch's is_causal attention does")


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_masked_attention(masked_attention: Callable, seed: int = 0) -> None:
    """Check zero weight where masked, a masked key whose score dwarfs the visible ones, rows with no visible key,
    finite gradients, causality, and agreement with PyTorch's attention."""
    d_k = 6 + 2 * (seed % 3)  # drawn from the seed, so that no constant scale passes
    q = seeded_randn(2, 2, 5, d_k, seed=seed)  # (batch, heads, n_q=5, d_k)
    # n_k = 7 is odd, so never d_k: a scale by the number of keys cannot pass for √d_k
    k = seeded_randn(2, 2, 7, d_k, seed=seed + 1)  # (batch, heads, n_k=7, d_k)
    v = seeded_randn(2, 2, 7, 3, seed=seed + 2)  # (batch, heads, n_k, d_v)
    mask = seeded_randn(2, 1, 5, 7, seed=seed + 3) > 0  # (batch, 1, n_q, n_k), broadcast over heads
    mask[..., 0] = True  # first: every query sees some key
    _check_against_pytorch(masked_attention, q, k, v, mask, "a random mask")
    _check_large_masked_score(masked_attention, seed)
    _check_large_visible_scores(masked_attention, seed)
    mask[0, :, 1, :] = False  # query 1 of the first sequence sees nothing
    mask[1] = False  # the second sequence is empty, as for a sentence of length 0
    _check_against_pytorch(masked_attention, q, k, v, mask, "rows with no visible key")
    _check_nothing_visible_at_all(masked_attention, seed)
    _check_gradients_stay_finite(masked_attention, q, k, v, mask)
    _check_unmasked(masked_attention, q, k, v)
    _check_causality(masked_attention, seed)
    passed(
        "masked_attention", "masked pairs get zero weight whatever their scores, empty rows give zeros, no nan, causal"
    )


def _check_nothing_visible_at_all(masked_attention: Callable, seed: int) -> None:
    """A mask with no True at all, as for a batch whose only sentence is empty: every query gets zero weights."""
    q = seeded_randn(1, 2, 4, seed=seed + 20)  # (batch, n_q, d_k)
    k = seeded_randn(1, 3, 4, seed=seed + 21)  # (batch, n_k, d_k)
    v = seeded_randn(1, 3, 2, seed=seed + 22)  # (batch, n_k, d_v)
    nothing = torch.zeros(1, 1, 3, dtype=torch.bool)  # (batch, 1, n_k): the padding mask of lengths [0]
    _check_against_pytorch(masked_attention, q, k, v, nothing, "a mask that hides every key (one empty sentence)")


def _check_against_pytorch(masked_attention: Callable, q, k, v, mask, what: str) -> None:
    call = f"masked_attention(q, k, v, mask) with {what} (q {shape_of(q)}, k {shape_of(k)}, mask {shape_of(mask)})"
    result = _call_attention(masked_attention, q, k, v, mask, call)
    _diagnose_an_axis_added_to_the_mask(masked_attention, result, q, k, v, mask, call)
    outputs, weights = _expect_outputs_and_weights(result, q, k, v, call)
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., n_q, n_k), correctly scaled
    _diagnose_softmax_axis(weights, scores, mask, call)
    sees_nothing = ~mask.expand_as(weights).any(dim=-1)  # (..., n_q): queries with no visible key
    if torch.isnan(weights).any() or torch.isnan(outputs).any():
        nan_rows = torch.isnan(weights).any(dim=-1) | torch.isnan(outputs).any(dim=-1)  # (..., n_q)
        if (nan_rows & ~sees_nothing).any():
            raise CheckFailed(
                f"{call}: nan in the results, also for queries that see some key, so it does not come from a row "
                "with nothing visible: some step turns finite numbers into nan, such as 0 × (-inf) when a mask "
                "of 0s and 1s is multiplied by -inf. Replace the masked scores with masked_fill or torch.where."
            )
        raise CheckFailed(
            f"{call}: nan in the results, for the queries with no visible key. For such a row, 0/0 = nan comes "
            "from a softmax over a row of all -inf, or from dividing a row of zero weights by its sum, 0. Fill "
            "masked scores with torch.finfo(scores.dtype).min rather than -inf, and set the weights of masked "
            "pairs to 0 after the softmax: such a row gets zero weights and a zero output. No renormalising is "
            "needed: masking before the softmax already makes the visible weights sum to 1."
        )
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
    _diagnose_weights_returned_before_zeroing(outputs, weights, mask, expected_outputs, expected_weights, call)
    _diagnose_mask_skipped_when_it_hides_everything(q, k, v, mask, weights, call)
    expect_masked_weights(weights, mask, call, scores=scores)
    all_zero = ~sees_nothing & (weights == 0).all(dim=-1)  # (..., n_q)
    if all_zero.any():
        where = query_named(all_zero.nonzero()[0].tolist())
        lost = f"{call}: {where} sees some key, yet all its weights are 0: the visible keys lost their weight."
        _diagnose_visible_weight_lost(masked_attention, q, k, v, mask, lost)
        raise CheckFailed(
            f"{lost} Only a query with no visible key gets zero weights. If you replaced nan by 0, look for the "
            "step that makes nan from finite numbers, such as 0 × (-inf) when a mask of 0s and 1s is multiplied by "
            "-inf; replace the masked scores with masked_fill or torch.where."
        )
    sums = weights.sum(dim=-1)[~sees_nothing]  # (queries that see some key,)
    if sums.numel() and torch.allclose(sums, torch.full_like(sums, 1 / math.sqrt(d_k)), atol=1e-4):
        raise CheckFailed(
            f"{call}: each row of weights sums to 1/√d_k = {1 / math.sqrt(d_k):.3g}: you scaled after the softmax. "
            "Divide the scores by √d_k, before the softmax."
        )
    if not torch.allclose(weights, expected_weights, atol=1e-5):
        _diagnose_scale(q, k, v, mask, weights, call)
    expect_close(weights, expected_weights, f"{call}: the weights, compared with PyTorch's attention")
    if sees_nothing.any() and outputs[sees_nothing].any():
        raise CheckFailed(
            f"{call}: the weights are right, but a query with no visible key gets an output that is not zero, "
            "although all its weights are 0: compute the outputs from the weights you return, after setting "
            "the masked ones to 0."
        )
    expect_close(outputs, expected_outputs, f"{call}: the outputs, compared with PyTorch's attention")


def _diagnose_weights_returned_before_zeroing(outputs, weights, mask, expected_outputs, expected_weights, call: str):
    """Name outputs computed from weights whose masked pairs were set to 0, returned with the weights from before."""
    zeroed = weights.masked_fill(~mask, 0.0)
    if not (
        torch.allclose(outputs, expected_outputs, atol=1e-5)
        and torch.allclose(zeroed, expected_weights, atol=1e-5)
        and not torch.allclose(weights, expected_weights, atol=1e-5)
    ):
        return
    index = (weights - zeroed).abs().amax(dim=-1).argmax()  # the row whose masked pairs keep the most weight
    index = list(torch.unravel_index(index, weights.shape[:-1]))
    row = weights[tuple(index)]
    raise CheckFailed(
        f"{call}: your outputs are right, but the weights you return are not the ones you computed them from: "
        f"{query_named([int(i) for i in index])} gets weights {_rounded(row)}, with weight on masked pairs. "
        "Return the weights whose masked pairs you set to 0, the ones the outputs came from."
    )


def _diagnose_mask_skipped_when_it_hides_everything(q, k, v, mask, weights: torch.Tensor, call: str) -> None:
    """Name weights that a mask with no True at all left as they are with no mask: the mask was applied only if
    it lets something through."""
    if mask.any() or not weights.any():
        return
    try:
        unmasked = pytorch_attention(q, k, v, mask=None, scale=None)[1]
    except NotRecorded:
        return
    if weights.shape == unmasked.shape and torch.allclose(weights, unmasked, atol=1e-5):
        raise CheckFailed(
            f"{call}: your weights are the ones of no mask at all, {_rounded(weights.flatten(0, -2)[0])} for the "
            "first query: this mask hides every key, yet it changed nothing. A mask with no True still hides "
            "every key, so every query gets zero weights and a zero output. Apply the mask whenever one is given: "
            "a condition such as mask.any() skips exactly this mask."
        )


def _diagnose_visible_weight_lost(masked_attention: Callable, q, k, v, mask, lost: str) -> None:
    """Name which step took the visible keys' weight, by the weights the answer gives with every key visible and
    with none: the masked keys given a large positive score (right weights with every key visible), the fill put
    on the visible scores (uniform weights), or step 2 zeroing the visible pairs (zeros with every key visible,
    not with none)."""
    everything = torch.ones_like(mask)  # every key visible
    with_everything = _weights_or_none(masked_attention, q, k, v, everything)
    if with_everything is None:
        return
    try:
        unmasked = pytorch_attention(q, k, v, mask=None, scale=None)[1]
    except NotRecorded:
        return
    if with_everything.shape == unmasked.shape and torch.allclose(with_everything, unmasked, atol=1e-5):
        raise CheckFailed(
            f"{lost} With every key visible your weights are right, so the fill is the cause: step 1 gave the "
            "masked keys a large positive score (torch.finfo(scores.dtype).max, say), so they took all the weight, "
            "and step 2 then set it to 0. Fill the masked scores with a very negative number, "
            "torch.finfo(scores.dtype).min."
        )
    n_k = k.shape[-2]
    if torch.allclose(with_everything, torch.full_like(with_everything, 1 / n_k), atol=1e-6):
        raise CheckFailed(
            f"{lost} With every key visible your weights are uniform, 1/{n_k} each, as if every visible score had "
            "been replaced by one number: step 1 filled the visible scores instead of the masked ones. "
            "masked_fill(m, x) fills where m is True, and torch.where(m, a, b) takes a where m is True: the scores "
            "to replace are where the mask is False, ~mask."
        )
    if not (with_everything == 0).all():
        return
    with_nothing = _weights_or_none(masked_attention, q, k, v, ~everything)
    if with_nothing is not None and not (with_nothing == 0).all():
        raise CheckFailed(
            f"{lost} With every key visible your weights are all 0, and with none visible they are not: step 2 set "
            "the weights of the visible pairs to 0 instead of the masked ones. masked_fill(m, 0.0) fills where m "
            "is True: set the weights to 0 where the mask is False, ~mask."
        )


def _weights_or_none(masked_attention: Callable, q, k, v, mask) -> torch.Tensor | None:
    """The weights masked_attention returns on copies of these inputs, or None if it raises or returns no pair."""
    try:
        result = masked_attention(q.clone(), k.clone(), v.clone(), mask.clone())
    except Exception:
        return None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], torch.Tensor):
        return result[1].detach()
    return None


def _diagnose_an_axis_added_to_the_mask(masked_attention: Callable, result, q, k, v, mask, call: str) -> None:
    """Name weights with one axis too many that come out right when the mask is given without its heads axis:
    the answer adds an axis to a mask that already broadcasts over the heads."""
    weights_shape = (*q.shape[:-1], k.shape[-2])
    weights = result[1] if isinstance(result, tuple) and len(result) == 2 else None
    if not (isinstance(weights, torch.Tensor) and weights.ndim == len(weights_shape) + 1 and mask.ndim >= 3):
        return
    if mask.shape[-3] != 1:
        return
    try:
        fewer = masked_attention(q.clone(), k.clone(), v.clone(), mask.squeeze(-3).clone())
    except Exception:
        return
    if isinstance(fewer, tuple) and len(fewer) == 2 and isinstance(fewer[1], torch.Tensor):
        if tuple(fewer[1].shape) == weights_shape:
            raise CheckFailed(
                f"{call}: the weights have shape {shape_of(weights)}, one axis more than the scores "
                f"{shape_of(weights_shape)}, and they have the right shape when the mask comes without its axis of "
                f"size 1: your code adds an axis to the mask. The mask given, {shape_of(mask)}, already lines up "
                "with the scores axis by axis, its axis of size 1 broadcasting over the heads: use it as it is."
            )


def _expect_outputs_and_weights(result, q, k, v, call: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Fail unless masked_attention returned (outputs, weights) of the right shapes and dtype; name the pair
    returned the other way round."""
    outputs, weights = expect_pair(result, call)
    weights_shape, outputs_shape = (*q.shape[:-1], k.shape[-2]), (*q.shape[:-1], v.shape[-1])
    if (
        isinstance(outputs, torch.Tensor)
        and isinstance(weights, torch.Tensor)
        and weights_shape != outputs_shape
        and (tuple(outputs.shape), tuple(weights.shape)) == (weights_shape, outputs_shape)
    ):
        raise CheckFailed(
            f"{call}: the first tensor returned has the weights' shape {shape_of(weights_shape)} and the second "
            f"the outputs' shape {shape_of(outputs_shape)}: return the pair in the order (outputs, weights)."
        )
    expect_tensor(weights, "the weights", weights_shape, q.dtype)
    expect_tensor(outputs, "the outputs", outputs_shape, q.dtype)
    return outputs, weights


def _call_attention(masked_attention: Callable, q, k, v, mask, call: str):
    """Call masked_attention on q, k, v and mask (None: called without one); if that crashes, say why when a
    behaviour or the error tells: it runs with the mask expanded to the scores' full shape, on fewer axes, or only
    on four; softmax without its dim; torch.sqrt given a Python int; a tensor with the queries' size last where the
    keys' was expected."""
    inputs = (q, k, v) if mask is None else (q, k, v, mask)
    try:
        return _call(masked_attention, *inputs, call=call, names=("q", "k", "v", "mask"))
    except CheckFailed as failure:
        if failure.__cause__ is None:
            raise
        said = str(failure).rstrip(".")
        name_python_number_given_to_torch(failure)
        mask_axes = () if mask is None else mask.shape[:-2]
        full_shape = (*broadcast_shape(q.shape[:-2], k.shape[:-2], mask_axes), q.shape[-2], k.shape[-2])
        full_mask = () if mask is None else (mask.expand(full_shape),)
        if mask is not None and tuple(mask.shape) != full_shape and _runs(masked_attention, q, k, v, *full_mask):
            indexing = isinstance(failure.__cause__, IndexError)
            raise CheckFailed(
                f"{said}. It works with the mask expanded to the scores' full shape {shape_of(full_shape)}, but a "
                f"mask need only broadcast to it, as this one, {shape_of(mask)}, does. "
                + (
                    "Boolean indexing (scores[~mask] = ...) needs a mask of exactly the indexed tensor's shape; "
                    if indexing
                    else ""
                )
                + "masked_fill and torch.where broadcast the mask for you."
            ) from failure.__cause__
        three_axes = (tensor.flatten(0, -3) for tensor in (q, k, v, *full_mask))  # (batch × heads, n, d)
        if q.ndim > 3 and _runs(masked_attention, *three_axes):
            raise CheckFailed(
                f"{said}. It runs on inputs of three axes, (batch, n, d), but not with a heads axis as well, "
                "(batch, heads, n, d): some step takes exactly three axes or counts them from the front, such as "
                "torch.bmm, or transpose(1, 2), which on four axes swaps heads and queries. Count axes from the end, "
                "transpose(-2, -1), and multiply with @ (torch.matmul), which takes any number of leading axes."
            ) from failure.__cause__
        four_axes = (tensor.unsqueeze(-3) for tensor in (q, k, v, *full_mask))  # (batch, heads=1, n, d)
        if q.ndim == 3 and _runs(masked_attention, *four_axes):
            raise CheckFailed(
                f"{said}. It runs on inputs of four axes, (batch, heads, n, d), but not on three, (batch, n, d), "
                "as here: some step names an axis by its number counted from the front, such as softmax(dim=3) or "
                "k.transpose(2, 3), an axis that exists only with a heads axis. Count axes from the end, dim=-1 "
                "and transpose(-2, -1), so that the code works whatever axes come in front."
            ) from failure.__cause__
        one_sequence = (tensor[(0,) * (tensor.ndim - 2)] for tensor in (q, k, v, *full_mask))  # (n, d)
        if q.ndim > 2 and _runs(masked_attention, *one_sequence):
            raise CheckFailed(
                f"{said}. It runs on one sequence, q, k and v of two axes (n, d), but not with batch axes in front: "
                "some step handles matrices only, such as k.T (on more than two axes, .T reverses them all), .t() "
                "or torch.mm. Transpose the last two axes, k.transpose(-2, -1) or k.mT, and multiply with @, which "
                "takes any number of leading axes."
            ) from failure.__cause__
        cause = str(failure.__cause__)
        if isinstance(failure.__cause__, TypeError) and "softmax" in cause and '"dim"' in cause:
            raise CheckFailed(
                f"{said}. softmax needs the axis to normalise over, its dim: each query's weights are normalised "
                "over the keys, the last axis."
            ) from failure.__cause__
        queries, keys = q.shape[-2], k.shape[-2]
        if mask is not None and queries != keys and _runs(masked_attention, q, k, v, mask.transpose(-2, -1)):
            raise CheckFailed(
                f"{said}. It runs when given the mask transposed, (…, n_k, n_q): your code transposes the mask. The "
                "mask comes lined up with the scores, (…, n_q, n_k), row i for query i and column j for key j: use "
                "it as it is. (With as many queries as keys, as in a causal mask, the transposed mask raises no "
                "error but hides the wrong pairs.)"
            ) from failure.__cause__
        if queries != keys and _runs(masked_attention, k, q, v, *full_mask):
            raise CheckFailed(
                f"{said}. It runs when given q and k swapped: your scores are k qᵀ, (…, n_k, n_q), with a row per "
                "key. Row i of the scores is query i and column j key j, (…, n_q, n_k): q times k transposed, "
                "lined up with the mask and with the values."
            ) from failure.__cause__
        d_v = v.shape[-1]
        if d_v != keys and _runs(masked_attention, q, k, v.transpose(-2, -1), *full_mask):
            raise CheckFailed(
                f"{said}. It runs when given v transposed, (…, d_v, n_k): your code transposes v. The values are "
                "used as they are: the weights (…, n_q, n_k) times v (…, n_k, d_v) give the outputs (…, n_q, d_v), "
                "each a weighted average of the values' rows."
            ) from failure.__cause__
        if re.search(r"scalar type|same dtype", cause) and re.search(r"[Dd]ouble", cause):
            raise CheckFailed(
                f"{said}. A float64 (double) tensor met a float32 one: some step made float64 tensors (.double(), "
                "or dtype=torch.float64 in softmax, say), and then met an input still in float32, such as v. Keep "
                "the inputs' dtype, float32 here: the weights and outputs have q's dtype."
            ) from failure.__cause__
        if isinstance(failure.__cause__, TypeError) and "finfo() requires a floating point" in cause:
            raise CheckFailed(
                f"{said}. torch.finfo describes a floating-point dtype, and it was given another, such as the "
                "boolean mask's, mask.dtype (PyTorch's advice, iinfo, is for integer dtypes and does not help "
                "here). The number fills the scores, so take the scores' dtype: scores.dtype."
            ) from failure.__cause__
        if _mismatched_sizes(failure) == {queries, keys} and queries != keys:
            raise CheckFailed(
                f"{said}. A size of {queries}, the queries', met a size of {keys}, the keys', on one axis. The usual "
                "cause: a reduction over the keys, such as mask.any(dim=-1) or weights.sum(dim=-1), drops the keys' "
                "axis, so the queries' axis comes last and lines up with the keys. Keep the axis, keepdim=True, "
                "so that the result broadcasts over the keys."
            ) from failure.__cause__
        raise


def _runs(masked_attention: Callable, *inputs: torch.Tensor) -> bool:
    """Whether masked_attention returns on copies of these inputs without raising."""
    try:
        masked_attention(*(tensor.clone() for tensor in inputs))
    except Exception:
        return False
    return True


def _diagnose_softmax_axis(weights: torch.Tensor, scores: torch.Tensor, mask: torch.Tensor, call: str) -> None:
    """Name a softmax over another axis than the keys', read from the weights of the visible pairs."""
    visible = mask.expand_as(weights)
    if not visible.any():
        return  # no visible pair to read the axis from
    filled = scores.expand_as(weights).masked_fill(~visible, torch.finfo(scores.dtype).min)
    leading = ("batch", "heads") if weights.ndim == 4 else ("batch",) * (weights.ndim - 2)  # the axes before n_q
    for axis in range(weights.ndim - 1):
        if not torch.allclose(weights[visible], filled.softmax(dim=axis)[visible], atol=1e-5):
            continue
        if axis == weights.ndim - 2:
            raise CheckFailed(
                f"{call}: your weights sum to 1 over the queries axis (dim -2); each query's row must sum to 1 over "
                "the keys: softmax with dim=-1."
            )
        implicit = 0 if weights.ndim in (0, 1, 3) else 1  # what F.softmax picks when no dim is given
        raise CheckFailed(
            f"{call}: your weights are a softmax over axis {axis} of the scores {shape_of(weights)}, the axis of "
            f"the {leading[axis]}, not over the keys: each query's row must sum to 1 over the keys, the last "
            "axis. "
            + (
                f"F.softmax without dim picks the axis from the number of axes, axis {axis} for {weights.ndim} "
                "axes, and warns that this choice is deprecated: give dim=-1."
                if axis == implicit
                else "Give softmax dim=-1."
            )
        )


def _diagnose_scale(q, k, v, mask, weights: torch.Tensor, call: str) -> None:
    """Name a wrong scale of the scores by the weights it gives, computed by PyTorch's attention."""
    d_k, n_k, d_v = q.shape[-1], k.shape[-2], v.shape[-1]
    wrong_scales = {
        1.0: "you did not scale the scores: divide q kᵀ by √d_k",
        math.sqrt(d_k): f"your scores are q kᵀ times √d_k = {math.sqrt(d_k):.4g}: you multiplied by √d_k; divide by it",
        1 / math.sqrt(d_v): "you divided the scores by √d_v; the scale is √d_k, the dimension of queries and keys",
        1 / d_k: "you divided the scores by d_k; divide by its square root, √d_k",
        1 / math.sqrt(n_k): "you divided the scores by √(number of keys); divide by √d_k, the key dimension",
    }
    for scale, mistake in wrong_scales.items():
        if torch.allclose(weights, pytorch_attention(q, k, v, mask=mask, scale=scale)[1], atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    scale = _scale_used(q, k, mask, weights)
    if scale is not None and torch.allclose(weights, pytorch_attention(q, k, v, mask=mask, scale=scale)[1], atol=1e-5):
        _diagnose_size_of_another_axis(q, scale, call)
        why = (
            " `d ** 1/2` is (d ** 1) / 2, and `d ** -1/2` is (d ** -1) / 2: Python takes the power before it "
            "divides. Write d ** 0.5 (d ** -0.5 to multiply by) or math.sqrt(d)."
            if math.isclose(scale, 1 / (2 * d_k), rel_tol=1e-3)
            else " A number written in for one d_k fits no other: take d_k from q.shape[-1]."
        )
        raise CheckFailed(
            f"{call}: your scores are q kᵀ times {scale:.4g}; with d_k = {d_k} they must be divided by √d_k, "
            f"that is multiplied by {d_k**-0.5:.4g}.{why}"
        )


def _diagnose_size_of_another_axis(q: torch.Tensor, scale: float, call: str) -> None:
    """Name scores divided by the square root of the size of another axis of q than its last, such as
    q.shape[2] written for inputs of three axes (batch, n, d) but given four."""
    names = ("batch", "heads", "queries") if q.ndim == 4 else ("batch",) * (q.ndim - 2) + ("queries",)
    axes = [axis for axis in range(q.ndim - 1) if math.isclose(scale, q.shape[axis] ** -0.5, rel_tol=1e-3)]
    if not axes or q.shape[axes[0]] == q.shape[-1]:
        return
    size, listed = q.shape[axes[0]], " and ".join(f"{axis} ({names[axis]})" for axis in axes)
    raise CheckFailed(
        f"{call}: your scores are divided by √{size}, and {size} is the size of q's axis {listed}, not d_k = "
        f"{q.shape[-1]}. d_k is q's last axis, q.shape[-1], however many axes come in front: q here has "
        f"{q.ndim} axes, {shape_of(q)}."
    )


def _scale_used(q, k, mask, weights: torch.Tensor) -> float | None:
    """The constant c with weights = softmax(c q kᵀ), read from one row: log wᵢ - log wⱼ = c (sᵢ - sⱼ)."""
    scores = (q @ k.transpose(-2, -1)).expand_as(weights)
    visible = mask.expand_as(weights) & (weights > 1e-30)
    rows = (visible.sum(dim=-1) >= 2).nonzero()
    if not len(rows):
        return None
    row = tuple(int(index) for index in rows[0])
    keys = visible[row].nonzero().flatten()
    s, log_w = scores[row][keys].double(), weights[row][keys].double().log()
    i, j = int(s.argmax()), int(s.argmin())
    return None if s[i] == s[j] else float((log_w[i] - log_w[j]) / (s[i] - s[j]))


def _check_large_masked_score(masked_attention: Callable, seed: int) -> None:
    """A padded key holding large values scores 280 or more with every query, against visible scores of a few
    units: the softmax of the unmasked scores gives the visible keys weights of exactly 0 in float32 (e^-104 is
    below the smallest float32), so an answer that masks after the softmax has nothing left to renormalise."""
    q = seeded_randn(2, 3, 4, seed=seed + 7)  # (batch, n_q, d_k)
    q[..., 0] = 1 + q[..., 0].abs()  # every query points along the first axis, as the large key does
    k = seeded_randn(2, 4, 4, seed=seed + 8)  # (batch, n_k, d_k)
    k[:, -1] = torch.tensor([560.0, 0.0, 0.0, 0.0])  # the padded key: score 560 q0 / sqrt(4) >= 280
    v = seeded_randn(2, 4, 3, seed=seed + 9)  # (batch, n_k, d_v)
    mask = torch.tensor([True, True, True, False]).expand(2, 1, 4)  # (batch, 1, n_k): the last key is padding
    call = "masked_attention(q, k, v, mask) where a masked key scores 280 or more and the visible keys a few units"
    result = _call_attention(masked_attention, q, k, v, mask, call)
    outputs, weights = _expect_outputs_and_weights(result, q, k, v, call)
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
    on_visible = weights.masked_fill(~mask, 0.0).sum(dim=-1)  # (batch, n_q); nan stays nan
    wrong_rows = ~torch.isclose(on_visible, torch.ones(()), atol=1e-4)
    if wrong_rows.any():
        b, i = (int(index) for index in wrong_rows.nonzero()[0])
        raise CheckFailed(
            f"{call}: query {i} of sequence {b} should get weights {_rounded(expected_weights[b, i])}, got "
            f"{_rounded(weights[b, i])}. Masking after the softmax lets masked scores dominate the normalisation: "
            "the masked key takes all the weight, the visible keys' weights underflow to 0, and renormalising "
            "cannot bring them back. Mask the scores before the softmax."
        )
    expect_close(weights, expected_weights, f"{call}: the weights, compared with PyTorch's attention")
    expect_close(outputs, expected_outputs, f"{call}: the outputs, compared with PyTorch's attention")


def _check_large_visible_scores(masked_attention: Callable, seed: int) -> None:
    """Visible scores from 100 to 300, as trained models can give: e^x overflows float32 above about 88.7, so a
    softmax written as exp(scores) / sum gives inf / inf = nan, while softmax subtracts each row's largest score
    first and stays finite. One query's scores lie more than 104 below another's, so that subtracting one number
    for the whole tensor, such as scores.max(), underflows that row's exps to 0 and gives 0 / 0 = nan."""
    q = seeded_randn(2, 3, 4, seed=seed + 10).abs().clamp(max=1) + 1  # (batch, n_q, d_k), entries in [1, 2]
    q[0, 0, 0], q[0, 1, 0] = 1.0, 2.0  # row maxima about 140 and 280, whatever the seed
    k = seeded_randn(2, 5, 4, seed=seed + 11).abs().clamp(max=1) * 5  # (batch, n_k, d_k)
    k[..., 0] = 200 + 25 * torch.arange(5.0)  # scores of 100 and more, over 300 at most: q k / √4
    v = seeded_randn(2, 5, 3, seed=seed + 12)  # (batch, n_k, d_v)
    mask = torch.tensor([True, True, True, True, False]).expand(2, 1, 5)  # (batch, 1, n_k): the last key is padding
    call = "masked_attention(q, k, v, mask) where the visible keys score from 100 to 300"
    outputs, weights = _expect_outputs_and_weights(
        _call_attention(masked_attention, q, k, v, mask, call), q, k, v, call
    )
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
    if not (weights.isfinite().all() and outputs.isfinite().all()):
        _diagnose_overflow_or_underflow(q, k, mask, weights, outputs, call)
    expect_close(weights, expected_weights, f"{call}: the weights, compared with PyTorch's attention")
    expect_close(outputs, expected_outputs, f"{call}: the outputs, compared with PyTorch's attention")


def _diagnose_overflow_or_underflow(q, k, mask, weights: torch.Tensor, outputs: torch.Tensor, call: str) -> None:
    """Name a hand-written softmax that is not finite on large scores by the rows it spoils: every row whose
    largest score overflows e^x (no maximum subtracted), or exactly the rows far below the largest score of the
    whole tensor (one maximum subtracted for all rows)."""
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~mask, torch.finfo(q.dtype).min)
    spoilt = ~(weights.isfinite().all(dim=-1) & outputs.isfinite().all(dim=-1))  # (batch, n_q)
    overflowing = torch.exp(scores.amax(dim=-1)).isinf()  # (batch, n_q): e^(row's largest score) is inf
    underflowing = torch.exp(scores - scores.amax()).sum(dim=-1) == 0  # (batch, n_q): every exp rounds to 0
    if overflowing.all() and spoilt.all():
        raise CheckFailed(
            f"{call}: nan or inf in the results. e^x overflows float32 to inf for x above about 88.7, and "
            "inf / inf is nan: a softmax written as exp(scores) / sum overflows here. Softmax's result does not "
            "change when the same number is subtracted from a whole row; subtract each row's largest score before "
            "the exp, as torch.softmax does, and the exps stay at most 1."
        )
    if underflowing.any() and not underflowing.all() and torch.equal(spoilt, underflowing):
        raise CheckFailed(
            f"{call}: nan in the results, for the queries whose scores lie far below the largest score of the "
            "whole tensor, and only for them. e^x underflows float32 to 0 for x below about -104, so subtracting "
            "one number for the whole tensor, such as scores.max(), leaves every exp of those rows 0, and 0 / 0 "
            "is nan. Subtract each row's own largest score, scores.amax(dim=-1, keepdim=True), as torch.softmax "
            "does: then each row has an exp of exactly 1 and none above it."
        )
    raise CheckFailed(
        f"{call}: nan or inf in the results. A softmax written by hand meets two limits of float32 on these "
        "scores: e^x overflows to inf above about 88.7 (inf / inf is nan), and underflows to 0 below about -104 "
        "(0 / 0 is nan), as in a row far below a number subtracted from many rows at once. Softmax's result does "
        "not change when the same number is subtracted from a whole row; subtract each row's own largest score, "
        "amax(dim=-1, keepdim=True), as torch.softmax does, and the exps stay at most 1, the largest exactly 1."
    )


def _rounded(row: torch.Tensor) -> list[float]:
    return [round(value, 3) for value in row.tolist()]


def _check_gradients_stay_finite(masked_attention: Callable, q, k, v, mask) -> None:
    q, k, v = (tensor.detach().clone().requires_grad_() for tensor in (q, k, v))
    call = "masked_attention(q, k, v, mask) on inputs that require gradients"
    outputs, _ = _expect_outputs_and_weights(_call_attention(masked_attention, q, k, v, mask, call), q, k, v, call)
    expect_differentiable(outputs, call)
    try:
        outputs.sum().backward()
    except Exception as error:
        found = re.search(r"modified by an inplace operation.*?which is output \d+ of (\w+)", str(error), re.DOTALL)
        if found is None:
            raise CheckFailed(
                f"{call}: computing the gradients of the outputs raised {type(error).__name__}: {error}"
            ) from error
        step = found[1].removesuffix("Backward0").lower()
        which = "the softmax's output, the weights," if step == "softmax" else f"the output of {step}"
        raise CheckFailed(
            f"{call}: computing the gradients failed: {which} was changed in place after it was computed, by a "
            "method ending in _ such as masked_fill_, an augmented assignment such as weights *= mask, or an "
            "assignment such as weights[~mask] = 0, and the "
            f"backward pass of {step} needs that output as it was. Make a new tensor instead: masked_fill "
            "without the _, or torch.where."
        ) from error
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if not torch.isfinite(tensor.grad).all():
            raise CheckFailed(
                f"masked_attention: the outputs are fine, but the gradient of {name} holds nan. Softmax over a "
                "row of -inf is nan in the backward pass too, even if its result is replaced afterwards, and "
                "adding a mask to the scores carries that nan back to q and k. Fill masked scores with "
                "torch.finfo(scores.dtype).min (masked_fill) instead of adding -inf."
            )


def _check_unmasked(masked_attention: Callable, q, k, v) -> None:
    call = "masked_attention(q, k, v) with no mask"
    try:
        result = _call_attention(masked_attention, q, k, v, None, call)
    except CheckFailed as failure:
        if "NoneType" in str(failure.__cause__):
            raise CheckFailed(
                f"{failure}. With no mask given, mask is None, and None cannot be inverted or filled: mask the "
                "scores only if mask is not None."
            ) from failure.__cause__
        raise
    result = _expect_outputs_and_weights(result, q, k, v, call)
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=None, scale=None)
    expect_close(result[1], expected_weights, f"{call}: the weights")
    expect_close(result[0], expected_outputs, f"{call}: the outputs")


def _check_causality(masked_attention: Callable, seed: int) -> None:
    x = seeded_randn(1, 6, 4, seed=seed + 5)  # (batch, seq, d)
    changed = x.clone()
    changed[:, 3:] = seeded_randn(1, 3, 4, seed=seed + 6)  # new tokens from position 3 on
    causal = visible_to_causal_attention(n=6)
    before = _call_attention(masked_attention, x, x, x, causal, "masked_attention(x, x, x, causal mask)")[0]
    after = _call_attention(masked_attention, changed, changed, changed, causal, "masked_attention on new tokens")[0]
    if not torch.allclose(before[:, :3], after[:, :3], atol=1e-6):
        raise CheckFailed(
            "masked_attention with a causal mask: changing tokens 3, 4, 5 changed the outputs at positions 0, 1, 2, "
            "so information leaks from the future."
        )
    expect_close(
        before, F.scaled_dot_product_attention(x, x, x, is_causal=True), "causal masked_attention vs is_causal"
    )


# Exercise 4 ---------------------------------------------------------------------------------------------


@learner_facing
def check_decoder_mask(decoder_mask: Callable, seed: int = 0) -> None:
    """Check the combined padding and causal mask of a batch of target sentences: fixed batches, then random ones
    drawn from the seed."""
    fixed = [torch.tensor([4, 2, 0]), torch.tensor([3, 3]), torch.tensor([1, 5])]
    generator = torch.Generator().manual_seed(seed)
    with earlier_exercises_replaced(decoder_mask, "padding_mask", "causal_mask"):
        for lengths in [*fixed, *(_random_lengths(generator) for _ in range(3))]:
            _check_one_decoder_mask(decoder_mask, lengths)
    passed("decoder_mask", "each query sees the real keys up to itself")


def _check_one_decoder_mask(decoder_mask: Callable, lengths: torch.Tensor) -> None:
    n = max(lengths.tolist())
    padding, causal = real_positions(lengths, max_len=None), visible_to_causal_attention(n=n)
    expected = padding & causal  # (batch, n, n)
    call = f"decoder_mask(torch.tensor({lengths.tolist()}))"
    try:
        mask = _call(decoder_mask, lengths, call=call, names=("lengths",))
    except CheckFailed as failure:
        _diagnose_in_place_growth(failure)
        if _mismatched_sizes(failure) != {len(lengths), n} or len(lengths) == n:
            raise
        which = _sentences_second_last(decoder_mask, n)
        raise CheckFailed(
            f"{str(failure).rstrip('.')}. A size of {len(lengths)}, the number of sentences, met a size of {n}, the "
            f"positions, on one axis. Broadcasting lines axes up from the right, so {which} "
            "pairs its sentences with the queries of the causal mask, (n, n). Keep the padding mask's shape "
            "(batch, 1, n), as padding_mask returns it: its axis of size 1 broadcasts over the queries."
        ) from failure.__cause__
    is_bool = isinstance(mask, torch.Tensor) and mask.dtype == torch.bool
    if n > 1 and is_bool and mask.shape == padding.shape and torch.equal(mask, padding):
        raise CheckFailed(f"{call} returned only the padding mask, {shape_of(mask)}; combine it with causal_mask(n).")
    _diagnose_decoder_size(mask, lengths, call)
    if n > 1 and is_bool and mask.shape == padding.shape:
        tril = (
            "tril on the padding mask alone works on that single row, keeping key 0 only, and cannot make a row "
            "per query. "
            if torch.equal(mask, padding.tril())
            else ""
        )
        raise CheckFailed(
            f"{call} returned shape {shape_of(mask)}, the padding mask's (batch, 1, n): one row per sentence, "
            f"shared by every query, while what a query may see changes from query to query. {tril}The causal "
            f"mask, (n, n), has a row per query: combine it with the padding mask, and broadcasting gives "
            f"(batch, n, n), here {shape_of(expected)}."
        )
    mask = _expect_boolean(mask, "decoder_mask", (len(lengths), n, n), call)
    if torch.equal(mask, causal.expand_as(mask)) and not padding.all():
        raise CheckFailed(f"{call}: the padded keys are visible; combine the causal mask with the padding mask.")
    if not torch.equal(padding | causal, expected) and torch.equal(mask, padding | causal):
        raise CheckFailed(
            f"{call}: a key must be real AND not in the future: combine with & (and), not | (or). On boolean "
            "tensors, + is an or as well."
        )
    if not torch.equal(padding & causal.T, expected) and torch.equal(mask, padding & causal.T):
        raise CheckFailed(
            f"{call}: query i sees the real keys j ≥ i, the future, instead of j ≤ i: the causal part is the upper "
            "triangle. Use causal_mask(n)."
        )
    padded_queries_hidden = expected & padding.transpose(-2, -1)
    if not torch.equal(padded_queries_hidden, expected) and torch.equal(mask, padded_queries_hidden):
        raise CheckFailed(
            f"{call}: the rows of the padded queries are all False, which leaves those queries no visible key at "
            "all. Mask only the keys, as the padding mask does: a padded query's output is never read anyway."
        )
    differing = [b for b in range(len(lengths)) if not torch.equal(mask[b], expected[b])]
    if differing:
        b = differing[0]
        raise CheckFailed(
            f"{call}: sentence {b} (length {int(lengths[b])}) is the first that differs; for it, expected\n"
            f"{expected[b].int()}\ngot\n{mask[b].int()}"
        )


def _diagnose_in_place_growth(failure: CheckFailed) -> None:
    """Name the crash of an in-place operation, such as padding &= causal, whose result would be larger than its
    left side."""
    found = re.search(r"output with shape \[([\d, ]*)\] doesn't match the broadcast shape \[([\d, ]*)\]", str(failure))
    if failure.__cause__ is None or found is None:
        return
    left, grown = (f"({found[i]})" for i in (1, 2))
    raise CheckFailed(
        f"{str(failure).rstrip('.')}. An in-place operation such as &= writes its result into its left side, "
        f"which keeps its shape, here {left}; it cannot grow to the shape that broadcasting gives, "
        f"{grown}. Combine the masks into a new tensor, with & rather than &=."
    ) from failure.__cause__


def _sentences_second_last(decoder_mask: Callable, n: int) -> str:
    """Which padding mask with its sentences second from the right the answer builds, read from the shape it returns
    for a batch of n sentences, where broadcasting raises no error: (n, n) for the padding mask without its axis of
    size 1, (1, n, n) for it with its first two axes swapped."""
    try:
        probe = decoder_mask(torch.arange(n, 0, -1))  # n sentences, the longest of length n
    except Exception:
        probe = None
    shape = tuple(probe.shape) if isinstance(probe, torch.Tensor) else None
    if shape == (n, n):
        return "a padding mask of (batch, n), without its axis of size 1 (squeezed away, say),"
    if shape == (1, n, n):
        return "a padding mask of (1, batch, n), its axis of size 1 moved to the front (transpose(0, 1), say),"
    return "a padding mask whose sentences are the second axis from the right, such as (batch, n) or (1, batch, n),"


def _diagnose_decoder_size(mask, lengths: torch.Tensor, call: str) -> None:
    """Name a mask that is right for sentences padded to another length than the longest: its n, and which of
    the lengths' numbers that n equals."""
    n = max(lengths.tolist())
    if not (isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and mask.ndim == 3 and mask.shape[-1] != n):
        return
    m = mask.shape[-1]
    try:
        sized_m = real_positions(lengths, max_len=m) & visible_to_causal_attention(n=m)  # (batch, m, m)
    except NotRecorded:  # a student release holds these masks for the kept wrong answers only: say the shape
        return
    if not torch.equal(mask, sized_m):
        return
    known = [
        (int(lengths[0]), "the length of the first sentence, lengths[0]"),
        (len(lengths), "the number of sentences, len(lengths)"),
        (min(lengths.tolist()), "the shortest length"),
    ]
    which = next((f"n = {m}, {name}" for value, name in known if value == m), f"n = {m}")
    raise CheckFailed(
        f"{call} returned {shape_of(mask)}, the mask of sentences padded to {which}. Every sentence of the batch "
        f"is padded to the longest, n = lengths.max() = {n}: expected {shape_of((len(lengths), n, n))}."
    )
