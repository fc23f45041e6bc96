"""Checks for notebook 10, a decoder-only language model (GPT).

Oracles: Hugging Face's GPT-2 (``GPT2Block`` and ``GPT2LMHeadModel``, built from a configuration, nothing
downloaded, dropout off, exact GELU) with the learner's weights copied in, and its loss for ``labels=ids``, which
shifts the labels itself; ``F.cross_entropy`` on the shifted tensors and its gradient; causality and weight tying
as properties (changing a later token changes no earlier logit; changing the embedding table in place changes the
output layer). GPT-2's ``Conv1D`` layers compute x @ W + b, so they take our ``nn.Linear`` weights transposed,
and its ``c_attn`` is nn.MultiheadAttention's fused in_proj (queries, keys, values).
"""

import copy
import math
import os
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

# The oracle is built from a configuration: nothing may be fetched. Imported here, with the checks, so that the
# sealed grading run records the library before a learner's code runs.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.generation.logits_process import (
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)
from transformers.models.gpt2.modeling_gpt2 import GPT2Block

from ..reference.nb03_multi_head_attention import MultiHeadAttention
from ..reference.pytorch_layers import norm_parameters
from . import (
    CheckFailed,
    InputChangedInPlace,
    NotImplementedYet,
    built_with_seed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_tensor,
    learner_facing,
    matches,
    passed,
    perturbed,
    seeded_randn,
    shape_of,
)
from .nb06 import expect_separate_norms
from .recordings import oracle

EPS = 1e-5  # nn.LayerNorm's default, and GPT-2's layer_norm_epsilon
INIT_STD = 0.02  # Hugging Face's GPT-2 initialisation of the embedding tables, which the notebook asks for


def language_model(config: GPT2Config) -> GPT2LMHeadModel:
    """GPT2LMHeadModel of this configuration, its loss named (else Hugging Face warns that it guessed it), with a
    random initialisation that leaves the global seed alone."""
    with torch.random.fork_rng():
        model = GPT2LMHeadModel(config)
    model.loss_type = "ForCausalLM"
    return model


def gpt2_config(vocab_size: int, block_size: int, d_model: int, num_heads: int, num_layers: int, **options):
    """GPT-2's configuration for these sizes: dropout off, exact GELU, tied embeddings. The token ids it names
    (beginning and end of text) play no part here; setting them keeps Hugging Face from warning about them."""
    settings = {
        "activation_function": "gelu",
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "layer_norm_epsilon": EPS,
        "tie_word_embeddings": True,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "attn_implementation": "sdpa",  # said, so that a GPT2Block on its own knows it too
    }
    return GPT2Config(
        vocab_size=vocab_size,
        n_positions=block_size,
        n_embd=d_model,
        n_head=num_heads,
        n_layer=num_layers,
        **(settings | options),
    )


# Reading a learner's modules ---------------------------------------------------------------------------------


def mlp_linears(mlp: nn.Module, d_model: int) -> tuple[nn.Linear, nn.Linear] | None:
    """The MLP's two nn.Linear, found by their shapes, d → 4d and 4d → d; None if it lacks either."""
    linears = [module for module in mlp.modules() if isinstance(module, nn.Linear)]
    widen = [layer for layer in linears if (layer.in_features, layer.out_features) == (d_model, 4 * d_model)]
    narrow = [layer for layer in linears if (layer.in_features, layer.out_features) == (4 * d_model, d_model)]
    return (widen[0], narrow[0]) if len(widen) == 1 and len(narrow) == 1 else None


def block_parameters(block: nn.Module, d_model: int, prefix: str = "") -> dict[str, torch.Tensor]:
    """A GPT block's parameters under the names GPT2Block gives them (Conv1D weights transposed)."""
    attention = block.attention.attention  # the nn.MultiheadAttention inside notebook 03's MultiHeadAttention
    widen, narrow = mlp_linears(block.mlp, d_model)
    named = {
        "ln_1": norm_parameters(block.ln_1),
        "ln_2": norm_parameters(block.ln_2),
        "attn.c_attn": (attention.in_proj_weight.T, attention.in_proj_bias),
        "attn.c_proj": (attention.out_proj.weight.T, attention.out_proj.bias),
        "mlp.c_fc": (widen.weight.T, widen.bias),
        "mlp.c_proj": (narrow.weight.T, narrow.bias),
    }
    parameters = {}
    for name, (weight, bias) in named.items():
        parameters |= {f"{prefix}{name}.weight": weight.detach(), f"{prefix}{name}.bias": bias.detach()}
    return parameters


def gpt2_block_twin(block: nn.Module, d_model: int, num_heads: int, **options) -> GPT2Block:
    """A GPT2Block holding a copy of a learner's block's weights."""
    with torch.random.fork_rng():  # its own random initialisation is overwritten; leave the global seed alone
        twin = GPT2Block(gpt2_config(11, 64, d_model, num_heads, 1, **options), layer_idx=0)
    twin.load_state_dict(block_parameters(block, d_model))
    return twin.eval()


def gpt2_twin(model: nn.Module, **options) -> GPT2LMHeadModel:
    """A GPT2LMHeadModel holding a copy of a learner's GPT's weights; its output layer is its token embedding."""
    vocab_size, d_model = model.token_embedding.weight.shape
    num_heads = model.blocks[0].attention.num_heads
    config = gpt2_config(vocab_size, model.position_embedding.weight.shape[0], d_model, num_heads, len(model.blocks))
    twin = language_model(gpt2_config(**_sizes(config), **options))
    parameters = {
        "transformer.wte.weight": model.token_embedding.weight.detach(),
        "transformer.wpe.weight": model.position_embedding.weight.detach(),
        "lm_head.weight": model.token_embedding.weight.detach(),
    }
    for number, block in enumerate(model.blocks):
        parameters |= block_parameters(block, d_model, prefix=f"transformer.h.{number}.")
    gain, bias = norm_parameters(model.ln_f)
    parameters |= {"transformer.ln_f.weight": gain.detach(), "transformer.ln_f.bias": bias.detach()}
    twin.load_state_dict({name: value.clone() for name, value in parameters.items()})
    return twin.eval()


def _sizes(config: GPT2Config) -> dict[str, int]:
    return {
        "vocab_size": config.vocab_size,
        "block_size": config.n_positions,
        "d_model": config.n_embd,
        "num_heads": config.n_head,
        "num_layers": config.n_layer,
    }


def causal_bias(seq: int) -> torch.Tensor:
    """GPT-2's additive attention mask (1, 1, seq, seq): 0 where a position may look, a large negative number at
    later positions. Given explicitly, so that the oracle does not rest on GPT-2's default."""
    future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
    return torch.zeros(seq, seq).masked_fill(future, torch.finfo(torch.float32).min)[None, None]


# Exercise 1 ---------------------------------------------------------------------------------------------


def _block_cases(seed: int) -> list[tuple[int, int, int, int]]:
    """(d_model, num_heads, batch, seq): two fixed sizes and one that depends on the seed."""
    return [(8, 2, 2, 5), (12, 3, 3, 4), ((16, 20, 24)[seed % 3], (2, 4, 4)[seed % 3], 1, 3 + seed % 4)]


@learner_facing
def check_gptblock(GPTBlock: type, seed: int = 0) -> None:
    """Check the block against Hugging Face's GPT2Block with the learner's weights (pre-LN, causal, exact GELU,
    MLP of width 4 · d_model), for three sizes, and that no position sees a later one."""
    for d_model, num_heads, batch, seq in _block_cases(seed):
        call = f"GPTBlock(d_model={d_model}, num_heads={num_heads})"
        block = perturbed(_built_block(GPTBlock, d_model, num_heads, seed, call), seed)
        _expect_block_parts(block, d_model, call)
        x = seeded_randn(batch, seq, d_model, seed=seed)  # (batch, seq, d_model)
        call = f"{call}(x) with x {shape_of(x)}"
        with torch.no_grad():
            out = expect_tensor(_run_block(block, x, call=call), "GPTBlock", x.shape, x.dtype)
            _expect_finite_block(block, x, out, call)
            _expect_causal(block, x, out, call, "outputs")
            twin = gpt2_block_twin(block, d_model, num_heads)
            expected = twin(x, attention_mask=causal_bias(seq))
            if not torch.allclose(out, expected, atol=1e-5):
                _diagnose_block(block, twin, x, out, d_model, num_heads, call)
            expect_close(out, expected, f"{call}, compared with Hugging Face's GPT2Block holding the same weights")
    passed("GPTBlock", "equals GPT-2's block: pre-LN, causal attention, exact GELU in an MLP of width 4 · d_model")


def _built_block(GPTBlock: type, d_model: int, num_heads: int, seed: int, call: str) -> nn.Module:
    """The learner's block, built with a private seed; a block that builds notebook 03's attention with its two
    sizes swapped, MultiHeadAttention(num_heads, d_model), gets a message of its own (PyTorch's AssertionError says
    only that embed_dim must be divisible by num_heads). It is recognised by behaviour: given the two sizes the other
    way round, such a block builds, and its attention has d_model features and num_heads heads."""
    try:
        return built_with_seed(GPTBlock, d_model, num_heads, seed=seed, call=call)
    except CheckFailed as failure:
        try:
            swapped = built_with_seed(GPTBlock, num_heads, d_model, seed=seed, call=call)
            inner = swapped.attention.attention
            sizes = (inner.in_proj_weight.shape[-1], swapped.attention.num_heads)
        except Exception:
            raise failure from failure.__cause__
        if sizes == (d_model, num_heads):
            raise CheckFailed(
                f"{call} raised {type(failure.__cause__).__name__}: self.attention was built with its two sizes "
                f"the other way round, as MultiHeadAttention({num_heads}, {d_model}): {num_heads} features and "
                f"{d_model} heads. Its signature is MultiHeadAttention(d_model, num_heads), d_model first (or pass "
                "both by name)."
            ) from failure.__cause__
        raise


def _expect_finite_block(block: nn.Module, x: torch.Tensor, out: torch.Tensor, call: str) -> None:
    """Fail if the block's outputs hold nan: name a row of the mask that lets a position attend to no key at all."""
    if torch.isfinite(out).all():
        return
    broken = (~torch.isfinite(out)).any(dim=-1).any(dim=0).nonzero().flatten().tolist()  # positions with nan/inf
    masks = []

    def note_the_mask(module: nn.Module, args: tuple, kwargs: dict) -> None:
        masks.append(kwargs["mask"] if "mask" in kwargs else (args[2] if len(args) > 2 else None))

    hook = block.attention.register_forward_pre_hook(note_the_mask, with_kwargs=True)
    try:
        block(x)
    except Exception:
        pass
    finally:
        hook.remove()
    for mask in masks:
        if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and mask.dim() >= 2:
            empty = (~mask.any(dim=-1)).reshape(-1, mask.shape[-2]).any(dim=0).nonzero().flatten().tolist()
            if empty:
                diagonal = mask.shape[-1] == mask.shape[-2] and not mask.diagonal(dim1=-2, dim2=-1).any()
                because = (
                    " The mask leaves out the diagonal, so no position may attend to itself, and position 0 has "
                    "nothing before it: a position attends to itself and to the positions before it, True on and "
                    "below the diagonal (tril(), not tril(diagonal=-1))."
                    if diagonal
                    else " Every position must be allowed at least itself: True on and below the diagonal."
                )
                raise CheckFailed(
                    f"{call} gives nan at position {', '.join(map(str, broken))}: row {empty[0]} of the mask given "
                    "to self.attention is all False, so that position may attend to no key, and a softmax over no "
                    f"key at all is 0 / 0 = nan.{because}"
                )
    raise CheckFailed(
        f"{call} gives nan or inf at position {', '.join(map(str, broken))}; the outputs must be finite. (A row of "
        "the mask that allows no key gives nan; so does an infinite value in a sum.)"
    )


def _is_mask(value) -> bool:
    """Whether an argument given where a sequence (batch, seq, d_model) belongs is a mask: bool, or (seq, seq)."""
    return isinstance(value, torch.Tensor) and (value.dtype == torch.bool or value.dim() == 2)


def _run_block(block: nn.Module, x: torch.Tensor, *, call: str) -> torch.Tensor:
    """The learner's block on x. Four mistakes raise an error inside code the learner did not write, so they get a
    message of their own: the mask passed by position where a sequence belongs, to notebook 03's module (its second
    argument is the context) or to the nn.MultiheadAttention inside it (its third is the value), which PyTorch
    meets with an AssertionError; a mask that is not bool (the reference attention inverts it with ~); and the
    attention's (outputs, weights) tuple used as a tensor."""
    masks, outer_args, inner_args = [], [], []

    def note_the_mask(module: nn.Module, args: tuple, kwargs: dict) -> None:
        masks.append(kwargs["mask"] if "mask" in kwargs else (args[2] if len(args) > 2 else None))
        outer_args.append(args)

    def note_the_inner_call(module: nn.Module, args: tuple, kwargs: dict) -> None:
        inner_args.append(args)

    hooks = [block.attention.register_forward_pre_hook(note_the_mask, with_kwargs=True)]
    if isinstance(getattr(block.attention, "attention", None), nn.MultiheadAttention):
        hooks.append(block.attention.attention.register_forward_pre_hook(note_the_inner_call, with_kwargs=True))
    try:
        return call_learner(block, x, call=call)
    except InputChangedInPlace:
        raise CheckFailed(
            f"{call} changed its input x in place (with `+=`, an indexed assignment or a method ending in _): "
            "write x = x + ..., a new tensor, so that the caller's x stays as it was. In training it can also "
            "stop the backward pass: autograd keeps tensors such as the layer norm's input to compute the "
            "gradient, and refuses one that was changed since."
        ) from None
    except CheckFailed as failure:
        cause = failure.__cause__
        if any(len(args) > 1 and _is_mask(args[1]) for args in outer_args):
            raise CheckFailed(
                f"{call}: the mask went to self.attention as its second positional argument, which is the context "
                "(the sequence the keys and values come from), not the mask, and PyTorch stopped with "
                f"{type(cause).__name__}. Notebook 03's forward is forward(x, context=None, mask=None): pass the mask "
                "by name, mask=..."
            ) from cause
        slots = (None, ("second", "key"), ("third", "value"), ("fourth", "key_padding_mask"))
        misplaced = [slots[i] for args in inner_args for i, value in enumerate(args[1:4], 1) if _is_mask(value)]
        if misplaced:
            (place, slot), *_ = misplaced
            raise CheckFailed(
                f"{call}: nn.MultiheadAttention got the mask as its {place} positional argument, which is the "
                f"{slot}, not the attention mask, and PyTorch stopped with {type(cause).__name__}. Its forward takes "
                "query, key, value, key_padding_mask in that order. Pass the mask by name: attn_mask=... (in "
                "nn.MultiheadAttention, True means may not attend), or call notebook 03's module, self.attention, "
                "with mask=... (True where a position may attend)."
            ) from cause
        wrong_types = [mask.dtype for mask in masks if isinstance(mask, torch.Tensor) and mask.dtype != torch.bool]
        if wrong_types:
            raise CheckFailed(
                f"{call}: the mask given to self.attention has dtype {wrong_types[0]}; the mask must be a bool "
                "tensor, True where a position may attend, such as torch.ones(seq, seq, dtype=torch.bool).tril(). "
                "A 0/1 float mask, torch.tril(torch.ones(seq, seq)), does not work here."
            ) from cause
        if isinstance(cause, TypeError) and "tuple" in str(cause):
            raise CheckFailed(
                f"{call} raised TypeError: {cause}. self.attention(...) returns a tuple (outputs, weights); add only "
                "its outputs to x: self.attention(...)[0]."
            ) from cause
        if _block_right_when_batch_equals_length(block, x.shape[-1]):
            raise CheckFailed(
                f"{call} raised {type(cause).__name__}, and is right for 4 sequences of 4 positions: the mask's size "
                "was taken from the batch axis (x.shape[0]) where the sequence axis is meant (x.shape[1]). The mask "
                "is (seq, seq)."
            ) from cause
        raise
    finally:
        for hook in hooks:
            hook.remove()


def _block_right_when_batch_equals_length(block: nn.Module, d_model: int) -> bool:
    """Whether the block, which failed, gives the right outputs when the batch is as long as the sequence."""
    x = seeded_randn(4, 4, d_model, seed=4)  # (batch, seq, d_model)
    try:
        with torch.no_grad():
            out = block(x)
            return matches(
                out, gpt2_block_twin(block, d_model, block.attention.num_heads)(x, attention_mask=causal_bias(4))
            )
    except Exception:
        return False


def _expect_block_parts(block: nn.Module, d_model: int, call: str) -> None:
    if not isinstance(getattr(block, "attention", None), MultiHeadAttention):
        raise CheckFailed(
            f"{call} needs self.attention = MultiHeadAttention(d_model, num_heads), notebook 03's module from "
            "transformer_course.reference (the check reads its weights)."
        )
    for name in ("ln_1", "ln_2"):
        norm = getattr(block, name, None)
        if not isinstance(norm, nn.Module) or not _is_layer_norm(norm, d_model):
            raise CheckFailed(f"{call} needs self.{name} = nn.LayerNorm(d_model) (or LayerNorm(d_model)).")
    expect_separate_norms(block, ("ln_1", "ln_2"), call)
    mlp = getattr(block, "mlp", None)
    if not isinstance(mlp, nn.Module):
        raise CheckFailed(f"{call} needs self.mlp, a module holding the two nn.Linear layers and the GELU.")
    if mlp_linears(mlp, d_model) is None:
        found = ", ".join(
            f"Linear({m.in_features}, {m.out_features})" for m in mlp.modules() if isinstance(m, nn.Linear)
        )
        raise CheckFailed(
            f"{call}: self.mlp must hold nn.Linear(d_model, 4 * d_model) = Linear({d_model}, {4 * d_model}) and "
            f"nn.Linear(4 * d_model, d_model) = Linear({4 * d_model}, {d_model}): the hidden layer is four times "
            f"wider than the model. Found: {found or 'no nn.Linear'}."
        )


def _is_layer_norm(norm: nn.Module, d_model: int) -> bool:
    if isinstance(norm, nn.LayerNorm):
        return norm.normalized_shape == (d_model,) and norm.elementwise_affine and norm.bias is not None
    gain, bias = getattr(norm, "gain", None), getattr(norm, "bias", None)
    return all(isinstance(p, nn.Parameter) and p.shape == (d_model,) for p in (gain, bias))


def _expect_causal(module: nn.Module, x: torch.Tensor, out: torch.Tensor, call: str, what: str, vocab: int = 0) -> None:
    """Fail if changing the input at positions t and later changes the output at any position before t: vectors
    move by seeded noise (not by a constant, which a layer norm would take out again), token ids to the next id of
    the vocabulary."""
    seq = x.shape[1]
    for t in range(1, seq):
        changed = x.clone()
        later = x[:, t:]
        changed[:, t:] = (later + 1) % vocab if vocab else later + seeded_randn(*later.shape, seed=t, dtype=x.dtype)
        after = module(changed)
        if not torch.allclose(after[:, :t], out[:, :t], atol=1e-5):
            raise CheckFailed(
                f"{call}: changing position {t} and later changed the {what} at positions before {t}, which must "
                "not see the future. The attention needs the causal mask: position i may attend to positions "
                "0 to i only (a (seq, seq) lower-triangular mask, True on and below the diagonal)."
            )


def _diagnose_block(block, twin: GPT2Block, x: torch.Tensor, out, d_model: int, num_heads: int, call: str) -> None:
    _expect_norms_used(block, x, out, call)
    mask = causal_bias(x.shape[1])

    def attention(h: torch.Tensor) -> torch.Tensor:
        return twin.attn(h, attention_mask=mask)[0]

    ln_1, ln_2, mlp = twin.ln_1, twin.ln_2, twin.mlp
    post_ln = ln_1(x + attention(x))
    normalised_residual = ln_1(x) + attention(ln_1(x))
    swapped = x + attention(ln_2(x))
    attended = x + attention(ln_1(x))  # (batch, seq, d_model): right after the first sublayer
    outputs_normalised = x + ln_1(attention(x))  # (batch, seq, d_model): the norm on the sublayer's output
    mistakes = {
        "the layer norms are applied to the sublayers' outputs, x = x + ln_1(attention(x)); pre-LN normalises each "
        "sublayer's input instead: x = x + attention(ln_1(x)), then x = x + mlp(ln_2(x))": outputs_normalised
        + ln_2(mlp(outputs_normalised)),
        "the MLP's output replaces x: there is no residual connection around the MLP. Add its output to x: "
        "x = x + mlp(ln_2(x))": mlp(ln_2(attended)),
        "the attention's output replaces x: there is no residual connection around the attention. Add its output "
        "to x: x = x + attention(ln_1(x))": attention(ln_1(x)) + mlp(ln_2(attention(ln_1(x)))),
        "the MLP has no activation between its two nn.Linear layers, so it is one linear map; put the exact GELU, "
        "nn.GELU(), between them": gpt2_block_twin(block, d_model, num_heads, activation_function="linear")(
            x, attention_mask=mask
        ),
        "the GELU comes after the MLP's second nn.Linear; it goes between the two: nn.Linear(d_model, 4 * d_model), "
        "nn.GELU(), nn.Linear(4 * d_model, d_model)": attended + F.gelu(mlp.c_proj(mlp.c_fc(ln_2(attended)))),
        "you built post-LN, x = ln(x + sublayer(x)); GPT-2 normalises first (pre-LN): "
        "x = x + attention(ln_1(x)), then x = x + mlp(ln_2(x))": ln_2(post_ln + mlp(post_ln)),
        "the residual path carries the normalised x; add each sublayer's output to x itself: "
        "x = x + attention(ln_1(x))": ln_2(normalised_residual) + mlp(ln_2(normalised_residual)),
        "ln_1 and ln_2 are swapped: ln_1 goes before the attention, ln_2 before the MLP": swapped + mlp(ln_1(swapped)),
        "the MLP uses ReLU; GPT-2's MLP uses GELU (nn.GELU())": gpt2_block_twin(
            block, d_model, num_heads, activation_function="relu"
        )(x, attention_mask=mask),
        "the MLP uses the tanh approximation of GELU; use the exact GELU, nn.GELU() (approximate='none')": (
            gpt2_block_twin(block, d_model, num_heads, activation_function="gelu_new")(x, attention_mask=mask)
        ),
    }
    for mistake, wrong in mistakes.items():
        if matches(out, wrong):
            raise CheckFailed(f"{call}: {mistake}.")


def _expect_norms_used(block: nn.Module, x: torch.Tensor, out: torch.Tensor, call: str) -> None:
    """Fail if moving the weights of ln_1 or ln_2 (in a copy of the block) leaves the output as it was: that norm is
    never applied, and the other one usually stands in for it."""
    for name, sublayer in (("ln_1", "attention"), ("ln_2", "MLP")):
        changed = copy.deepcopy(block)
        noise = torch.Generator().manual_seed(7)
        for parameter in getattr(changed, name).parameters():
            parameter.add_(0.5 + torch.rand(parameter.shape, generator=noise))
        if torch.allclose(changed(x), out, atol=1e-6):
            raise CheckFailed(
                f"{call}: changing self.{name}'s weights leaves the output as it was, so {name} is never applied. "
                f"Each sublayer has a layer norm of its own: the {sublayer} reads {name}(x), as in "
                "x = x + attention(ln_1(x)), then x = x + mlp(ln_2(x))."
            )


# Exercise 2 ---------------------------------------------------------------------------------------------


def _model_cases(seed: int) -> list[tuple[dict[str, int], tuple[int, int]]]:
    """(sizes, (batch, seq)): a batch of 2 sequences of 5 (seq < block_size) and a seed-dependent one."""
    return [
        ({"vocab_size": 13, "block_size": 8, "d_model": 8, "num_heads": 2, "num_layers": 2}, (2, 5)),
        (
            {"vocab_size": 17 + seed, "block_size": 6, "d_model": 12, "num_heads": 3, "num_layers": 1 + seed % 2},
            (3, 4 + seed % 2),
        ),
    ]


@learner_facing
def check_gpt(GPT: type, seed: int = 0) -> None:
    """Check the logits against Hugging Face's GPT2LMHeadModel with the learner's weights (learned positions from
    0, pre-LN blocks, final norm, tied output layer), that no logit sees a later token, that the output layer is the
    token embedding itself, the initial scale of the embeddings and the error past block_size (with a correct
    GPTBlock in place of the learner's, except in a student release)."""
    with earlier_exercises_replaced(GPT.__init__, "GPTBlock"):
        for sizes, (batch, seq) in _model_cases(seed):
            call = "GPT(" + ", ".join(f"{name}={value}" for name, value in sizes.items()) + ")"
            model = built_with_seed(GPT, *sizes.values(), seed=seed, call=call)
            _expect_model_parts(model, sizes, call)
            model = perturbed(model, seed)
            ids = torch.randint(sizes["vocab_size"], (batch, seq), generator=torch.Generator().manual_seed(seed))
            _check_logits(model, ids, call)
            _expect_tied_in_behaviour(model, ids, call)
            _check_block_size(model, sizes, call)
        _check_initial_scale(GPT, seed)
    passed("GPT", "equals GPT-2 with the same weights, never looks ahead, its output layer is its embedding table")


def _expect_model_parts(model: nn.Module, sizes: dict[str, int], call: str) -> None:
    vocab, block_size, d_model, layers = (sizes[name] for name in ("vocab_size", "block_size", "d_model", "num_layers"))
    tables = {"token_embedding": (vocab, "one row per token of the vocabulary: nn.Embedding(vocab_size, d_model)")}
    tables["position_embedding"] = (block_size, "one row per position: nn.Embedding(block_size, d_model)")
    for name, (rows, what) in tables.items():
        table = getattr(model, name, None)
        if not isinstance(table, nn.Embedding) or table.weight.shape != (rows, d_model):
            found = f"found {shape_of(table.weight)}" if isinstance(table, nn.Embedding) else "found none"
            raise CheckFailed(f"{call} needs self.{name} with {what}, here ({rows}, {d_model}); {found}.")
    blocks = getattr(model, "blocks", None)
    if isinstance(blocks, (list, tuple)):
        raise CheckFailed(
            f"{call} needs self.blocks = nn.ModuleList of {layers} GPTBlock(d_model, num_heads); a Python "
            f"{type(blocks).__name__} does not register the blocks as parts of the model, so their parameters are "
            "not in model.parameters(): the optimiser would never train them, and .to(device) would not move them."
        )
    if not isinstance(blocks, nn.ModuleList) or len(blocks) != layers:
        raise CheckFailed(f"{call} needs self.blocks = nn.ModuleList of {layers} GPTBlock(d_model, num_heads).")
    if len({id(block) for block in blocks}) != layers:
        raise CheckFailed(f"{call}: the {layers} blocks are one and the same object; create a new block for each.")
    for block in blocks:  # the learner's own GPTBlock where no correct one stands in for it
        _expect_block_parts(block, d_model, f"GPTBlock(d_model={d_model}, num_heads=...) in {call}")
    if not isinstance(getattr(model, "ln_f", None), nn.Module) or not _is_layer_norm(model.ln_f, d_model):
        raise CheckFailed(f"{call} needs self.ln_f, a layer norm over d_model features, applied after the last block.")
    head = getattr(model, "lm_head", None)
    if not isinstance(head, nn.Linear) or head.weight.shape != (vocab, d_model) or head.bias is not None:
        raise CheckFailed(
            f"{call} needs self.lm_head, an nn.Linear from d_model to vocab_size features, without a bias."
        )
    if head.weight is not model.token_embedding.weight:
        if torch.equal(head.weight, model.token_embedding.weight):
            raise CheckFailed(
                f"{call}: self.lm_head.weight holds a copy of the token embedding's values, not the same Parameter. "
                "A copy is a second matrix that training updates on its own, so the two drift apart. Tie them: "
                "self.lm_head.weight = self.token_embedding.weight."
            )
        raise CheckFailed(
            f"{call}: self.lm_head.weight is not the token embedding's weight. Tie them, so that one matrix serves "
            "both: self.lm_head.weight = self.token_embedding.weight."
        )


def _check_logits(model: nn.Module, ids: torch.Tensor, call: str) -> None:
    call = f"{call}(ids) with ids {shape_of(ids)}"
    with torch.no_grad():
        twin = gpt2_twin(model)
        expected = twin(ids).logits
        try:
            logits = call_learner(model, ids, call=call)
        except CheckFailed as failure:
            if _right_when_batch_equals_length(model):
                raise CheckFailed(
                    f"{call} fails, and is right for 4 sequences of 4 tokens: a length was taken from the batch axis "
                    "(ids.shape[0]) where the sequence axis is meant (ids.shape[1]). The position table is indexed "
                    "by torch.arange(seq)."
                ) from failure.__cause__
            if _right_at_full_length(model):
                raise CheckFailed(
                    f"{call} fails, and is right for sequences of block_size tokens: the position vectors were taken "
                    "for all block_size positions (torch.arange(self.block_size), or the whole "
                    "self.position_embedding.weight). A sequence of seq tokens needs the first seq of them: "
                    "torch.arange(seq)."
                ) from failure.__cause__
            raise
        expect_tensor(logits, "GPT", (*ids.shape, model.token_embedding.weight.shape[0]), torch.float32)
        if not torch.allclose(logits, expected, atol=1e-4):
            _diagnose_model(model, twin, ids, logits, call)
        expect_close(logits, expected, f"{call}, compared with Hugging Face's GPT2LMHeadModel holding the same weights")
        _expect_causal(model, ids, logits, call, "logits", vocab=model.token_embedding.weight.shape[0])


def _right_when_batch_equals_length(model: nn.Module) -> bool:
    ids = torch.randint(model.token_embedding.weight.shape[0], (4, 4), generator=torch.Generator().manual_seed(4))
    try:
        logits = model(ids)
    except Exception:
        return False
    return matches(logits, gpt2_twin(model)(ids).logits)


def _right_at_full_length(model: nn.Module) -> bool:
    """Whether the model, which failed on a shorter sequence, gives the right logits for block_size tokens."""
    block_size = model.position_embedding.weight.shape[0]
    ids = torch.randint(
        model.token_embedding.weight.shape[0], (2, block_size), generator=torch.Generator().manual_seed(5)
    )
    try:
        logits = model(ids)
    except Exception:
        return False
    return matches(logits, gpt2_twin(model)(ids).logits)


def _with_final_norm_elsewhere(twin: GPT2LMHeadModel, ids: torch.Tensor, where: str) -> torch.Tensor:
    """GPT-2's logits with ln_f applied at the wrong place: "before" the first block, or after "each" block."""
    body = twin.transformer
    seq = ids.shape[1]
    x = body.wte(ids) + body.wpe(torch.arange(seq))  # (batch, seq, d_model)
    if where == "before":
        x = body.ln_f(x)
    for block in body.h:
        x = block(x, attention_mask=causal_bias(seq))  # (batch, seq, d_model)
        if where == "each":
            x = body.ln_f(x)
    return twin.lm_head(x)  # (batch, seq, vocab)


def _with_the_last_block_alone(twin: GPT2LMHeadModel, ids: torch.Tensor) -> torch.Tensor:
    """GPT-2's logits when every block reads the embeddings and only the last block's output goes on: the blocks
    are not chained."""
    body = twin.transformer
    seq = ids.shape[1]
    x = body.wte(ids) + body.wpe(torch.arange(seq))  # (batch, seq, d_model)
    return twin.lm_head(body.ln_f(body.h[-1](x, attention_mask=causal_bias(seq))))  # (batch, seq, vocab)


def _diagnose_model(model: nn.Module, twin: GPT2LMHeadModel, ids: torch.Tensor, logits, call: str) -> None:
    batch, seq = ids.shape
    d_model = model.token_embedding.weight.shape[1]
    tokens = twin.transformer.wte(ids)  # (batch, seq, d_model)
    counted_from_one = torch.arange(1, seq + 1).expand(batch, seq)
    row_numbers = torch.arange(batch)[:, None].expand(batch, seq)
    without_final_norm = copy.deepcopy(twin)
    without_final_norm.transformer.ln_f = nn.Identity()
    without_positions = copy.deepcopy(twin)
    without_positions.transformer.wpe.weight.zero_()
    mistakes = {
        "the positions are counted from 1; the first token is at position 0: torch.arange(seq)": twin(
            ids, position_ids=counted_from_one
        ).logits,
        "each sequence got the position of its row in the batch (torch.arange(ids.shape[0])) at every token; the "
        "positions run along the sequence axis: torch.arange(ids.shape[1])": twin(ids, position_ids=row_numbers).logits,
        "there are no position embeddings: add self.position_embedding(torch.arange(seq)) to the token "
        "embeddings": without_positions(ids).logits,
        "the token embeddings are multiplied by √d_model; GPT-2 adds token and position embeddings as they are": twin(
            inputs_embeds=tokens * math.sqrt(d_model)
        ).logits,
        "ln_f is not applied: normalise the last block's output with self.ln_f before self.lm_head": (
            without_final_norm(ids).logits
        ),
        "ln_f is applied before the blocks; it belongs after the last one: the blocks' pre-LN leaves their sum "
        "unnormalised, and ln_f normalises it once, just before self.lm_head": _with_final_norm_elsewhere(
            twin, ids, "before"
        ),
        "ln_f is applied after every block; apply it once, after the last block, just before self.lm_head (each "
        "block normalises its own inputs with ln_1 and ln_2)": _with_final_norm_elsewhere(twin, ids, "each"),
        "each block reads the embeddings, and only the last block's output reaches ln_f: the blocks are not "
        "chained. Each block must read the previous block's output, x = block(x), so that the layers stack": (
            _with_the_last_block_alone(twin, ids)
        ),
        "the model returns probabilities, a softmax of the logits; return the logits themselves (F.cross_entropy "
        "and the sampling take logits, and apply the softmax themselves)": twin(ids).logits.softmax(dim=-1),
        "the model returns log-probabilities, a log_softmax of the logits; return the logits themselves "
        "(F.cross_entropy and the sampling take logits)": twin(ids).logits.log_softmax(dim=-1),
    }
    for mistake, wrong in mistakes.items():
        if matches(logits, wrong):
            raise CheckFailed(f"{call}: {mistake}.")


def _expect_tied_in_behaviour(model: nn.Module, ids: torch.Tensor, call: str) -> None:
    """Changing the token embedding in place must change the output layer the same way, in the model and in a
    deep copy of it (as a saved and restored model would be)."""
    for subject, what in ((model, call), (copy.deepcopy(model), f"a copy.deepcopy of {call}")):
        table = subject.token_embedding.weight
        with torch.no_grad():
            before = table.clone()
            table.add_(0.5)
            moved = subject.lm_head.weight.clone()
            table.copy_(before)
        if not torch.equal(moved, before + 0.5):
            raise CheckFailed(
                f"{what}: changing the token embedding in place left self.lm_head.weight as it was, so the two are "
                "separate matrices. Tie them by sharing the Parameter: self.lm_head.weight = "
                "self.token_embedding.weight (not a copy, not a new nn.Parameter)."
            )


def _check_block_size(model: nn.Module, sizes: dict[str, int], call: str) -> None:
    block_size = sizes["block_size"]
    full = torch.zeros(1, block_size, dtype=torch.int64)
    with torch.no_grad():
        full_call = f"{call}(ids) with ids of shape (1, {block_size}), exactly block_size tokens,"
        try:
            call_learner(model, full, call=full_call)
        except CheckFailed as failure:
            if isinstance(failure.__cause__, ValueError):
                raise CheckFailed(
                    f"{failure}. A sequence of block_size tokens fits: positions 0 to block_size - 1 all have a row "
                    "in the position table. Raise the ValueError only when seq > block_size."
                ) from failure.__cause__
            raise
        try:
            model(torch.zeros(1, block_size + 1, dtype=torch.int64))
        except IndexError as error:
            raise CheckFailed(
                f"{call}(ids) with {block_size + 1} tokens stopped with an IndexError inside the position table "
                f"({error}). Check the length first and raise a ValueError that says the sequence is longer than "
                "block_size."
            ) from None
        except ValueError:
            return
        except Exception as error:
            raise CheckFailed(
                f"{call}(ids) with {block_size + 1} tokens raised {type(error).__name__}; raise a ValueError that says "
                "the sequence is longer than block_size (an assert is switched off by python -O, and its "
                "AssertionError says nothing about the input being wrong)."
            ) from None
    raise CheckFailed(
        f"{call}(ids) with {block_size + 1} tokens, one more than block_size, returned logits; it must raise a "
        "ValueError: there is no position embedding for a position past block_size - 1."
    )


def _check_initial_scale(GPT: type, seed: int) -> None:
    sizes = {"vocab_size": 256, "block_size": 64, "d_model": 64, "num_heads": 4, "num_layers": 1}
    call = "GPT(" + ", ".join(f"{name}={value}" for name, value in sizes.items()) + ")"
    model = built_with_seed(GPT, *sizes.values(), seed=seed, call=call)
    linear_std = 1 / math.sqrt(3 * sizes["d_model"])  # nn.Linear's default: uniform within ±1/√in_features
    for name in ("token_embedding", "position_embedding"):
        std = getattr(model, name).weight.std().item()
        # The lower bound lets OpenAI's GPT-2 code pass too, which draws the positions with std 0.01: the std
        # measured from 4 096 such draws is within 0.0005 of 0.01, far from the bound at either end.
        if 0.4 * INIT_STD < std < 2 * INIT_STD:
            continue
        told = (
            f"{call}: self.{name} starts with standard deviation {std:.3f}; initialise it with std {INIT_STD}, as "
            f"the notebook asks (nn.init.normal_)."
        )
        if name == "token_embedding" and 0.8 < std / linear_std < 1.2:
            raise CheckFailed(
                f"{call}: self.token_embedding starts with standard deviation {std:.3f}, which is nn.Linear's "
                f"default initialisation (1/√(3 · d_model) = {linear_std:.3f}): the table holds lm_head's weight "
                "as nn.Linear drew it. Tying with self.token_embedding.weight = self.lm_head.weight replaces the "
                "table's Parameter by lm_head's, so an initialisation done to the table before it is lost. Tie "
                "first and initialise the shared matrix after, or tie the other way: self.lm_head.weight = "
                "self.token_embedding.weight."
            )
        # nn.init.normal_(weight, 0.02) draws N(0.02, 1): its second positional argument is the mean.
        as_mean = (
            " If you wrote nn.init.normal_(weight, 0.02): its second positional argument is the mean, not the "
            "standard deviation; pass std=0.02 by name."
        )
        if 0.8 < std < 1.2 and name == "token_embedding":
            raise CheckFailed(
                f"{told} This is nn.Embedding's N(0, 1): with it the tied output layer starts with logits of size "
                f"about √d_model, and training begins far from a sensible prediction.{as_mean}"
            )
        if 0.8 < std < 1.2:
            raise CheckFailed(
                f"{told} This is nn.Embedding's N(0, 1): the position vectors start far larger than the token "
                f"vectors (std 0.02), and the sum the blocks read is almost all position.{as_mean}"
            )
        raise CheckFailed(told)


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_next_token_loss(next_token_loss, seed: int = 0) -> None:
    """Check against GPT2LMHeadModel(ids, labels=ids).loss, which shifts the labels itself, and against
    F.cross_entropy on the shifted tensors, its gradient, and large logits."""
    for vocab, batch, seq in ((11, 3, 6), (256, 1, 9 + seed % 3)):
        model = _random_language_model(vocab, seed)
        ids = torch.randint(vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))  # (batch, seq)
        with torch.no_grad():
            output = model(ids, labels=ids)
        logits, reference_loss = output.logits, output.loss  # (batch, seq, vocab), ()
        call = f"next_token_loss(logits {shape_of(logits)}, ids {shape_of(ids)})"
        leaf = logits.clone().requires_grad_()
        loss = _run_loss(next_token_loss, leaf, ids, call)
        expect_tensor(loss, "next_token_loss", (), torch.float32)
        expected = _shifted_cross_entropy(logits, ids, reduction="mean")
        if not torch.allclose(loss.detach(), expected, atol=1e-5):
            _diagnose_loss(loss.detach(), logits, ids, call)
        expect_close(loss.detach(), reference_loss, f"{call}, compared with GPT2LMHeadModel(ids, labels=ids).loss")
        _check_gradient(loss, leaf, ids, call)
        large = f"next_token_loss(logits × 1000, ids) with ids {shape_of(ids)}"
        loss = call_learner(next_token_loss, logits * 1000, ids, call=large)
        if not torch.isfinite(loss).all():
            raise CheckFailed(
                f"{large} is {loss.item()}: log(softmax(...)) underflows to log(0) = -inf for large logits. Use "
                "F.cross_entropy or torch.log_softmax, which stay finite."
            )
        expect_close(loss.detach(), _shifted_cross_entropy(logits * 1000, ids, reduction="mean"), large, atol=1e-2)
    passed("next_token_loss", "the mean cross-entropy of predicting token t + 1 at position t, as GPT-2's loss")


def _run_loss(next_token_loss, logits: torch.Tensor, ids: torch.Tensor, call: str) -> torch.Tensor:
    """The learner's loss; two crashes inside F.cross_entropy or .view get a message of their own."""
    try:
        return call_learner(next_token_loss, logits, ids, call=call)
    except CheckFailed as failure:
        cause = failure.__cause__
        if isinstance(cause, RuntimeError) and "view size is not compatible" in str(cause):
            raise CheckFailed(
                f"{call} raised RuntimeError at a .view: a slice along the sequence axis, logits[:, :-1] or "
                "ids[:, 1:], does not lie in memory in order, and .view can only regroup a tensor that does. Use "
                ".reshape (or .flatten), which copies where it must."
            ) from cause
        if _classes_read_on_axis_1(next_token_loss, logits.shape[0]):
            raise CheckFailed(
                f"{call} raised {type(cause).__name__}: F.cross_entropy takes the classes on axis 1, so given the "
                "3-D logits (batch, seq - 1, vocab) it read the positions as the classes. Flatten the logits to "
                "(batch · (seq - 1), vocab) and the targets to (batch · (seq - 1),), or move the vocabulary to axis "
                "1 with .transpose(1, 2)."
            ) from cause
        raise


def _classes_read_on_axis_1(next_token_loss, batch: int) -> bool:
    """Whether the loss, which failed, is F.cross_entropy given the 3-D logits as they are: with seq - 1 = vocab it
    runs, reading the positions as the classes."""
    vocab = 5
    logits = seeded_randn(batch, vocab + 1, vocab, seed=6)  # (batch, seq, vocab) with seq - 1 = vocab
    ids = torch.randint(vocab, (batch, vocab + 1), generator=torch.Generator().manual_seed(6))  # (batch, seq)
    try:
        loss = next_token_loss(logits, ids)
    except Exception:
        return False
    return matches(loss, F.cross_entropy(logits[:, :-1], ids[:, 1:]))


def _random_language_model(vocab: int, seed: int) -> GPT2LMHeadModel:
    """A small GPT-2 with weights N(0, 0.5²) from a private generator: its predictions are far from uniform, so
    that scoring the wrong token changes the loss clearly."""
    model = language_model(gpt2_config(vocab, 16, 8, 2, 1)).eval()
    noise = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(0.5 * torch.randn(parameter.shape, generator=noise))
    return model


@oracle
def _shifted_cross_entropy(logits: torch.Tensor, ids: torch.Tensor, *, reduction: str) -> torch.Tensor:
    """The oracle: position t scored on token t + 1."""
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction=reduction)


def _diagnose_loss(loss: torch.Tensor, logits: torch.Tensor, ids: torch.Tensor, call: str) -> None:
    vocab = logits.shape[-1]
    batch = ids.shape[0]
    mistakes = {
        "there is no shift: position t is scored on token t, which it can already see. Score position t on the "
        "next token: logits[:, :-1] against ids[:, 1:]": F.cross_entropy(logits.flatten(0, 1), ids.flatten()),
        "you dropped the first position's logits instead of the last: logits[:, 1:] against ids[:, 1:] scores "
        "each position on its own token, which it can already see. The last position is the one with nothing after "
        "it: logits[:, :-1] against ids[:, 1:]": F.cross_entropy(logits[:, 1:].flatten(0, 1), ids[:, 1:].flatten()),
        "the shift goes the wrong way: position t + 1 is scored on token t, which lies in its past. Score "
        "logits[:, :-1] against ids[:, 1:]": F.cross_entropy(logits[:, 1:].flatten(0, 1), ids[:, :-1].flatten()),
        "you shifted by two: position t is scored on token t + 2, and the next token, t + 1, is never scored. "
        "Shift by one: logits[:, :-1] against ids[:, 1:]": F.cross_entropy(
            logits[:, :-2].flatten(0, 1), ids[:, 2:].flatten()
        ),
        "you summed the per-token losses; take their mean": _shifted_cross_entropy(logits, ids, reduction="sum"),
        "you summed the losses over each sequence's positions and averaged those sums over the batch; take the "
        "mean over all batch · (seq - 1) predictions, so that the loss does not grow with the sequence's length": (
            _shifted_cross_entropy(logits, ids, reduction="none").view(batch, -1).sum(dim=1).mean()
        ),
        "the loss has the wrong sign: it is the negative log-probability, which training makes smaller": (
            -_shifted_cross_entropy(logits, ids, reduction="mean")
        ),
        "F.nll_loss was given the logits: it expects log-probabilities, and only picks out minus the target's "
        "entry. Apply torch.log_softmax first, or use F.cross_entropy, which does both": F.nll_loss(
            logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()
        ),
    }
    if batch > 1:
        mistakes[
            "the targets were transposed before they were flattened (ids[:, 1:].T): the logits are flattened "
            "sentence by sentence and the targets position by position, so most predictions are scored against "
            "another sentence's token. Flatten both the same way, keeping (batch, seq - 1) in that order"
        ] = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].T.flatten())
    over_positions = "the log-softmax ran over the positions (dim=1)"
    for where, log_probs in (
        ("", F.log_softmax(logits, dim=1)[:, :-1]),  # (batch, seq - 1, vocab)
        (" of the shifted logits", F.log_softmax(logits[:, :-1], dim=1)),  # (batch, seq - 1, vocab)
    ):
        mistakes[
            f"{over_positions}{where}, so each position's scores do not make a distribution over the tokens. The "
            "softmax goes over the vocabulary, the last axis: dim=-1"
        ] = -log_probs.gather(-1, ids[:, 1:, None]).mean()
    mistakes[
        "you divided the summed loss by batch · seq, the number of tokens; there are batch · (seq - 1) predictions, "
        "since the last position has no next token to score. Take the mean over those"
    ] = _shifted_cross_entropy(logits, ids, reduction="sum") / ids.numel()
    if ids.shape[0] > 1:
        mistakes[
            "you shifted along the batch axis (the first dimension); shift along the sequence axis: "
            "logits[:, :-1] against ids[:, 1:]"
        ] = F.cross_entropy(logits[:-1].reshape(-1, vocab), ids[1:].reshape(-1))
        mistakes[
            "you flattened before shifting, so the last position of each sequence was scored on the first token of "
            "the next sequence, which it cannot know. Shift along the sequence axis first (drop each sequence's "
            "last logits and first token), then flatten"
        ] = F.cross_entropy(logits.reshape(-1, vocab)[:-1], ids.reshape(-1)[1:])
    for mistake, wrong in mistakes.items():
        if torch.allclose(loss, wrong.to(loss.dtype), atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")


def _check_gradient(loss: torch.Tensor, leaf: torch.Tensor, ids: torch.Tensor, call: str) -> None:
    if not loss.requires_grad:
        raise CheckFailed(
            f"{call}: the loss is not connected to the logits, so training could not follow its gradient. Did you "
            "use .item(), .detach() or torch.tensor(...) on the way?"
        )
    (gradient,) = torch.autograd.grad(loss, leaf)
    expect_close(gradient, _shifted_gradient(leaf, ids), f"{call}: the gradient with respect to the logits")


@oracle
def _shifted_gradient(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The gradient of the oracle's mean loss with respect to the logits."""
    leaf = logits.detach().clone().requires_grad_()
    (gradient,) = torch.autograd.grad(_shifted_cross_entropy(leaf, ids, reduction="mean"), leaf)
    return gradient


# Exercises 4 and 5: sampling --------------------------------------------------------------------------------

# Checks for notebook 10's sampling exercises: the next-token distribution (temperature, top-k, top-p) and
# generation with it.
#
# Oracles: transformers' own ``TemperatureLogitsWarper``, ``TopKLogitsWarper`` and ``TopPLogitsWarper`` (transformers
# 5.24), applied in the order transformers' ``generate`` applies them, then a softmax; closed forms (temperature 0 is
# the argmax; the top-k set; the top-p set read off the sorted probabilities); and, for generation, a scripted model
# whose next-token logits are a row of a table chosen by the last token, so that the distribution of every generated
# token is known exactly.
#
# A tie at the k-th place has a case of its own: TopKLogitsWarper keeps every token whose logit is at least the k-th
# largest, all the tied ones, and so must an answer (the notebook says so); torch.topk's indices alone keep k of them,
# and do not promise which. The other cases keep top_k clear of ties at the k-th place, so that that mistake is told
# there and nowhere else. Correct answers may differ in one place, which the cases therefore avoid: a total of the most
# probable tokens within rounding of top_p: TopPLogitsWarper removes a token when the sum from the least probable
# token up to it is at most 1 - top_p, which in exact arithmetic is the same rule as "keep the smallest set of most
# probable tokens whose total reaches top_p" (at equality too), but sums taken from the two ends round differently.
# Every case keeps each such total at least 1e-3 away from top_p, and the token that crosses top_p strictly more
# probable than the next one. Ties elsewhere are in the cases. Where top-k and top-p are combined, top_p is chosen so
# that top-p applied before top-k would keep other tokens, so that the order is tested.

VOCAB = 12  # of the logits the distribution checks use
CLEARANCE = 1e-3  # how far every total of the most probable tokens stays from top_p
DRAWS = 4000  # samples per distribution, where a check samples


@oracle
def _warped_by_transformers(logits: torch.Tensor, *, heat: float, keep_k: int | None, keep_mass: float | None):
    """The oracle: transformers' warpers in generate's order (temperature, top-k, top-p), then a softmax."""
    warpers = [TemperatureLogitsWarper(float(heat))]
    if keep_k is not None:
        warpers.append(TopKLogitsWarper(top_k=keep_k))
    if keep_mass is not None:
        warpers.append(TopPLogitsWarper(top_p=keep_mass))
    no_ids = torch.zeros(logits.shape[0], 0, dtype=torch.long)  # the warpers above do not read the ids
    scores = logits
    for warper in warpers:
        scores = warper(no_ids, scores)
    return scores.softmax(dim=-1)  # (batch, vocab)


@oracle
def _closed_form(logits: torch.Tensor, *, heat: float, keep_k: int | None, keep_mass: float | None):
    """The definitions in float64, sorted by hand: (probabilities before top-p, the top-p set), both (batch, vocab)."""
    scaled = logits.double() / heat  # (batch, vocab)
    if keep_k is not None and keep_k < scaled.shape[-1]:
        kth = scaled.topk(keep_k, dim=-1).values[:, -1:]  # (batch, 1)
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    before = scaled.softmax(dim=-1)  # (batch, vocab)
    if keep_mass is None:
        return before, before > 0
    return before, _top_p_set(before, keep_mass)


def _top_p_set(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """The smallest set of most probable tokens whose total reaches top_p, as a mask (batch, vocab): a token is in
    it when the tokens more probable than it add up to less than top_p; the most probable one always is."""
    ordered, order = probs.sort(dim=-1, descending=True)  # (batch, vocab)
    mass_above = ordered.cumsum(dim=-1) - ordered  # (batch, vocab)
    keep = mass_above < top_p
    keep[:, 0] = True
    return torch.zeros_like(keep).scatter(-1, order, keep)


def _clear_top_k(logits: torch.Tensor, wanted: int) -> int:
    """The k nearest to ``wanted`` with no tie at the k-th place in any row."""
    ordered = logits.sort(dim=-1, descending=True).values  # (batch, vocab)
    vocab = logits.shape[-1]
    for k in sorted(range(1, vocab), key=lambda k: (abs(k - wanted), k)):
        if (ordered[:, k - 1] - ordered[:, k] > 1e-4 * (1 + ordered[:, k - 1].abs())).all():
            return k
    raise RuntimeError("no top_k without a tie at the k-th place")  # the check's own fault: never seen


def _clear_top_p(probs: torch.Tensor, wanted: float, before_top_k: torch.Tensor | None = None) -> float:
    """The top_p nearest to ``wanted`` (on a grid of 0.005) that every total of the most probable tokens misses by
    CLEARANCE, and whose crossing token is strictly more probable than the next, in every row. Given the
    probabilities ``before_top_k``, also one for which top-p applied before top-k keeps other tokens in some row."""
    ordered = probs.double().sort(dim=-1, descending=True).values  # (batch, vocab)
    totals = ordered.cumsum(dim=-1)  # (batch, vocab)
    grid = [round(0.005 * i, 3) for i in range(2, 200)]
    for top_p in sorted(grid, key=lambda p: (abs(p - wanted), p)):
        if ((totals - top_p).abs() < CLEARANCE).any():
            continue
        if before_top_k is not None:
            early_totals = before_top_k.double().sort(dim=-1, descending=True).values.cumsum(dim=-1)  # (batch, vocab)
            early_set = _top_p_set(before_top_k.double(), top_p) & (probs > 0)  # (batch, vocab)
            if ((early_totals - top_p).abs() < CLEARANCE).any() or torch.equal(early_set, _top_p_set(probs, top_p)):
                continue
        crossing = (totals < top_p).sum(dim=-1, keepdim=True).clamp(max=ordered.shape[-1] - 2)  # (batch, 1)
        gap = ordered.gather(-1, crossing) - ordered.gather(-1, crossing + 1)  # (batch, 1)
        if (gap > 1e-6).all():
            return top_p
    raise RuntimeError("no top_p clear of the totals")  # the check's own fault: never seen


def _distribution_logits(seed: int) -> torch.Tensor:
    """(4, VOCAB) logits: a plain row, a row of many ties, a row with one tied pair, and a very peaked row."""
    logits = seeded_randn(4, VOCAB, seed=seed) * 1.5  # (4, vocab)
    logits[1] = (logits[1] * 2).round() / 2  # values on a grid of 0.5: many ties
    order = logits[2].argsort()
    logits[2, order[3]] = logits[2, order[7]]  # one tied pair
    logits[3, order[0]] += 12.0  # almost all the mass on one token
    return logits


def _flat_logits(seed: int) -> torch.Tensor:
    """(2, VOCAB) logits: exactly flat, and flat but for tiny differences."""
    return torch.stack([torch.zeros(VOCAB), 1e-3 * seeded_randn(VOCAB, seed=seed + 1)])  # (2, vocab)


def _greedy_logits(seed: int) -> torch.Tensor:
    """(3, VOCAB) logits whose largest entry is ahead of the second by at least 0.1 in every row."""
    logits = seeded_randn(3, VOCAB, seed=seed + 2)  # (3, vocab)
    best = logits.argmax(dim=-1, keepdim=True)  # (3, 1)
    return logits.scatter_add(-1, best, torch.full_like(best, 0.1, dtype=logits.dtype))


def _describe(logits: torch.Tensor, temperature, top_k, top_p) -> str:
    return (
        f"next_token_probabilities(logits of shape {tuple(logits.shape)}, temperature={temperature}, "
        f"top_k={top_k}, top_p={top_p})"
    )


# Exercise 4 ---------------------------------------------------------------------------------------------


@learner_facing
def check_next_token_probabilities(next_token_probabilities, seed: int = 0) -> None:
    """Check against transformers' warpers (temperature, then top-k, then top-p, then softmax) on logits with ties,
    a very peaked and a flat distribution, top_k at and above the vocabulary and top_p = 1; the top-k and top-p sets
    against their definitions, top-k by drawing from the result; temperature 0 against the argmax."""
    logits, flat = _distribution_logits(seed), _flat_logits(seed)
    call = f"next_token_probabilities(logits of shape {tuple(logits.shape)})"
    probs = call_learner(next_token_probabilities, logits, call=call)
    _expect_distribution(probs, logits, 1.0, None, None, call)
    for temperature, wanted_k, wanted_p in [
        (0.5, None, None),
        (2.0, None, None),
        (1.0, 3, None),
        (1.0, None, 0.7),
        (1.0, None, 0.05),  # the most probable token alone is past top_p: it is kept
        (0.8, 6, 0.5),  # top_p chosen so that top-p keeps fewer tokens after top-k than before it
        (1.3, 4, 0.9),
    ]:
        top_k = None if wanted_k is None else _clear_top_k(logits / temperature, wanted_k)
        top_p = None
        if wanted_p is not None:
            before, _ = _closed_form(logits, heat=temperature, keep_k=top_k, keep_mass=None)
            unfiltered = (
                None if top_k is None else _closed_form(logits, heat=temperature, keep_k=None, keep_mass=None)[0]
            )
            top_p = _clear_top_p(before, wanted_p, before_top_k=unfiltered)
        _check_case(next_token_probabilities, logits, temperature, top_k, top_p)
    for case_logits, temperature, top_k, top_p in [
        (flat, 0.7, None, None),
        (flat, 1.0, VOCAB, None),
        (logits, 1.0, VOCAB + 5, None),
        (logits, 0.9, None, 1.0),
        (flat, 1.0, VOCAB + 5, 1.0),
    ]:
        _check_case(next_token_probabilities, case_logits, temperature, top_k, top_p)
    _check_tie_at_kth(next_token_probabilities, seed)
    _check_greedy(next_token_probabilities, seed)
    passed("next_token_probabilities", "equals transformers' temperature, top-k and top-p warpers; 0 is greedy")


def _tied_logits(seed: int) -> tuple[torch.Tensor, int]:
    """(2, VOCAB) logits on a grid of 0.5 (exact ties), each row's tokens in an order drawn with the seed, and a top_k
    from the seed with a tie at the k-th place: in the first row the k-th and (k+1)-th largest logits are equal, in
    the second the (k-1)-th to the (k+1)-th."""
    top_k = 2 + seed % 4
    rows = []
    for row, tied in enumerate(((top_k - 1, top_k), (top_k - 2, top_k - 1, top_k))):
        values = 3.0 - 0.5 * torch.arange(VOCAB, dtype=torch.float32)  # (vocab,): descending, 3.0 to -2.5
        values[list(tied)] = values[tied[0]].item()
        order = torch.randperm(VOCAB, generator=torch.Generator().manual_seed(seed + 10 * row + 5))
        rows.append(values[order])
    return torch.stack(rows), top_k  # (2, vocab)


def _check_tie_at_kth(next_token_probabilities, seed: int) -> None:
    """Top-k where the k-th largest logit is tied: every token tied with it is kept, as TopKLogitsWarper keeps them."""
    logits, top_k = _tied_logits(seed)
    call = _describe(logits, 1.0, top_k, None) + " whose k-th largest logit is tied with the next"
    probs = call_learner(next_token_probabilities, logits, temperature=1.0, top_k=top_k, top_p=None, call=call)
    expect_tensor(probs, "next_token_probabilities", logits.shape, logits.dtype)
    kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (batch, 1)
    allowed = logits >= kth  # (batch, vocab): the k-th largest and every token tied with it
    kept = probs > 0  # (batch, vocab)
    if not (kept & ~allowed).any() and (kept.sum(dim=-1) == top_k).all() and not torch.equal(kept, allowed):
        row = int((kept != allowed).any(dim=-1).nonzero()[0])
        dropped = (allowed[row] & ~kept[row]).nonzero().flatten().tolist()
        raise CheckFailed(
            f"{call}: you kept exactly top_k={top_k} tokens, so in row {row} the token{'s' if len(dropped) > 1 else ''}"
            f" {dropped}, tied with the k-th largest logit ({kth[row, 0].item():g}), got probability 0 while an equal "
            "logit was kept; which of the tied ones goes is left to chance. Keep every token whose logit is at least "
            "the k-th largest, all the tied ones, as transformers' TopKLogitsWarper does: compare the logits with the "
            "k-th largest value (torch.topk(...).values[:, -1:]), not with positions."
        )
    _expect_distribution(probs, logits, 1.0, top_k, None, call)


def _check_case(next_token_probabilities, logits: torch.Tensor, temperature: float, top_k, top_p) -> None:
    call = _describe(logits, temperature, top_k, top_p)
    options = {"temperature": temperature, "top_k": top_k, "top_p": top_p}
    try:
        probs = call_learner(next_token_probabilities, logits, **options, call=call)
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        vocab = logits.shape[-1]
        if top_k is not None and top_k > vocab and _runs(next_token_probabilities, logits, options | {"top_k": vocab}):
            raise CheckFailed(
                f"{failure}. top_k={top_k} is more than the {vocab} tokens of the vocabulary, and torch.topk cannot "
                f"choose more values than there are: keep them all, with min(top_k, vocabulary size)."
            ) from failure.__cause__
        if failure.__cause__ is not None and _right_row_by_row(next_token_probabilities, logits, options):
            raise CheckFailed(
                f"{str(failure).rstrip('.')}. Given one row at a time, it is right: a value computed for each row "
                "(such as the k-th largest logit, or a row's threshold) has shape (batch,), and PyTorch lines that "
                "axis up with the vocabulary axis of the (batch, vocab) logits, not with the rows. Keep the row axis, "
                "shape (batch, 1), with keepdim=True or by indexing with a slice ([:, -1:])."
            ) from failure.__cause__
        raise
    _expect_distribution(probs, logits, temperature, top_k, top_p, call)


def _right_row_by_row(function: Callable, logits: torch.Tensor, options: dict) -> bool:
    """Whether function(logits, **options), which failed on the whole batch, is right on each row alone."""
    if logits.shape[0] < 2:
        return False
    expected = _warped_by_transformers(
        logits, heat=options["temperature"], keep_k=options["top_k"], keep_mass=options["top_p"]
    )  # (batch, vocab)
    for row in range(logits.shape[0]):
        try:
            probs = function(logits[row : row + 1].clone(), **options)  # (1, vocab); a copy it may change
        except Exception:
            return False
        if not matches(probs, expected[row : row + 1]):
            return False
    return True


def _runs(function: Callable, logits: torch.Tensor, options: dict) -> bool:
    """Whether function(logits, **options) returns without an error."""
    try:
        function(logits, **options)
    except Exception:
        return False
    return True


def _expect_distribution(probs, logits: torch.Tensor, temperature: float, top_k, top_p, call: str) -> None:
    expect_tensor(probs, "next_token_probabilities", logits.shape, logits.dtype)
    _diagnose_softmax(probs, logits, temperature, top_k, top_p, call)
    _diagnose_temperature(probs, logits, temperature, top_k, top_p, call)
    if top_p is not None:
        _diagnose_top_p_set(probs, logits, temperature, top_k, top_p, call)
    if top_k is not None and top_p is None and top_k < logits.shape[-1]:
        _diagnose_top_k_off_by_one(probs, logits / temperature, top_k, call)
    _expect_probabilities(probs, top_k, top_p, call)
    if top_k is not None:
        _expect_top_k_set(probs, logits / temperature, top_k, top_p, call)
    if top_p is not None:
        _expect_top_p_set(probs, logits, temperature, top_k, top_p, call)
    expected = _warped_by_transformers(logits, heat=temperature, keep_k=top_k, keep_mass=top_p)
    expect_close(
        probs, expected, f"{call}, compared with transformers' TemperatureLogitsWarper, TopKLogitsWarper and "
        "TopPLogitsWarper in that order, then a softmax"
    )  # fmt: skip


def _diagnose_softmax(probs: torch.Tensor, logits, temperature: float, top_k, top_p, call: str) -> None:
    """Name a softmax taken of probabilities (to "renormalise" after zeroing the filtered ones), and a softmax over
    the batch axis."""
    if temperature == 0:
        return
    expected = _warped_by_transformers(logits, heat=temperature, keep_k=top_k, keep_mass=top_p)  # (batch, vocab)
    if matches(probs, expected):  # right; on flat logits, right and wrong coincide
        return
    zeroed = (logits / temperature).softmax(dim=-1) * (expected > 0)  # (batch, vocab): filtered, not renormalised
    if matches(probs, expected.softmax(dim=-1)) or matches(probs, zeroed.softmax(dim=-1)):
        raise CheckFailed(
            f"{call}: you applied a softmax to probabilities. A softmax exponentiates what it is given, so a removed "
            "token of probability 0 gets exp(0) = 1, as much weight as the others, and the kept tokens' differences "
            "nearly vanish. Take one softmax, of the logits: set the removed logits to -inf before it, or renormalise "
            "probabilities by dividing by their sum."
        )
    if top_k is None and top_p is None and logits.shape[0] > 1 and matches(probs, (logits / temperature).softmax(0)):
        raise CheckFailed(
            f"{call}: the softmax ran over the batch axis (dim=0), so each token's probabilities add up to 1 over "
            "the rows. Each row is one distribution over the vocabulary: the softmax goes over the last axis, dim=-1."
        )


def _diagnose_top_k_off_by_one(probs: torch.Tensor, scaled: torch.Tensor, top_k: int, call: str) -> None:
    """Name the two off-by-one mistakes of top-k, from the tokens kept (a row left empty, full of nan, included)."""
    ordered = scaled.sort(dim=-1, descending=True).values  # (batch, vocab)
    kth = ordered[:, top_k - 1, None]  # (batch, 1)
    mistakes = {
        "you kept the tokens down to the (k+1)-th most probable, that is k + 1": scaled >= ordered[:, top_k, None],
        "you kept only the tokens more probable than the k-th, that is k - 1": scaled > kth,
    }
    right = scaled >= kth  # (batch, vocab): with a tie at the k-th place, one of the mistakes keeps the same tokens
    for mistake, kept in mistakes.items():
        if torch.equal(probs > 0, kept) and not torch.equal(kept, right):
            raise CheckFailed(
                f"{call}: {mistake}. Keep the top_k={top_k} most probable tokens, the k-th included "
                "(torch.topk(logits, top_k) gives them; its last value is the smallest kept)."
            )


def _diagnose_temperature(probs: torch.Tensor, logits, temperature: float, top_k, top_p, call: str) -> None:
    """Name the ways of applying the temperature in the wrong place: after the filters, where they choose other
    tokens at temperature 1, and, where no filter hides them, in the softmax."""
    if temperature not in (0, 1) and (top_k is not None or top_p is not None):
        # computed whatever the answer, so that a release records it with the notebook's own check calls
        _, chosen_at_one = _closed_form(logits, heat=1.0, keep_k=top_k, keep_mass=top_p)  # (batch, vocab)
        _, chosen = _closed_form(logits, heat=temperature, keep_k=top_k, keep_mass=top_p)  # (batch, vocab)
        after_filtering = (logits / temperature).masked_fill(~chosen_at_one, float("-inf")).softmax(dim=-1)
        if not torch.equal(chosen_at_one, chosen) and matches(probs, after_filtering):
            raise CheckFailed(
                f"{call}: you applied the temperature after filtering, so top-k and top-p chose from the "
                "distribution at temperature 1. Divide the logits by the temperature first, then filter: the "
                "temperature changes which tokens top-p keeps."
            )
    if top_k is None and top_p is None and temperature != 1.0:
        plain = logits.softmax(dim=-1)  # (batch, vocab)
        mistakes = {
            "you multiplied the logits by the temperature; divide them by it, so that a temperature below 1 "
            "sharpens the distribution and one above 1 flattens it": (logits * temperature).softmax(dim=-1),
            "you raised the probabilities to the power 1/temperature without renormalising; the rows no longer "
            "sum to 1. Divide the logits by the temperature before the softmax instead": plain ** (1 / temperature),
            "you divided the probabilities by the temperature; divide the logits, before the softmax": (
                plain / temperature
            ),
        }
        for mistake, wrong in mistakes.items():
            if matches(probs, wrong):
                raise CheckFailed(f"{call}: {mistake}.")


def _expect_probabilities(probs: torch.Tensor, top_k, top_p, call: str) -> None:
    """Finite, not negative, and every row sums to 1."""
    if not torch.isfinite(probs).all():
        raise CheckFailed(
            f"{call} contains nan or inf. Is a row left with no token at all? The most probable token must always "
            "be kept, and filtered logits set to -inf before the softmax (not after it)."
        )
    if (probs < 0).any():
        raise CheckFailed(f"{call} contains negative probabilities ({probs.min().item():.3g}).")
    sums = probs.sum(dim=-1)  # (batch,)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-5):
        if (sums < 1).all() and (top_k is not None or top_p is not None):
            raise CheckFailed(
                f"{call}: the rows sum to {', '.join(f'{s:.4f}' for s in sums.tolist())}, not 1: the filtered "
                "tokens were removed but the rest was not renormalised. Divide by what is left (or set the removed "
                "logits to -inf before the softmax), so that the kept tokens share all the probability."
            )
        raise CheckFailed(f"{call}: each row must sum to 1; got {', '.join(f'{s:.4f}' for s in sums.tolist())}.")


def _expect_top_k_set(probs: torch.Tensor, scaled: torch.Tensor, top_k: int, top_p, call: str) -> None:
    """The tokens kept are the top_k best (all of them once top_k reaches the vocabulary); the tokens drawn from the
    result are among them."""
    vocab = scaled.shape[-1]
    allowed = scaled >= scaled.topk(min(top_k, vocab), dim=-1).values[:, -1:]  # (batch, vocab)
    kept = (probs > 0).sum(dim=-1)  # (batch,)
    if top_k >= vocab and (kept < vocab).any():
        raise CheckFailed(
            f"{call}: top_k={top_k} is at least the vocabulary size {vocab}, so every token must be kept; some rows "
            f"keep only {kept.min().item()}. Use min(top_k, vocabulary size)."
        )
    generator = torch.Generator().manual_seed(vocab + top_k)
    draws = torch.multinomial(probs, DRAWS, replacement=True, generator=generator)  # (batch, DRAWS)
    outside = ~allowed.gather(-1, draws)  # (batch, DRAWS)
    if outside.any():
        row = int(outside.any(dim=-1).nonzero()[0])
        raise CheckFailed(
            f"{call}: in {DRAWS} draws from row {row}, tokens outside the {top_k} most probable came out "
            f"{int(outside[row].sum())} times; tokens outside the top k must get probability 0."
        )


def _diagnose_top_p_set(probs: torch.Tensor, logits, temperature: float, top_k, top_p: float, call: str) -> None:
    """Name the usual mistakes of top-p from the tokens kept: the crossing token dropped, top-p before top-k, sums
    in vocabulary order. Tokens below 1e-6 before top-p are not compared: keeping them changes nothing measurable."""
    before, expected_set = _closed_form(logits, heat=temperature, keep_k=top_k, keep_mass=top_p)
    counted = before > 1e-6  # (batch, vocab)
    kept = (probs > 0) & counted  # (batch, vocab); nan counts as not kept
    if torch.equal(kept, expected_set & counted):
        return
    # Dropping the crossing token keeps all of the set but its least probable token (or nothing, or just the most
    # probable token, where that is the set); which of two tied tokens goes is left open.
    expected_count, kept_count = (expected_set & counted).sum(dim=-1), kept.sum(dim=-1)  # (batch,)
    one_short = (kept_count == expected_count - 1) | ((expected_count == 1) & (kept_count == 1))  # (batch,)
    if not (kept & ~expected_set).any() and one_short.all() and (kept_count < expected_count).any():
        raise CheckFailed(
            f"{call}: you dropped the token that takes the total past top_p. Keep the smallest set of most "
            "probable tokens whose total reaches top_p: the token that crosses it is kept (keep a token when the "
            "tokens more probable than it add up to less than top_p)."
        )
    if top_k is not None:
        _, early_set = _closed_form(logits, heat=temperature, keep_k=None, keep_mass=top_p)
        scaled = logits / temperature  # (batch, vocab)
        top_k_set = scaled >= scaled.topk(min(top_k, scaled.shape[-1]), dim=-1).values[:, -1:]  # (batch, vocab)
        if torch.equal(kept, early_set & top_k_set & counted):
            raise CheckFailed(
                f"{call}: you applied top-p before top-k. Apply top-k first, then top-p to the renormalised "
                "distribution of the k tokens left (transformers' generate does the same), so that top_p is a share "
                "of what top-k kept."
            )
    vocabulary_prefix = (probs > 0).long().cummin(dim=-1).values.bool()  # (batch, vocab): kept up to the first gap
    if torch.equal(probs > 0, vocabulary_prefix):
        # Both mistakes keep the first tokens in vocabulary order; they differ in how many.
        kept_count = vocabulary_prefix.sum(dim=-1)  # (batch,)
        summed_in_order = ((before.cumsum(dim=-1) - before) < top_p).sum(dim=-1)  # (batch,)
        not_put_back = expected_set.sum(dim=-1)  # (batch,): the right number, at the wrong places
        causes = {
            "you added up the probabilities in vocabulary order. Sort them from most to least probable first "
            "(torch.sort(..., descending=True)), choose there, and put the choice back in vocabulary order "
            "(scatter)": torch.equal(kept_count, summed_in_order),
            "you chose the right number of tokens in sorted order, but applied that mask to the logits in "
            "vocabulary order: its position i stands for the i-th most probable token. Put it back in vocabulary "
            "order first, with the order torch.sort returned (scatter)": torch.equal(kept_count, not_put_back),
        }
        named = [cause for cause, fits in causes.items() if fits]
        if len(named) == 1:
            raise CheckFailed(f"{call}: the tokens kept are the first ones in vocabulary order: {named[0]}.")
        raise CheckFailed(
            f"{call}: the tokens kept are the first ones in vocabulary order. Either the probabilities were added up "
            "in vocabulary order, or a mask computed in sorted order was applied in vocabulary order. Sort from "
            "most to least probable (torch.sort(..., descending=True)), choose there, and put the choice back in "
            "vocabulary order (scatter, with the order torch.sort returned)."
        )


def _expect_top_p_set(probs: torch.Tensor, logits, temperature: float, top_k, top_p: float, call: str) -> None:
    """The tokens kept are the smallest set of most probable ones whose total reaches top_p (after temperature and
    top-k), as read off the sorted probabilities."""
    before, expected_set = _closed_form(logits, heat=temperature, keep_k=top_k, keep_mass=top_p)
    counted = before > 1e-6  # (batch, vocab)
    kept = (probs > 0) & counted  # (batch, vocab)
    if torch.equal(kept, expected_set & counted):
        return
    row = int((kept != expected_set & counted).any(dim=-1).nonzero()[0])
    raise CheckFailed(
        f"{call}: row {row} keeps tokens {(probs[row] > 0).nonzero().flatten().tolist()}; the smallest set of most "
        f"probable tokens whose total reaches top_p={top_p} is {expected_set[row].nonzero().flatten().tolist()}."
    )


def _check_greedy(next_token_probabilities, seed: int) -> None:
    """Temperature 0 puts all the mass on the argmax, whatever top_k and top_p; a tiny temperature nearly does."""
    logits = _greedy_logits(seed)
    one_hot = torch.zeros_like(logits).scatter(-1, logits.argmax(dim=-1, keepdim=True), 1.0)  # (batch, vocab)
    for temperature, top_k, top_p in ((0.0, None, None), (0, 5, 0.8), (1e-4, None, None)):
        call = _describe(logits, temperature, top_k, top_p)
        probs = call_learner(
            next_token_probabilities, logits, temperature=temperature, top_k=top_k, top_p=top_p, call=call
        )
        if isinstance(probs, torch.Tensor) and probs.shape == logits.shape[:-1]:
            raise CheckFailed(
                f"{call} returned shape {tuple(probs.shape)}, one token per row; return a distribution of shape "
                f"{tuple(logits.shape)}, (batch, vocab), with all the probability on each row's most probable token "
                "and 0 elsewhere."
            )
        expect_tensor(probs, "next_token_probabilities", logits.shape, logits.dtype)
        if temperature == 0 and not torch.isfinite(probs).all():
            raise CheckFailed(
                f"{call} contains nan or inf: dividing by a temperature of 0 does. Temperature 0 means greedy "
                "choice: handle it on its own, with all the probability on the argmax."
            )
        if temperature != 0 and not torch.isfinite(probs).all():
            raise CheckFailed(
                f"{call} contains nan or inf: at a small temperature every probability raised to the power "
                "1/temperature (or exp(logits / temperature) computed by hand) underflows to 0 or overflows. Divide "
                "the logits by the temperature and let torch.softmax, which subtracts the largest logit first, do "
                "the rest."
            )
        expect_close(probs, one_hot, f"{call}: all the probability must be on the most probable token")


# Exercise 5 ---------------------------------------------------------------------------------------------


class _TableModel(nn.Module):
    """A language model whose logits at each position are the row of a fixed table chosen by the token there;
    like a GPT's table of positions, it refuses a context longer than block_size. It notes every context it gets
    and whether autograd was recording."""

    def __init__(self, table: torch.Tensor, block_size: int):
        super().__init__()
        self.table = table  # (vocab, vocab)
        self.scale = nn.Parameter(torch.ones(()))  # so that a call under autograd builds a graph
        self.block_size = block_size
        self.contexts: list[torch.Tensor] = []
        self.recording: list[bool] = []

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        self.contexts.append(ids.detach().clone())
        self.recording.append(torch.is_grad_enabled())
        if ids.shape[-1] > self.block_size:
            raise ValueError(f"a context of {ids.shape[-1]} tokens is longer than block_size={self.block_size}")
        return self.table[ids] * self.scale  # (batch, seq, vocab)


def _table(seed: int, vocab: int) -> torch.Tensor:
    return seeded_randn(vocab, vocab, seed=seed + 3) * 1.5  # (vocab, vocab): row t is the logits after token t


@learner_facing
def check_generate(generate, seed: int = 0) -> None:
    """Check greedy generation (temperature 0) against step-by-step argmax, the contexts the model sees (cropped to
    block_size, the prompt kept, no autograd), the frequencies of sampled tokens against the filtered distributions,
    and that the generator decides the draws."""
    with (
        earlier_exercises_replaced(generate, "next_token_probabilities"),
        torch.random.fork_rng(),
    ):
        _check_greedy_generation(generate, seed)
        _check_frequencies(generate, seed)
        _check_generator_is_used(generate, seed)
    passed("generate", "samples the filtered distribution at the last position, cropped to block_size")


def _run(generate, model, prompt, max_new_tokens: int, call: str, **options) -> torch.Tensor:
    with torch.enable_grad():  # as in a notebook cell: generate itself must turn autograd off
        try:
            ids = call_learner(generate, model, prompt, max_new_tokens, call=call, **options)
        except CheckFailed as failure:
            if "multinomial()" in str(failure) and "'replacement' (position 3)" in str(failure):
                raise CheckFailed(
                    f"{str(failure).rstrip('.')}. torch.multinomial's third positional argument is replacement "
                    "(whether a token may be drawn twice), not the generator: pass the generator by name, "
                    "generator=generator."
                ) from failure.__cause__
            raise
    if isinstance(ids, torch.Tensor) and tuple(ids.shape) == (prompt.shape[0], max_new_tokens):
        raise CheckFailed(
            f"{call} returned only the {max_new_tokens} new tokens of each row: return the prompt followed by the "
            "new tokens, (batch, prompt length + max_new_tokens)."
        )
    expect_tensor(ids, "generate", (prompt.shape[0], prompt.shape[1] + max_new_tokens), torch.int64)
    if any(model.recording):
        raise CheckFailed(
            f"{call}: the model ran with autograd recording, which builds a graph for a backward pass that never "
            "comes. Run generation under torch.no_grad()."
        )
    if not torch.equal(ids[:, : prompt.shape[1]], prompt):
        raise CheckFailed(
            f"{call}: the result must start with the prompt; return the prompt followed by the new tokens."
        )
    return ids


def _check_greedy_generation(generate, seed: int) -> None:
    vocab, block_size = 7, 4
    table = _table(seed, vocab)
    generator = torch.Generator().manual_seed(seed)
    for prompt_length, max_new_tokens in ((2, 5), (6, 3)):  # outgrows block_size; longer than block_size at once
        prompt = torch.randint(vocab, (3, prompt_length), generator=generator)  # (batch, seq)
        model = _TableModel(table, block_size)
        call = f"generate(model, prompt of shape {tuple(prompt.shape)}, {max_new_tokens}, temperature=0)"
        try:
            ids = _run(generate, model, prompt, max_new_tokens, call, temperature=0.0)
        except CheckFailed as failure:
            if any(context.shape[-1] > block_size for context in model.contexts):
                raise CheckFailed(
                    f"{call}: the model got a context of {max(c.shape[-1] for c in model.contexts)} tokens, more "
                    f"than its block_size={block_size}. Crop the context to the last model.block_size tokens "
                    "(ids[:, -model.block_size:]) before each call."
                ) from None
            cause = failure.__cause__
            if len(model.contexts) == 1 and isinstance(cause, RuntimeError) and "number of dimensions" in str(cause):
                raise CheckFailed(
                    f"{failure}, after the model's first call. torch.cat joins tensors with the same number of axes: "
                    "the sequence so far is (batch, seq), so the new tokens must be (batch, 1), the shape "
                    "torch.multinomial(probs, num_samples=1) returns; do not squeeze that axis away."
                ) from cause
            raise failure
        _expect_contexts(model, ids, prompt_length, call)
        expected = _greedy_by_table(table, prompt, max_new_tokens, block_size, position=-1)
        if not torch.equal(ids, expected):
            if torch.equal(ids, _greedy_by_table(table, prompt, max_new_tokens, block_size, position=0)):
                raise CheckFailed(
                    f"{call}: you took the next token from the logits at the first position of the context; it is "
                    "predicted at the last position: logits[:, -1]."
                )
            if torch.equal(ids, _greedy_by_table(table, prompt, max_new_tokens, block_size, position="mean")):
                raise CheckFailed(
                    f"{call}: you averaged the logits over the positions of the context. Each position predicts the "
                    "token after it; the next token is predicted at the last position alone."
                )
            new, expected_new = ids[:, prompt_length:], expected[:, prompt_length:]  # (batch, max_new_tokens)
            if (new == new[0]).all() and not (expected_new == expected_new[0]).all():
                raise CheckFailed(
                    f"{call}: every row got the same new tokens, {new[0].tolist()}, as if all were drawn from the "
                    "first row's distribution. Each row of the batch is a sequence of its own: draw one token per "
                    "row from that row's probabilities, (batch, vocab) in, (batch, 1) out."
                )
            raise CheckFailed(
                f"{call} must take, at every step, the most probable token according to the logits at the last "
                f"position of the context: expected\n{expected.tolist()}\ngot\n{ids.tolist()}."
            )


def _greedy_by_table(table, prompt, max_new_tokens: int, block_size: int, position: int | str) -> torch.Tensor:
    """Greedy generation with the table model, reading the logits at ``position`` of the cropped context;
    position="mean" reproduces a mistake, the logits averaged over the context's positions."""
    ids = prompt
    while ids.shape[1] < prompt.shape[1] + max_new_tokens:
        context = ids[:, -block_size:]  # (batch, <= block_size)
        logits = table[context].mean(dim=1) if position == "mean" else table[context[:, position]]  # (batch, vocab)
        chosen = logits.argmax(dim=-1)  # (batch,)
        ids = torch.cat([ids, chosen[:, None]], dim=1)  # (batch, seq + 1)
    return ids


def _expect_contexts(model: _TableModel, ids: torch.Tensor, prompt_length: int, call: str) -> None:
    """Step i must show the model the last block_size tokens of everything so far."""
    new_tokens = ids.shape[1] - prompt_length
    if len(model.contexts) != new_tokens:
        calls = {1: "once", 2: "twice"}.get(len(model.contexts), f"{len(model.contexts)} times")
        raise CheckFailed(
            f"{call}: the model was called {calls} for {new_tokens} new tokens; call it once per new token, on the "
            "sequence so far, so that each token is predicted from the ones before it, the new ones included."
        )
    for step, context in enumerate(model.contexts):
        end = prompt_length + step
        expected = ids[:, max(0, end - model.block_size) : end]  # (batch, <= block_size)
        if torch.equal(context, expected):
            continue
        if context.shape[-1] < expected.shape[-1]:
            raise CheckFailed(
                f"{call}: at step {step} the model saw {context.shape[-1]} tokens; give it the whole sequence so "
                f"far, cropped to its last model.block_size={model.block_size} tokens."
            )
        if torch.equal(context, ids[:, : context.shape[-1]]):
            raise CheckFailed(
                f"{call}: at step {step} the model saw the first {context.shape[-1]} tokens; keep the last "
                f"model.block_size tokens instead (ids[:, -model.block_size:]), which hold the newest one."
            )
        raise CheckFailed(
            f"{call}: at step {step} the model should see the last {expected.shape[-1]} tokens so far, "
            f"{expected[0].tolist()} in row 0; it saw {context[0].tolist()}."
        )


def _check_frequencies(generate, seed: int) -> None:
    """Two prompts, DRAWS // 2 rows each, two new tokens: each token's frequency against its probability."""
    vocab, block_size, temperature = 6, 4, 0.8
    table = _table(seed + 1, vocab)
    top_k = _clear_top_k(table / temperature, 4)
    before, _ = _closed_form(table, heat=temperature, keep_k=top_k, keep_mass=None)
    top_p = _clear_top_p(before, 0.85)
    after = _warped_by_transformers(table, heat=temperature, keep_k=top_k, keep_mass=top_p)  # (vocab, vocab)
    prompts = torch.randint(vocab, (2, 3), generator=torch.Generator().manual_seed(seed))  # (2, seq)
    prompts[1, -1] = (prompts[0, -1] + 1) % vocab  # two different last tokens
    options = {"temperature": temperature, "top_k": top_k, "top_p": top_p}
    call = f"generate(model, prompt of shape ({DRAWS}, {prompts.shape[1]}), 2, {_options_text(options)}, generator=...)"
    try:
        _expect_sampled(generate, _TableModel(table, block_size), prompts, after, options, call, seed)
    except CheckFailed:
        swapped = options | {"top_k": top_p, "top_p": top_k}
        if _samples_right(generate, _TableModel(table, block_size), prompts, after, swapped, call, seed):
            raise CheckFailed(
                f"{call}: generate passes top_k and top_p on to next_token_probabilities in the wrong order (given "
                "them the other way round, it samples right). Its signature is next_token_probabilities(logits, "
                "temperature, top_k, top_p): pass them by name, top_k=top_k, top_p=top_p."
            ) from None
        raise


def _samples_right(generate, model, prompts, after, options: dict, call: str, seed: int) -> bool:
    try:
        _expect_sampled(generate, model, prompts, after, options, call, seed)
    except Exception:
        return False
    return True


def _expect_sampled(generate, model, prompts, after: torch.Tensor, options: dict, call: str, seed: int) -> None:
    """Generate two tokens after each of DRAWS rows, half of them one prompt, half another, and compare the
    frequencies of the tokens with the probabilities ``after`` (vocab, vocab) of the table model."""
    rows = DRAWS // 2
    prompt = prompts.repeat_interleave(rows, dim=0)  # (DRAWS, seq)
    generator = torch.Generator().manual_seed(seed)
    ids = _run(generate, model, prompt, 2, call, **options, generator=generator)
    _expect_contexts(model, ids, prompt.shape[1], call)
    new = ids[:, -2:].reshape(2, rows, 2)  # (prompt, rows, step)
    most_probable = after.argmax(dim=-1)  # (vocab,)
    if (new[:, :, 0] == most_probable[prompts[:, -1]][:, None]).all() and (
        new[:, :, 1] == most_probable[new[:, :, 0]]
    ).all():
        raise CheckFailed(
            f"{call}: in all {DRAWS} rows you always took the most probable token: draw it from "
            "next_token_probabilities with torch.multinomial(probs, num_samples=1, generator=generator)."
        )  # fmt: skip
    for which in range(2):
        first = after[prompts[which, -1]]  # (vocab,)
        second = first @ after  # (vocab,): the first token is any t, with probability first[t]
        for step, expected in ((0, first), (1, second)):
            _expect_frequencies(new[which, :, step], expected, f"{call}, new token {step + 1} after prompt "
                                f"{prompts[which].tolist()}")  # fmt: skip


def _options_text(options: dict) -> str:
    return ", ".join(f"{name}={value}" for name, value in options.items())


def _expect_frequencies(tokens: torch.Tensor, probabilities: torch.Tensor, what: str) -> None:
    """Each token's frequency within five binomial standard deviations of its probability, sqrt(p (1 - p) / n):
    a single comparison fails by chance with probability 6e-7 (normal approximation), all 24 of a check together
    with at most 24 times that, 1.4e-5; a token of probability 0 must never come out. (With a fixed generator the
    draws of the usual answer are the same at every run; the bound is for answers that draw in another order.)"""
    n = tokens.numel()
    frequencies = torch.bincount(tokens, minlength=probabilities.numel()).double() / n  # (vocab,)
    p = probabilities.double()
    allowed = 5 * (p * (1 - p) / n).sqrt()  # (vocab,)
    for token in range(p.numel()):
        if p[token] == 0 and frequencies[token] > 0:
            raise CheckFailed(
                f"{what}: token {token} has probability 0 after top-k and top-p but came out "
                f"{round(frequencies[token].item() * n)} times in {n} draws. Pass temperature, top_k and top_p on "
                "to next_token_probabilities."
            )
        if (frequencies[token] - p[token]).abs() > allowed[token]:
            raise CheckFailed(
                f"{what}: token {token} came out in {frequencies[token]:.1%} of {n} draws, but its probability is "
                f"{p[token]:.1%} (allowed: ± {allowed[token]:.1%}, five binomial standard deviations). Sample from "
                "next_token_probabilities(logits at the last position, temperature, top_k, top_p)."
            )


def _check_generator_is_used(generate, seed: int) -> None:
    """Equal generators give equal outputs, different ones different outputs, and the global generator is left
    alone; without a generator, generate still runs."""
    vocab, block_size = 6, 4
    table = _table(seed + 2, vocab)
    prompt = torch.randint(vocab, (64, 2), generator=torch.Generator().manual_seed(seed))  # (batch, seq)
    call = f"generate(model, prompt of shape {tuple(prompt.shape)}, 8, generator=torch.Generator().manual_seed(s))"
    outputs = []
    for generator_seed in (seed, seed, seed + 1):
        global_state = torch.get_rng_state()
        generator = torch.Generator().manual_seed(generator_seed)
        outputs.append(_run(generate, _TableModel(table, block_size), prompt, 8, call, generator=generator))
        if not torch.equal(global_state, torch.get_rng_state()):
            raise CheckFailed(
                f"{call} drew from PyTorch's global random generator: pass the generator argument on, "
                "torch.multinomial(probs, num_samples=1, generator=generator), so that a seeded generator decides "
                "the draws."
            )
    if not torch.equal(outputs[0], outputs[1]):
        raise CheckFailed(f"{call}: two generators with the same seed gave different outputs; draw with the generator.")
    if torch.equal(outputs[0], outputs[2]):
        raise CheckFailed(
            f"{call}: generators with seeds {seed} and {seed + 1} gave the same output: the generator argument is "
            "not what draws the tokens. Pass it on to torch.multinomial."
        )
    _run(generate, _TableModel(table, block_size), prompt, 2, "generate(model, prompt, 2) without a generator")
