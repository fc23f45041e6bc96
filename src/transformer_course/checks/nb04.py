"""Checks for notebook 04, masking.

Oracles: ``torch.nn.utils.rnn.pad_sequence`` for which positions are real; ``F.scaled_dot_product_attention``
with ``is_causal=True`` for which keys a query may see, and with an explicit mask for the results (it gives a
query with no visible key zero weights and a zero output, the course's convention); closed-form tables;
causality as a property: changing future tokens never changes earlier outputs.
"""

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from . import (
    CheckFailed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_differentiable,
    expect_masked_weights,
    expect_pair,
    expect_tensor,
    learner_facing,
    passed,
    pytorch_attention,
    seeded_randn,
    shape_of,
)
from .recordings import oracle


@oracle
def real_positions(lengths: torch.Tensor, *, max_len: int | None) -> torch.Tensor:
    """The oracle of padding masks: (batch, 1, max_len), True at the real positions, from PyTorch's own padding
    utility; max_len None means the longest length."""
    sizes = [int(length) for length in lengths]
    max_len = max(sizes, default=0) if max_len is None else max_len
    rows = [torch.ones(size, dtype=torch.bool) for size in sizes]
    padded = pad_sequence([*rows, torch.zeros(max_len, dtype=torch.bool)], batch_first=True)[:-1]  # (batch, max_len)
    return padded[:, None, :]


@oracle
def visible_to_causal_attention(*, n: int) -> torch.Tensor:
    """The oracle of causal masks: (n, n), True where PyTorch's causal attention lets query i see key j."""
    zeros = torch.zeros(n, 1)  # equal scores, so every visible key gets weight > 0
    return F.scaled_dot_product_attention(zeros, zeros, torch.eye(n), is_causal=True) > 0


def _expect_boolean(mask, name: str, shape, call: str) -> torch.Tensor:
    """Fail unless the mask is a boolean tensor of the given shape; name an additive mask."""
    if isinstance(mask, torch.Tensor) and mask.dtype != torch.bool:
        if mask.is_floating_point() and (mask == float("-inf")).any():
            raise CheckFailed(
                f"{name} returned an additive mask (0 and -inf). Return a boolean mask, True where attention "
                "is allowed; attention turns it into scores of -inf."
            )
        raise CheckFailed(f"{name} returned dtype {mask.dtype}; return a boolean mask (dtype torch.bool).")
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
        mask = call_learner(padding_mask, *args, call=call)
        if isinstance(mask, torch.Tensor) and mask.shape == expected.shape[::2]:
            raise CheckFailed(
                f"{call} returned shape {shape_of(mask)}; add an axis for the queries, (batch, 1, max_len), so "
                "the mask broadcasts over every query's row of scores."
            )
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
        mask = _expect_boolean(mask, "padding_mask", expected.shape, call)
        if expected.numel() and torch.equal(mask, ~expected):
            raise CheckFailed(
                f"{call}: your mask is True at the padding. In this course True means a key may be attended "
                "to: True at the real positions j < length."
            )
        one_more = real_positions(lengths + 1, max_len=expected.shape[-1] + 1)[..., : expected.shape[-1]]
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
        mask = _expect_boolean(call_learner(causal_mask, n, call=call), "causal_mask", (n, n), call)
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
    k = seeded_randn(2, 2, 6, d_k, seed=seed + 1)  # (batch, heads, n_k=6, d_k)
    v = seeded_randn(2, 2, 6, 3, seed=seed + 2)  # (batch, heads, n_k, d_v)
    mask = seeded_randn(2, 1, 5, 6, seed=seed + 3) > 0  # (batch, 1, n_q, n_k), broadcast over heads
    mask[..., 0] = True  # first: every query sees some key
    _check_against_pytorch(masked_attention, q, k, v, mask, "a random mask")
    _check_large_masked_score(masked_attention, seed)
    mask[0, :, 1, :] = False  # query 1 of the first sequence sees nothing
    mask[1] = False  # the second sequence is empty, as for a sentence of length 0
    _check_against_pytorch(masked_attention, q, k, v, mask, "rows with no visible key")
    _check_gradients_stay_finite(masked_attention, q, k, v, mask)
    _check_unmasked(masked_attention, q, k, v)
    _check_causality(masked_attention, seed)
    passed(
        "masked_attention", "masked pairs get zero weight whatever their scores, empty rows give zeros, no nan, causal"
    )


def _check_against_pytorch(masked_attention: Callable, q, k, v, mask, what: str) -> None:
    call = f"masked_attention(q, k, v, mask) with {what} (q {shape_of(q)}, k {shape_of(k)}, mask {shape_of(mask)})"
    outputs, weights = expect_pair(_call_with_broadcast_mask(masked_attention, q, k, v, mask, call), call)
    expect_tensor(weights, "the weights", (*q.shape[:-1], k.shape[-2]), q.dtype)
    expect_tensor(outputs, "the outputs", (*q.shape[:-1], v.shape[-1]), q.dtype)
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
            f"{call}: nan in the results, for the queries with no visible key. Their scores are all -inf, and "
            "softmax of all -inf is 0/0 = nan. Fill masked scores with torch.finfo(scores.dtype).min instead, "
            "and set the weights of masked pairs to 0 after the softmax: such a row gets zero weights and a "
            "zero output."
        )
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., n_q, n_k), correctly scaled
    expect_masked_weights(weights, mask, call, scores=scores)
    all_zero = ~sees_nothing & (weights == 0).all(dim=-1)  # (..., n_q)
    if all_zero.any():
        *batch, query = all_zero.nonzero()[0].tolist()
        raise CheckFailed(
            f"{call}: query {query}" + (f" of batch index {shape_of(batch)}" if batch else "") + " sees some key, "
            "yet all its weights are 0. Only a query with no visible key gets zero weights. If you replaced nan by "
            "0, look for the step that makes nan from finite numbers, such as 0 × (-inf) when a mask of 0s and 1s "
            "is multiplied by -inf; replace the masked scores with masked_fill or torch.where."
        )
    sums = weights.sum(dim=-1)[~sees_nothing]  # (queries that see some key,)
    if torch.allclose(sums, torch.full_like(sums, 1 / math.sqrt(d_k)), atol=1e-4):
        raise CheckFailed(
            f"{call}: each row of weights sums to 1/√d_k = {1 / math.sqrt(d_k):.3g}: you scaled after the softmax. "
            "Divide the scores by √d_k, before the softmax."
        )
    over_queries = weights.sum(dim=-2)[mask.expand_as(weights).any(dim=-2)]  # (keys some query sees,)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4) and torch.allclose(
        over_queries, torch.ones_like(over_queries), atol=1e-4
    ):
        raise CheckFailed(
            f"{call}: your weights sum to 1 over the queries axis (dim -2); each query's row must sum to 1 over "
            "the keys: softmax with dim=-1."
        )
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=mask, scale=None)
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


def _call_with_broadcast_mask(masked_attention: Callable, q, k, v, mask, call: str):
    """Call with a mask that broadcasts over some axes of the scores; if that crashes where the same mask expanded
    to the scores' full shape does not, say so: boolean indexing, scores[~mask] = ..., needs the full shape."""
    try:
        return call_learner(masked_attention, q, k, v, mask, call=call)
    except CheckFailed as failure:
        full_shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], mask.shape[:-2]), q.shape[-2], k.shape[-2])
        if failure.__cause__ is None or tuple(mask.shape) == full_shape:
            raise
        try:
            masked_attention(q.clone(), k.clone(), v.clone(), mask.expand(full_shape).clone())
        except Exception:
            raise failure from failure.__cause__
        indexing = isinstance(failure.__cause__, IndexError)
        raise CheckFailed(
            f"{str(failure).rstrip('.')}. It works with the mask expanded to the scores' full shape "
            f"{shape_of(full_shape)}, but a mask need only broadcast to it, as this one, {shape_of(mask)}, does. "
            + (
                "Boolean indexing (scores[~mask] = ...) needs a mask of exactly the indexed tensor's shape; "
                if indexing
                else ""
            )
            + "masked_fill and torch.where broadcast the mask for you."
        ) from failure.__cause__


def _diagnose_scale(q, k, v, mask, weights: torch.Tensor, call: str) -> None:
    """Name a wrong scale of the scores by the weights it gives, computed by PyTorch's attention."""
    d_k, n_k, d_v = q.shape[-1], k.shape[-2], v.shape[-1]
    wrong_scales = {
        1.0: "you did not scale the scores: divide q kᵀ by √d_k",
        1 / math.sqrt(d_v): "you divided the scores by √d_v; the scale is √d_k, the dimension of queries and keys",
        1 / d_k: "you divided the scores by d_k; divide by its square root, √d_k",
        1 / math.sqrt(n_k): "you divided the scores by √(number of keys); divide by √d_k, the key dimension",
    }
    for scale, mistake in wrong_scales.items():
        if torch.allclose(weights, pytorch_attention(q, k, v, mask=mask, scale=scale)[1], atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    scale = _scale_used(q, k, mask, weights)
    if scale is not None and torch.allclose(weights, pytorch_attention(q, k, v, mask=mask, scale=scale)[1], atol=1e-5):
        why = (
            " `d ** 1/2` is (d ** 1) / 2: write d ** 0.5 or math.sqrt(d)."
            if math.isclose(scale, 1 / (2 * d_k), rel_tol=1e-3)
            else " A number written in for one d_k fits no other: take d_k from q.shape[-1]."
        )
        raise CheckFailed(
            f"{call}: your scores are q kᵀ times {scale:.4g}; with d_k = {d_k} they must be divided by √d_k, "
            f"that is multiplied by {d_k**-0.5:.4g}.{why}"
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
    outputs, weights = expect_pair(call_learner(masked_attention, q, k, v, mask, call=call), call)
    expect_tensor(weights, "the weights", (2, 3, 4), q.dtype)
    expect_tensor(outputs, "the outputs", (2, 3, 3), q.dtype)
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


def _rounded(row: torch.Tensor) -> list[float]:
    return [round(value, 3) for value in row.tolist()]


def _check_gradients_stay_finite(masked_attention: Callable, q, k, v, mask) -> None:
    q, k, v = (tensor.detach().clone().requires_grad_() for tensor in (q, k, v))
    call = "masked_attention(q, k, v, mask) on inputs that require gradients"
    outputs, _ = expect_pair(call_learner(masked_attention, q, k, v, mask, call=call), call)
    expect_differentiable(outputs, call)
    outputs.sum().backward()
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
        result = call_learner(masked_attention, q, k, v, call=call)
    except CheckFailed as failure:
        if "NoneType" in str(failure.__cause__):
            raise CheckFailed(
                f"{failure}. With no mask given, mask is None, and None cannot be inverted or filled: mask the "
                "scores only if mask is not None."
            ) from failure.__cause__
        raise
    result = expect_pair(result, call)
    expected_outputs, expected_weights = pytorch_attention(q, k, v, mask=None, scale=None)
    expect_close(result[1], expected_weights, f"{call}: the weights")
    expect_close(result[0], expected_outputs, f"{call}: the outputs")


def _check_causality(masked_attention: Callable, seed: int) -> None:
    x = seeded_randn(1, 6, 4, seed=seed + 5)  # (batch, seq, d)
    changed = x.clone()
    changed[:, 3:] = seeded_randn(1, 3, 4, seed=seed + 6)  # new tokens from position 3 on
    causal = visible_to_causal_attention(n=6)
    before = call_learner(masked_attention, x, x, x, causal, call="masked_attention(x, x, x, causal mask)")[0]
    after = call_learner(masked_attention, changed, changed, changed, causal, call="masked_attention on new tokens")[0]
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
    mask = call_learner(decoder_mask, lengths, call=call)
    if n > 1 and isinstance(mask, torch.Tensor) and mask.shape == padding.shape and mask.dtype == torch.bool:
        raise CheckFailed(f"{call} returned only the padding mask, {shape_of(mask)}; combine it with causal_mask(n).")
    mask = _expect_boolean(mask, "decoder_mask", (len(lengths), n, n), call)
    if torch.equal(mask, causal.expand_as(mask)) and not padding.all():
        raise CheckFailed(f"{call}: the padded keys are visible; combine the causal mask with the padding mask.")
    if not torch.equal(padding | causal, expected) and torch.equal(mask, padding | causal):
        raise CheckFailed(f"{call}: a key must be real AND not in the future: combine with &, not |.")
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
