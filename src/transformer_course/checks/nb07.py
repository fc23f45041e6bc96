"""Checks for notebook 07, the decoder and the full encoder-decoder.

Oracles: ``nn.TransformerDecoderLayer``, ``nn.TransformerDecoder`` and ``nn.Transformer`` (dropout off) with the
learner's weights copied in (``nn.Transformer`` without the final norms it always adds, when the stacks are
post-LN); decoder causality as a property; the parameter count of ``nn.Transformer``. The model's oracles
(``_embedded``, ``_logits``) are ``@oracle``s, which a student release answers from recorded results: so the check
gives the model's weights values drawn by their names (``_set_weights``), the same for every correct model.

Source (6 words) and target (4 words) have different lengths and the batch has 2 sentences, so that a tensor
taken from the wrong side or axis shows in the shapes; the second target sentence ends with a padded word, so that
a causal mask made up in the learner's code, in place of the mask given, shows. embed, encode and decode are called
one by one too, as notebook 08 calls them. When a learner's code fails, the checks record what its
parts (attention, embeddings, encoder, decoder, a stack's layers) received, and in which order, to name the
mistake: queries from the memory, a normalised memory, cross-attention before self-attention, masks missing,
inverted or swapped, a table used for the other language, a length from the batch axis.
"""

import contextlib
import functools
import inspect
import itertools
import math
import zlib

import torch
from torch import nn

from ..reference.nb05_positional_encoding import sinusoidal_encoding
from ..reference.pytorch_layers import decoder_layer_parameters, encoder_layer_parameters, pytorch_mask
from . import (
    CheckFailed,
    built_with_seed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_tensor,
    learner_facing,
    passed,
    rows_sum_to,
    seeded_randn,
)
from .nb06 import (
    AFTER_EACH_LAYER,
    STEPS,
    attempt,
    built_and_perturbed,
    copy_layer,
    expect_own_norms,
    expect_separate_norms,
    expect_stack,
    inverted_mask,
    load_stack,
    mask_as_context,
    norm_weights,
    normalised_after_each_layer,
    normalised_output,
    pair_used_whole,
    received_by,
    residual_variants,
    stack_masks_mistake,
    step_variants,
    which_mask,
)
from .recordings import oracle

D_MODEL, HEADS, D_FF = 8, 2, 16
N_SRC, N_TGT = 6, 4
DECODER_SUBLAYERS = ("self-attention", "cross-attention", "feed-forward network")


def _layer_twin(
    layer: nn.Module, norm_first: bool, norms_used: dict[str, str] | None = None
) -> nn.TransformerDecoderLayer:
    twin = nn.TransformerDecoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    copy_layer(layer, twin, decoder_layer_parameters, norms_used)
    return twin.eval()


CAUSAL = torch.ones(N_TGT, N_TGT, dtype=torch.bool).tril()  # (n_tgt, n_tgt): the causal part of a target mask


def _inputs(seed: int):
    """The target x, the memory, the self-attention mask (causal, and the second sentence's last target word is
    padding, so that a causal mask made up in the learner's code shows) and which source words are real."""
    x = seeded_randn(2, N_TGT, D_MODEL, seed=seed)  # (batch, n_tgt, d_model)
    memory = seeded_randn(2, N_SRC, D_MODEL, seed=seed + 1)  # (batch, n_src, d_model)
    target_real = torch.tensor([[True] * N_TGT, [True] * (N_TGT - 1) + [False]])  # (batch, n_tgt)
    self_mask = CAUSAL & target_real[:, None, :]  # (batch, n_tgt, n_tgt)
    source_real = torch.tensor([[True] * N_SRC, [True] * 3 + [False] * (N_SRC - 3)])  # (batch, n_src)
    return x, memory, self_mask, source_real


def _twin_masks(self_mask: torch.Tensor | None, source_real: torch.Tensor | None) -> dict:
    """The masks as nn.TransformerDecoderLayer and nn.TransformerDecoder take them (True = hidden)."""
    masks = {}
    if self_mask is not None:
        masks["tgt_mask"] = pytorch_mask(self_mask, 2, N_TGT, N_TGT, HEADS)
    if source_real is not None:
        masks["memory_key_padding_mask"] = ~source_real
    return masks


# What a learner's code did, for naming its mistake ----------------------------------------------------------


def _matches(result, expected: torch.Tensor, atol: float = 1e-5) -> bool:
    return (
        isinstance(result, torch.Tensor)
        and result.shape == expected.shape
        and result.dtype == expected.dtype
        and torch.allclose(result, expected, atol=atol)
    )


def _rows(tensor) -> int | None:
    return tensor.shape[-2] if isinstance(tensor, torch.Tensor) and tensor.ndim >= 2 else None


OWN_CAUSAL_MASK = (
    "got a causal mask made up in your code, not the {mask} it was given. The mask given is causal and also hides "
    "the target's padding (here the second sentence's last word), which a mask built from the length alone cannot "
    "know: pass {mask} on as it is"
)


# Exercise 1 ---------------------------------------------------------------------------------------------

LAYER_PARTS = ("self_attention", "cross_attention", "feed_forward", "norm1", "norm2", "norm3")


@learner_facing
def check_decoder_layer(DecoderLayer: type, seed: int = 0) -> None:
    """Check post-LN and pre-LN against nn.TransformerDecoderLayer with copied weights, a causal mask with target
    padding and a source padding mask, and causality as a property."""
    x, memory, self_mask, source_real = _inputs(seed)
    padding = source_real[:, None, :]  # (batch, 1, n_src)
    for norm_first in (False, True):
        call = f"DecoderLayer(d_model=8, num_heads=2, d_ff=16, norm_first={norm_first})"
        layer = built_and_perturbed(DecoderLayer, D_MODEL, HEADS, D_FF, norm_first=norm_first, seed=seed, call=call)
        _expect_layer_parts(layer, call)
        call = f"{call}(x, memory, self_mask (causal, with target padding), source padding memory_mask)"
        with torch.no_grad():
            expected = _layer_twin(layer, norm_first)(x, memory, **_twin_masks(self_mask, source_real))
            out, failure = attempt(layer, x, memory, self_mask, padding, call=call)
            if failure is not None or not _matches(out, expected):
                inputs = (x, memory, self_mask, source_real)
                _diagnose_layer(out, failure, layer, inputs, expected, norm_first, seed, call)
        if failure is not None:
            raise failure
        expect_tensor(out, "DecoderLayer", x.shape, x.dtype)
        expect_close(out, expected, f"{call}, compared with nn.TransformerDecoderLayer with the same weights")
        _check_causality(lambda target, layer=layer: layer(target, memory, self_mask, padding), x, call, seed)
    passed("DecoderLayer", "equals nn.TransformerDecoderLayer, post-LN and pre-LN, and never looks ahead")


def _expect_layer_parts(layer: nn.Module, call: str) -> None:
    for name in LAYER_PARTS:
        if not isinstance(getattr(layer, name, None), nn.Module):
            raise CheckFailed(
                f"{call} needs self.{name}: the parts are self_attention and cross_attention "
                "(MultiHeadAttention), feed_forward (FeedForward) and norm1, norm2, norm3 (LayerNorm)."
            )
    expect_separate_norms(layer, ("norm1", "norm2", "norm3"), call)


def _diagnose_layer(out, failure, layer, inputs, expected, norm_first: bool, seed: int, call: str) -> None:
    """Fail naming the mistake, if it is one of the usual ones; return when it is none of them."""
    cause = None if failure is None else failure.__cause__
    x, memory, self_mask, source_real = inputs
    mistake = _mistake_in_attention_calls(layer, inputs, norm_first)
    if mistake is None and failure is not None:
        attentions = {"self_attention": layer.self_attention, "cross_attention": layer.cross_attention}
        mistake = pair_used_whole(attentions, lambda: layer(x, memory, self_mask, source_real[:, None, :]), expected)
    if mistake is not None:
        raise CheckFailed(f"{call}: {mistake}.") from cause
    if not isinstance(out, torch.Tensor):
        return
    if out.shape == memory.shape:
        raise CheckFailed(f"{call}: {QUERIES_FROM_MEMORY}.")
    if out.shape != x.shape:
        return
    other_memory = seeded_randn(*memory.shape, seed=seed + 99)
    out_with_other_memory = None
    with contextlib.suppress(Exception):
        out_with_other_memory = layer(x, other_memory, self_mask, source_real[:, None, :])
    if _matches(out_with_other_memory, out, atol=1e-6):
        raise CheckFailed(f"{call}: the output does not change when the memory does, so {ATTENDS_TO_ITSELF}.")
    twin = _layer_twin(layer, norm_first)
    candidates = {
        NO_SELF_MASK: twin(x, memory, **_twin_masks(None, source_real)),
        NO_MEMORY_MASK: twin(x, memory, **_twin_masks(self_mask, None)),
        f"you built {'pre' if not norm_first else 'post'}-LN; norm_first={norm_first} asks for the other "
        "order": _layer_twin(layer, not norm_first)(x, memory, **_twin_masks(self_mask, source_real)),
    }
    for mistake, wrong in candidates.items():
        if torch.allclose(out, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    sublayers = _decoder_sublayers(twin, memory, self_mask, source_real)
    for mistake, wrong in residual_variants(sublayers, x, norm_first):
        if torch.allclose(out, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    for mistake, wrong in itertools.chain(
        step_variants(sublayers, x, norm_first), _from_normalised_variants(sublayers, x, norm_first)
    ):
        if torch.allclose(out, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    if norm_first:
        norms = {name: getattr(twin, name) for name in ("norm1", "norm2", "norm3")}
        normalised = normalised_output(out, expected, norms)
        if normalised is not None:
            raise CheckFailed(f"{call}: {normalised}.")
    computed_with = functools.partial(_decoder_layer_output, layer, norm_first, inputs)
    expect_own_norms(out, computed_with, DECODER_SUBLAYERS, call)


def _decoder_sublayers(twin: nn.TransformerDecoderLayer, memory, self_mask, source_real) -> list:
    """The layer's sublayers as (name, norm, function), computed by PyTorch's layer holding the learner's weights."""
    attention_mask = _twin_masks(self_mask, None)["tgt_mask"]

    def self_attention(h):
        return twin.self_attn(h, h, h, attn_mask=attention_mask, need_weights=False)[0]

    def cross_attention(h):
        return twin.multihead_attn(h, memory, memory, key_padding_mask=~source_real, need_weights=False)[0]

    def feed_forward(h):
        return twin.linear2(torch.relu(twin.linear1(h)))

    return [
        ("self-attention", twin.norm1, self_attention),
        ("cross-attention", twin.norm2, cross_attention),
        ("feed-forward network", twin.norm3, feed_forward),
    ]


def _from_normalised_variants(sublayers: list, x: torch.Tensor, norm_first: bool):
    """(mistake, output) for a layer in which some sublayers' residual connections start from the normalised
    stream, x = norm(x) + sublayer(norm(x)), while the others take the step norm_first asks for; ``sublayers`` as
    from ``_decoder_sublayers``. (nb06's step_variants tries every other kind of step.)"""
    wanted = "pre-LN" if norm_first else "post-LN"
    names = [name for name, _, _ in sublayers]
    right = (
        "In pre-LN only the sublayer's input is normalised; its output is added to x itself, which stays "
        "unnormalised from layer to layer"
        if norm_first
        else "Post-LN normalises after the addition: the sublayer's output is added to x itself, and the sum is "
        "normalised"
    )
    for chosen in itertools.product((False, True), repeat=len(sublayers)):
        if not any(chosen):
            continue
        h = x
        for (_, norm, sublayer), from_normalised in zip(sublayers, chosen, strict=True):
            if from_normalised:
                normalised = norm(h)
                h = normalised + sublayer(normalised)
            else:
                h = h + sublayer(norm(h)) if norm_first else norm(h + sublayer(h))
        which = " and ".join(f"the {name}" for name, wrong in zip(names, chosen, strict=True) if wrong)
        steps = "step is" if sum(chosen) == 1 else "steps are"
        yield (
            f"{which} {steps} x = norm(x) + sublayer(norm(x)): the residual connection starts from the normalised "
            f"stream, so the unnormalised x never reaches the output. {right}. norm_first={norm_first} asks for "
            f"{wanted} around every sublayer: {STEPS[wanted]}",
            h,
        )


QUERIES_FROM_MEMORY = (
    "the cross-attention's queries came from the memory, so it gives one row per source position. Queries come "
    "from the decoder (x); keys and values from the encoder's output: cross_attention(x, context=memory, ...)"
)
ATTENDS_TO_ITSELF = (
    "the cross-attention attends to x itself. Its keys and values come from memory, the encoder's output: "
    "cross_attention(x, context=memory, mask=memory_mask)"
)
QUERIES_FROM_INPUT = (
    "the cross-attention's queries came from {source}, not from the stream as the self-attention step left it, so "
    "the self-attention's result never reaches the cross-attention. The sublayers work one after the other: the "
    "cross-attention reads x after the self-attention's residual step{through}"
)
NO_SELF_MASK = "the self-attention ignores self_mask, so each position sees the future; pass self_mask to it"
NO_MEMORY_MASK = "the cross-attention ignores memory_mask, so it attends to the source's padding"
CROSS_BEFORE_SELF = (
    "the cross-attention runs before the self-attention. The order is masked self-attention over the target "
    "so far, then cross-attention to the memory, then the feed-forward network, with norm1, norm2 and norm3 in "
    "that order: each target position first gathers from the words before it, then asks the source"
)
SWAPPED_LAYER_MASKS = (
    "the masks are swapped: self_mask (the causal mask, target × target) goes to the self-attention, memory_mask "
    "(the source's padding, target × source) to the cross-attention"
)
SELF_GOT_MEMORY_MASK = (
    "the self-attention got memory_mask, the source's padding (target × source); it takes self_mask, the causal "
    "mask over the target (target × target). memory_mask is the cross-attention's"
)
CROSS_GOT_SELF_MASK = (
    "the cross-attention got self_mask, the causal mask over the target (target × target); it takes memory_mask, "
    "the source's padding (target × source). self_mask is the self-attention's"
)


def _mistake_in_attention_calls(layer: nn.Module, inputs, norm_first: bool) -> str | None:
    """The mistake that what the layer passed to its two attentions shows, if any."""
    x, memory, self_mask, source_real = inputs
    masks = {"self_mask": self_mask, "memory_mask": source_real[:, None, :], "causal": CAUSAL}
    parts = {"self": layer.self_attention, "cross": layer.cross_attention}
    order = []  # the attentions' names, in the order in which the layer called them
    received = received_by(parts, lambda: layer(x, memory, self_mask, source_real[:, None, :]), order)
    for part, mask_name in (("self", "self_mask"), ("cross", "memory_mask")):
        mistake = mask_as_context(received[part], f"{part}-attention", mask_name)
        if mistake is not None:
            return mistake
    if len(received["self"]) > 1 and not received["cross"]:
        return (
            "self.self_attention does the cross-attention too; the cross-attention has weights of its own: "
            "self.cross_attention(x, context=memory, mask=memory_mask)"
        )
    if "self" in order and "cross" in order and order.index("cross") < order.index("self"):
        return CROSS_BEFORE_SELF
    if received["cross"] and len(received["cross"][0]) >= 3:
        queries, context, _ = received["cross"][0][:3]
        if _rows(queries) == N_SRC:
            return QUERIES_FROM_MEMORY
        if context is None or _rows(context) == N_TGT:
            return ATTENDS_TO_ITSELF
        normalised = _normalised_memory(layer, context, memory)
        if normalised is not None:
            return (
                f"the cross-attention's keys and values came from {normalised}, a normalised copy of the memory. "
                "A decoder layer normalises only its own stream x; it takes the memory, the encoder's output, as it "
                "is (a pre-LN encoder's final norm has normalised it already)"
            )
        source = _layer_input_as_queries(layer, queries, x)
        if source is not None:
            return QUERIES_FROM_INPUT.format(source=source, through=", through norm2" if norm_first else "")
    given = {
        part: which_mask(received[part][0][2], masks) if received[part] and len(received[part][0]) >= 3 else None
        for part in parts
    }
    if given["self"] == "memory_mask" and not received["cross"]:  # the layer crashed in its self-attention
        given["cross"] = _cross_mask_after_right_self_mask(layer, inputs, masks)
    if given["self"] == "memory_mask" and given["cross"] == "self_mask":
        return SWAPPED_LAYER_MASKS
    if given["self"] == "memory_mask":
        return SELF_GOT_MEMORY_MASK
    if given["cross"] == "self_mask":
        return CROSS_GOT_SELF_MASK
    if given["self"] == "causal":
        return "the self-attention " + OWN_CAUSAL_MASK.format(mask="self_mask")
    if given["self"] == "~self_mask":
        return inverted_mask("~self_mask", "self-attention")
    if given["self"] == "no mask":
        return NO_SELF_MASK
    if given["cross"] == "~memory_mask":
        return inverted_mask("~memory_mask", "cross-attention")
    if given["cross"] == "no mask":
        return NO_MEMORY_MASK
    return None


def _cross_mask_after_right_self_mask(layer: nn.Module, inputs, masks: dict) -> str | None:
    """Which mask the cross-attention receives once the self-attention is handed self_mask in place of the mask the
    layer gave it (a mask of the wrong shape for the self-attention stops the layer before its cross-attention)."""
    x, memory, self_mask, source_real = inputs
    signature = inspect.signature(layer.self_attention.forward)

    def right_mask(module, args, kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return None
        bound.arguments["mask"] = self_mask
        return (), dict(bound.arguments)

    handle = layer.self_attention.register_forward_pre_hook(right_mask, with_kwargs=True)
    try:
        received = received_by(
            {"cross": layer.cross_attention}, lambda: layer(x, memory, self_mask, masks["memory_mask"])
        )
    finally:
        handle.remove()
    calls = received["cross"]
    return which_mask(calls[0][2], masks) if calls and len(calls[0]) >= 3 else None


def _layer_input_as_queries(layer: nn.Module, queries, x: torch.Tensor) -> str | None:
    """What the cross-attention's queries are, if they are the layer's input x or x through one of its norms."""
    if _matches(queries, x, atol=1e-6):
        return "the layer's input x"
    for name in ("norm1", "norm2", "norm3"):
        with contextlib.suppress(Exception):
            if _matches(queries, getattr(layer, name)(x), atol=1e-6):
                return f"{name}(x), the layer's input normalised"
    return None


def _normalised_memory(layer: nn.Module, context, memory: torch.Tensor) -> str | None:
    """Which of the layer's norms the context the cross-attention received is the memory normalised by, if any."""
    if not isinstance(context, torch.Tensor) or context.shape != memory.shape or torch.equal(context, memory):
        return None
    for name in ("norm1", "norm2", "norm3"):
        with contextlib.suppress(Exception):
            if torch.allclose(context, getattr(layer, name)(memory), atol=1e-6):
                return f"{name}(memory)"
    return None


def _decoder_layer_output(layer, norm_first: bool, inputs, norms_used: dict[str, str]) -> torch.Tensor:
    x, memory, self_mask, source_real = inputs
    twin = _layer_twin(layer, norm_first, norms_used)
    return twin(x, memory, **_twin_masks(self_mask, source_real))


def _check_causality(run, x: torch.Tensor, call: str, seed: int) -> None:
    changed = x.clone()
    changed[:, 2:] = seeded_randn(x.shape[0], x.shape[1] - 2, x.shape[2], seed=seed + 77)
    with torch.no_grad():
        before, after = run(x), run(changed)
    if not torch.allclose(before[:, :2], after[:, :2], atol=1e-5):
        raise CheckFailed(f"{call}: changing target positions 2 and later changed the outputs at positions 0 and 1.")


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_decoder(Decoder: type, seed: int = 0) -> None:
    """Check a stack of 3 layers against nn.TransformerDecoder, post-LN and pre-LN (with its final norm)."""
    x, memory, self_mask, source_real = _inputs(seed)
    with earlier_exercises_replaced(Decoder.__init__, "DecoderLayer", "LayerNorm"):
        for norm_first in (False, True):
            call = f"Decoder(num_layers=3, d_model=8, num_heads=2, d_ff=16, norm_first={norm_first})"
            decoder = built_and_perturbed(Decoder, 3, D_MODEL, HEADS, D_FF, norm_first=norm_first, seed=seed, call=call)
            expect_stack(decoder, call, norm_first)
            twin = _decoder_twin(decoder, norm_first)
            inputs = (x, memory, self_mask, source_real[:, None, :])
            with torch.no_grad():
                expected = twin(x, memory, **_twin_masks(self_mask, source_real))
                out, failure = attempt(decoder, *inputs, call=f"{call}(x, memory, masks)")
                if failure is not None or not _matches(out, expected):
                    _diagnose_stack(decoder, twin, inputs, out, norm_first, f"{call}(x, memory, masks)", failure)
            if failure is not None:
                raise failure
            expect_tensor(out, "Decoder", x.shape, x.dtype)
            expect_close(out, expected, f"{call}, compared with nn.TransformerDecoder with the same weights")
    passed("Decoder", "equals nn.TransformerDecoder, post-LN and pre-LN with its final norm")


def _diagnose_stack(
    decoder: nn.Module, twin: nn.TransformerDecoder, inputs, out, norm_first: bool, call: str, failure
) -> None:
    """Fail naming the mistake, if it is one of the usual ones: a memory other than the stack's, masks that the
    stack passed on wrongly (as its layers' calls show), or the final norm applied after every layer or before the
    first."""
    cause = None if failure is None else failure.__cause__
    x, memory, self_mask, padding = inputs
    mistake = _memory_mistake(decoder, inputs) or _mistake_in_masks_passed(decoder, inputs)
    if mistake is None and failure is None and twin.norm is not None:
        layers = [
            functools.partial(layer, memory=memory, **_twin_masks(self_mask, padding[:, 0, :])) for layer in twin.layers
        ]
        if _matches(out, normalised_after_each_layer(x, layers, twin.norm)):
            mistake = AFTER_EACH_LAYER
        elif _matches(out, normalised_after_each_layer(twin.norm(x), layers, lambda h: h)):
            mistake = (
                "self.norm is applied to the input, before the first layer. The final norm goes after the last "
                "layer: pre-LN layers return their stream unnormalised, and self.norm normalises it once, at the end"
            )
    if mistake is None and failure is None:
        mistake = _layers_order_mistake(decoder, inputs, out, norm_first)
    if mistake is not None:
        raise CheckFailed(f"{call}: {mistake}.") from cause


def _layers_order_mistake(decoder: nn.Module, inputs, out, norm_first: bool) -> str | None:
    """The mistake, if some of the stack's layers compute the other order than its norm_first asks for."""
    x, memory, self_mask, padding = inputs
    twin = _decoder_twin(decoder, norm_first)
    wanted, other = ("pre-LN", "post-LN") if norm_first else ("post-LN", "pre-LN")
    for orders in itertools.product((False, True), repeat=len(twin.layers)):
        if all(order == norm_first for order in orders):
            continue
        for layer, order in zip(twin.layers, orders, strict=True):
            layer.norm_first = order
        if _matches(out, twin(x, memory, **_twin_masks(self_mask, padding[:, 0, :]))):
            wrong = [number for number, order in enumerate(orders, start=1) if order != norm_first]
            if len(wrong) == len(orders):
                which = "every layer computes"
            elif len(wrong) == 1:
                which = f"layer {wrong[0]} computes"
            else:
                which = f"layers {', '.join(map(str, wrong[:-1]))} and {wrong[-1]} compute"
            default = " (without it a DecoderLayer takes its default, norm_first=False)" if norm_first else ""
            return (
                f"{which} {other}, though norm_first={norm_first} asks for {wanted} in every layer: pass norm_first "
                f"on to each DecoderLayer{default}"
            )
    return None


def _memory_mistake(decoder: nn.Module, inputs) -> str | None:
    """The mistake, if a layer received another memory than the one the stack was given."""
    x, memory = inputs[:2]
    layers = {f"{number}": layer for number, layer in enumerate(decoder.layers, start=1)}
    received = received_by(layers, lambda: decoder(*inputs))
    for number, calls in received.items():
        if not calls or len(calls[0]) < 2 or _matches(calls[0][1], memory, atol=0):
            continue
        given, stream = calls[0][1], calls[0][0]
        if not isinstance(given, torch.Tensor) or given.dtype == torch.bool:
            return None  # a mask in the memory's place: the masks' diagnosis names it
        if number == "1" and _matches(given, x, atol=0):
            what = "the target x, the stack's input"
        elif _matches(given, stream, atol=0):
            what = f"layer {int(number) - 1}'s output, the target stream"
        else:
            what = "another tensor than the memory the stack was given"
        return (
            f"layer {number} got {what}, as its memory. Every layer attends to the same memory, the encoder's "
            "output that the stack was given: layer(x, memory, ...), with memory left as it is while x changes from "
            "layer to layer"
        )
    return None


def _mistake_in_masks_passed(decoder: nn.Module, inputs) -> str | None:
    """The mistake that what the stack passed to its layers shows, if any."""
    x, memory, self_mask, padding = inputs
    received = received_by({"layer": decoder.layers[0]}, lambda: decoder(*inputs))["layer"]
    if not received or len(received[0]) < 4:
        return None
    masks = {"self_mask": self_mask, "memory_mask": padding}
    given_self, given_memory = (which_mask(given, masks | {"causal": CAUSAL}) for given in received[0][2:4])
    for position, name, sees in (
        (2, "self_mask", "self-attention sees the future"),
        (3, "memory_mask", "cross-attention sees the source's padding"),
    ):
        ordered = {name: masks[name]} | masks  # the mask looked for first
        partly = stack_masks_mistake(decoder, lambda: decoder(*inputs), ordered, position, sees)
        if partly is not None:
            return partly
    mistake = None
    if given_self == "memory_mask" or given_memory == "self_mask":
        mistake = (
            "the layers got the masks swapped. A DecoderLayer takes self_mask (causal, target × target) for its "
            "self-attention, then memory_mask (the source's padding, target × source) for its cross-attention; "
            "pass them to every layer in that order"
        )
    elif given_self == "causal":
        mistake = "the layers " + OWN_CAUSAL_MASK.format(mask="self_mask")
    elif inverted := {given_self, given_memory} & {"~self_mask", "~memory_mask"}:
        mistake = inverted_mask(min(inverted), "layers")
    elif given_self == "no mask":
        mistake = "the layers got no self_mask, so each position sees the future; pass both masks to every layer"
    elif given_memory == "no mask":
        mistake = (
            "the layers got no memory_mask, so their cross-attention attends to the source's padding; pass both "
            "masks to every layer"
        )
    return mistake


def _decoder_twin(decoder: nn.Module, norm_first: bool) -> nn.TransformerDecoder:
    layer = _layer_twin(decoder.layers[0], norm_first)
    twin = nn.TransformerDecoder(layer, len(decoder.layers), norm=nn.LayerNorm(D_MODEL) if norm_first else None)
    load_stack(decoder, twin, decoder_layer_parameters)
    return twin.eval()


# Exercise 3 ---------------------------------------------------------------------------------------------

SRC_VOCAB, TGT_VOCAB = 11, 13


@learner_facing
def check_transformer(Transformer: type, seed: int = 0) -> None:
    """Check the logits against nn.Transformer with copied weights (embeddings × √d_model plus the sinusoidal
    encoding, final projection), masks, decoder causality, the parameter count and the embedding scale (with a
    correct Decoder and DecoderLayer in place of the learner's); then embed, encode and decode called one by one,
    as notebook 08 calls them. The weights compared are the check's own (``_set_weights``), whatever order the
    learner's __init__ creates the parts in, so that a release's recorded oracles answer every correct model."""
    compared = []  # (model, its inputs, the expected logits)
    with earlier_exercises_replaced(Transformer.__init__, "Decoder", "DecoderLayer"):
        for norm_first in (False, True):
            sizes = f"{SRC_VOCAB}, {TGT_VOCAB}, d_model=8, num_heads=2, d_ff=16, num_layers=2"
            call = f"Transformer({sizes}, norm_first={norm_first})"
            model = built_and_perturbed(
                Transformer, SRC_VOCAB, TGT_VOCAB, D_MODEL, HEADS, D_FF, 2, norm_first=norm_first, seed=seed, call=call
            )
            _expect_model_parts(model, call)
            _set_weights(model, seed)
            compared.append((model, *_check_logits(model, call, norm_first, seed)))
            _check_parameter_count(model, call, norm_first)
        _check_embedding_scale(Transformer, seed)
        for model, inputs, expected in compared:
            _check_parts_used_alone(model, inputs, expected)
    passed("Transformer", "equals nn.Transformer with the same weights, never looks ahead, right size and scale")


def _expect_model_parts(model: nn.Module, call: str) -> None:
    parts = {
        "src_embedding": nn.Embedding,
        "tgt_embedding": nn.Embedding,
        "encoder": nn.Module,
        "decoder": nn.Module,
        "output": nn.Linear,
    }
    for name, kind in parts.items():
        if not isinstance(getattr(model, name, None), kind):
            raise CheckFailed(
                f"{call} needs self.{name}; the parts are src_embedding and tgt_embedding (nn.Embedding), encoder "
                "(Encoder), decoder (Decoder) and output (nn.Linear to the target vocabulary)."
            )
    for name, block in (("encoder", "Encoder"), ("decoder", "Decoder")):
        layers = getattr(getattr(model, name), "layers", None)
        if not isinstance(layers, nn.ModuleList | nn.Sequential) or len(layers) != 2:
            count = f"{len(layers)} layers" if isinstance(layers, nn.ModuleList | nn.Sequential) else "no .layers"
            raise CheckFailed(
                f"{call}: self.{name} has {count}; num_layers=2 asks for 2 layers in each stack: "
                f"{block}(num_layers, d_model, num_heads, d_ff, norm_first) passes the model's sizes on."
            )
    if model.src_embedding is model.tgt_embedding:
        raise CheckFailed(
            f"{call}: self.src_embedding and self.tgt_embedding are one and the same table. The source and the target "
            "are two languages with vocabularies of their own: create one nn.Embedding for each."
        )
    for name, vocab, language in (("src_embedding", SRC_VOCAB, "source"), ("tgt_embedding", TGT_VOCAB, "target")):
        table = getattr(model, name)
        if (table.num_embeddings, table.embedding_dim) != (vocab, D_MODEL):
            raise CheckFailed(
                f"{call}: self.{name} has {table.num_embeddings} rows of {table.embedding_dim}; it needs one row of "
                f"d_model numbers per word of the {language} vocabulary: nn.Embedding({vocab}, {D_MODEL})."
            )
    if getattr(model.output, "out_features", None) != TGT_VOCAB:
        raise CheckFailed(f"{call}: self.output must map d_model to the {TGT_VOCAB} words of the target vocabulary.")
    if model.output.weight is model.tgt_embedding.weight:
        raise CheckFailed(
            f"{call}: self.output's weight is self.tgt_embedding's weight, one matrix shared by the two (weight tying, "
            "an idea of this notebook's Going further). This exercise wants an output layer with weights of its own: "
            "nn.Linear(d_model, tgt_vocab), left untied."
        )
    if model.output.bias is None:
        raise CheckFailed(
            f"{call}: self.output has no bias. The output layer is nn.Linear(d_model, tgt_vocab) with its default "
            "bias, one score per word of the target vocabulary added to every position's logits."
        )


def _model_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's parameters themselves (not copies): its stacks' under the names nn.Transformer gives them
    ("encoder.layers.0.self_attn.in_proj_weight", "decoder.norm.weight"), its tables' and output layer's under
    their own ("src_embedding.weight", "output.bias")."""
    weights = {}
    for side, layer_parameters in (("encoder", encoder_layer_parameters), ("decoder", decoder_layer_parameters)):
        stack = getattr(model, side)
        for number, layer in enumerate(stack.layers):
            weights |= {f"{side}.layers.{number}.{name}": value for name, value in layer_parameters(layer).items()}
        if getattr(stack, "norm", None) is not None:
            gain, bias = norm_weights(stack.norm)
            weights |= {f"{side}.norm.weight": gain, f"{side}.norm.bias": bias}
    for part in ("src_embedding", "tgt_embedding", "output"):
        weights |= {f"{part}.{name}": value for name, value in getattr(model, part).named_parameters()}
    return weights


def _set_weights(model: nn.Module, seed: int) -> None:
    """Give every weight of the model a value drawn for its name alone, so that they do not depend on the order in
    which the learner's __init__ made the parts: gains near 1 and biases near 0, each its own (a norm used in place
    of another shows), matrices and tables of entries of size 1/√(row length), as PyTorch starts them."""
    with torch.no_grad():
        for name, weight in _model_weights(model).items():
            noise = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
            values = torch.randn(weight.shape, generator=noise, dtype=weight.dtype)
            if name.endswith("bias"):
                weight.copy_(0.1 * values)
            elif weight.ndim == 1:  # a norm's gain
                weight.copy_(1 + 0.1 * values)
            else:
                weight.copy_(values / math.sqrt(weight.shape[-1]))


def _weights_given(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's weights as the oracle takes them: copies, which nothing done to the model later changes."""
    return {name: weight.detach().clone() for name, weight in _model_weights(model).items()}


@oracle
def _embedded(
    table: torch.Tensor,
    tokens: torch.Tensor,
    scale: float = math.sqrt(D_MODEL),
    positions: str = "sequence",
    scale_positions: bool = False,
) -> torch.Tensor:
    """The tokens looked up in ``table`` (vocab, d_model), scaled, plus the sinusoidal encoding; the arguments give
    the usual mistakes: another scale, positions left out ("none"), taken along the batch axis ("batch") or
    computed with sinusoidal_encoding's arguments swapped and transposed to fit ("swapped"), counted from 1
    ("from one"), or the positions scaled with the words."""
    if positions == "sequence":
        encoding = sinusoidal_encoding(tokens.shape[-1], D_MODEL)  # (seq, d_model)
    elif positions == "batch":
        encoding = sinusoidal_encoding(tokens.shape[0], D_MODEL)[:, None, :]  # (batch, 1, d_model)
    elif positions == "swapped":
        encoding = sinusoidal_encoding(D_MODEL, tokens.shape[-1]).mT  # (seq, d_model), other numbers
    elif positions == "from one":
        encoding = sinusoidal_encoding(tokens.shape[-1] + 1, D_MODEL)[1:]  # (seq, d_model): positions 1 to seq
    else:
        encoding = 0.0
    vectors = nn.functional.embedding(tokens, table)  # (batch, seq, d_model)
    if scale_positions:
        return (vectors + encoding) * scale
    return vectors * scale + encoding  # (batch, seq, d_model)


@oracle
def _logits(
    weights: dict[str, torch.Tensor],
    src: torch.Tensor,
    tgt: torch.Tensor,
    source_real: torch.Tensor,
    target_mask: torch.Tensor | None,
    *,
    norm_first: tuple[bool, bool],
    source: dict | None = None,
    target: dict | None = None,
) -> torch.Tensor:
    """nn.Transformer's logits with the weights of ``_model_weights`` (a stack has a final norm if they hold one);
    ``norm_first`` for the encoder's and the decoder's layers; ``source`` and ``target``: how each side's embedding
    goes wrong (the arguments of ``_embedded``), if it does."""

    def stack(side: str, norm_first: bool) -> nn.Module:
        kind = nn.TransformerEncoder if side == "encoder" else nn.TransformerDecoder
        layer = (nn.TransformerEncoderLayer if side == "encoder" else nn.TransformerDecoderLayer)(
            D_MODEL, HEADS, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first
        )
        count = len({name.split(".")[2] for name in weights if name.startswith(f"{side}.layers.")})
        norm = nn.LayerNorm(D_MODEL) if f"{side}.norm.weight" in weights else None
        options = {"enable_nested_tensor": False} if side == "encoder" else {}  # the path that computes every position
        return kind(layer, count, norm=norm, **options)

    twin = nn.Transformer(
        D_MODEL,
        HEADS,
        dropout=0.0,
        batch_first=True,
        custom_encoder=stack("encoder", norm_first[0]),
        custom_decoder=stack("decoder", norm_first[1]),
    )
    twin.load_state_dict({name: value for name, value in weights.items() if name.startswith(("encoder.", "decoder."))})
    hidden = twin.eval()(
        _embedded(weights["src_embedding.weight"], src, **(source or {})),
        _embedded(weights["tgt_embedding.weight"], tgt, **(target or {})),
        tgt_mask=pytorch_mask(target_mask, tgt.shape[0], tgt.shape[1], tgt.shape[1], HEADS),
        src_key_padding_mask=~source_real,
        memory_key_padding_mask=~source_real,
    )
    return nn.functional.linear(hidden, weights["output.weight"], weights["output.bias"])  # (batch, n_tgt, tgt_vocab)


def _twin_logits(
    model: nn.Module, norm_first: bool, src, tgt, source_real, target_mask, source=None, target=None
) -> torch.Tensor:
    """The logits nn.Transformer computes with the model's weights; the arguments as for ``_logits``."""
    weights = _weights_given(model)
    return _logits(
        weights, src, tgt, source_real, target_mask, norm_first=(norm_first, norm_first), source=source, target=target
    )


def _model_inputs(seed: int):
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(SRC_VOCAB, (2, N_SRC), generator=generator)  # (batch, n_src)
    tgt = torch.randint(TGT_VOCAB, (2, N_TGT), generator=generator)  # (batch, n_tgt)
    source_real = torch.tensor([[True] * N_SRC, [True] * 4 + [False] * (N_SRC - 4)])  # (batch, n_src)
    target_real = torch.tensor([[True] * N_TGT, [True] * (N_TGT - 1) + [False]])  # (batch, n_tgt)
    target_mask = CAUSAL & target_real[:, None, :]  # (batch, n_tgt, n_tgt): causal, with the target's padding
    return src, tgt, source_real, target_mask


def _check_logits(model: nn.Module, call: str, norm_first: bool, seed: int) -> tuple[tuple, torch.Tensor]:
    src, tgt, source_real, target_mask = _model_inputs(seed)
    inputs = (src, tgt, source_real[:, None, :], target_mask)
    call = f"{call}(src, tgt, src_mask, tgt_mask)"
    with torch.no_grad():
        expected = _twin_logits(model, norm_first, src, tgt, source_real, target_mask)
        logits, failure = attempt(model, *inputs, call=call)
        if failure is not None or not _matches(logits, expected, atol=1e-4):
            _diagnose_model(model, inputs, norm_first, call, failure)
        if failure is not None:
            raise failure
        expect_tensor(logits, "the logits", (2, N_TGT, TGT_VOCAB), torch.float32)
        if not torch.allclose(logits, expected, atol=1e-4):
            if rows_sum_to(logits) and torch.allclose(logits, expected.softmax(dim=-1), atol=1e-5):
                raise CheckFailed(f"{call}: {PROBABILITIES}.")
            if torch.allclose(logits, expected.log_softmax(dim=-1), atol=1e-5):
                raise CheckFailed(f"{call}: {LOG_PROBABILITIES}.")
            variants = itertools.chain(
                _embedding_variants(model, norm_first, src, tgt, source_real, target_mask),
                _stack_order_variants(model, norm_first, src, tgt, source_real, target_mask),
            )
            for mistake, wrong in variants:
                if torch.allclose(logits, wrong, atol=1e-4):
                    raise CheckFailed(f"{call}: {mistake}.")
        expect_close(logits, expected, f"{call}, compared with nn.Transformer holding the same weights", atol=1e-4)
        changed = tgt.clone()
        changed[:, 2:] = (tgt[:, 2:] + 1) % TGT_VOCAB
        after = model(src, changed, source_real[:, None, :], target_mask)
    if not torch.allclose(logits[:, :2], after[:, :2], atol=1e-5):
        raise CheckFailed(f"{call}: changing target words 2 and later changed the logits at positions 0 and 1.")
    return inputs, expected


def _embedding_variants(model: nn.Module, norm_first: bool, src, tgt, source_real, target_mask):
    """(mistake, logits) for the usual mistakes in the embeddings, on both sides or on one, and for the decoder's
    mask left out."""
    for mistake, (embedding, mask) in EMBEDDING_MISTAKES.items():
        mask = target_mask if mask else None
        yield mistake, _twin_logits(model, norm_first, src, tgt, source_real, mask, embedding, embedding)
        if not embedding:
            continue
        for side, sides in (("source", (embedding, None)), ("target", (None, embedding))):
            method, other = ("encode", "target") if side == "source" else ("decode", "source")
            told = (
                f"the {side} side ({method}) is embedded wrongly and the {other} side rightly. On the {side} side, "
                f"{mistake}. Embed both sides the same way, with self.embed"
            )
            yield told, _twin_logits(model, norm_first, src, tgt, source_real, mask, *sides)


def _stack_order_variants(model: nn.Module, norm_first: bool, src, tgt, source_real, target_mask):
    """(mistake, logits) for an encoder, a decoder or both whose layers compute the other order than the model's
    norm_first asks for."""
    weights = _weights_given(model)
    for orders in itertools.product((False, True), repeat=2):
        if orders == (norm_first, norm_first):
            continue
        wrong = [side for side, order in zip(("encoder", "decoder"), orders, strict=True) if order != norm_first]
        mistake = _stack_order_mistake(wrong, [f"{side}.norm.weight" in weights for side in wrong], norm_first)
        yield mistake, _logits(weights, src, tgt, source_real, target_mask, norm_first=orders)


def _stack_order_mistake(sides: list[str], has_norm: list[bool], norm_first: bool) -> str:
    """What to say of stacks (``sides``) whose layers compute the other order; has_norm: whether each has a final
    norm, which says whether the stack itself was given the model's norm_first."""
    wanted, got = ("pre-LN", "post-LN") if norm_first else ("post-LN", "pre-LN")
    told = []
    built_other = [side for side, norm in zip(sides, has_norm, strict=True) if norm != norm_first]
    if built_other:
        stacks = " and ".join(f"self.{side}" for side in built_other)
        blocks = " and ".join(side.capitalize() for side in built_other)
        what = "is a" if len(built_other) == 1 else "are"
        default = "takes its default" if len(built_other) == 1 else "take their default"
        told.append(
            f"{stacks} {what} {got} stack{'s' if len(built_other) > 1 else ''} ({'no' if norm_first else 'a'} final "
            f"norm, {got} layers), but norm_first={norm_first} asks for {wanted}: pass norm_first on to {blocks}"
            + (f", which otherwise {default}, norm_first=False" if norm_first else "")
        )
    for side in (side for side in sides if side not in built_other):
        block = side.capitalize()
        told.append(
            f"self.{side}'s layers compute {got}, though it has {'its' if norm_first else 'no'} final norm as "
            f"{block}(..., norm_first={norm_first}) should: your {block} does not pass norm_first on to its layers"
        )
    return "; ".join(told)


def _check_parts_used_alone(model: nn.Module, inputs, expected: torch.Tensor) -> None:
    """Check embed, encode and decode, called one by one as notebook 08 calls them, against the expected
    embeddings and logits."""
    src, tgt, src_mask, tgt_mask = inputs
    missing = [name for name in ("embed", "encode", "decode") if not callable(getattr(model, name, None))]
    if missing:
        raise CheckFailed(
            f"Transformer needs the method{'s' if len(missing) > 1 else ''} {', '.join(missing)}: notebook 08 calls "
            "encode once per source and decode at every step of a translation, so forward alone is not enough."
        )
    for tokens, name, side in ((src, "src_embedding", "src"), (tgt, "tgt_embedding", "tgt")):
        table = getattr(model, name)
        call = f"model.embed({side}, model.{name})"
        with torch.no_grad():
            embedded = call_learner(model.embed, tokens, table, call=call)
            expect_tensor(embedded, f"{call}'s result", (*tokens.shape, D_MODEL), torch.float32)
            expect_close(
                embedded,
                _embedded(table.weight, tokens),
                f"{call}: the tokens' vectors × √d_model plus the sinusoidal encoding of their positions",
                atol=1e-5,
            )
    with torch.no_grad():
        memory = call_learner(model.encode, src, src_mask, call="model.encode(src, src_mask)")
        expect_tensor(memory, "model.encode(src, src_mask)'s memory", (2, N_SRC, D_MODEL), torch.float32)
        call = "model.decode(tgt, model.encode(src, src_mask), tgt_mask, src_mask)"
        logits = call_learner(model.decode, tgt, memory, tgt_mask, src_mask, call=call)
    if isinstance(logits, torch.Tensor) and logits.shape == (2, N_TGT, D_MODEL):
        raise CheckFailed(
            f"{call} returns (batch, n_tgt, d_model), the decoder's output; decode returns the logits (batch, n_tgt, "
            "tgt_vocab): the decoder's output through self.output. Notebook 08 calls decode alone to pick each next "
            "word, so decode itself ends with the output layer."
        )
    expect_tensor(logits, "model.decode's logits", (2, N_TGT, TGT_VOCAB), torch.float32)
    expect_close(
        logits,
        expected,
        f"{call}, compared with nn.Transformer holding the same weights (forward gives them)",
        atol=1e-4,
    )


WHOLE_TARGET = "the decoder's self-attention sees the whole target: pass tgt_mask to the decoder"
PROBABILITIES = (
    "the model returns probabilities: each row sums to 1, a softmax of the expected logits. forward and decode "
    "return the logits, the scores before any softmax: notebook 08's loss (cross-entropy) takes logits and applies "
    "its own log-softmax, so a softmax before it would be applied twice"
)
LOG_PROBABILITIES = (
    "the model returns log-probabilities: a log_softmax of the expected logits, rows whose exponentials sum to 1. "
    "forward and decode return the logits, the output layer's scores before any softmax; notebook 08's loss "
    "(cross-entropy) applies the log-softmax itself"
)
# mistake: (how the embedding went wrong, whether the decoder got its mask)
EMBEDDING_MISTAKES = {
    "the embeddings are not multiplied by √d_model": ({"scale": 1.0}, True),
    f"the embeddings are multiplied by d_model = {D_MODEL}, not by √d_model": ({"scale": float(D_MODEL)}, True),
    "the embeddings are divided by √d_model, not multiplied by it. The table starts with entries of size "
    "1/√d_model; multiplied by √d_model they come to size 1, like the encoding's, while divided they shrink to "
    "1/d_model and the encoding drowns them": ({"scale": 1 / math.sqrt(D_MODEL)}, True),
    "the positional encoding is multiplied by √d_model too: the embeddings are scaled first, then the encoding "
    "is added as it is": ({"scale_positions": True}, True),
    "there is no positional encoding: add the sinusoidal encoding of the positions to the embeddings": (
        {"positions": "none"},
        True,
    ),
    "the positional encoding runs along the batch axis: sentence b got the encoding of position b at all of its "
    "words, so nothing tells a sentence's words apart by position. The encoding has one row per position of the "
    "sequence axis (tokens.shape[-1]) and is the same for every sentence of the batch": ({"positions": "batch"}, True),
    "the positional encoding is sinusoidal_encoding(d_model, seq_len) transposed to fit: with its arguments "
    "swapped it computes the encoding of d_model positions over seq_len features, other numbers than the encoding "
    "of the seq_len positions over d_model features. sinusoidal_encoding takes the number of positions first, then "
    "d_model": ({"positions": "swapped"}, True),
    "the positions are counted from 1: the first word got the encoding of position 1, the second that of 2, and "
    "so on. Positions count from 0, as rows of sinusoidal_encoding(seq_len, d_model) do: row t is position t": (
        {"positions": "from one"},
        True,
    ),
    WHOLE_TARGET: ({}, False),
}
SWAPPED_MODEL_MASKS = (
    "the decoder got the masks swapped: its self-attention takes tgt_mask (target × target) and its "
    "cross-attention src_mask (the source's padding): decoder(x, memory, tgt_mask, src_mask)"
)


def _diagnose_model(model: nn.Module, inputs, norm_first: bool, call: str, failure) -> None:
    """Fail naming the mistake that what the model passed to its parts shows, if any."""
    cause = None if failure is None else failure.__cause__
    src, tgt, src_mask, tgt_mask = inputs
    parts = {name: getattr(model, name) for name in ("src_embedding", "tgt_embedding", "encoder", "decoder")}
    received = received_by(parts, lambda: model(*inputs))
    mistake = _mistake_in_embeddings(received, src, tgt)
    if mistake is None and failure is not None and _right_on(model, norm_first, batch=2, length=5, seed=7):
        mistake = (
            f"the model fails on a source of {N_SRC} words and a target of {N_TGT}, and is right when both have 5: "
            "one side used a length taken from the other, for instance the source's positional encoding added to "
            "the target. Each side's encoding has one row per position of its own tokens: embed computes "
            "sinusoidal_encoding(tokens.shape[-1], d_model) for the tokens it is given"
        )
    if (
        mistake is None
        and failure is not None
        and not received["encoder"]
        and _right_on(model, norm_first, batch=5, length=5, seed=5)
    ):
        mistake = (
            "the model fails on a batch of 2 sentences of 6 (source) and 4 (target) words, and is right on 5 "
            "sentences of 5 words: a length was taken from the batch axis (tokens.shape[0]) where the sequence "
            "axis is meant (tokens.shape[-1]). The positional encoding, for one, has a row per position: "
            "sinusoidal_encoding(tokens.shape[-1], d_model)"
        )
    if (
        mistake is None
        and failure is not None
        and not received["decoder"]
        and _right_on(model, norm_first, batch=2, length=D_MODEL, seed=8)
    ):
        mistake = (
            f"the model fails on a source of {N_SRC} words and a target of {N_TGT} before its decoder runs, and is "
            f"right when both have d_model = {D_MODEL} words: the positional encoding has d_model rows where it "
            "needs one per position, as when sinusoidal_encoding's two arguments are swapped. It takes the number "
            "of positions first, then d_model"
        )
    masks = {"src_mask": src_mask, "tgt_mask": tgt_mask, "causal": CAUSAL}
    if mistake is None and received["encoder"] and len(received["encoder"][0]) >= 2:
        mistake = _encoder_mask_mistake(which_mask(received["encoder"][0][1], masks))
    if mistake is None and received["decoder"] and len(received["decoder"][0]) >= 4:
        self_mask, memory_mask = received["decoder"][0][2:4]
        mistake = _decoder_masks_mistake(which_mask(self_mask, masks), which_mask(memory_mask, masks))
    if mistake is not None:
        raise CheckFailed(f"{call}: {mistake}.") from cause


def _same_tokens(given, tokens: torch.Tensor) -> bool:
    return isinstance(given, torch.Tensor) and given.shape == tokens.shape and torch.equal(given, tokens)


def _mistake_in_embeddings(received: dict, src: torch.Tensor, tgt: torch.Tensor) -> str | None:
    if any(_same_tokens(arguments[0], tgt) for arguments in received["src_embedding"] if arguments):
        return (
            "the target words are looked up in src_embedding, the source language's table; the target language "
            "has its own: tgt_embedding"
        )
    if any(_same_tokens(arguments[0], src) for arguments in received["tgt_embedding"] if arguments):
        return (
            "the source words are looked up in tgt_embedding, the target language's table; the source language "
            "has its own: src_embedding"
        )
    return None


def _encoder_mask_mistake(given: str | None) -> str | None:
    if given == "no mask":
        return (
            "the encoder ignores src_mask, so its self-attention attends to the source's padding: encoder(x, src_mask)"
        )
    if given == "~src_mask":
        return inverted_mask(given, "encoder")
    if given == "tgt_mask":
        return "the encoder got tgt_mask; its self-attention takes src_mask, the source's padding"
    return None


def _decoder_masks_mistake(self_mask: str | None, memory_mask: str | None) -> str | None:
    if self_mask == "src_mask" or memory_mask == "tgt_mask":
        return SWAPPED_MODEL_MASKS
    if self_mask == "causal":
        return "the decoder " + OWN_CAUSAL_MASK.format(mask="tgt_mask")
    if self_mask == "~tgt_mask":
        return inverted_mask("~tgt_mask", "decoder's self-attention")
    if memory_mask == "~src_mask":
        return inverted_mask("~src_mask", "decoder's cross-attention")
    if self_mask == "no mask":
        return WHOLE_TARGET
    if memory_mask == "no mask":
        return (
            "the decoder's cross-attention ignores src_mask, so it attends to the source's padding: pass src_mask "
            "to the decoder too, as its memory_mask"
        )
    return None


def _right_on(model: nn.Module, norm_first: bool, batch: int, length: int, seed: int) -> bool:
    """Whether the model computes the right logits for a batch of ``batch`` sentences of ``length`` words, source
    and target, with no padding."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(SRC_VOCAB, (batch, length), generator=generator)
    tgt = torch.randint(TGT_VOCAB, (batch, length), generator=generator)
    source_real = torch.ones(batch, length, dtype=torch.bool)
    target_mask = torch.ones(length, length, dtype=torch.bool).tril().expand(batch, length, length)
    try:
        logits = model(src, tgt, source_real[:, None, :], target_mask)
    except Exception:
        return False
    expected = _twin_logits(model, norm_first, src, tgt, source_real, target_mask)
    return _matches(logits, expected, atol=1e-4)


def _check_parameter_count(model: nn.Module, call: str, norm_first: bool) -> None:
    stacks = sum(p.numel() for p in nn.Transformer(D_MODEL, HEADS, 2, 2, D_FF, batch_first=True).parameters())
    final_norms = 4 * D_MODEL  # nn.Transformer always ends both stacks with a norm; only pre-LN needs them
    embeddings_and_output = (SRC_VOCAB + TGT_VOCAB) * D_MODEL + D_MODEL * TGT_VOCAB + TGT_VOCAB
    expected = stacks - (0 if norm_first else final_norms) + embeddings_and_output
    counted = sum(p.numel() for p in model.parameters())
    if counted != expected:
        raise CheckFailed(
            f"{call} has {counted} parameters; the two stacks, both embeddings and the output layer have {expected}. "
            "Is a part missing, shared, or created twice?"
        )


def _check_embedding_scale(Transformer: type, seed: int) -> None:
    call = "Transformer(100, 100, d_model=64, num_heads=4, d_ff=128, num_layers=1)"
    model = built_with_seed(Transformer, 100, 100, 64, 4, 128, 1, seed=seed, call=call)
    for name in ("src_embedding", "tgt_embedding"):
        std = getattr(model, name).weight.std().item()
        if not 0.08 < std < 0.18:
            effect = (
                "entries that large would drown the encoding"
                if std > 0.18
                else "entries that small would be drowned by the encoding"
            )
            raise CheckFailed(
                f"{call}: self.{name} starts with standard deviation {std:.2f}; its weights should start from a "
                f"normal distribution of standard deviation 1/√d_model = {1 / 8:.3f} (torch.nn.init has the "
                "functions that refill a tensor so). Then after × √d_model the word vectors have entries of size "
                f"about 1, like the positional encoding; {effect}."
            )
