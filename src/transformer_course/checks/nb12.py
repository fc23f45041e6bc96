"""Checks for notebook 12, the modern block: RMSNorm, rotary position embedding, the SwiGLU feed-forward,
grouped-query attention, and the decoder layer that combines them.

Oracles: Hugging Face's Llama, built from a small configuration (nothing downloaded, eager attention): its
``LlamaRMSNorm``, ``LlamaMLP`` and ``LlamaDecoderLayer`` with the learner's weights copied in; its rotary embedding
(``LlamaRotaryEmbedding`` and ``apply_rotary_pos_emb``, which pair feature i with feature i + d/2: the convention
the notebook states); PyTorch's ``F.rms_norm`` and ``F.scaled_dot_product_attention`` with ``enable_gqa=True``. And
properties: a rotary score depends only on the distance between the two positions; grouped-query attention with as
many groups as heads is multi-head attention, and with one group multi-query attention.
"""

import os

import torch
import torch.nn.functional as F
from torch import nn

# The oracle is built from a configuration: nothing may be fetched. Imported here, with the checks, so that the
# sealed grading run records the library before a learner's code runs.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import (
    LlamaDecoderLayer,
    LlamaMLP,
    LlamaRMSNorm,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

from . import (
    CheckFailed,
    built_with_seed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_differentiable,
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


def llama_config(d_model: int, num_heads: int, num_kv_heads: int, d_hidden: int, *, eps: float, base: float):
    """A Llama configuration of the given sizes, without biases, with eager attention (the written-out form)."""
    config = LlamaConfig(
        hidden_size=d_model,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        intermediate_size=d_hidden,
        rms_norm_eps=eps,
        rope_parameters={"rope_type": "default", "rope_theta": base},
        attention_bias=False,
        mlp_bias=False,
        hidden_act="silu",
    )
    config._attn_implementation = "eager"
    return config


def rotary_oracle(q: torch.Tensor, positions: torch.Tensor, *, rope_base: float) -> torch.Tensor:
    """q (batch, heads, seq, d_head) rotated by transformers' Llama rotary embedding at ``positions`` (seq,).
    rope_base is required and keyword-only, under another name than the exercise's base: this is no answer to it."""
    d_head = q.shape[-1]
    config = llama_config(d_head, 1, 1, 4, eps=1e-6, base=rope_base)
    cos, sin = LlamaRotaryEmbedding(config)(q, positions[None])  # (1, seq, d_head) each
    rotated, _ = apply_rotary_pos_emb(q, q, cos.to(q.dtype), sin.to(q.dtype))
    return rotated


# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_rmsnorm(RMSNorm: type, seed: int = 0) -> None:
    """Compare with transformers' LlamaRMSNorm and PyTorch's F.rms_norm holding the learner's gain, for two eps."""
    for d_model, eps in ((8, 1e-6), (6 + seed, 0.5)):
        call = f"RMSNorm({d_model}, eps={eps})"
        norm = built_with_seed(RMSNorm, d_model, eps=eps, seed=seed, call=call)
        weight = _gain(norm, d_model, call)
        _expect_ones(weight, call)
        with torch.no_grad():
            weight.copy_(1 + 0.5 * seeded_randn(d_model, seed=seed))
        oracle = LlamaRMSNorm(d_model, eps=eps)
        oracle.weight.data.copy_(weight.detach())
        x = 3 * seeded_randn(2, 5, d_model, seed=seed + 1) + 1  # (2, 5, d_model): a mean far from zero
        try:
            out = call_learner(norm, x, call=f"{call}(x)")
        except CheckFailed as failure:
            if isinstance(failure.__cause__, RuntimeError) and _without_keepdim_fails(x, weight.detach(), eps):
                raise CheckFailed(
                    f"{failure}\nThe mean of the squares over the last axis is {shape_of(x.shape[:-1])} without "
                    f"keepdim=True, so it cannot divide x {shape_of(x)}: keep that axis with size 1, "
                    f"{shape_of((*x.shape[:-1], 1))}, so that it divides every feature of its own vector."
                ) from failure.__cause__
            raise
        expect_tensor(out, f"{call}(x)", x.shape, x.dtype)
        expected = oracle(x)
        if not matches(out, expected):
            _diagnose_rmsnorm(norm, out, x, weight.detach(), eps, call)
            expect_close(out, expected, f"{call}(x), compared with transformers' LlamaRMSNorm")
    passed("RMSNorm", "equals LlamaRMSNorm: x / √(mean(x²) + ε) times the gain")


def _gain(norm: nn.Module, d_model: int, call: str) -> nn.Parameter:
    weight = getattr(norm, "weight", None)
    if not (isinstance(weight, nn.Parameter) and tuple(weight.shape) == (d_model,)):
        raise CheckFailed(
            f"{call} must hold its gain as self.weight, an nn.Parameter of shape ({d_model},) starting at ones, as "
            "Llama names it (the check copies it into transformers' LlamaRMSNorm)."
        )
    if len(list(norm.parameters())) != 1:
        raise CheckFailed(f"{call} has parameters besides its gain weight: RMSNorm has no bias.")
    return weight


def _expect_ones(weight: nn.Parameter, call: str) -> None:
    if not torch.equal(weight.detach(), torch.ones_like(weight)):
        raise CheckFailed(
            f"{call} starts its gain self.weight at {_first_values(weight)}, not at ones: a new RMSNorm must only "
            "rescale each vector to a root mean square of 1, and training moves the gain from there. Create it "
            "with torch.ones(d_model)."
        )


def _first_values(weight: torch.Tensor) -> str:
    values = ", ".join(f"{value:.3g}" for value in weight.detach().flatten()[:3].tolist())
    return f"[{values}, ...]"


def _without_keepdim_fails(x: torch.Tensor, weight: torch.Tensor, eps: float) -> bool:
    """Whether the forward written without keepdim=True raises as well (the mean's shape cannot broadcast)."""
    try:
        x * torch.rsqrt(x.pow(2).mean(dim=-1) + eps) * weight
    except RuntimeError:
        return True
    return False


def _diagnose_rmsnorm(norm: nn.Module, out, x: torch.Tensor, weight: torch.Tensor, eps: float, call: str) -> None:
    centred = x - x.mean(dim=-1, keepdim=True)
    mistakes = {
        "subtracts the mean first, as layer norm does: RMSNorm divides x itself by its root mean square, without "
        "centring it": centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps) * weight,
        "adds ε after the square root: it belongs inside, √(mean(x²) + ε)": x
        / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps)
        * weight,
        "leaves out the gain self.weight: multiply the normalised x by it": F.rms_norm(x, (x.shape[-1],), eps=eps),
        "divides by the mean of the squares plus ε without taking its square root: RMSNorm divides by the ROOT "
        "mean square, √(mean(x²) + ε) (torch.sqrt, or multiply by torch.rsqrt)": x
        / (x.pow(2).mean(-1, keepdim=True) + eps)
        * weight,
        "divides by the root of the SUM of squares over the features; take their mean": x
        / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps)
        * weight,
        "multiplies by the gain before normalising: the root mean square is then that of x·g, so the gain changes "
        "what each vector is divided by. Divide x by its own root mean square, then multiply by self.weight": (
            (x * weight) * torch.rsqrt((x * weight).pow(2).mean(-1, keepdim=True) + eps)
        ),
    }
    for mistake, result in mistakes.items():
        if matches(out, result):
            raise CheckFailed(f"{call}(x) {mistake}.")
    mean_absolute = x.abs().mean(-1, keepdim=True)  # (..., 1)
    for result in (x / (mean_absolute + eps), x / torch.sqrt(mean_absolute**2 + eps)):  # ε outside or inside
        if matches(out, result * weight):
            raise CheckFailed(
                f"{call}(x) divides by the mean of |x|, the features' mean absolute value: RMSNorm divides by their "
                "ROOT MEAN SQUARE, √(mean(x²) + ε): square the features, average the squares, then take the root."
            )
    fixed_eps = (1e-5, 1e-6, 1e-8, 0.0)
    if any(matches(out, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + fixed) * weight) for fixed in fixed_eps):
        _name_fixed_eps(norm, weight, fixed_eps, call)
    _other_means(out, x, weight, eps, call)


def _name_fixed_eps(norm: nn.Module, weight: torch.Tensor, fixed_eps: tuple, call: str) -> None:
    """The norm ignores the eps it was given. On the check's inputs, whose mean square is large, the small ε
    values all give the same numbers; on an input of size 1e-4 (mean square about 1e-8) they differ."""
    tiny = 1e-4 * seeded_randn(2, weight.shape[0], seed=7)  # (2, d_model)
    small = call_learner(norm, tiny, call=f"{call}(x) with x of size 1e-4")
    for fixed in fixed_eps:
        if matches(small, tiny * torch.rsqrt(tiny.pow(2).mean(-1, keepdim=True) + fixed) * weight):
            if fixed == 0.0:
                raise CheckFailed(
                    f"{call}(x) leaves ε out: divide by √(mean(x²) + ε), with the eps given to __init__ (kept on "
                    "self), so that a vector of zeros does not divide by zero."
                )
            raise CheckFailed(
                f"{call}(x) uses ε = {fixed:g} whatever eps it was given: keep the eps passed to __init__ (on "
                "self) and use it in forward."
            )
    raise CheckFailed(
        f"{call}(x) seems to use a fixed ε, not the eps it was given: keep the eps passed to __init__ (on self) "
        "and use it in forward."
    )


def _other_means(out, x: torch.Tensor, weight: torch.Tensor, eps: float, call: str) -> None:
    for dim, axis in ((1, "the sequence, dim 1"), (0, "the batch, dim 0"), (None, "every number of x at once")):
        mean_square = x.pow(2).mean() if dim is None else x.pow(2).mean(dim, keepdim=True)
        if matches(out, x * torch.rsqrt(mean_square + eps) * weight):
            raise CheckFailed(
                f"{call}(x) takes the mean of the squares over {axis}: RMSNorm normalises each position's vector on "
                "its own, so the mean runs over the features, the last axis (dim=-1, keepdim=True)."
            )
    for correction in (0, 1):  # torch.var and torch.std divide by d - 1 unless told otherwise
        variance = x.var(dim=-1, keepdim=True, correction=correction)
        for result in (x / torch.sqrt(variance + eps) * weight, x / (variance.sqrt() + eps) * weight):
            if matches(out, result):
                raise CheckFailed(
                    f"{call}(x) divides by the standard deviation of the features (torch.std or torch.var), their "
                    "spread around their mean: RMSNorm divides by their root mean square, √(mean(x²) + ε), which "
                    "takes no mean out. The two differ when the mean is not 0, as here."
                )


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_apply_rope(apply_rope, seed: int = 0) -> None:
    """Compare with transformers' Llama rotary embedding at given positions (not 0, 1, ...), for two bases; then
    the defining property: the score of q at position m and k at position n depends only on m - n."""
    for d_head, base in ((8, 10000.0), (12, 500.0 + 100 * seed)):
        q = seeded_randn(2, 3, 6, d_head, seed=seed)  # (batch, heads, seq, d_head)
        positions = torch.arange(6) * (2 + seed) + 5  # (seq,): not 0, 1, ..., so that using them shows
        call = f"apply_rope(q, positions, base={base}) with q {tuple(q.shape)}"
        try:
            out = call_learner(apply_rope, q, positions, base=base, call=call)
        except CheckFailed as failure:
            if isinstance(failure.__cause__, RuntimeError):  # PyTorch refused to combine the shapes
                raise CheckFailed(
                    f"{failure}\nThe halves x₁ and x₂ are {shape_of((*q.shape[:-1], d_head // 2))}, (..., seq, "
                    "d_head/2): the angles m·θ_i, and their cos and sin, must be a table of shape (seq, d_head/2), "
                    "one row per position and one column per pair, to broadcast against them."
                ) from failure.__cause__
            raise
        expect_tensor(out, call, q.shape, q.dtype)
        expected = rotary_oracle(q, positions, rope_base=base)
        if not matches(out, expected):
            _diagnose_rope(apply_rope, out, q, positions, base, call)
            expect_close(out, expected, f"{call}, compared with transformers' Llama rotary embedding")
    _check_relative(apply_rope, seed)
    q = seeded_randn(1, 2, 4, 8, seed=seed + 4).requires_grad_()  # (batch, heads, seq, d_head)
    call = f"apply_rope(q, positions) with q {tuple(q.shape)} that requires grad"
    expect_differentiable(call_learner(apply_rope, q, torch.arange(4), call=call), call, source=q)
    passed("apply_rope", "rotates as Llama does, and a score depends only on the distance between the positions")


def _angles(positions: torch.Tensor, d_head: int, base: float, *, exponent_step: float, first: int = 0) -> torch.Tensor:
    """(seq, d_head / 2): the angle of each position and frequency, θ_i = base^(-exponent_step·i / d), with i
    counted from ``first``."""
    frequencies = base ** (-exponent_step * torch.arange(first, first + d_head // 2) / d_head)
    return positions[:, None].to(torch.float32) * frequencies


def _rotated_pairs(q: torch.Tensor, angles: torch.Tensor, *, adjacent: bool) -> torch.Tensor:
    """q rotated pair by pair by ``angles``: pairs (i, i + d/2), or (2i, 2i + 1) if ``adjacent``."""
    if adjacent:
        first, second = q[..., 0::2], q[..., 1::2]
    else:
        first, second = q.chunk(2, dim=-1)
    cos, sin = angles.cos(), angles.sin()
    turned = (first * cos - second * sin, first * sin + second * cos)
    if adjacent:
        return torch.stack(turned, dim=-1).flatten(-2)
    return torch.cat(turned, dim=-1)


def _rotated_halves(q: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """q turned as x·cos + (-x₂, x₁)·sin with ``angles`` (seq, d_head), one per feature: the halves convention when
    the angles of the two halves are the same, something else when they are not."""
    half = q.shape[-1] // 2
    swapped = torch.cat([-q[..., half:], q[..., :half]], dim=-1)
    return q * angles.cos() + swapped * angles.sin()


def _diagnose_rope(apply_rope, out, q, positions, base: float, call: str) -> None:
    d_head = q.shape[-1]
    right = _angles(positions, d_head, base, exponent_step=2.0)
    first, second = q.chunk(2, dim=-1)
    features = torch.arange(d_head)  # (d_head,): an index over every feature, not over the pairs
    per_pair = (
        "there are d/2 frequencies, one per pair, θ_i = base^(-2i/d) for i = 0 .. d/2 - 1, and features i and "
        "i + d/2 turn by the same angle"
    )
    cos, sin = right.cos(), right.sin()
    mistakes = {
        "puts the two halves of the result in the wrong order: the first half is x₁ cos mθ - x₂ sin mθ, the second "
        "x₁ sin mθ + x₂ cos mθ": torch.cat([first * sin + second * cos, first * cos - second * sin], -1),
        "turns every pair by the same angle m, as if every θ_i were 1: the exponents -2i/d all came out 0, as "
        "integer division (//) gives. Compute them in floating point, so that θ_i = base^(-2i/d) falls from 1 "
        "towards 1/base": _rotated_pairs(
            q, positions[:, None].to(torch.float32).expand(-1, d_head // 2), adjacent=False
        ),
        "lays out cos and sin for adjacent pairs (each angle repeated in place: θ_0, θ_0, θ_1, θ_1, ...) while it "
        "pairs the halves: features i and i + d/2 form pair i, so both must turn by the angle of pair i": (
            _rotated_halves(q, right.repeat_interleave(2, dim=-1))
        ),
        f"takes one frequency per feature, base^(-j/d) for j = 0 .. d - 1: {per_pair}": _rotated_halves(
            q, positions[:, None].to(torch.float32) * base ** (-features / d_head)
        ),
        f"takes one frequency per feature, base^(-2j/d) for j = 0 .. d - 1: {per_pair}": _rotated_halves(
            q, positions[:, None].to(torch.float32) * base ** (-2 * features / d_head)
        ),
        "swaps cos and sin: pair i turns as x₁ cos - x₂ sin (first half) and x₁ sin + x₂ cos (second half)": (
            torch.cat([first * right.sin() - second * right.cos(), first * right.cos() + second * right.sin()], -1)
        ),
        "rotates adjacent pairs (features 0 and 1, 2 and 3, ...). This course follows Llama in transformers: "
        "feature i is paired with feature i + d/2 (the two halves), so rotate (x[..., :d/2], x[..., d/2:])": (
            _rotated_pairs(q, right, adjacent=True)
        ),
        "rotates the other way: the first half becomes x₁ cos θ - x₂ sin θ, the second x₁ sin θ + x₂ cos θ": (
            _rotated_pairs(q, -right, adjacent=False)
        ),
        "uses the frequencies base^(+2i/d), which grow with i: θ_i = base^(-2i/d) has a minus sign in the "
        "exponent, so that the first pair turns by one radian per position and the others more and more "
        "slowly": _rotated_pairs(q, _angles(positions, d_head, base, exponent_step=-2.0), adjacent=False),
        "counts the pairs from i = 1 to d/2: they run from i = 0 to d/2 - 1, so that θ_0 = 1 (the first pair "
        "turns by one radian per position)": _rotated_pairs(
            q, _angles(positions, d_head, base, exponent_step=2.0, first=1), adjacent=False
        ),
        "gives the second half the wrong sign: it is x₁ sin mθ + x₂ cos mθ (the first half x₁ cos mθ - x₂ sin mθ), "
        "so that each pair turns as a rotation and keeps its length": torch.cat(
            [first * cos - second * sin, first * sin - second * cos], -1
        ),
        "uses the frequencies base^(-i/d); they are θ_i = base^(-2i/d) for i = 0 .. d/2 - 1": _rotated_pairs(
            q, _angles(positions, d_head, base, exponent_step=1.0), adjacent=False
        ),
        "rotates by 0, 1, 2, ... instead of the positions it was given": _rotated_pairs(
            q, _angles(torch.arange(q.shape[-2]), d_head, base, exponent_step=2.0), adjacent=False
        ),
        "ignores base: use it for the frequencies, θ_i = base^(-2i/d)": _rotated_pairs(
            q, _angles(positions, d_head, 10000.0, exponent_step=2.0), adjacent=False
        ),
        "turns only the first half of the features, as a rotary embedding of size d/2 (as GPT-NeoX's rotary_pct "
        "or a partial rotary factor does), and leaves the second half as it is. Here RoPE turns the whole head: "
        "pair i is features i and i + d/2, for i = 0 .. d/2 - 1": torch.cat(
            [_rotated_pairs(first, _angles(positions, d_head // 2, base, exponent_step=2.0), adjacent=False), second],
            dim=-1,
        ),
    }
    for mistake, result in mistakes.items():
        if matches(out, result):
            raise CheckFailed(f"{call} {mistake}.")
    _diagnose_angles(out, q, positions, right, call)


def _diagnose_angles(out, q: torch.Tensor, positions: torch.Tensor, right: torch.Tensor, call: str) -> None:
    """If every pair (i, i + d/2) is turned, at each position, by one angle the same in every batch and head, but
    not by m·θ_i, say at which position and pair the angle is off and by how much."""
    if not (isinstance(out, torch.Tensor) and out.shape == q.shape):
        return
    (x1, x2), (y1, y2) = q.chunk(2, dim=-1), out.detach().float().chunk(2, dim=-1)
    if not torch.allclose(x1**2 + x2**2, y1**2 + y2**2, atol=1e-4):
        return  # not a rotation of the pairs
    turned = torch.atan2(x1 * y2 - x2 * y1, x1 * y1 + x2 * y2)  # (..., seq, d/2): the angle of each pair
    if not torch.allclose(turned, turned[:1, :1].expand_as(turned), atol=1e-4):
        return  # not one angle per position and pair
    off = torch.remainder(turned[0, 0] - right + torch.pi, 2 * torch.pi) - torch.pi  # (seq, d/2), in (-π, π]
    _name_still_pairs(turned[0, 0], off, call)
    row, pair = (int(i) for i in torch.unravel_index(off.abs().argmax(), off.shape))
    expected = torch.remainder(right[row, pair] + torch.pi, 2 * torch.pi) - torch.pi
    raise CheckFailed(
        f"{call} turns each pair (i, i + d/2) as a rotation, but by other angles than m·θ_i: pair {pair} at "
        f"position m = {positions[row].item()} turns by {turned[0, 0, row, pair].item():.4g} radians where it should "
        f"turn by m·θ_{pair} = {expected.item():.4g} (both modulo 2π). Check the frequencies θ_i = base^(-2i/d) for "
        "i = 0 .. d/2 - 1: 1 for the first pair, falling towards 1/base."
    )


def _name_still_pairs(turned: torch.Tensor, off: torch.Tensor, call: str) -> None:
    """Fail if some pairs turn by m·θ_i and the others not at all (``turned`` and ``off``: (seq, d/2) angles)."""
    still = torch.isclose(turned, torch.zeros_like(turned), atol=1e-4).all(dim=0)  # (d/2,): pairs left as they are
    right = torch.isclose(off, torch.zeros_like(off), atol=1e-4).all(dim=0) & ~still  # (d/2,): turned by m·θ_i
    if not (still | right).all() or not still.any():
        return
    if not right.any() or still.all():
        raise CheckFailed(f"{call} returns x as it is: every pair i turns, by m·θ_i at position m.")
    names = _pair_ranges(still.nonzero().flatten().tolist())
    raise CheckFailed(
        f"{call} turns {_pair_ranges(right.nonzero().flatten().tolist())} by m·θ_i but leaves {names} as they are: "
        f"all d/2 pairs turn, pair i (features i and i + d/2) by m·θ_i with θ_i = base^(-2i/d) for i = 0 .. d/2 - 1, "
        "so θ has d/2 entries, one per pair."
    )


def _pair_ranges(pairs: list[int]) -> str:
    """[0, 1, 3] as "pairs 0 to 1 and pair 3"."""
    runs = []
    for pair in pairs:
        if runs and pair == runs[-1][1] + 1:
            runs[-1][1] = pair
        else:
            runs.append([pair, pair])
    words = [f"pair {a}" if a == b else f"pairs {a} to {b}" for a, b in runs]
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def _check_relative(apply_rope, seed: int) -> None:
    q, k = seeded_randn(1, 1, 1, 16, seed=seed + 2), seeded_randn(1, 1, 1, 16, seed=seed + 3)
    scores = []
    for shift in (0, 7, 50 + seed):
        m, n = torch.tensor([9 + shift]), torch.tensor([4 + shift])
        call = f"apply_rope at positions m = {m.item()} and n = {n.item()}"
        rotated_q = call_learner(apply_rope, q, m, base=10000.0, call=call)
        rotated_k = call_learner(apply_rope, k, n, base=10000.0, call=call)
        scores.append((rotated_q * rotated_k).sum())
    if not torch.allclose(torch.stack(scores), scores[0], atol=1e-4):
        raise CheckFailed(
            "q·k after the rotation changes when both positions move by the same amount: "
            f"{', '.join(f'{s.item():.4f}' for s in scores)} for (m, n) = (9, 4), (16, 11), ({59 + seed}, "
            f"{54 + seed}). Rotate each pair of features by the same angle m·θ_i in q and n·θ_i in k."
        )


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_swi_glu(SwiGLU: type, seed: int = 0) -> None:
    """Compare with transformers' LlamaMLP holding the learner's weights."""
    d_model, d_hidden = 8, 12 + 2 * seed
    call = f"SwiGLU({d_model}, {d_hidden})"
    mlp = built_with_seed(SwiGLU, d_model, d_hidden, seed=seed, call=call)
    weights = _swiglu_weights(mlp, d_model, d_hidden, call)
    oracle = LlamaMLP(llama_config(d_model, 1, 1, d_hidden, eps=1e-6, base=10000.0))
    oracle.load_state_dict(weights)
    x = seeded_randn(2, 5, d_model, seed=seed)  # (2, 5, d_model)
    out = call_learner(mlp, x, call=f"{call}(x)")
    expect_tensor(out, f"{call}(x)", x.shape, x.dtype)
    with torch.no_grad():
        expected = oracle(x)
    if not matches(out, expected):
        _diagnose_swiglu(out, x, weights, call)
        expect_close(out, expected, f"{call}(x), compared with transformers' LlamaMLP")
    passed("SwiGLU", "equals LlamaMLP: down_proj(silu(gate_proj(x)) * up_proj(x))")


def _swiglu_weights(mlp: nn.Module, d_model: int, d_hidden: int, call: str) -> dict[str, torch.Tensor]:
    shapes = {"gate_proj": (d_hidden, d_model), "up_proj": (d_hidden, d_model), "down_proj": (d_model, d_hidden)}
    for name, shape in shapes.items():
        layer = getattr(mlp, name, None)
        if not (isinstance(layer, nn.Linear) and tuple(layer.weight.shape) == shape):
            raise CheckFailed(
                f"{call} must hold {', '.join(shapes)} as nn.Linear layers, Llama's names (the check copies their "
                f"weights into transformers' LlamaMLP); {name} should map {shape[1]} features to {shape[0]}."
            )
        if layer.bias is not None:
            raise CheckFailed(f"{call}: {name} has a bias; Llama's feed-forward layers have none (bias=False).")
    return {f"{name}.weight": getattr(mlp, name).weight.detach().clone() for name in shapes}


def _diagnose_swiglu(out, x: torch.Tensor, weights: dict, call: str) -> None:
    gate, up, down = (weights[f"{name}.weight"] for name in ("gate_proj", "up_proj", "down_proj"))
    mistakes = {
        "applies SiLU to up_proj(x) instead of gate_proj(x): the gate is the branch that goes through SiLU": (
            F.silu(x @ up.T) * (x @ gate.T)
        ),
        "gates with the sigmoid alone, σ(gate_proj(x)), as the first gated linear unit did; SwiGLU's gate is SiLU, "
        "z·σ(z), the sigmoid times its own input": torch.sigmoid(x @ gate.T) * (x @ up.T),
        "uses GELU; SwiGLU's gate goes through SiLU (x·sigmoid(x), F.silu)": F.gelu(x @ gate.T) * (x @ up.T),
        "uses ReLU; SwiGLU's gate goes through SiLU (x·sigmoid(x), F.silu)": F.relu(x @ gate.T) * (x @ up.T),
        "uses hardswish (F.hardswish), MobileNetV3's piecewise approximation of swish; SwiGLU's gate is SiLU "
        "itself, z·σ(z) (F.silu, which PyTorch's documentation also calls swish)": F.hardswish(x @ gate.T) * (x @ up.T),
        "adds the two branches; SwiGLU multiplies them, element by element": F.silu(x @ gate.T) + (x @ up.T),
        "applies SiLU to the product of the two branches: only the gate goes through SiLU, and its result "
        "multiplies up_proj(x), silu(gate_proj(x)) * up_proj(x)": F.silu((x @ gate.T) * (x @ up.T)),
        "applies SiLU to both branches: only the gate goes through SiLU; up_proj(x) multiplies it as it is, "
        "silu(gate_proj(x)) * up_proj(x)": F.silu(x @ gate.T) * F.silu(x @ up.T),
    }
    for mistake, hidden in mistakes.items():
        if matches(out, hidden @ down.T):
            raise CheckFailed(f"{call}(x) {mistake}.")
    for inside, where in ((F.silu(x @ gate.T) * (x @ up.T), ""), ((x @ gate.T) * (x @ up.T), " instead")):
        if matches(out, F.silu(inside @ down.T)):
            raise CheckFailed(
                f"{call}(x) applies SiLU to the output of down_proj{where}: SiLU gates gate_proj(x) inside the "
                "network, and down_proj's output is returned as it is, down_proj(silu(gate_proj(x)) * up_proj(x))."
            )


# Exercise 4 ---------------------------------------------------------------------------------------------


def _gqa_inputs(seed: int, heads: int, kv_heads: int, seq: int = 7, d_head: int = 8):
    q = seeded_randn(2, heads, seq, d_head, seed=seed)
    k = seeded_randn(2, kv_heads, seq, d_head, seed=seed + 1)
    v = seeded_randn(2, kv_heads, seq, d_head, seed=seed + 2)
    return q, k, v


@learner_facing
def check_grouped_query_attention(grouped_query_attention, seed: int = 0) -> None:
    """Compare with F.scaled_dot_product_attention(enable_gqa=True) for several groupings, without a mask, with a
    causal one and with one that is not causal (the function must use the mask it is given); with one key head per
    query head it must be multi-head attention, with one key head for all multi-query attention."""
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    scattered = (seeded_randn(7, 7, seed=seed + 20) > 0) | torch.eye(7, dtype=torch.bool)  # each query sees itself
    lengths = torch.tensor([6 - seed % 3, 3 + seed % 2])  # (batch,): each sequence's real keys, the rest padding
    padding = (torch.arange(7) < lengths[:, None])[:, None, None, :]  # (batch, 1, 1, seq)
    masks = {
        "": None,
        ", mask=causal": causal,
        f", mask=padding (batch, 1, 1, seq) that hides the keys past {lengths.tolist()} in each sequence": padding,
        ", mask=scattered (True at random places and on the diagonal)": scattered,
    }
    for heads, kv_heads in ((4, 2), (6, 3), (4, 4), (4, 1), (8, 2)):
        q, k, v = _gqa_inputs(seed + heads + kv_heads, heads, kv_heads)
        for which, mask in masks.items():
            call = f"grouped_query_attention(q, k, v{which}) with {heads} query heads and {kv_heads} key/value heads"
            try:
                out = call_learner(grouped_query_attention, q, k, v, mask=mask, call=call)
            except CheckFailed as failure:
                if isinstance(failure.__cause__, RuntimeError) and kv_heads != heads:  # the shapes were refused
                    groups = heads // kv_heads
                    raise CheckFailed(
                        f"{failure}\nk and v hold {kv_heads} heads along dim 1 where q holds {heads}: before "
                        f"the attention, each key/value head must appear {groups} times along dim 1, the heads "
                        "(repeating along dim 2 would add positions instead), so that k and v become (batch, "
                        f"{heads}, seq, d_head) like q."
                    ) from failure.__cause__
                raise
            expect_tensor(out, call, q.shape, q.dtype)
            expected, oracle = _gqa_oracle(q, k, v, mask)
            if not matches(out, expected):
                _diagnose_gqa(out, q, k, v, mask, heads, kv_heads, call)
                expect_close(out, expected, f"{call}, compared with {oracle}")
    passed("grouped_query_attention", "each group of query heads shares one key/value head, in Llama's order")


@oracle
def _gqa_oracle(q, k, v, mask) -> tuple[torch.Tensor, str]:
    """The expected outputs, and what computed them: multi-head attention when every query head has its own key
    and value head, multi-query attention (one head's keys and values seen by all) when there is one, and PyTorch's
    grouped-query attention between the two."""
    heads, kv_heads = q.shape[1], k.shape[1]
    if kv_heads == heads:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), "multi-head attention (PyTorch's)"
    if kv_heads == 1:
        shared = (t.expand(-1, heads, -1, -1) for t in (k, v))  # the one head, seen by every query head
        return F.scaled_dot_product_attention(q, *shared, attn_mask=mask), "multi-query attention (PyTorch's)"
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True), (
        "F.scaled_dot_product_attention(enable_gqa=True)"
    )


def _diagnose_gqa(out, q, k, v, mask, heads: int, kv_heads: int, call: str) -> None:
    groups = heads // kv_heads
    d_head = q.shape[-1]
    seq = q.shape[-2]
    scalings = {
        1.0: "leaves the scores unscaled",
        1 / d_head: f"divides the scores by d_head = {d_head}",
        seq**-0.5: f"divides the scores by √seq = √{seq}, the root of the number of positions",
    }
    for scale, mistake in scalings.items():
        if matches(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, enable_gqa=True)):
            raise CheckFailed(f"{call} {mistake}: divide them by √d_head, the root of the size of a head's query.")
    if matches(out, F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)):
        if mask is None:
            raise CheckFailed(
                f"{call} hides the later keys although it was given no mask (is_causal=True, or a causal mask of its "
                "own): with mask=None every query attends to every key. Use the mask it is given, as attn_mask; the "
                "block will pass its causal mask in."
            )
        raise CheckFailed(
            f"{call} hides the later keys instead of the mask it was given (is_causal=True, or a causal mask of its "
            "own): hide exactly the keys where the given mask is False, whatever the mask (attn_mask=mask)."
        )
    if mask is not None and matches(out, F.scaled_dot_product_attention(q, k, v, enable_gqa=True)):
        raise CheckFailed(
            f"{call} ignores the mask: every query attends to every key. Hide the scores where the mask is False "
            "(masked_fill with -inf), or give the mask to F.scaled_dot_product_attention as attn_mask."
        )
    repeated = (t.repeat_interleave(groups, dim=1) for t in (k, v))
    k_all, v_all = repeated  # (batch, heads, seq, d_head) each
    scores = q @ k_all.transpose(-2, -1) / d_head**0.5  # (batch, heads, seq, seq)
    if mask is not None:
        zeroed = scores.masked_fill(~mask, 0.0).softmax(dim=-1) @ v_all
        if matches(out, zeroed):
            raise CheckFailed(
                f"{call} sets the hidden scores to 0: after the softmax a score of 0 still gets weight e⁰ = 1, as "
                "much as any other. Fill them with -inf (float('-inf')), whose weight is e^-∞ = 0."
            )
        scores = scores.masked_fill(~mask, float("-inf"))
    if matches(out, scores.softmax(dim=-2) @ v_all):
        raise CheckFailed(
            f"{call} takes the softmax over the queries (dim=-2): each query's weights over the keys must add up to "
            "1, so the softmax runs over the keys, the last axis (dim=-1)."
        )
    if mask is not None:
        seeing = (~mask).any(dim=-1).expand(out.shape[:-1])  # (batch, heads, seq): queries that see some key then
        inverted = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask, enable_gqa=True)
        if matches(out[seeing], inverted[seeing]):
            raise CheckFailed(
                f"{call} uses the mask the wrong way round: it hides the keys the mask marks True and shows the "
                "others. True means that a query may attend to that key (notebook 04, and the attn_mask of "
                "F.scaled_dot_product_attention): hide a score where the mask is False."
            )
    if mask is not None:
        added = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.dtype), enable_gqa=True)
        if matches(out, added):
            raise CheckFailed(
                f"{call} adds the bool mask to the scores: that adds 1 where a query may attend and 0 where it may "
                "not, and hides nothing. Replace the scores where the mask is False by -inf (masked_fill), or give "
                "the bool mask to F.scaled_dot_product_attention as attn_mask."
            )
    tiled = F.scaled_dot_product_attention(q, k.repeat(1, groups, 1, 1), v.repeat(1, groups, 1, 1), attn_mask=mask)
    if kv_heads not in (1, heads) and matches(out, tiled):
        raise CheckFailed(
            f"{call} repeats the key/value heads in the wrong order (as .repeat does: 0, 1, 0, 1, ...). Query heads "
            f"come in groups of {groups} that share one key/value head: query head h uses key/value head "
            f"h // {groups}, so repeat each key/value head {groups} times in place (repeat_interleave along dim 1)."
        )
    if kv_heads == heads:
        raise CheckFailed(
            f"{call}: with as many key/value heads as query heads this is ordinary multi-head attention, and the "
            "result must equal it; check the scaling by √d_head and the mask (True = may attend)."
        )
    if kv_heads == 1:
        raise CheckFailed(
            f"{call}: with one key/value head for all query heads (multi-query attention) every query head must "
            "attend to that one head's keys and values."
        )


# Exercise 5 ---------------------------------------------------------------------------------------------

BLOCK_PARTS = {
    "input_layernorm": "input_layernorm",
    "q_proj": "self_attn.q_proj",
    "k_proj": "self_attn.k_proj",
    "v_proj": "self_attn.v_proj",
    "o_proj": "self_attn.o_proj",
    "post_attention_layernorm": "post_attention_layernorm",
    "mlp": "mlp",
}


@learner_facing
def check_modern_block(ModernBlock: type, seed: int = 0) -> None:
    """Compare with transformers' LlamaDecoderLayer holding the learner's weights, causal, for grouped-query and
    multi-head sizes and two RoPE bases; then that no position sees a later one."""
    names = ("RMSNorm", "SwiGLU", "apply_rope", "grouped_query_attention")
    with earlier_exercises_replaced(ModernBlock.__init__, *names):
        # The second case's eps is large enough that a norm left at its default eps gives other outputs.
        for case in ((32, 4, 2, 48, 10000.0, 1e-5), (24, 3, 3, 40, 500.0 + seed, 0.25)):
            _check_block_case(ModernBlock, seed, *case)
    passed("ModernBlock", "equals transformers' LlamaDecoderLayer with the same weights, causal")


def _check_block_case(ModernBlock, seed: int, d_model, heads, kv_heads, d_hidden, base, eps) -> None:
    call = f"ModernBlock({d_model}, {heads}, {kv_heads}, {d_hidden}, eps={eps}, base={base})"
    block = built_with_seed(ModernBlock, d_model, heads, kv_heads, d_hidden, eps=eps, base=base, seed=seed, call=call)
    block = perturbed(block, seed)
    config = llama_config(d_model, heads, kv_heads, d_hidden, eps=eps, base=base)
    oracle = _llama_twin(block, config, call)
    expect_separate_norms(block, ("input_layernorm", "post_attention_layernorm"), call, kind="RMSNorm")
    x = seeded_randn(2, 9, d_model, seed=seed)  # (batch, seq, d_model)
    with torch.no_grad():
        try:
            out = call_learner(block, x, call=f"{call}(x)")
        except CheckFailed as failure:
            if isinstance(failure.__cause__, RuntimeError):
                _diagnose_crash(ModernBlock, failure, seed, d_model, heads, d_hidden, base, eps)
                if kv_heads != heads:
                    _diagnose_kv_heads(ModernBlock, failure, seed, d_model, heads, kv_heads, d_hidden, base, eps)
            raise
        expect_tensor(out, f"{call}(x)", x.shape, x.dtype)
        expected = _run_llama(oracle, config, x)
        if not matches(out, expected):
            _diagnose_eps(block, x, out, call, llama_config(d_model, heads, kv_heads, d_hidden, eps=1e-6, base=base))
            _diagnose_block(block, x, out, call, heads=heads, kv_heads=kv_heads, base=base)
            expect_close(out, expected, f"{call}(x), compared with transformers' LlamaDecoderLayer", atol=1e-4)
    x = x[:1, :4].clone().requires_grad_()  # (1, 4, d_model)
    call = f"{call}(x) with x {shape_of(x)} that requires grad"
    expect_differentiable(call_learner(block, x, call=call), call, source=x)


def _diagnose_crash(ModernBlock, failure: CheckFailed, seed: int, d_model, heads, d_hidden, base, eps) -> None:
    """The block raised. A block that turns q and k while they are still (batch, seq, heads, d_head) crashes when
    seq differs from the heads (apply_rope's angles run along the positions); with as many positions and key/value
    heads as query heads it runs, and shows it."""
    call = f"ModernBlock({d_model}, {heads}, {heads}, {d_hidden}, eps={eps}, base={base})"
    block = perturbed(
        built_with_seed(ModernBlock, d_model, heads, heads, d_hidden, eps=eps, base=base, seed=seed, call=call), seed
    )
    x = seeded_randn(2, heads, d_model, seed=seed)  # (batch, seq = heads, d_model)
    try:
        out = call_learner(block, x, call=f"{call}(x)")
    except CheckFailed:
        return
    if matches(out, _block_variant(block, x, heads=heads, kv_heads=heads, base=base, rope_on_seq_heads=True)):
        raise CheckFailed(
            f"{failure}\nThe block applies apply_rope to q and k while they are (batch, seq, heads, d_head), before "
            "moving the heads in front of the positions: apply_rope expects (..., seq, d_head), the positions on "
            "the second-to-last axis. Move the heads before seq first (transpose(1, 2)), then apply_rope."
        ) from failure.__cause__


def _diagnose_kv_heads(ModernBlock, failure, seed: int, d_model, heads, kv_heads, d_hidden, base, eps) -> None:
    """The grouped block raised. If the same block with as many key/value heads as query heads equals Llama's layer,
    what fails is the handling of k and v when they have fewer heads than q."""
    call = f"ModernBlock({d_model}, {heads}, {heads}, {d_hidden}, eps={eps}, base={base})"
    config = llama_config(d_model, heads, heads, d_hidden, eps=eps, base=base)
    x = seeded_randn(2, 9, d_model, seed=seed)  # (batch, seq, d_model)
    try:
        block = perturbed(
            built_with_seed(ModernBlock, d_model, heads, heads, d_hidden, eps=eps, base=base, seed=seed, call=call),
            seed,
        )
        out = call_learner(block, x, call=f"{call}(x)")
        if not matches(out, _run_llama(_llama_twin(block, config, call), config, x)):
            return
    except CheckFailed:
        return
    raise CheckFailed(
        f"{failure}\nWith as many key/value heads as query heads, {call} equals Llama's layer: what fails is the "
        f"handling of k and v when they have fewer heads than q ({kv_heads} for {heads} here). k_proj(u) and "
        "v_proj(u) hold num_kv_heads·d_head features each: split them into num_kv_heads heads of d_head = d_model // "
        "num_heads features, (batch, seq, num_kv_heads, d_head), not into num_heads heads; grouped_query_attention "
        "gives each of them to its group of query heads."
    ) from failure.__cause__


def _llama_twin(block: nn.Module, config, call: str) -> LlamaDecoderLayer:
    parameters = {}
    for ours, theirs in BLOCK_PARTS.items():
        part = getattr(block, ours, None)
        if not isinstance(part, nn.Module):
            raise CheckFailed(
                f"{call} must hold {', '.join(BLOCK_PARTS)}, Llama's names for its parts (the check copies their "
                f"weights into transformers' LlamaDecoderLayer); it has no {ours}."
            )
        # Parameters only: a part may keep buffers of its own (eps as a tensor, a mask), which Llama's has not.
        parameters |= {f"{theirs}.{name}": value.detach() for name, value in part.named_parameters()}
    with torch.random.fork_rng():
        twin = LlamaDecoderLayer(config, layer_idx=0)
    shapes = {name: tuple(value.shape) for name, value in twin.named_parameters()}
    expected = set(shapes)
    if set(parameters) != expected:
        raise CheckFailed(
            f"{call}: its parts hold {sorted(set(parameters) - expected) or 'too few weights'} where Llama's layer "
            f"has {sorted(expected - set(parameters)) or 'no more'}: the projections are nn.Linear without bias, "
            "the norms RMSNorm (one weight each), the MLP a SwiGLU."
        )
    wrong = {name: tuple(value.shape) for name, value in parameters.items() if tuple(value.shape) != shapes[name]}
    if wrong:
        name = min(wrong, key=list(shapes).index)  # the first in Llama's order
        part = name.removesuffix(".weight").removeprefix("self_attn.")
        raise CheckFailed(
            f"{call}: {part}'s weight has shape {wrong[name]} where Llama's layer has {shapes[name]}. "
            f"{_PART_SIZES[part.split('.')[0]]}"
        )
    twin.load_state_dict(parameters, strict=False)  # every parameter is given: Llama's layer has no buffers
    return twin.eval()


_PART_SIZES = {
    "input_layernorm": "The norms are RMSNorm(d_model, eps): one gain of d_model numbers.",
    "post_attention_layernorm": "The norms are RMSNorm(d_model, eps): one gain of d_model numbers.",
    "q_proj": "q_proj maps d_model to num_heads·d_head features, with d_head = d_model // num_heads.",
    "k_proj": "k_proj and v_proj map d_model to num_kv_heads·d_head features, with d_head = d_model // num_heads "
    "(the size of a query head: a key must match it).",
    "v_proj": "k_proj and v_proj map d_model to num_kv_heads·d_head features, with d_head = d_model // num_heads "
    "(the size of a query head: a key must match it).",
    "o_proj": "o_proj maps num_heads·d_head features back to d_model.",
    "mlp": "The MLP is SwiGLU(d_model, d_hidden), with the d_hidden given to the block: gate_proj and up_proj map "
    "d_model to d_hidden, down_proj maps d_hidden back.",
}


def _run_llama(layer: LlamaDecoderLayer, config, x: torch.Tensor) -> torch.Tensor:
    seq = x.shape[1]
    positions = torch.arange(seq)[None]  # (1, seq)
    with torch.random.fork_rng():
        cos, sin = LlamaRotaryEmbedding(config)(x, positions)
    future = torch.full((seq, seq), torch.finfo(x.dtype).min).triu(1)[None, None]  # (1, 1, seq, seq)
    return layer(x, attention_mask=future, position_ids=positions, position_embeddings=(cos, sin))


def _diagnose_eps(block: nn.Module, x: torch.Tensor, out: torch.Tensor, call: str, default_eps) -> None:
    """Fail if the block computes what Llama's layer computes with RMSNorm's default eps instead of the one given."""
    if matches(out, _run_llama(_llama_twin(block, default_eps, call), default_eps, x)):
        raise CheckFailed(
            f"{call}(x) gives what the layer gives with the norms' default eps, not with the eps given: pass eps on "
            "to both RMSNorm(d_model, eps)."
        )


def _diagnose_block(block: nn.Module, x: torch.Tensor, out: torch.Tensor, call: str, **sizes) -> None:
    merge = (
        "merges the heads back with a reshape of (batch, heads, seq, d_head) straight to (batch, seq, d_model), "
        "which mixes the positions, since the heads axis comes before seq: move the heads next to d_head first "
        "(transpose(1, 2)), then flatten them"
    )
    split = (
        "splits into heads with a view of (batch, seq, features) straight to (batch, heads, seq, d_head), which "
        "deals the features of several positions into one head's rows: split the features into (heads, d_head) "
        "first, (batch, seq, heads, d_head), then move the heads before seq (transpose(1, 2))"
    )
    layouts = {
        merge: {"merge_view": True},
        split: {"split_view": True},
        f"{split}; and it {merge}": {"split_view": True, "merge_view": True},
    }
    with torch.no_grad():
        for mistake, variant in layouts.items():
            if matches(out, _block_variant(block, x, **sizes, **variant)):
                raise CheckFailed(f"{call}(x) {mistake}.")
    if matches(out, _block_variant(block, x, **sizes, float_mask=True)):
        raise CheckFailed(
            f"{call}(x) gives grouped_query_attention a float mask of ones and zeros: "
            "F.scaled_dot_product_attention adds a float mask to the scores (+1 where a query may attend, 0 where "
            "not), which hides nothing. Make the causal mask bool (dtype=torch.bool), True where key j <= query i."
        )
    changed = x.clone()
    changed[:, -1] += 1.0
    later = call_learner(block, changed, call=f"{call}(x)")
    if not torch.allclose(later[:, :-1], out[:, :-1], atol=1e-6):
        raise CheckFailed(
            f"{call}(x): changing the last position changes the outputs at earlier ones: a position must not see "
            "later ones. Look at the causal mask (True where key j <= query i), and at the split into heads and the "
            "merge back: a reshape that mixes the axes of heads and positions lets one position's numbers reach "
            "another's."
        )
    base = sizes["base"]
    mistakes = {
        "rotates the values too: RoPE turns the queries and the keys only, so that it changes the scores, not what "
        "is averaged": {"rotated": "qkv"},
        "rotates the queries but not the keys: RoPE turns both, each by its own position": {"rotated": "q"},
        "does not rotate the queries and keys: apply_rope to both, at positions 0, 1, ..., seq - 1": {"rotated": ""},
        "applies RoPE to the projections before they are split into heads: RoPE turns pairs of features within "
        "one head (feature i with i + d_head/2, frequencies over d_head), so split q and k into heads first, then "
        "apply_rope to the (batch, heads, seq, d_head) tensors": {"before_split": True},
        "normalises after each residual addition (post-norm); Llama normalises each sublayer's input (pre-norm): "
        "x + attention(input_layernorm(x)), then x + mlp(post_attention_layernorm(x))": {"pre_norm": False},
        "feeds the MLP post_attention_layernorm(x), the norm of the block's input: the MLP reads the norm of h = x + "
        "attention(...), and the block returns h + mlp(post_attention_layernorm(h))": {"mlp_reads": "x"},
        "adds the MLP's output to x, the block's input, and so drops the attention's output: the block returns "
        "h + mlp(post_attention_layernorm(h)), with h = x + attention(...)": {"mlp_added_to": "x"},
        "leaves out the residual connection around the attention: h = x + o_proj(attention(...)), the attention's "
        "output added to the block's input x": {"attention_residual": False},
        "leaves out the residual connection around the MLP: the block returns h + mlp(post_attention_layernorm(h)), "
        "the MLP's output added to h": {"mlp_residual": False},
        "leaves out input_layernorm: the projections q_proj, k_proj and v_proj read u = input_layernorm(x), not x "
        "itself (pre-norm)": {"input_norm": False},
        "computes the values from x, the block's input: q_proj, k_proj and v_proj all read u = input_layernorm(x) "
        "(pre-norm)": {"values_read": "x"},
        "adds the attention's output to u = input_layernorm(x), the normalised input: the residual connection "
        "carries the block's input x itself past the attention, h = x + o_proj(attention(...)); the norm is on "
        "the branch only, in what the projections read": {"attention_added_to": "u"},
        "adds the MLP's output to post_attention_layernorm(h), the normalised stream: the residual connection "
        "carries h itself past the MLP, and the block returns h + mlp(post_attention_layernorm(h))": {
            "mlp_added_to": "normed"
        },
        "adds each sublayer's output to the normalised stream, u = input_layernorm(x) and then "
        "post_attention_layernorm(h), as when x is overwritten by its norm (x = self.input_layernorm(x)): the "
        "residual connections carry the unnormalised stream, h = x + o_proj(attention(...)) and h + "
        "mlp(post_attention_layernorm(h))": {"attention_added_to": "u", "mlp_added_to": "normed"},
    }
    if base != 10000.0:
        mistakes[
            f"turns q and k with apply_rope's default base 10000, not the block's base = {base:g}: pass base on to "
            "apply_rope"
        ] = {"rope_base": 10000.0}
    with torch.no_grad():
        for mistake, variant in mistakes.items():
            if matches(out, _block_variant(block, x, **sizes, **variant)):
                raise CheckFailed(f"{call}(x) {mistake}.")


def _block_variant(
    block: nn.Module,
    x: torch.Tensor,
    *,
    heads: int,
    kv_heads: int,
    base: float,
    rotated="qk",
    pre_norm=True,
    before_split=False,
    split_view=False,
    merge_view=False,
    rope_base: float | None = None,
    mlp_reads="h",
    mlp_added_to="h",
    attention_residual=True,
    mlp_residual=True,
    input_norm=True,
    rope_on_seq_heads=False,
    float_mask=False,
    values_read="u",
    attention_added_to="x",
) -> torch.Tensor:
    """What the block's own parts compute when put together with one thing changed: which of q, k, v are rotated,
    whether before the split into heads (as if all of a projection's features were one head), pre- or post-norm,
    heads split or merged by a reshape alone (no transpose), another RoPE base, what v_proj reads, what the
    attention's output is added to, what the MLP reads and is added to, either residual connection left out, the
    input norm left out, or RoPE applied to the (batch, seq, heads, d_head) view, its positions running along the
    heads (possible only when seq equals the heads). The check's way to name a mistake, with PyTorch's attention and
    transformers' rotation."""
    batch, seq, _ = x.shape
    base = base if rope_base is None else rope_base
    positions = torch.arange(seq)
    norm_1, norm_2 = (block.input_layernorm, block.post_attention_layernorm) if pre_norm else (nn.Identity(),) * 2
    u = norm_1(x) if input_norm else x
    read = {"u": u, "x": x}
    projected = {name: getattr(block, f"{name}_proj")(u) for name in "qk"}  # (batch, seq, features) each
    projected["v"] = block.v_proj(read[values_read])
    if rope_on_seq_heads:  # each (batch, seq, heads, d_head) turned as if its heads were the positions
        projected = {
            name: rotary_oracle(t.unflatten(-1, (count, -1)), positions, rope_base=base).flatten(2)
            if name in rotated
            else t
            for (name, t), count in zip(projected.items(), (heads, kv_heads, kv_heads), strict=True)
        }
    if before_split:
        projected = {
            name: rotary_oracle(t[:, None], positions, rope_base=base)[:, 0] if name in rotated else t
            for name, t in projected.items()
        }
    parts = {
        name: projected[name].reshape(batch, count, seq, -1)
        if split_view
        else projected[name].unflatten(-1, (count, -1)).transpose(1, 2)
        for name, count in (("q", heads), ("k", kv_heads), ("v", kv_heads))
    }  # (batch, heads or kv_heads, seq, d_head) each
    turned = {
        name: rotary_oracle(t, positions, rope_base=base)
        if name in rotated and not (before_split or rope_on_seq_heads)
        else t
        for name, t in parts.items()
    }
    if float_mask:  # ones and zeros, added to the scores
        mixed = F.scaled_dot_product_attention(*turned.values(), attn_mask=torch.ones(seq, seq).tril(), enable_gqa=True)
    else:
        mixed = F.scaled_dot_product_attention(*turned.values(), is_causal=True, enable_gqa=True)
    merged = mixed.reshape(batch, seq, -1) if merge_view else mixed.transpose(1, 2).flatten(2)  # (batch, seq, d_model)
    after = block.o_proj(merged) + (read[attention_added_to] if attention_residual else 0)
    if not pre_norm:
        after = block.input_layernorm(after)
    read = {"h": after, "x": x, "normed": norm_2(after)}
    result = block.mlp(norm_2(read[mlp_reads])) + (read[mlp_added_to] if mlp_residual else 0)
    return result if pre_norm else block.post_attention_layernorm(result)
