"""Checks for notebook 07, the decoder and the full encoder-decoder.

Oracles: ``nn.TransformerDecoderLayer``, ``nn.TransformerDecoder`` and ``nn.Transformer`` (dropout off) with the
learner's weights copied in; decoder causality as a property; the parameter count of ``nn.Transformer``.
"""

import math
import warnings

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
    seeded_randn,
)
from .nb06 import copy_layer, expect_stack, load_stack

D_MODEL, HEADS, D_FF = 8, 2, 16


def _built_eval(cls: type, *args, seed: int, call: str, **kwargs) -> nn.Module:
    return built_with_seed(cls, *args, seed=seed, call=call, **kwargs).eval()


def _layer_twin(layer: nn.Module, norm_first: bool) -> nn.TransformerDecoderLayer:
    twin = nn.TransformerDecoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    copy_layer(layer, twin, decoder_layer_parameters)
    return twin.eval()


def _inputs(seed: int):
    x = seeded_randn(2, 4, D_MODEL, seed=seed)  # (batch, n_tgt=4, d_model)
    memory = seeded_randn(2, 6, D_MODEL, seed=seed + 1)  # (batch, n_src=6, d_model)
    causal = torch.ones(4, 4, dtype=torch.bool).tril()  # (n_tgt, n_tgt)
    source_real = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])  # (batch, n_src)
    return x, memory, causal, source_real


# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_decoder_layer(DecoderLayer: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check post-LN and pre-LN against nn.TransformerDecoderLayer with copied weights, a causal mask and a
    source padding mask, and causality as a property."""
    x, memory, causal, source_real = _inputs(seed)
    for norm_first in (False, True):
        call = f"DecoderLayer(d_model=8, num_heads=2, d_ff=16, norm_first={norm_first})"
        layer = _built_eval(DecoderLayer, D_MODEL, HEADS, D_FF, norm_first=norm_first, seed=seed, call=call)
        for name in ("self_attention", "cross_attention", "feed_forward", "norm1", "norm2", "norm3"):
            if not isinstance(getattr(layer, name, None), nn.Module):
                raise CheckFailed(
                    f"{call} needs self.{name}: the parts are self_attention and cross_attention "
                    "(MultiHeadAttention), feed_forward (FeedForward) and norm1, norm2, norm3 (LayerNorm)."
                )
        call = f"{call}(x, memory, causal self_mask, source padding memory_mask)"
        with torch.no_grad():
            out = call_learner(layer, x, memory, causal, source_real[:, None, :], call=call)
            twin = _layer_twin(layer, norm_first)
            expected = twin(x, memory, tgt_mask=~causal, memory_key_padding_mask=~source_real)
        if isinstance(out, torch.Tensor) and out.shape == memory.shape:
            raise CheckFailed(
                f"{call}: the output has one row per source position: the cross-attention's queries came from "
                "the memory. Queries come from the decoder (x); keys and values from the encoder's output."
            )
        expect_tensor(out, "DecoderLayer", x.shape, x.dtype)
        if not torch.allclose(out, expected, atol=1e-5):
            _diagnose_layer(out, twin, layer, x, memory, causal, source_real, norm_first, call)
        expect_close(out, expected, f"{call}, compared with nn.TransformerDecoderLayer with the same weights")
        padding = source_real[:, None, :]
        _check_causality(lambda target, layer=layer, padding=padding: layer(target, memory, causal, padding), x, call)
    passed("DecoderLayer", "equals nn.TransformerDecoderLayer, post-LN and pre-LN, and never looks ahead")


def _diagnose_layer(out, twin, layer, x, memory, causal, source_real, norm_first, call: str) -> None:
    with torch.no_grad():
        candidates = {
            "the self-attention ignores self_mask, so each position sees the future; pass the causal mask": twin(
                x, memory, memory_key_padding_mask=~source_real
            ),
            "the cross-attention ignores memory_mask, so it attends to the source's padding": twin(
                x, memory, tgt_mask=~causal
            ),
            f"you built {'pre' if not norm_first else 'post'}-LN; norm_first={norm_first} asks for the other "
            "order": _layer_twin(layer, not norm_first)(
                x, memory, tgt_mask=~causal, memory_key_padding_mask=~source_real
            ),
        }
    for mistake, wrong in candidates.items():
        if torch.allclose(out, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    with torch.no_grad():
        other_memory = layer(x, seeded_randn(*memory.shape, seed=99), causal, source_real[:, None, :])
    if torch.allclose(out, other_memory, atol=1e-6):
        raise CheckFailed(
            f"{call}: the output does not change when the memory does, so the cross-attention attends to x itself. "
            "Its keys and values come from memory, the encoder's output: cross_attention(x, context=memory, ...)."
        )


def _check_causality(run, x: torch.Tensor, call: str) -> None:
    changed = x.clone()
    changed[:, 2:] = seeded_randn(x.shape[0], x.shape[1] - 2, x.shape[2], seed=77)
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
            decoder = _built_eval(Decoder, 3, D_MODEL, HEADS, D_FF, norm_first=norm_first, seed=seed, call=call)
            expect_stack(decoder, call, norm_first)
            twin = _decoder_twin(decoder, norm_first)
            with torch.no_grad():
                out = call_learner(
                    decoder, x, memory, causal, source_real[:, None, :], call=f"{call}(x, memory, masks)"
                )
                expected = twin(x, memory, tgt_mask=~causal, memory_key_padding_mask=~source_real)
            expect_tensor(out, "Decoder", x.shape, x.dtype)
            expect_close(out, expected, f"{call}, compared with nn.TransformerDecoder with the same weights")
    passed("Decoder", "equals nn.TransformerDecoder, post-LN and pre-LN with its final norm")


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
    encoding, final projection), masks, decoder causality, the parameter count and the embedding scale."""
    with earlier_exercises_replaced(Transformer.__init__, "Decoder", "DecoderLayer"):
        for norm_first in (False, True):
            sizes = f"{SRC_VOCAB}, {TGT_VOCAB}, d_model=8, num_heads=2, d_ff=16, num_layers=2"
            call = f"Transformer({sizes}, norm_first={norm_first})"
            model = _built_eval(
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
    if getattr(model.output, "out_features", None) != TGT_VOCAB:
        raise CheckFailed(f"{call}: self.output must map d_model to the {TGT_VOCAB} words of the target vocabulary.")


def _embedded(table: nn.Embedding, tokens: torch.Tensor, scale: float = math.sqrt(D_MODEL), with_positions=True):
    positions = sinusoidal_encoding(tokens.shape[-1], D_MODEL) if with_positions else 0.0
    return table(tokens) * scale + positions  # (batch, seq, d_model)


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


def _check_logits(model: nn.Module, call: str, norm_first: bool, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(SRC_VOCAB, (2, 6), generator=generator)  # (batch, n_src)
    tgt = torch.randint(TGT_VOCAB, (2, 4), generator=generator)  # (batch, n_tgt)
    source_real = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # (batch, n_src)
    target_mask = torch.ones(4, 4, dtype=torch.bool).tril().expand(2, 4, 4)  # (batch, n_tgt, n_tgt)
    call = f"{call}(src, tgt, src_mask, tgt_mask)"
    with torch.no_grad():
        logits = call_learner(model, src, tgt, source_real[:, None, :], target_mask, call=call)
        expect_tensor(logits, "the logits", (2, 4, TGT_VOCAB), torch.float32)
        expected = _twin_logits(model, norm_first, src, tgt, source_real, target_mask)
        if not torch.allclose(logits, expected, atol=1e-4):
            mistakes = {
                "the embeddings are not multiplied by √d_model": ({"scale": 1.0}, target_mask),
                "there is no positional encoding: add sinusoidal_encoding(seq, d_model) to the embeddings": (
                    {"with_positions": False},
                    target_mask,
                ),
                "the decoder's self-attention sees the whole target: pass tgt_mask to the decoder": ({}, None),
            }
            for mistake, (embedding, mask) in mistakes.items():
                wrong = _twin_logits(model, norm_first, src, tgt, source_real, mask, **embedding)
                if torch.allclose(logits, wrong, atol=1e-4):
                    raise CheckFailed(f"{call}: {mistake}.")
        expect_close(logits, expected, f"{call}, compared with nn.Transformer holding the same weights", atol=1e-4)
        changed = tgt.clone()
        changed[:, 2:] = (tgt[:, 2:] + 1) % TGT_VOCAB
        after = model(src, changed, source_real[:, None, :], target_mask)
    if not torch.allclose(logits[:, :2], after[:, :2], atol=1e-5):
        raise CheckFailed(f"{call}: changing target words 2 and later changed the logits at positions 0 and 1.")


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
    model = _built_eval(Transformer, 100, 100, 64, 4, 128, 1, seed=seed, call=call)
    for name in ("src_embedding", "tgt_embedding"):
        std = getattr(model, name).weight.std().item()
        if not 0.08 < std < 0.18:
            raise CheckFailed(
                f"{call}: self.{name} starts with standard deviation {std:.2f}; initialise it with std "
                f"1/√d_model = {1 / 8:.3f} (nn.init.normal_(weight, std=d_model ** -0.5)). Then after × √d_model "
                "the word vectors have entries of size about 1, like the positional encoding; N(0, 1) entries "
                "would be √d_model times larger and drown it."
            )
