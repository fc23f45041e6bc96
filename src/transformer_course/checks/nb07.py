"""Checks for notebook 07, the decoder and the full encoder-decoder.

Oracles: ``nn.TransformerDecoderLayer``, ``nn.TransformerDecoder`` and ``nn.Transformer`` (dropout off) with the
learner's weights copied in (``nn.Transformer`` without the final norms it always adds, when the stacks are
post-LN); decoder causality as a property; the parameter count of ``nn.Transformer``.

Source (6 words) and target (4 words) have different lengths and the batch has 2 sentences, so that a tensor
taken from the wrong side or axis shows in the shapes. When a learner's code fails, the checks record what its
parts (attention, embeddings, encoder, decoder, a stack's layers) received, and in which order, to name the
mistake: queries from the memory, a normalised memory, cross-attention before self-attention, masks missing,
inverted or swapped, a table used for the other language, a length from the batch axis.
"""

import contextlib
import functools
import math
import warnings

import torch
from torch import nn

from ..reference.nb05_positional_encoding import sinusoidal_encoding
from ..reference.pytorch_layers import decoder_layer_parameters, encoder_layer_parameters, pytorch_mask
from . import (
    CheckFailed,
    built_with_seed,
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
    attempt,
    built_and_perturbed,
    copy_layer,
    expect_own_norms,
    expect_separate_norms,
    expect_stack,
    inverted_mask,
    load_stack,
    mask_as_context,
    normalised_after_each_layer,
    normalised_output,
    pair_used_whole,
    received_by,
    residual_variants,
    stack_masks_mistake,
    which_mask,
)

D_MODEL, HEADS, D_FF = 8, 2, 16
N_SRC, N_TGT = 6, 4
DECODER_SUBLAYERS = ("self-attention", "cross-attention", "feed-forward network")


def _layer_twin(
    layer: nn.Module, norm_first: bool, norms_used: dict[str, str] | None = None
) -> nn.TransformerDecoderLayer:
    twin = nn.TransformerDecoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    copy_layer(layer, twin, decoder_layer_parameters, norms_used)
    return twin.eval()


def _inputs(seed: int):
    x = seeded_randn(2, N_TGT, D_MODEL, seed=seed)  # (batch, n_tgt, d_model)
    memory = seeded_randn(2, N_SRC, D_MODEL, seed=seed + 1)  # (batch, n_src, d_model)
    causal = torch.ones(N_TGT, N_TGT, dtype=torch.bool).tril()  # (n_tgt, n_tgt)
    source_real = torch.tensor([[True] * N_SRC, [True] * 3 + [False] * (N_SRC - 3)])  # (batch, n_src)
    return x, memory, causal, source_real


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


# Exercise 1 ---------------------------------------------------------------------------------------------

LAYER_PARTS = ("self_attention", "cross_attention", "feed_forward", "norm1", "norm2", "norm3")


@learner_facing
def check_decoder_layer(DecoderLayer: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check post-LN and pre-LN against nn.TransformerDecoderLayer with copied weights, a causal mask and a
    source padding mask, and causality as a property."""
    x, memory, causal, source_real = _inputs(seed)
    padding = source_real[:, None, :]  # (batch, 1, n_src)
    for norm_first in (False, True):
        call = f"DecoderLayer(d_model=8, num_heads=2, d_ff=16, norm_first={norm_first})"
        layer = built_and_perturbed(DecoderLayer, D_MODEL, HEADS, D_FF, norm_first=norm_first, seed=seed, call=call)
        _expect_layer_parts(layer, call)
        call = f"{call}(x, memory, causal self_mask, source padding memory_mask)"
        with torch.no_grad():
            expected = _layer_twin(layer, norm_first)(x, memory, tgt_mask=~causal, memory_key_padding_mask=~source_real)
            out, failure = attempt(layer, x, memory, causal, padding, call=call)
            if failure is not None or not _matches(out, expected):
                inputs = (x, memory, causal, source_real)
                _diagnose_layer(out, failure, layer, inputs, expected, norm_first, seed, call)
        if failure is not None:
            raise failure
        expect_tensor(out, "DecoderLayer", x.shape, x.dtype)
        expect_close(out, expected, f"{call}, compared with nn.TransformerDecoderLayer with the same weights")
        _check_causality(lambda target, layer=layer: layer(target, memory, causal, padding), x, call, seed)
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
    x, memory, causal, source_real = inputs
    mistake = _mistake_in_attention_calls(layer, inputs)
    if mistake is None and failure is not None:
        attentions = {"self_attention": layer.self_attention, "cross_attention": layer.cross_attention}
        mistake = pair_used_whole(attentions, lambda: layer(x, memory, causal, source_real[:, None, :]), expected)
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
        out_with_other_memory = layer(x, other_memory, causal, source_real[:, None, :])
    if _matches(out_with_other_memory, out, atol=1e-6):
        raise CheckFailed(f"{call}: the output does not change when the memory does, so {ATTENDS_TO_ITSELF}.")
    twin = _layer_twin(layer, norm_first)
    candidates = {
        NO_SELF_MASK: twin(x, memory, memory_key_padding_mask=~source_real),
        NO_MEMORY_MASK: twin(x, memory, tgt_mask=~causal),
        f"you built {'pre' if not norm_first else 'post'}-LN; norm_first={norm_first} asks for the other "
        "order": _layer_twin(layer, not norm_first)(x, memory, tgt_mask=~causal, memory_key_padding_mask=~source_real),
    }
    for mistake, wrong in candidates.items():
        if torch.allclose(out, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    for mistake, wrong in residual_variants(_decoder_sublayers(twin, memory, causal, source_real), x, norm_first):
        if torch.allclose(out, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    if norm_first:
        norms = {name: getattr(twin, name) for name in ("norm1", "norm2", "norm3")}
        normalised = normalised_output(out, expected, norms)
        if normalised is not None:
            raise CheckFailed(f"{call}: {normalised}.")
    computed_with = functools.partial(_decoder_layer_output, layer, norm_first, inputs)
    expect_own_norms(out, computed_with, DECODER_SUBLAYERS, call)


def _decoder_sublayers(twin: nn.TransformerDecoderLayer, memory, causal, source_real) -> list:
    """The layer's sublayers as (name, norm, function), computed by PyTorch's layer holding the learner's weights."""

    def self_attention(h):
        return twin.self_attn(h, h, h, attn_mask=~causal, need_weights=False)[0]

    def cross_attention(h):
        return twin.multihead_attn(h, memory, memory, key_padding_mask=~source_real, need_weights=False)[0]

    def feed_forward(h):
        return twin.linear2(torch.relu(twin.linear1(h)))

    return [
        ("self-attention", twin.norm1, self_attention),
        ("cross-attention", twin.norm2, cross_attention),
        ("feed-forward network", twin.norm3, feed_forward),
    ]


QUERIES_FROM_MEMORY = (
    "the cross-attention's queries came from the memory, so it gives one row per source position. Queries come "
    "from the decoder (x); keys and values from the encoder's output: cross_attention(x, context=memory, ...)"
)
ATTENDS_TO_ITSELF = (
    "the cross-attention attends to x itself. Its keys and values come from memory, the encoder's output: "
    "cross_attention(x, context=memory, mask=memory_mask)"
)
NO_SELF_MASK = "the self-attention ignores self_mask, so each position sees the future; pass the causal mask"
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


def _mistake_in_attention_calls(layer: nn.Module, inputs) -> str | None:
    """The mistake that what the layer passed to its two attentions shows, if any."""
    x, memory, causal, source_real = inputs
    masks = {"self_mask": causal, "memory_mask": source_real[:, None, :]}
    parts = {"self": layer.self_attention, "cross": layer.cross_attention}
    order = []  # the attentions' names, in the order in which the layer called them
    received = received_by(parts, lambda: layer(x, memory, causal, source_real[:, None, :]), order)
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
        queries, context, mask = received["cross"][0][:3]
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
    if received["self"] and len(received["self"][0]) >= 3:
        given = which_mask(received["self"][0][2], masks)
        if given == "memory_mask":
            return SWAPPED_LAYER_MASKS
        if given == "~self_mask":
            return inverted_mask(given, "self-attention")
        if given == "no mask":
            return NO_SELF_MASK
    if received["cross"] and len(received["cross"][0]) >= 3:
        given = which_mask(received["cross"][0][2], masks)
        if given == "self_mask":
            return SWAPPED_LAYER_MASKS
        if given == "~memory_mask":
            return inverted_mask(given, "cross-attention")
        if given == "no mask":
            return NO_MEMORY_MASK
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
    x, memory, causal, source_real = inputs
    twin = _layer_twin(layer, norm_first, norms_used)
    return twin(x, memory, tgt_mask=~causal, memory_key_padding_mask=~source_real)


def _check_causality(run, x: torch.Tensor, call: str, seed: int) -> None:
    changed = x.clone()
    changed[:, 2:] = seeded_randn(x.shape[0], x.shape[1] - 2, x.shape[2], seed=seed + 77)
    with torch.no_grad():
        before, after = run(x), run(changed)
    if not torch.allclose(before[:, :2], after[:, :2], atol=1e-5):
        raise CheckFailed(f"{call}: changing target positions 2 and later changed the outputs at positions 0 and 1.")


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_decoder(Decoder: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check a stack of 3 layers against nn.TransformerDecoder, post-LN and pre-LN (with its final norm)."""
    x, memory, causal, source_real = _inputs(seed)
    with earlier_exercises_replaced(Decoder.__init__, "DecoderLayer", "LayerNorm"):
        for norm_first in (False, True):
            call = f"Decoder(num_layers=3, d_model=8, num_heads=2, d_ff=16, norm_first={norm_first})"
            decoder = built_and_perturbed(Decoder, 3, D_MODEL, HEADS, D_FF, norm_first=norm_first, seed=seed, call=call)
            expect_stack(decoder, call, norm_first)
            twin = _decoder_twin(decoder, norm_first)
            inputs = (x, memory, causal, source_real[:, None, :])
            with torch.no_grad():
                expected = twin(x, memory, tgt_mask=~causal, memory_key_padding_mask=~source_real)
                out, failure = attempt(decoder, *inputs, call=f"{call}(x, memory, masks)")
                if failure is not None or not _matches(out, expected):
                    _diagnose_stack(decoder, twin, inputs, out, f"{call}(x, memory, masks)", failure)
            if failure is not None:
                raise failure
            expect_tensor(out, "Decoder", x.shape, x.dtype)
            expect_close(out, expected, f"{call}, compared with nn.TransformerDecoder with the same weights")
    passed("Decoder", "equals nn.TransformerDecoder, post-LN and pre-LN with its final norm")


def _diagnose_stack(decoder: nn.Module, twin: nn.TransformerDecoder, inputs, out, call: str, failure) -> None:
    """Fail naming the mistake, if it is one of the usual ones: masks that the stack passed on wrongly (as its
    layers' calls show), or the final norm applied after every layer."""
    cause = None if failure is None else failure.__cause__
    x, memory, causal, padding = inputs
    mistake = _mistake_in_masks_passed(decoder, inputs)
    if mistake is None and failure is None and twin.norm is not None:
        source_real = padding[:, 0, :]
        layers = [
            functools.partial(layer, memory=memory, tgt_mask=~causal, memory_key_padding_mask=~source_real)
            for layer in twin.layers
        ]
        if _matches(out, normalised_after_each_layer(x, layers, twin.norm)):
            mistake = AFTER_EACH_LAYER
    if mistake is not None:
        raise CheckFailed(f"{call}: {mistake}.") from cause


def _mistake_in_masks_passed(decoder: nn.Module, inputs) -> str | None:
    """The mistake that what the stack passed to its layers shows, if any."""
    x, memory, causal, padding = inputs
    received = received_by({"layer": decoder.layers[0]}, lambda: decoder(*inputs))["layer"]
    if not received or len(received[0]) < 4:
        return None
    masks = {"self_mask": causal, "memory_mask": padding}
    self_mask, memory_mask = (which_mask(given, masks) for given in received[0][2:4])
    for position, name, sees in (
        (2, "self_mask", "self-attention sees the future"),
        (3, "memory_mask", "cross-attention sees the source's padding"),
    ):
        ordered = {name: masks[name]} | masks  # the mask looked for first
        partly = stack_masks_mistake(decoder, lambda: decoder(*inputs), ordered, position, sees)
        if partly is not None:
            return partly
    mistake = None
    if self_mask == "memory_mask" or memory_mask == "self_mask":
        mistake = (
            "the layers got the masks swapped. A DecoderLayer takes self_mask (causal, target × target) for its "
            "self-attention, then memory_mask (the source's padding, target × source) for its cross-attention; "
            "pass them to every layer in that order"
        )
    elif inverted := {self_mask, memory_mask} & {"~self_mask", "~memory_mask"}:
        mistake = inverted_mask(min(inverted), "layers")
    elif self_mask == "no mask":
        mistake = "the layers got no self_mask, so each position sees the future; pass both masks to every layer"
    elif memory_mask == "no mask":
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
def check_transformer(Transformer: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check the logits against nn.Transformer with copied weights (embeddings × √d_model plus the sinusoidal
    encoding, final projection), masks, decoder causality, the parameter count and the embedding scale (with a
    correct Decoder and DecoderLayer in place of the learner's)."""
    with earlier_exercises_replaced(Transformer.__init__, "Decoder", "DecoderLayer"):
        for norm_first in (False, True):
            sizes = f"{SRC_VOCAB}, {TGT_VOCAB}, d_model=8, num_heads=2, d_ff=16, num_layers=2"
            call = f"Transformer({sizes}, norm_first={norm_first})"
            model = built_and_perturbed(
                Transformer, SRC_VOCAB, TGT_VOCAB, D_MODEL, HEADS, D_FF, 2, norm_first=norm_first, seed=seed, call=call
            )
            _expect_model_parts(model, call)
            _check_logits(model, call, norm_first, seed)
            _check_parameter_count(model, call, norm_first)
        _check_embedding_scale(Transformer, seed)
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


def _embedded(
    table: nn.Embedding,
    tokens: torch.Tensor,
    scale: float = math.sqrt(D_MODEL),
    positions: str = "sequence",
    scale_positions: bool = False,
):
    """The embedded tokens; the arguments give the usual mistakes: another scale, positions left out ("none") or
    taken along the batch axis ("batch"), or the positions scaled with the words."""
    if positions == "sequence":
        encoding = sinusoidal_encoding(tokens.shape[-1], D_MODEL)  # (seq, d_model)
    elif positions == "batch":
        encoding = sinusoidal_encoding(tokens.shape[0], D_MODEL)[:, None, :]  # (batch, 1, d_model)
    else:
        encoding = 0.0
    if scale_positions:
        return (table(tokens) + encoding) * scale
    return table(tokens) * scale + encoding  # (batch, seq, d_model)


def _twin_logits(model: nn.Module, norm_first: bool, src, tgt, source_real, target_mask, **embedding) -> torch.Tensor:
    with warnings.catch_warnings():  # PyTorch warns that pre-LN stacks cannot use its nested-tensor fast path
        warnings.simplefilter("ignore", UserWarning)
        twin = nn.Transformer(D_MODEL, HEADS, 2, 2, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    twin.encoder.use_nested_tensor = False  # the slow path, which computes every position like ours
    if not norm_first:  # nn.Transformer always ends both stacks with a norm; a post-LN stack has none
        twin.encoder.norm = twin.decoder.norm = None
    load_stack(model.encoder, twin.encoder, encoder_layer_parameters)
    load_stack(model.decoder, twin.decoder, decoder_layer_parameters)
    hidden = twin(
        _embedded(model.src_embedding, src, **embedding),
        _embedded(model.tgt_embedding, tgt, **embedding),
        tgt_mask=pytorch_mask(target_mask, tgt.shape[0], tgt.shape[1], tgt.shape[1], HEADS),
        src_key_padding_mask=~source_real,
        memory_key_padding_mask=~source_real,
    )
    return model.output(hidden)  # (batch, n_tgt, tgt_vocab)


def _model_inputs(seed: int):
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(SRC_VOCAB, (2, N_SRC), generator=generator)  # (batch, n_src)
    tgt = torch.randint(TGT_VOCAB, (2, N_TGT), generator=generator)  # (batch, n_tgt)
    source_real = torch.tensor([[True] * N_SRC, [True] * 4 + [False] * (N_SRC - 4)])  # (batch, n_src)
    target_mask = torch.ones(N_TGT, N_TGT, dtype=torch.bool).tril().expand(2, N_TGT, N_TGT)  # (batch, n_tgt, n_tgt)
    return src, tgt, source_real, target_mask


def _check_logits(model: nn.Module, call: str, norm_first: bool, seed: int) -> None:
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
            for mistake, (embedding, mask) in EMBEDDING_MISTAKES.items():
                wrong = _twin_logits(
                    model, norm_first, src, tgt, source_real, target_mask if mask else None, **embedding
                )
                if torch.allclose(logits, wrong, atol=1e-4):
                    raise CheckFailed(f"{call}: {mistake}.")
        expect_close(logits, expected, f"{call}, compared with nn.Transformer holding the same weights", atol=1e-4)
        changed = tgt.clone()
        changed[:, 2:] = (tgt[:, 2:] + 1) % TGT_VOCAB
        after = model(src, changed, source_real[:, None, :], target_mask)
    if not torch.allclose(logits[:, :2], after[:, :2], atol=1e-5):
        raise CheckFailed(f"{call}: changing target words 2 and later changed the logits at positions 0 and 1.")


WHOLE_TARGET = "the decoder's self-attention sees the whole target: pass tgt_mask to the decoder"
PROBABILITIES = (
    "the model returns probabilities: each row sums to 1, a softmax of the expected logits. forward and decode "
    "return the logits, the scores before any softmax: notebook 08's loss (cross-entropy) takes logits and applies "
    "its own log-softmax, so a softmax before it would be applied twice"
)
# mistake: (how the embedding went wrong, whether the decoder got its mask)
EMBEDDING_MISTAKES = {
    "the embeddings are not multiplied by √d_model": ({"scale": 1.0}, True),
    f"the embeddings are multiplied by d_model = {D_MODEL}, not by √d_model": ({"scale": float(D_MODEL)}, True),
    "the positional encoding is multiplied by √d_model too: the embeddings are scaled first, then the encoding "
    "is added as it is": ({"scale_positions": True}, True),
    "there is no positional encoding: add the sinusoidal encoding of the positions to the embeddings": (
        {"positions": "none"},
        True,
    ),
    "the positional encoding runs along the batch axis: sentence b got the encoding of position b at all of its "
    "words, so nothing tells a sentence's words apart by position. The encoding has one row per position of the "
    "sequence axis (tokens.shape[-1]) and is the same for every sentence of the batch": ({"positions": "batch"}, True),
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
    if (
        mistake is None
        and failure is not None
        and not received["encoder"]
        and _right_when_batch_equals_length(model, norm_first)
    ):
        mistake = (
            "the model fails on a batch of 2 sentences of 6 (source) and 4 (target) words, and is right on 5 "
            "sentences of 5 words: a length was taken from the batch axis (tokens.shape[0]) where the sequence "
            "axis is meant (tokens.shape[-1]). The positional encoding, for one, has a row per position: "
            "sinusoidal_encoding(tokens.shape[-1], d_model)"
        )
    masks = {"src_mask": src_mask, "tgt_mask": tgt_mask}
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


def _right_when_batch_equals_length(model: nn.Module, norm_first: bool) -> bool:
    """Whether the model computes the right logits for a batch of 5 sentences of 5 words, source and target."""
    generator = torch.Generator().manual_seed(5)
    src = torch.randint(SRC_VOCAB, (5, 5), generator=generator)
    tgt = torch.randint(TGT_VOCAB, (5, 5), generator=generator)
    source_real = torch.ones(5, 5, dtype=torch.bool)
    target_mask = torch.ones(5, 5, dtype=torch.bool).tril().expand(5, 5, 5)
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


def _check_embedding_scale(Transformer: type, seed: int) -> None:  # noqa: N803
    call = "Transformer(100, 100, d_model=64, num_heads=4, d_ff=128, num_layers=1)"
    model = built_with_seed(Transformer, 100, 100, 64, 4, 128, 1, seed=seed, call=call)
    for name in ("src_embedding", "tgt_embedding"):
        std = getattr(model, name).weight.std().item()
        if not 0.08 < std < 0.18:
            raise CheckFailed(
                f"{call}: self.{name} starts with standard deviation {std:.2f}; its weights should start from a "
                f"normal distribution of standard deviation 1/√d_model = {1 / 8:.3f} (torch.nn.init has the "
                "functions that refill a tensor so). Then after × √d_model the word vectors have entries of size "
                "about 1, like the positional encoding; N(0, 1) entries would be √d_model times larger and drown it."
            )
