"""Checks for notebook 11, fast inference: the KV cache, cached decoding, and attention computed block by block.

Oracles: the notebook 10 model run on the whole sequence at once, without a cache (its blocks compute with
PyTorch's nn.TransformerEncoderLayer under a causal mask): every cached computation must give, position by
position, what that run gives; ``torch.cat`` of what was appended; the draws of ``torch.multinomial`` replayed with
the same seed on the probabilities of the uncached run (closed forms of temperature, top-k and top-p); and
``F.scaled_dot_product_attention`` (through ``pytorch_attention``), its outputs and its gradients, for blockwise
attention. That blockwise attention holds one block of scores at a time, never the n × n matrix nor the scores of
a query against every key, is a fact about the tensors it creates, seen by ``allocations_of`` (a TorchDispatchMode),
not a time.
"""

import contextlib
import inspect
import itertools
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from ..allocations import allocations_of
from ..reference.nb10_gpt import GPT, GPTBlock
from . import (
    CheckFailed,
    NotImplementedYet,
    NotRecorded,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_differentiable,
    expect_tensor,
    global_seed,
    learner_facing,
    learners_namespace,
    lender,
    matches,
    names_replaced,
    passed,
    perturbed,
    pytorch_attention,
    seeded_randn,
    shape_of,
)
from .recordings import oracle


class RecordingCache:
    """A KV cache that records what is appended to it, for the checks of the exercises that use a cache. It hands
    each append on to ``cache``, a correct one: so this class is no answer to exercise 1."""

    def __init__(self, cache, appended: list):
        self.cache = cache
        self.appended = appended  # (keys, values) of every call, as given
        self.uses: list[str] = []  # "len" and "append", in the order they were called

    def __len__(self) -> int:
        self.uses.append("len")
        return len(self.cache)

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.uses.append("append")
        self.appended.append((keys.detach().clone(), values.detach().clone()))
        return self.cache.append(keys, values)

    def length_read_only_after_append(self) -> bool:
        """Whether the calls recorded in ``uses`` read len() after an append and never before one."""
        return "append" in self.uses and "len" in self.uses and self.uses.index("len") > self.uses.index("append")


def _recording_cache(learners: Callable, appended: list) -> RecordingCache:
    """A recording cache around a correct empty one: the stand-in KVCache, or in a student release, which has no
    stand-ins, the learner's own KVCache from the notebook of ``learners`` (their function)."""
    from . import stand_ins  # None in a release; the package sets it after loading this module

    if stand_ins is not None:
        return RecordingCache(stand_ins.KVCache(), appended)
    own = getattr(inspect.unwrap(learners), "__globals__", {}).get("KVCache")
    if own is None:
        raise CheckFailed("This check uses your KVCache from exercise 1, and the notebook has none: run its cell.")
    return RecordingCache(own(), appended)


def _chunks(total: int, seed: int) -> list[tuple[int, int]]:
    """(start, end) of the calls that feed a sequence of ``total`` positions: a prompt of several positions, single
    positions, then several again (a cache must take any number of new positions); the prompt depends on the seed."""
    prompt = 3 + seed % 3
    ends = list(itertools.accumulate([prompt, 1, 1, 2, total - prompt - 4]))
    return list(zip([0, *ends[:-1]], ends, strict=True))


# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_kvcache(KVCache: type, seed: int = 0) -> None:
    """Check appends of several sizes against torch.cat of everything appended, len(), and that two caches are
    independent."""
    batch, heads, d_head, total = 2, 3, 4, 9 + seed
    keys = seeded_randn(batch, heads, total, d_head, seed=seed)  # (batch, heads, total, d_head)
    values = seeded_randn(batch, heads, total, d_head, seed=seed + 100)
    cache = call_learner(KVCache, call="KVCache()")
    other = call_learner(KVCache, call="KVCache()")
    counting = "count the positions along the sequence axis, dim 2 of (batch, heads, seq, d_head)."
    _expect_length(cache, 0, "an empty cache", counting)
    for start, end in _chunks(total, seed):
        call = (
            f"cache.append(keys, values) with {end - start} new position{'s' if end - start > 1 else ''} after {start}"
        )
        result = _appended(cache, keys[:, :, start:end], values[:, :, start:end], call)
        _expect_all_cached(result, keys[:, :, :end], values[:, :, :end], start, call)
        only_newest = (
            f"that is how many the last append brought, not all {end} appended so far: the cache counts or keeps "
            "only the newest positions. Keep the joined keys and values, the earlier positions and the new ones, so "
            "that len() counts them all and the next append joins to them."
        )
        _expect_length(
            cache,
            end,
            f"the cache after appending {end} positions",
            counting,
            (end - start, only_newest) if start else None,
        )
    _expect_length(
        other,
        0,
        "a second KVCache() after the first one was filled",
        "the second cache holds the first one's positions, so both hold one and the same list or tensor. Create "
        "the keys and values anew for each cache, in __init__ (self.keys = ...): an attribute set in the class "
        "body, or a default argument such as def __init__(self, keys=[]), is created once, when Python reads "
        "the class, and shared by every cache made from it.",
    )
    passed("KVCache", "returns every cached key and value, in order, and counts the positions")


def _appended(cache, keys: torch.Tensor, values: torch.Tensor, call: str):
    try:
        return call_learner(cache.append, keys, values, call=call)
    except CheckFailed as failure:
        if isinstance(failure.__cause__, RuntimeError):  # PyTorch refused the shapes it was given
            raise CheckFailed(
                f"{failure}\nThe keys and values are (batch, heads, seq, d_head): the cache grows along dim 2, the "
                "positions; the other axes stay as they are."
            ) from failure.__cause__
        raise


def _expect_length(cache, expected: int, what: str, hint: str, telling: tuple[int, str] | None = None) -> None:
    """Fail unless len(cache) is ``expected``; ``telling`` is (a wrong length, what it says) where one says more."""
    try:
        length = call_learner(len, cache, call="len(cache)")
    except CheckFailed as failure:
        if expected == 0 and failure.__cause__ is not None and not isinstance(failure, NotImplementedYet):
            raise CheckFailed(
                f"{failure}\nThat was len() of {what}, which must be 0, before anything is appended: what "
                "__init__ sets up has no positions to count yet (torch.tensor([]) has the shape (0,), with no dim 2; "
                "None has no shape at all), so return 0 while the cache holds nothing."
            ) from failure.__cause__
        raise
    if length != expected:
        if telling is not None and length == telling[0]:
            hint = telling[1]
        raise CheckFailed(f"len() of {what} is {length}, expected {expected}: {hint}")


def _expect_all_cached(result, keys: torch.Tensor, values: torch.Tensor, start: int, call: str) -> None:
    """keys, values: (batch, heads, end, d_head), everything appended so far; the last call appended start:end."""
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed(f"{call} must return a pair (all keys, all values); got {type(result).__name__}.")
    got_keys, got_values = result
    new_keys, earlier_keys = keys[:, :, start:], keys[:, :, :start]
    if matches(got_keys, values) and matches(got_values, keys):
        raise CheckFailed(f"{call} returned the values first: return (keys, values), in that order.")
    if matches(got_keys, new_keys) and start > 0:
        raise CheckFailed(
            f"{call} returned only the new keys: return every cached position, the earlier ones first, then the "
            "new ones, since the new queries attend to all of them."
        )
    if start > 0 and matches(got_keys, torch.cat([new_keys, earlier_keys], dim=2)):
        raise CheckFailed(
            f"{call} put the new keys in front of the cached ones: the positions must stay in the order they came, "
            f"the {start} cached ones first and the new ones after them, since key j is the key of position j."
        )
    if (
        isinstance(got_values, torch.Tensor)
        and got_values.shape == values.shape
        and matches(got_values[:, :, start:], new_keys)
    ):
        raise CheckFailed(
            f"{call}: the values returned for the new positions are their keys: store and return the values "
            "given to append, next to the keys, not a second copy of the keys."
        )
    for name, got, expected in (("keys", got_keys, keys), ("values", got_values, values)):
        if isinstance(got, torch.Tensor) and got.ndim == 4 and got.shape[:2] == expected.shape[:2]:
            if got.shape[2] != expected.shape[2]:
                raise CheckFailed(
                    f"{call} returned {name} for {got.shape[2]} positions after {expected.shape[2]} were appended: "
                    "store each position once, in the order they came, along dim 2 (seq)."
                )
        expect_tensor(got, call, expected.shape, expected.dtype)
        expect_close(got, expected, f"{call}: the {name} (earlier positions first, then the new ones)")


# Exercise 2 ---------------------------------------------------------------------------------------------

D_MODEL, HEADS = 24, 4  # d_head = 6: dividing by d_head, √d_head and √d_model gives three different results


@learner_facing
def check_cached_block_forward(cached_block_forward, seed: int = 0) -> None:
    """Feed a sequence to a GPT block a few positions at a time through a cache, and compare each call with the
    block run on the whole sequence at once (PyTorch's encoder layer, causal)."""
    with global_seed(seed):
        block = perturbed(GPTBlock(D_MODEL, HEADS), seed)
    batch, total = 2, 10 + seed
    x = seeded_randn(batch, total, D_MODEL, seed=seed)  # (batch, total, d_model)
    with torch.no_grad():
        expected = block(x)  # (batch, total, d_model)
    appended = []
    with earlier_exercises_replaced(cached_block_forward, "KVCache"):
        cache = _recording_cache(cached_block_forward, appended)
        for start, end in _chunks(total, seed):
            call = f"cached_block_forward(block, x[:, {start}:{end}], cache) with {start} positions cached"
            cache.uses.clear()
            try:
                with torch.no_grad():
                    out = call_learner(cached_block_forward, block, x[:, start:end], cache, call=call)
            except CheckFailed as failure:
                if cache.length_read_only_after_append():
                    raise CheckFailed(f"{failure}\n{_length_after_append(call, end - start)}") from failure.__cause__
                raise
            length_late = cache.length_read_only_after_append()
            expect_tensor(out, call, (batch, end - start, D_MODEL), x.dtype)
            _expect_appended_once(block, x[:, start:end], appended, cache, end, call)
            if not matches(out, expected[:, start:end]):
                if length_late:
                    raise CheckFailed(_length_after_append(call, end - start))
                _diagnose_block(block, x, start, end, out, call)
                _expect_close_to_block(out, expected[:, start:end], start, call)
    passed("cached_block_forward", "gives what the block gives on the whole sequence, a few positions at a time")


def _expect_close_to_block(out: torch.Tensor, expected: torch.Tensor, start: int, call: str) -> None:
    """The last word on a block's result that no named mistake explains: where it differs, and where to look."""
    try:
        expect_close(out, expected, f"{call}, compared with the block run on the whole sequence")
    except CheckFailed as failure:
        if start == 0:
            where = (
                "It is wrong already with nothing cached, where the mask should be the usual causal one (query i "
                "sees keys 0 to i): check the mask, then go through the block's steps in order against notebook "
                "10's block: ln_1, the heads' queries, keys and values, attention (scores divided by √d_head, a "
                "softmax over the keys, the last axis), the output projection and the residual around attention; "
                "then ln_2, the MLP, and the residual around the MLP."
            )
        else:
            where = (
                "The first call, with nothing cached, gave the block's result, and this one does not: look at what "
                f"the cache changes. The new queries attend to every key that cache.append returns, and new position "
                f"i sees the keys 0 to {start} + i."
            )
        raise CheckFailed(f"{failure}\n{where}") from None


def _length_after_append(call: str, new: int) -> str:
    return (
        f"{call}: len(cache) was read after cache.append, when it already counts the {new} new positions as "
        "cached; the mask built from it then has the wrong size, or lets new positions see later ones. Read how many "
        "positions were cached before you append."
    )


def _expect_appended_once(block: nn.Module, x_new: torch.Tensor, appended: list, cache, end: int, call: str) -> None:
    if len(cache) != end:
        raise CheckFailed(
            f"{call}: afterwards the cache holds {len(cache)} positions, expected {end}: append the new positions' "
            "keys and values once, and only those."
        )
    with torch.no_grad():
        _, keys, values = block.attention.project_heads(block.ln_1(x_new))  # (batch, heads, new, d_head) each
    got_keys, got_values = appended[-1]
    if not (matches(got_keys, keys) and matches(got_values, values)):
        raise CheckFailed(
            f"{call} appended keys and values that are not those of the new positions: they are "
            "block.attention.project_heads(block.ln_1(x)), the keys second and the values third, computed from the "
            "normalised input as the block's attention does."
        )


def _attention_of_new(
    block: nn.Module,
    x: torch.Tensor,
    start: int,
    end: int,
    *,
    visible: torch.Tensor,
    scale: float | None = None,
    queries_normed: bool = True,
    projected: bool = True,
    residual: bool = True,
    mlp_norm: str = "ln_2",
    mlp_residual: str = "h",
    softmax_over_queries: bool = False,
) -> torch.Tensor:
    """What the block's new positions start:end give when they attend to the keys 0:end under ``visible``
    (new, end), a bool mask or a float one that F.scaled_dot_product_attention adds to the scores: the check's way to
    name a mistake, from PyTorch's attention. The variants: the scores scaled by ``scale`` (None: 1/√d_head), the
    queries projected from x without ln_1, the heads merged without the output projection, no residual around
    attention, the MLP's input normalised by ``mlp_norm`` ("ln_2", "ln_1" or "none"), the MLP's output added
    to ``mlp_residual``: "h" (what attention gave), "x" (the block's input) or "none", and the softmax taken over
    the queries' axis (a key hidden from every query gets no weight)."""
    queries, _, _ = block.attention.project_heads(block.ln_1(x[:, start:end]) if queries_normed else x[:, start:end])
    _, keys, values = block.attention.project_heads(block.ln_1(x[:, :end]))
    if softmax_over_queries:
        scores = queries @ keys.transpose(-2, -1) * (scale or queries.shape[-1] ** -0.5)  # (batch, heads, new, end)
        weights = scores.masked_fill(~visible, -math.inf).softmax(dim=-2).nan_to_num(0.0)
        mixed = weights @ values  # (batch, heads, new, d_head)
    else:
        mixed = F.scaled_dot_product_attention(
            queries, keys, values, attn_mask=visible, scale=scale
        )  # (batch, heads, new, d_head)
    if projected:
        attended = block.attention.project_output(mixed)  # (batch, new, d_model)
    else:
        attended = mixed.transpose(1, 2).flatten(2)  # the heads side by side, (batch, new, d_model)
    h = attended + (x[:, start:end] if residual else 0)
    norm = {"ln_2": block.ln_2, "ln_1": block.ln_1, "none": nn.Identity()}[mlp_norm]
    added_to = {"h": h, "x": x[:, start:end], "none": 0}[mlp_residual]
    return added_to + block.mlp(norm(h))


def _diagnose_block(block: nn.Module, x: torch.Tensor, start: int, end: int, out: torch.Tensor, call: str) -> None:
    new = end - start
    every_key = torch.ones(new, end, dtype=torch.bool)
    causal = every_key.tril(start)  # (new, end): new position i sees keys 0 to start + i
    masks = {
        f"every new position sees every key, the later new positions too, as without a causal mask: new position "
        f"i may see the cached positions and the new positions up to i, not the later new ones. If you built the "
        f"mask with torch.tril, its diagonal is too far right: tril(diagonal=d) lets new position i see keys 0 to "
        f"i + d, so d must be the number cached, here {start}; a diagonal of {end - 1} or more (such as cached + "
        f"new = {end}) keeps every key, as no mask does": every_key,
        "the new queries attend only to the new keys: attend to every cached position too (what cache.append "
        "returns)": torch.zeros(new, end, dtype=torch.bool).index_fill(1, torch.arange(start, end), True).tril(start),
        "the causal mask is aligned to the first key, as is_causal=True does: with a cache the new queries are the "
        "LAST positions, so new position i sees keys 0 to cached + i (the diagonal of the mask shifted right by the "
        "number cached)": every_key.tril(),
        "tril and triu are swapped: each new position sees itself and the keys after it, where it must see the "
        "keys before it and itself (keys 0 to cached + i, the lower triangle that torch.tril keeps)": every_key.triu(
            start
        ),
        "new position i does not see its own key: it sees keys 0 to cached + i, itself included, so the mask's "
        "diagonal is one place too far left (shifted by cached - 1, not by cached)": every_key.tril(start - 1),
        "the mask is inverted: each new position sees only the keys after it. A bool attn_mask of "
        "F.scaled_dot_product_attention is True where a query MAY attend (nn.MultiheadAttention's is the "
        "opposite), so build the mask of the keys each position sees, not of those it must not see": ~causal,
        "new position i also sees the key after its own, cached + i + 1: the mask's diagonal is one place too far "
        "right (shifted by cached + 1, not by cached)": every_key.tril(start + 1),
        "the mask holds the numbers 1 and 0, not True and False: F.scaled_dot_product_attention ADDS a float "
        "attn_mask to the scores, so a hidden key only loses 1 and stays visible. Give the mask dtype=torch.bool "
        "(True where a query may attend)": causal.float(),
    }
    with torch.no_grad():
        for mistake, visible in masks.items():
            if not (visible.dtype == causal.dtype and torch.equal(visible, causal)) and _matches_where_seen(
                out, _attention_of_new(block, x, start, end, visible=visible), visible
            ):
                raise CheckFailed(f"{call}: {mistake}.")
        d_head = D_MODEL // HEADS  # the block the check built
        parts = {
            f"the scores are divided by √d_model = √{x.shape[-1]}: each head compares queries and keys of d_head "
            f"= {d_head} features, so divide by √d_head (F.scaled_dot_product_attention does it for you)": {
                "scale": 1 / math.sqrt(x.shape[-1])
            },
            f"the scores are divided by d_head = {d_head}, not by its square root √d_head (F.scaled_dot_product_"
            "attention divides by √d_head for you)": {"scale": 1 / d_head},
            "the scores are not divided by √d_head (F.scaled_dot_product_attention does it for you)": {"scale": 1.0},
            "the softmax runs over the queries (dim=-2), so each key's weights sum to 1 across the new positions: "
            "each query's weights must sum to 1 over the keys it sees, so take the softmax over the last axis, the "
            "keys (dim=-1)": {"softmax_over_queries": True},
            "the attention's output replaces x instead of being added to it: the block keeps the residual, "
            "x + attention(ln_1(x)), before the MLP": {"residual": False},
            "the MLP gets x without its layer norm: the block computes x + mlp(ln_2(x))": {"mlp_norm": "none"},
            "the MLP's input goes through ln_1: each sublayer has its own norm, ln_2 before the MLP": {
                "mlp_norm": "ln_1"
            },
            "the queries are projected from x without ln_1: the queries come from the normalised input, as the keys "
            "and values do (block.attention.project_heads(block.ln_1(x)) gives all three)": {"queries_normed": False},
            "the heads' outputs are put side by side without the output projection: block.attention.project_output "
            "merges the heads and applies the attention's output layer": {"projected": False},
            "the MLP's output is added to the block's input x, not to what the attention step gave: the second "
            "residual starts from x + attention(ln_1(x)), the same tensor that goes through ln_2 into the MLP": {
                "mlp_residual": "x"
            },
            "the MLP's output replaces its input instead of being added to it: the block keeps the second residual "
            "too, adding mlp(ln_2(h)) to h, what the attention step gave": {"mlp_residual": "none"},
        }
        for mistake, variant in parts.items():
            if matches(out, _attention_of_new(block, x, start, end, visible=causal, **variant)):
                raise CheckFailed(f"{call}: {mistake}.")


def _matches_where_seen(out: torch.Tensor, expected: torch.Tensor, visible: torch.Tensor) -> bool:
    """Whether ``out`` (batch, new, d_model) matches at the new positions that see at least one key under
    ``visible`` (new, keys): what a position that sees none gives depends on how the learner computed it (zeros
    or nan), not on the mask."""
    seen = visible.any(dim=-1)  # (new,)
    return bool(seen.any()) and matches(out[:, seen], expected[:, seen])


# Exercise 3 ---------------------------------------------------------------------------------------------

VOCAB, BLOCK_SIZE, LAYERS = 37, 24, 2


def checked_model(seed: int) -> nn.Module:
    """A small notebook 10 model, moved off its initial values: position embeddings as large as the token
    embeddings, so that a wrong position shows."""
    with global_seed(seed):
        model = GPT(VOCAB, BLOCK_SIZE, D_MODEL, HEADS, LAYERS)
    with torch.no_grad():
        model.token_embedding.weight.normal_(generator=torch.Generator().manual_seed(seed))
        model.position_embedding.weight.normal_(generator=torch.Generator().manual_seed(seed + 1))
    return perturbed(model, seed)


@learner_facing
def check_cached_logits(cached_logits, seed: int = 0) -> None:
    """Feed token ids a few at a time through caches, and compare each call's logits with the model's on the whole
    sequence at once."""
    model = checked_model(seed)
    batch, total = 2, 13 + seed
    ids = torch.randint(VOCAB, (batch, total), generator=torch.Generator().manual_seed(seed))  # (batch, total)
    with torch.no_grad():
        expected = model(ids)  # (batch, total, vocab)
    embedded = _Embedded(model)
    with earlier_exercises_replaced(cached_logits, "KVCache", "cached_block_forward"), embedded.watching():
        caches = [_recording_cache(cached_logits, []) for _ in model.blocks]
        for start, end in _chunks(total, seed):
            call = f"cached_logits(model, ids[:, {start}:{end}], caches) with {start} positions cached"
            embedded.clear()
            try:
                with torch.no_grad():
                    logits = call_learner(cached_logits, model, ids[:, start:end], caches, call=call)
            except CheckFailed as failure:
                if failure.__cause__ is not None:  # the learner's code raised
                    _diagnose_crash(embedded, batch, start, end, failure)
                raise
            expect_tensor(logits, call, (batch, end - start, VOCAB), torch.float32)
            _expect_every_cache_grown(caches, end, call)
            if not matches(logits, expected[:, start:end]):
                _diagnose_logits(model, ids[:, start:end], logits, start, call)
                expect_close(logits, expected[:, start:end], f"{call}, compared with the model on the whole sequence")
    passed("cached_logits", "gives the model's logits, a few positions at a time, with positions counted on")


class _Embedded:
    """What a model's token and position embeddings were given during a call, if it called them (a learner may read
    the position table's rows instead of calling it)."""

    def __init__(self, model: nn.Module):
        self.model, self.tokens, self.positions = model, [], []

    def clear(self) -> None:
        self.tokens.clear()
        self.positions.clear()

    @contextlib.contextmanager
    def watching(self):
        hooks = [
            self.model.token_embedding.register_forward_pre_hook(lambda _, args: self.tokens.append(args[0])),
            self.model.position_embedding.register_forward_pre_hook(lambda _, args: self.positions.append(args[0])),
        ]
        try:
            yield self
        finally:
            for hook in hooks:
                hook.remove()


def _diagnose_crash(embedded: _Embedded, batch: int, start: int, end: int, failure: CheckFailed) -> None:
    """Name a crash of cached_logits from what reached the model's embeddings before it."""
    new = end - start
    for positions in embedded.positions:
        if isinstance(positions, torch.Tensor) and positions.ndim > 1 and positions.shape[-1] != new:
            raise CheckFailed(
                f"{failure}\nThe position embedding was given positions of shape {shape_of(positions)}, so it "
                f"returned embeddings of shape {shape_of((*positions.shape, D_MODEL))}, which do not line up with the "
                f"token embeddings, (batch, new, d_model): give it a 1-D tensor of the {new} new positions, shape "
                f"({new},), here {_positions(start, end)}; it then broadcasts over the batch."
            ) from failure.__cause__
        if isinstance(positions, torch.Tensor) and positions.ndim == 1 and positions.shape[0] != new:
            of_batch = f" ({batch}, the number of sentences, ids.shape[0])" if positions.shape[0] == batch else ""
            raise CheckFailed(
                f"{failure}\nThe position embedding was given {positions.shape[0]} positions{of_batch} for {new} new "
                "tokens: ids is (batch, new), so the new tokens run along dim 1, and each needs its own position, "
                f"here {_positions(start, end)}."
            ) from failure.__cause__
    if start > 0 and not embedded.tokens and not embedded.positions:
        raise CheckFailed(
            f"{failure}\nThe call with empty caches worked; this one, with {start} positions cached and {new} new "
            f"token{'s' if new > 1 else ''}, crashed before it used the model's embeddings: look at what comes before "
            "them, the new tokens' positions, which run from the number cached to cached + new - 1 (here "
            f"{_positions(start, end)}). torch.arange(start, end) stops before end, and PyTorch's 'upper bound and "
            "lower bound inconsistent with step sign' means an end below the start."
        ) from failure.__cause__


def _positions(start: int, end: int) -> str:
    return f"position {start}" if end - start == 1 else f"positions {start} to {end - 1}"


def _expect_every_cache_grown(caches: list, end: int, call: str) -> None:
    lengths = [len(cache) for cache in caches]
    if lengths != [end] * len(caches):
        raise CheckFailed(
            f"{call}: afterwards the caches hold {lengths} positions, expected {end} in each: every block reads and "
            "appends to its own cache (the first block caches[0], the second caches[1], ...)."
        )


def _diagnose_logits(model: nn.Module, new_ids: torch.Tensor, logits: torch.Tensor, start: int, call: str) -> None:
    if start > 0:
        raise CheckFailed(
            f"{call}: the first call, with empty caches, gave the right logits; this one did not. The new tokens "
            f"sit at positions {start}, {start + 1}, ...: count on from the positions already cached "
            "(len(caches[0])), and give each new token the position embedding of where it sits, once."
        )
    new = new_ids.shape[1]
    table = model.position_embedding.weight  # (block_size, d_model)
    mistakes = {
        "the new tokens get the position embeddings of 1, 2, ..., one place too far: the first token of the text "
        "sits at position 0, so with nothing cached the positions are 0 to new - 1": table[1 : new + 1],
        "every new token gets the same position embedding, that of position len(caches[0]): each token needs its "
        "own, new tokens at positions cached, cached + 1, ..., cached + new - 1": table[0].expand(new, -1),
        "no position embedding is added: the model adds the embedding of each token's position to its token "
        "embedding": torch.zeros_like(table[:new]),
        f"the new tokens get the position embeddings of {LAYERS}, {LAYERS + 1}, ..., where with nothing cached they "
        f"sit at 0, 1, ...: {LAYERS} is len(caches), the number of blocks (one cache each), not the number of "
        "positions cached; each cache counts those, len(caches[0])": table[LAYERS : LAYERS + new],
    }
    with torch.no_grad():
        for mistake, positions in mistakes.items():
            if matches(logits, _logits_with_positions(model, new_ids, positions)):
                raise CheckFailed(f"{call}: {mistake}.")
    raise CheckFailed(
        f"{call}: the logits differ from the model's already with empty caches: the token embedding plus the "
        "position embedding of positions 0, 1, ... (added once), every block in order with its own cache, then the "
        "final norm model.ln_f and the output layer model.lm_head."
    )


def _logits_with_positions(model: nn.Module, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The model's logits for ``ids`` (batch, seq) run whole, with ``positions`` (seq, d_model) added to the token
    embeddings in place of the position embeddings of 0, 1, ...: the blocks are the reference ones (causal)."""
    x = model.token_embedding(ids) + positions  # (batch, seq, d_model)
    for block in model.blocks:
        x = block(x)
    return model.lm_head(model.ln_f(x))  # (batch, seq, vocab)


# Exercise 4 ---------------------------------------------------------------------------------------------


@learner_facing
def check_generate_cached(generate_cached, seed: int = 0) -> None:
    """Greedy decoding and sampling with a cache: the same tokens as the model run on the whole sequence gives
    (argmax, or the same torch.multinomial draws from the same generator), logits that agree at every step, and
    only the newest token given to the model after the prompt."""
    from . import stand_ins  # None in a release; the package sets it after loading this module

    model = checked_model(seed)
    prompt = torch.randint(VOCAB, (2, 4 + seed), generator=torch.Generator().manual_seed(seed + 7))
    names = ("KVCache", "cached_block_forward", "cached_logits")
    if stand_ins is not None:  # the notebook imports the reference's: a release names it in no note on own versions
        names += ("next_token_probabilities",)
    # Top-k and top-p together: the check's calls cross between processes while graded, and a fourth run of the
    # generation would take a busy machine past the cell's time limit.
    options_tried = ({"temperature": 0}, {"temperature": 0.8}, {"temperature": 1.0, "top_k": 5, "top_p": 0.8})
    with earlier_exercises_replaced(generate_cached, *names), torch.random.fork_rng():
        with _parts_watched(generate_cached) as parts:
            for options in options_tried:
                parts.clear()
                try:
                    _check_decoding(generate_cached, model, prompt, 12, seed, parts, **options)
                except CheckFailed as failure:
                    _expect_a_cache_per_block(parts.made, len(model.blocks), failure)
                    raise
    passed("generate_cached", "writes the uncached model's tokens, giving the model one new token per step")


class _Parts:
    """What the learner's generate_cached did with the parts it calls by name, during one generation."""

    def __init__(self):
        self.made = []  # the caches made
        self.drawn = []  # the temperature, top_k and top_p given to each call of next_token_probabilities
        self.ids_given = []  # the shape of the ids given to each call of cached_logits

    def clear(self) -> None:
        self.made.clear()
        self.drawn.clear()
        self.ids_given.clear()


@contextlib.contextmanager
def _parts_watched(generate_cached):
    """Watch the parts the learner's generate_cached calls by name: KVCache, cached_logits and
    next_token_probabilities in its namespace (or lent to it while graded) stand for functions that do what they did
    and record what they were given. Yields the _Parts record."""
    from . import stand_ins  # None in a release; the package sets it after loading this module

    parts = _Parts()
    own = learners_namespace(generate_cached) or {}
    names = ("KVCache", "cached_logits", "next_token_probabilities")
    used = {name: getattr(stand_ins, name) if stand_ins is not None else own.get(name) for name in names}

    def KVCache(*args, **kwargs):
        cache = used["KVCache"](*args, **kwargs)
        parts.made.append(cache)
        return cache

    def cached_logits(*args, **kwargs):
        ids = args[1] if len(args) > 1 else kwargs.get("ids")
        parts.ids_given.append(tuple(ids.shape) if isinstance(ids, torch.Tensor) else None)
        return used["cached_logits"](*args, **kwargs)

    def next_token_probabilities(*args, **kwargs):
        with contextlib.suppress(TypeError):  # arguments that do not fit: the call below says so
            bound = inspect.signature(used["next_token_probabilities"]).bind(*args, **kwargs)
            bound.apply_defaults()
            parts.drawn.append({name: bound.arguments.get(name) for name in ("temperature", "top_k", "top_p")})
        return used["next_token_probabilities"](*args, **kwargs)

    watching = {
        "KVCache": KVCache,
        "cached_logits": cached_logits,
        "next_token_probabilities": next_token_probabilities,
    }
    lent = {name: watching[name] for name in names if used[name] is not None}
    lend = lender(generate_cached)
    if lend is not None and lent:
        with lend(lent):
            yield parts
    elif learners_namespace(generate_cached) is not None and lent:
        with names_replaced(own, lent):
            yield parts
    else:
        yield parts


def _expect_a_cache_per_block(made: list, blocks: int, failure: CheckFailed) -> None:
    """Name the failure of a generation that made fewer caches than the model has blocks, or new ones during the
    generation."""
    if 0 < len(made) < blocks:
        raise CheckFailed(
            f"{failure}\nIt made {len(made)} KVCache for the model's {blocks} blocks, so the blocks share a cache: "
            "each appends its keys and values to it, and it counts every position once per block. [KVCache()] * n "
            "repeats one and the same cache n times; make a new KVCache for each block."
        ) from failure.__cause__
    if len(made) > blocks:
        raise CheckFailed(
            f"{failure}\nIt made {len(made)} KVCaches for the model's {blocks} blocks: new, empty caches during the "
            "generation (one set per step, if made inside the loop), so the model forgets every position before "
            "the one it is given. Make the caches once, before the loop, and keep them for the whole generation."
        ) from failure.__cause__


class _Watched:
    """What a model was given and gave during a call: the ids its token embedding saw, the logits it output."""

    def __init__(self, model: nn.Module):
        self.model, self.inputs, self.logits = model, [], []

    @contextlib.contextmanager
    def watching(self):
        seen = self.model.token_embedding.register_forward_hook(lambda _, args, out: self.inputs.append(args[0]))
        scored = self.model.lm_head.register_forward_hook(lambda _, args, out: self.logits.append(out))
        try:
            yield self
        finally:
            seen.remove()
            scored.remove()


def _check_decoding(generate_cached, model, prompt, new_tokens: int, seed: int, parts: _Parts, **options) -> None:
    """``parts`` records what the generation gave the parts it calls by name (see _parts_watched)."""
    described = ", ".join(f"{name}={value}" for name, value in options.items())
    call = f"generate_cached(model, prompt_ids, {new_tokens}, {described})"
    sampling = options["temperature"] != 0
    generator = torch.Generator().manual_seed(seed + 11) if sampling else None
    watched = _Watched(model)
    with watched.watching():
        try:
            ids = call_learner(generate_cached, model, prompt, new_tokens, generator=generator, call=call, **options)
        except CheckFailed as failure:
            if failure.__cause__ is None or isinstance(failure, NotImplementedYet):
                raise
            # What the model and the draws were given before the crash often says why: name that rather than
            # PyTorch's error.
            _expect_options_passed_on(parts.drawn, options, call, failure)
            # cached_logits given the newest token without its axis crashes before the model sees it: the shapes
            # it was given say so, or, where the learner's code does not call it by that name, a shape error.
            without_axis = next((shape for shape in parts.ids_given if shape is not None and len(shape) != 2), None)
            if without_axis is not None:
                raise CheckFailed(
                    f"{call}: cached_logits was given ids of shape {shape_of(without_axis)}; it takes (batch, tokens), "
                    f"here (batch, 1) for the newest token. {_KEEP_THE_AXIS}\n({failure})"
                ) from failure.__cause__
            shape_error = isinstance(failure.__cause__, IndexError | RuntimeError | ValueError)
            try:
                _expect_one_token_per_step(
                    watched.inputs, prompt.shape[1], call, finished=False, guess=shape_error and not parts.ids_given
                )
            except CheckFailed as named:
                raise CheckFailed(f"{named}\n({failure})") from failure.__cause__
            raise
    _expect_length_of_generation(ids, prompt, new_tokens, call)
    expect_tensor(ids, call, (prompt.shape[0], prompt.shape[1] + new_tokens), prompt.dtype)
    if not torch.equal(ids[:, : prompt.shape[1]], prompt):
        raise CheckFailed(f"{call} must return the prompt first, then the new tokens.")
    _expect_one_token_per_step(watched.inputs, prompt.shape[1], call)
    if any(logits.requires_grad for logits in watched.logits):
        raise CheckFailed(
            f"{call}: the model ran with autograd recording, which keeps every step's activations for a backward "
            "pass that never comes: generate inside torch.no_grad()."
        )
    with torch.no_grad():
        expected_logits = model(ids)[:, prompt.shape[1] - 1 : -1]  # (batch, new_tokens, vocab): each step's
    _expect_logits_at_every_step(watched.logits, expected_logits, call)
    replay = torch.Generator().manual_seed(seed + 11) if sampling else None
    for step in range(new_tokens):
        expected = _draw(expected_logits[:, step], replay, **options)  # (batch,)
        got = ids[:, prompt.shape[1] + step]
        if not torch.equal(got, expected):
            _diagnose_draws(ids[:, prompt.shape[1] :], expected_logits, seed, options, call)
            how = (
                "draw each token with torch.multinomial(probabilities, 1, generator=generator), one draw per step"
                if sampling
                else "temperature 0 takes the most probable token"
            )
            raise CheckFailed(
                f"{call}: new token {step} is {got.tolist()} where the uncached model gives {expected.tolist()}: "
                f"{how}, from next_token_probabilities of the logits at the last position."
            )


_KEEP_THE_AXIS = (
    "Keep the axis of the tokens when you pick the newest one: indexing with [:, -1] drops the axis where slicing "
    "with [:, -1:] keeps it; torch.multinomial(..., 1) already returns (batch, 1)."
)


def _expect_options_passed_on(drawn: list, options: dict, call: str, failure: CheckFailed) -> None:
    """Name a crash that follows a call of next_token_probabilities given other options than generate_cached was
    given (top_k and top_p swapped, by position)."""
    given = {"top_k": None, "top_p": None, **options}
    for arguments in drawn:
        wrong = [name for name, value in given.items() if arguments.get(name) != value]
        # Another option's value in its place: the options were passed in another order (only then, since a call
        # with the temperature applied beforehand, or top-k done by hand, can differ and still be right).
        swapped = [
            name
            for name in wrong
            if arguments.get(name) is not None
            and any(
                arguments.get(name) == value for other, value in given.items() if other != name and value is not None
            )
        ]
        if swapped:
            got = ", ".join(f"{name}={arguments.get(name)}" for name in wrong)
            meant = ", ".join(f"{name}={given[name]}" for name in wrong)
            raise CheckFailed(
                f"{call}: next_token_probabilities was given {got}, where generate_cached was given {meant}. Pass "
                "temperature, top_k and top_p on in next_token_probabilities's order, (logits, temperature, top_k, "
                "top_p), or by name (top_k=top_k, top_p=top_p).\n"
                f"({failure})"
            ) from failure.__cause__


def _expect_length_of_generation(ids, prompt: torch.Tensor, new_tokens: int, call: str) -> None:
    """Name a result with too few or too many tokens: max_new_tokens read as the total length, one step too many or
    too few, the prompt left out."""
    prompt_length = prompt.shape[1]
    if not (isinstance(ids, torch.Tensor) and ids.ndim == 2) or ids.shape[1] == prompt_length + new_tokens:
        return
    length = ids.shape[1]
    starts_with_prompt = length >= prompt_length and torch.equal(ids[:, :prompt_length].to(prompt.dtype), prompt)
    steps = (
        "each step writes one token, the first one from the prompt's logits, so there are max_new_tokens steps in "
        "all, the prompt's included"
    )
    if not starts_with_prompt:
        why = "return the prompt first, then the new tokens, as notebook 10's generate does"
    elif length == new_tokens:
        why = f"max_new_tokens counts the new tokens only, not the prompt with them: write {new_tokens} after it"
    elif length == prompt_length + new_tokens + 1:
        why = f"that is one token more than asked: {steps}"
    elif length == prompt_length + new_tokens - 1:
        why = f"that is one token fewer than asked: {steps}"
    else:
        why = "write max_new_tokens new tokens after the prompt"
    raise CheckFailed(
        f"{call} returned {length} tokens per sentence, where the prompt of {prompt_length} tokens and "
        f"max_new_tokens = {new_tokens} new ones make {prompt_length + new_tokens}: {why}."
    )


def _expect_one_token_per_step(
    inputs: list, prompt_length: int, call: str, *, finished: bool = True, guess: bool = False
) -> None:
    """Fail unless the model was given the prompt, then one token per step, each as (batch, tokens); a call that
    crashed (not ``finished``) is judged on the calls it made, and, with ``guess`` (a shape error, where nothing
    else says what the newest token was given as), a crash right after the prompt is put down to the newest token's
    axis."""
    for step, ids in enumerate(inputs):
        if ids.ndim != 2:
            raise CheckFailed(
                f"{call}: at its call {step} the model was given ids of shape {shape_of(ids)}; the model takes "
                f"(batch, tokens), here (batch, 1) for the newest token. {_KEEP_THE_AXIS}"
            )
    lengths = [ids.shape[-1] for ids in inputs]
    if not finished and not lengths:
        return
    if not finished and lengths == [prompt_length]:
        if not guess:
            return
        raise CheckFailed(
            f"{call}: the model took the prompt, then the call crashed on the first new token before the model saw "
            "it. Look at what you pass on for the newest token: the model takes (batch, tokens), here (batch, 1). "
            f"{_KEEP_THE_AXIS}"
        )
    if not lengths or lengths[0] != prompt_length or any(length != 1 for length in lengths[1:]):
        raise CheckFailed(
            f"{call}: the model was given {lengths[:6]}{' ...' if len(lengths) > 6 else ''} tokens at its calls; "
            f"with a cache, give it the whole prompt once ({prompt_length} tokens) and then only the newest token at "
            "each step, through cached_logits with one cache per block."
        )


def _expect_logits_at_every_step(recorded: list, expected: torch.Tensor, call: str) -> None:
    last = torch.stack([logits[:, -1] for logits in recorded], dim=1)  # (batch, calls, vocab)
    steps = expected.shape[1]
    if last.shape[1] < steps:
        raise CheckFailed(f"{call} computed logits {last.shape[1]} times for {steps} new tokens; one per new token.")
    expect_close(last[:, :steps], expected, f"{call}: the logits at each step, against the model without a cache", 1e-4)


@oracle
def _next_token_distribution(
    logits: torch.Tensor, *, temperature: float, top_k: int | None, top_p: float | None
) -> torch.Tensor:
    """Notebook 10's distribution of the next token in closed form, (batch, vocab) from logits (batch, vocab): the
    logits divided by the temperature; top-k keeps the k largest; top-p keeps the smallest set of most probable tokens
    whose total reaches top_p (a token stays while the tokens more probable than it hold less than top_p)."""
    scores = logits / temperature  # (batch, vocab)
    if top_k is not None:
        scores = scores.masked_fill(scores < scores.topk(top_k, dim=-1).values[:, -1:], -math.inf)
    if top_p is not None:
        ordered, order = scores.softmax(dim=-1).sort(dim=-1, descending=True)  # (batch, vocab) each
        held_above = ordered.cumsum(dim=-1) - ordered  # what the more probable tokens hold
        dropped = torch.zeros_like(held_above, dtype=torch.bool).scatter(-1, order, held_above >= top_p)
        scores = scores.masked_fill(dropped, -math.inf)
    return scores.softmax(dim=-1)


def _draw(
    logits: torch.Tensor, generator, *, temperature: float, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """The token the uncached model gives: the argmax for temperature 0, otherwise the same torch.multinomial draw
    from the closed form of temperature, top-k and top-p."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    probabilities = _next_token_distribution(logits, temperature=temperature, top_k=top_k, top_p=top_p)
    return torch.multinomial(probabilities, 1, generator=generator)[:, 0]  # (batch,)


def _diagnose_draws(drawn: torch.Tensor, logits: torch.Tensor, seed: int, options: dict, call: str) -> None:
    """Name draws (batch, steps) that are, every one of them, what sampling with one of the options left out (or
    the temperature left at 1) gives from the same generator, on the logits (batch, steps, vocab) of every step."""
    if options["temperature"] == 0:
        return
    filters = {name: value for name, value in options.items() if name in ("top_k", "top_p")}
    variants = {f"without {name}={value}": {**options, name: None} for name, value in filters.items()}
    if len(filters) > 1:
        variants[f"without {' and '.join(f'{name}={value}' for name, value in filters.items())}"] = {
            **options,
            **dict.fromkeys(filters),
        }
    if options["temperature"] != 1.0:
        variants[f"at temperature 1, not {options['temperature']}"] = {**options, "temperature": 1.0}
    matched = []  # several can: where the filters left out keep the tokens drawn anyway, they draw alike
    for drawn_how, variant in variants.items():
        replay = torch.Generator().manual_seed(seed + 11)
        try:
            replayed = torch.stack([_draw(logits[:, step], replay, **variant) for step in range(drawn.shape[1])], 1)
        except NotRecorded:  # a student release holds no result for this case: nothing more to say
            return
        if torch.equal(replayed, drawn):
            matched.append(drawn_how)
    if matched:
        raise CheckFailed(
            f"{call}: every token is the one drawn {', and also the one drawn '.join(matched)}, from the same "
            "generator: pass temperature, top_k and top_p on to next_token_probabilities, all three, at every step."
        )


# Exercise 5 ---------------------------------------------------------------------------------------------


def _attention_inputs(seed: int, n_q: int, n_k: int, d: int = 8) -> tuple[torch.Tensor, ...]:
    """q (2, 3, n_q, d), k (2, 3, n_k, d), v (2, 3, n_k, d + 2) from a private generator, scaled so that the scores
    spread and the running maximum changes from block to block."""
    return (
        2 * seeded_randn(2, 3, n_q, d, seed=seed),
        2 * seeded_randn(2, 3, n_k, d, seed=seed + 1),
        seeded_randn(2, 3, n_k, d + 2, seed=seed + 2),
    )


def _check_large_scores(blockwise_attention, seed: int, block: int) -> None:
    """Scores far beyond exp()'s float32 range: every score of query 0 is below -140 (exp gives 0 for all of them
    unless the running maximum, which starts at -inf, is subtracted), every score of query 1 above 140 (exp gives
    inf unless it is subtracted), and the other queries' scores spread over about ±200."""
    n = 3 * block + 2
    q, k, v = _attention_inputs(seed + 7, 6, n)
    k[..., 0] = 2 + k[..., 0].abs()  # every key points along the first axis
    q = 40 * q  # (2, 3, 6, 8): scores of about ±200
    q[..., :2, :] = 0.0
    q[..., 0, 0], q[..., 1, 0] = -200.0, 200.0  # scores ≤ -200 · 2 / √8 and ≥ 200 · 2 / √8
    call = f"blockwise_attention(q, k, v, ..., block_size={block}) with scores beyond ±140"
    out = _run(blockwise_attention, q, k, v, block, mask=None, is_causal=False, call=call)
    if not matches(out, _oracle(q, k, v, mask=None, is_causal=False)):
        raise CheckFailed(
            f"{call} is wrong: exp() of a score above 88 is inf in float32, and of scores all below -104 is 0 for "
            "every key, so a query's weights come out nan or 0. Subtract the running maximum before exp(), starting "
            "it at -inf (not at 0, which leaves all-negative scores unshifted), and rescale what was summed so far "
            "when it grows."
        )


def _masks(seed: int, n_q: int, n_k: int) -> dict[str, torch.Tensor]:
    """A padding mask (True at each sentence's real keys) and a full mask with one query that may see no key."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([n_k, n_k // 2 + seed])
    padding = (torch.arange(n_k) < lengths[:, None])[:, None, None]  # (batch, 1, 1, n_k)
    full = torch.rand(2, 1, n_q, n_k, generator=generator) < 0.6  # (batch, 1, n_q, n_k)
    full[1, 0, 2] = False  # a query with no visible key
    return {"a padding mask": padding, "a mask under which query 2 of sentence 1 sees no key": full}


@learner_facing
def check_blockwise_attention(blockwise_attention, seed: int = 0) -> None:
    """Compare with F.scaled_dot_product_attention: keys that fill whole blocks and keys that end in a partial
    block, causal and padding masks, a query with no visible key (zeros), the gradients; then prove that no tensor
    larger than one block of scores was created, nor any of the scores of a query against every key."""
    block = 8
    n_k = 4 * block + 3 + seed  # the last block is partial
    for n_q in (5, n_k):
        q, k, v = _attention_inputs(seed, n_q, n_k)
        _check_outputs(blockwise_attention, q, k, v, block, "no mask", mask=None, is_causal=False)
    q, k, v = _attention_inputs(seed + 3, n_k, n_k)
    _check_outputs(blockwise_attention, q, k, v, block, "is_causal=True", mask=None, is_causal=True)
    for what, mask in _masks(seed, n_k, n_k).items():
        _check_outputs(blockwise_attention, q, k, v, block, what, mask=mask, is_causal=False)
    _check_large_scores(blockwise_attention, seed, block)
    _check_gradients(blockwise_attention, seed, block)
    _check_no_square_matrix(blockwise_attention, seed)
    passed("blockwise_attention", "equals PyTorch's attention and its gradients, holding one block of scores at a time")


def _run(blockwise_attention, q, k, v, block: int, *, mask, is_causal: bool, call: str) -> torch.Tensor:
    out = call_learner(blockwise_attention, q, k, v, mask=mask, is_causal=is_causal, block_size=block, call=call)
    expect_tensor(out, call, (*q.shape[:-1], v.shape[-1]), q.dtype)
    return out


def _oracle(q, k, v, *, mask, is_causal: bool) -> torch.Tensor:
    if is_causal:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return pytorch_attention(q, k, v, mask=mask, scale=None)[0]


def _check_outputs(blockwise_attention, q, k, v, block: int, what: str, *, mask, is_causal: bool) -> None:
    call = (
        f"blockwise_attention(q, k, v, ..., block_size={block}) with {q.shape[-2]} queries, {k.shape[-2]} keys, {what}"
    )
    try:
        out = _run(blockwise_attention, q, k, v, block, mask=mask, is_causal=is_causal, call=call)
    except CheckFailed as failure:
        if failure.__cause__ is not None and not isinstance(failure, NotImplementedYet):  # the learner's code raised
            _diagnose_crash_of_blocks(blockwise_attention, q, k, v, block, failure, mask=mask, is_causal=is_causal)
        raise
    expected = _oracle(q, k, v, mask=mask, is_causal=is_causal)
    if matches(out, expected):
        return
    if out.isnan().any() and mask is None and not is_causal:
        everywhere = "at every query" if out.isnan().all() else "at some queries"
        raise CheckFailed(
            f"{call} gives nan {everywhere}, without any mask, so no key is hidden: a nan comes from inf - inf, "
            "0 × inf or inf / inf. At the first block the running maximum m is -inf, and the rescaling factor "
            "exp(m - m') must be 0 there (nothing was summed yet): look at its sign, exp(m - m'), not exp(m' - m), "
            "which is inf, and 0 × inf is nan; then at what you subtract before exp() and divide by at the end."
        )
    if out.isnan().any():
        raise CheckFailed(
            f"{call} gives nan, at queries whose first blocks of keys are all hidden or that see no key at all: "
            "exp(-inf - (-inf)) is nan. While a query's running maximum is still -inf, subtract 0 instead; a query "
            "with no visible key gets a zero output."
        )
    _diagnose_outputs(blockwise_attention, q, k, v, block, out, mask=mask, is_causal=is_causal, call=call)
    expect_close(out, expected, f"{call}, compared with F.scaled_dot_product_attention")


def _diagnose_crash_of_blocks(blockwise_attention, q, k, v, block: int, failure: CheckFailed, *, mask, is_causal: bool):
    """Name a crash from two more calls: one head's q, k and v as matrices, and every key in one block."""

    def right(*inputs, mask, block_size: int) -> bool:
        try:
            out = blockwise_attention(*inputs, mask=mask, is_causal=is_causal, block_size=block_size)
        except Exception:  # the learner's code raised again: this call tells nothing
            return False
        return matches(out, _oracle(*inputs, mask=mask, is_causal=is_causal))

    first_head = (0,) * (q.ndim - 2)
    head_mask = mask if mask is None or mask.ndim <= 2 else mask[(0,) * (mask.ndim - 2)]
    _diagnose_dropped_axis(blockwise_attention, q[first_head], k[first_head], v[first_head], block, failure)
    with contextlib.suppress(NotRecorded):  # a student release holds no result for these calls: nothing to add
        if is_causal:
            _diagnose_transposed_causal_mask(blockwise_attention, q, k, v, failure)
        if right(q[first_head], k[first_head], v[first_head], mask=head_mask, block_size=block):
            raise CheckFailed(
                f"{failure}\nThe same call on one head's q, k and v, as matrices (n, d), gives the right result: "
                "something in it works on 2-D tensors only. For (..., n, d) tensors transpose the last two axes "
                "(.transpose(-2, -1) or .mT): .T reverses every axis of a 4-D tensor, and .t() and torch.mm take "
                "2-D tensors only."
            ) from failure.__cause__
        if right(q, k, v, mask=mask, block_size=k.shape[-2]):
            about_the_mask = (
                " The mask broadcasts to (..., n_q, n_k), and only its last axis runs over the keys: a block of keys "
                "takes that axis's slice from the block's start to its end, and the other axes whole (even those of "
                "size 1)."
                if mask is not None
                else ""
            )
            raise CheckFailed(
                f"{failure}\nWith every key in one block (block_size={k.shape[-2]}) the call gives the right result; "
                f"with blocks of {block} it crashes: look at what is sliced per block.{about_the_mask}"
            ) from failure.__cause__


def _diagnose_dropped_axis(blockwise_attention, q, k, v, block: int, failure: CheckFailed) -> None:
    """Name a crash of a running sum that lost its last axis, from a call on one head's q (n_q, d_k), k (n_k, d_k)
    and values of one feature, v (n_k, 1): there a (n_q,) sum broadcasts against the (n_q, 1) running quantities
    instead of failing, and the result comes out (n_q, n_q), not (n_q, 1)."""
    n_q = q.shape[-2]
    try:
        out = blockwise_attention(q, k, v[..., :1], mask=None, is_causal=False, block_size=block)
    except Exception:  # the learner's code raised again: this call tells nothing
        return
    if isinstance(out, torch.Tensor) and n_q > 1 and tuple(out.shape) == (n_q, n_q):
        raise CheckFailed(
            f"{failure}\nA sum over a block's keys lost its key axis: weights.sum(dim=-1) is (..., n_q), and added "
            "to the running sum, (..., n_q, 1), it broadcasts to (..., n_q, n_q) or does not fit at all. Keep the "
            "axis (keepdim=True), so that the sum stays (..., n_q, 1), as the running maximum and the running sum are. "
            f"(Called with one head's q and k as matrices and values of one feature, (n_k, 1), it returned "
            f"{shape_of(out)}, where ({n_q}, 1) was expected.)"
        ) from failure.__cause__


def _diagnose_transposed_causal_mask(blockwise_attention, q, k, v, failure: CheckFailed) -> None:
    """Name a causal mask built (block, n_q), keys down the rows: it crashes on blocks narrower than n_q, and in one
    square block it lets each query see itself and the keys after it."""
    n = k.shape[-2]
    try:
        out = blockwise_attention(q, k, v, mask=None, is_causal=True, block_size=n)
    except Exception:  # the learner's code raised again: this call tells nothing
        return
    later_or_same = torch.arange(n) >= torch.arange(q.shape[-2])[:, None]  # (n_q, n_k): key position >= query's
    if _matches_at_seeing_queries(out, pytorch_attention(q, k, v, mask=later_or_same, scale=None)[0], later_or_same):
        raise CheckFailed(
            f"{failure}\nWith every key in one block (block_size={n}) the call runs, and each query sees itself "
            "and the keys after it: the causal mask is transposed, (block, n_q). It must be (n_q, block), as the "
            "block's scores are: the queries down the rows, the block's keys along the last axis."
        ) from failure.__cause__


def _diagnose_outputs(blockwise_attention, q, k, v, block: int, out, *, mask, is_causal: bool, call: str) -> None:
    n_k = k.shape[-2]
    whole = (n_k // block) * block
    if whole < n_k:
        cut = None if mask is None else mask[..., :whole]
        if matches(out, _oracle(q, k[..., :whole, :], v[..., :whole, :], mask=cut, is_causal=False)):
            raise CheckFailed(
                f"{call}: the last {n_k - whole} keys are left out: with {n_k} keys and blocks of {block}, the last "
                f"block holds only {n_k - whole} keys, and it counts too (range(0, n_k, block_size), and slices that "
                "stop at n_k)."
            )
    if is_causal:
        place_in_block = torch.arange(n_k) % block  # (n_k,)
        local = place_in_block <= torch.arange(q.shape[-2])[:, None]  # (n_q, n_k): as if each block began at key 0
        if matches(out, pytorch_attention(q, k, v, mask=local, scale=None)[0]):
            raise CheckFailed(
                f"{call}: the causal mask is wrong across blocks: it compares a query's position with the key's "
                "place inside its block. Query i may see key j when j <= i, where j counts from the first key of "
                "the whole sequence (the block's start plus the place inside the block)."
            )
    if mask is not None:
        blind = ~mask.any(dim=-1, keepdim=True)  # (..., n_q, 1): queries that see no key
        averaged = torch.where(blind, v.mean(dim=-2, keepdim=True), _oracle(q, k, v, mask=mask, is_causal=False))
        if blind.any() and matches(out, averaged):
            raise CheckFailed(
                f"{call}: a query that sees no key gets the mean of all the values, not zeros. A large negative "
                "number (such as -1e9) in place of the hidden scores makes that query's scores all equal, so its "
                "weights are all equal: fill hidden scores with -math.inf, and give a query with no visible key "
                "zeros at the end (section 7)."
            )
    one_block = call_learner(
        blockwise_attention, q, k, v, mask=mask, is_causal=is_causal, block_size=n_k, call=f"{call} (one block)"
    )
    if not matches(one_block, _oracle(q, k, v, mask=mask, is_causal=is_causal)):
        if is_causal or mask is not None:
            _diagnose_mask(q, k, v, one_block, mask=mask, is_causal=is_causal, call=call, block=n_k)
        d_k, d_v = q.shape[-1], v.shape[-1]
        scales = {
            f"√d_v = √{d_v}, the size of a value vector": 1 / math.sqrt(d_v),
            f"√n_k = √{n_k}, the square root of the number of keys (or of a block's keys)": 1 / math.sqrt(n_k),
            "nothing: the scores are not scaled at all": 1.0,
        }
        for divided_by, scale in scales.items():
            if matches(one_block, F.scaled_dot_product_attention(q, k, v, scale=scale)):
                raise CheckFailed(
                    f"{call}: the scores are divided by {divided_by}. Scaled dot-product attention divides q kᵀ "
                    f"by √d_k, where d_k = {d_k} is the size of a query or key vector (q.shape[-1])."
                )
        raise CheckFailed(
            f"{call}: the result is wrong even with every key in one block (block_size={n_k}): look at the scores "
            "first, q kᵀ divided by √d_k, where d_k is the size of a query or key vector (q.shape[-1]); then the "
            "exponentials, and the division by their sum at the end."
        )
    raise CheckFailed(
        f"{call}: with every key in one block (block_size={n_k}) the result is right, with blocks of {block} it is "
        "not: combine the blocks correctly. When a query's running maximum grows from m to m', multiply both its "
        "running sum and its running output by exp(m - m') before adding the new block's terms, and divide by "
        "the sum only at the end."
    )


def _diagnose_mask(q, k, v, out, *, mask, is_causal: bool, call: str, block: int) -> None:
    """Name a wrong mask from the result with every key in one block, once the checks without a mask have passed
    (they run first): what the usual mistakes give, compared at the queries that see some key under them."""
    if is_causal:
        key_at, query_at = torch.arange(k.shape[-2]), torch.arange(q.shape[-2])[:, None]  # positions
        before = key_at < query_at  # (n_q, n_k): the keys strictly before each query
        if _matches_at_seeing_queries(out, pytorch_attention(q, k, v, mask=before, scale=None)[0], before):
            raise CheckFailed(
                f"{call}: query i does not see key i, its own position: under the causal mask query i sees keys "
                "0..i, itself included, and only the keys after it are hidden (key position > query position)."
            )
        later = key_at > query_at  # (n_q, n_k): the keys after each query
        if _matches_at_seeing_queries(out, pytorch_attention(q, k, v, mask=later, scale=None)[0], later):
            raise CheckFailed(
                f"{call}: the causal mask is inverted: each query sees only the keys after it. Query i sees keys "
                "0..i; hide the scores of the keys after it."
            )
    if mask is not None and _matches_at_seeing_queries(
        out, pytorch_attention(q, k, v, mask=~mask, scale=None)[0], ~mask
    ):
        raise CheckFailed(
            f"{call}: the mask is inverted: the keys it marks True are hidden and the others seen. True means "
            "that a query may attend to that key (as for F.scaled_dot_product_attention's attn_mask, notebook 04): "
            "hide the scores where the mask is False."
        )
    raise CheckFailed(
        f"{call}: the result is wrong even with every key in one block (block_size={block}), though it is right "
        f"without a mask: look at how {'is_causal' if is_causal else 'the mask'} hides scores. "
        + (
            "Query i sees keys 0..i of the whole sequence, itself included; "
            if is_causal
            else "The mask is True where a query may attend, its last axis runs over the keys (slice it like them); "
        )
        + "a hidden score becomes -inf before exp(), so that it gets no weight."
    )


def _matches_at_seeing_queries(out: torch.Tensor, expected: torch.Tensor, visible: torch.Tensor) -> bool:
    """Whether ``out`` (..., n_q, d_v) matches at the queries that see at least one key under ``visible`` (bool,
    broadcastable to (..., n_q, n_k)): what a query that sees none gives depends on how it was computed."""
    seeing = visible.any(dim=-1, keepdim=True)  # (..., n_q, 1)
    if not (isinstance(out, torch.Tensor) and out.shape == expected.shape and seeing.any()):
        return False
    return matches(torch.where(seeing, out, 0.0), torch.where(seeing, expected, 0.0))


@oracle
def _attention_gradients(q, k, v, *, mask, upstream: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The gradients of (attention(q, k, v) * upstream).sum() with respect to q, k and v, by PyTorch's attention."""
    q, k, v = (tensor.detach().requires_grad_() for tensor in (q, k, v))
    return torch.autograd.grad((_oracle(q, k, v, mask=mask, is_causal=False) * upstream).sum(), (q, k, v))


def _check_gradients(blockwise_attention, seed: int, block: int) -> None:
    n = 3 * block + 5
    q, k, v = (tensor.requires_grad_() for tensor in _attention_inputs(seed + 5, n, n))
    mask = _masks(seed, n, n)["a mask under which query 2 of sentence 1 sees no key"]
    call = f"the gradients of blockwise_attention(q, k, v, mask, block_size={block}) with {n} queries and keys"
    out = _run(blockwise_attention, q, k, v, block, mask=mask, is_causal=False, call=call)
    expect_differentiable(out, call)
    weights = seeded_randn(*out.shape, seed=seed + 6)
    got = torch.autograd.grad((out * weights).sum(), (q, k, v), allow_unused=True)
    expected = _attention_gradients(q, k, v, mask=mask, upstream=weights)
    for name, mine, theirs in zip("qkv", got, expected, strict=True):
        if mine is None:
            raise CheckFailed(f"{call}: the output does not depend on {name} through autograd.")
        if not torch.isfinite(mine).all():
            raise CheckFailed(
                f"{call}: the gradient of {name} holds nan, though the outputs are right. A division by a zero sum "
                "(the query that sees no key) is nan even where torch.where then picks 0, and its gradient stays nan: "
                "divide by a sum that is never 0 (replace the zero sums by 1 before dividing)."
            )
        expect_close(mine, theirs, f"{call}: the gradient of {name}, against F.scaled_dot_product_attention's", 1e-4)


def _check_no_square_matrix(blockwise_attention, seed: int) -> None:
    n, block = 384, 32
    q, k, v = _attention_inputs(seed + 8, n, n, d=16)  # (2, 3, n, 16) each; v (2, 3, n, 18)
    call = f"blockwise_attention(q, k, v, is_causal=True, block_size={block}) with {n} queries and keys"
    with torch.no_grad():
        _, allocations = allocations_of(
            call_learner, blockwise_attention, q, k, v, is_causal=True, block_size=block, call=call
        )
    scores = 2 * 3 * n * block  # one block of scores for every query, (2, 3, n, block)
    most = max(scores, 2 * 3 * n * v.shape[-1], q.numel(), k.numel(), v.numel())  # or the output, or an input
    largest_input = max(q.numel(), k.numel(), v.numel())
    shapes = [tuple(shape) for shape in allocations.shapes]
    for shape in shapes:
        if shape[-2:] == (n, n):
            raise CheckFailed(
                f"{call} created a tensor of shape {shape_of(shape)}: that is at least the n × n = {n}×{n} matrix it "
                "must never build. Build the scores and the mask one block of keys at a time: (..., n_q, block_size)."
            )
    for shape in shapes:
        if len(shape) >= 2 and shape[-1] == n and shape[-2] > 1 and math.prod(shape) > largest_input:
            raise CheckFailed(
                f"{call} created a tensor of shape {shape_of(shape)}: scores of a block of queries against every key. "
                "Go through the keys in blocks of block_size, with the online softmax of section 7, so that no "
                "query's scores against all the keys exist at once."
            )
    too_large = [shape for shape in shapes if math.prod(shape) > most]
    if not too_large:
        return
    shape = max(too_large, key=math.prod)
    times = f"{math.prod(shape) / scores:.3g} times one block of scores, (..., {n}, {block})"
    if len(shape) >= 2 and shape[-2] == n and shape[-1] % block == 0:
        why = f"blocks of {shape[-1]} keys, where block_size={block}: use block_size for the blocks."
    elif math.prod(shape) == scores * q.shape[-1] and {n, block, q.shape[-1]} <= set(shape):
        why = (
            f"the product of every query with every key of a block, feature by feature ({n} × {block} × "
            f"{q.shape[-1]} per head), before they are summed: compute a block's scores with a matrix product (@ or "
            "torch.einsum), which adds up the products over the features without keeping them all."
        )
    else:
        why = "hold nothing larger than one block of scores, the output or an input at a time."
    raise CheckFailed(f"{call} created a tensor of shape {shape_of(shape)}, {times}: {why}")
