"""Wrong answers to notebook 12: RMSNorm, rotary position embedding, SwiGLU, grouped-query attention, the block."""

import torch
import torch.nn.functional as F
from torch import nn

# Later exercises call earlier ones by name, as they do in the notebook; these stand for those names.
from transformer_course.checks.stand_ins import RMSNorm, SwiGLU, apply_rope, grouped_query_attention
from wrong_answers import wrong_answer

ASSIGNMENT = "12_modern_block"

# Exercise 1: RMSNorm -------------------------------------------------------------------------------------


@wrong_answer("RMSNorm", message="subtracts the mean first")
class RMSNormSubtractingTheMean(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        x = x - x.mean(dim=-1, keepdim=True)
        return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong_answer("RMSNorm", message="adds ε after the square root")
class RMSNormWithEpsOutsideTheRoot(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + self.eps) * self.weight


@wrong_answer("RMSNorm", message="leaves out the gain")
class RMSNormWithoutTheGain(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)


@wrong_answer("RMSNorm", message="RMSNorm has no bias")
class RMSNormWithABias(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight + self.bias


@wrong_answer("RMSNorm", message="SUM of squares")
class RMSNormOverTheSum(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).sum(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong_answer("RMSNorm", message="divides by the standard deviation of the features")
class RMSNormDividingByTheStandardDeviation(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x / (x.std(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong_answer("RMSNorm", message="whatever eps it was given")
class RMSNormWithAFixedEps(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = 1e-6
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong_answer("RMSNorm", message="takes the mean of the squares over the sequence")
class RMSNormOverTheSequence(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + self.eps) * self.weight


@wrong_answer("RMSNorm", message="not at ones")
class RMSNormWithTheGainAtZero(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong_answer("RMSNorm", message="not at ones")
class RMSNormWithARandomGain(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong_answer("RMSNorm", message="without keepdim=True")
class RMSNormWithoutKeepdim(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1) + self.eps) * self.weight


@wrong_answer("RMSNorm", message="leaves ε out")
class RMSNormWithoutEps(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x / x.pow(2).mean(dim=-1, keepdim=True).sqrt() * self.weight


@wrong_answer("RMSNorm", message="uses ε = 1e-08 whatever eps")
class RMSNormWithATinyFixedEps(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-8) * self.weight


@wrong_answer("RMSNorm", message="without taking its square root")
class RMSNormWithoutTheRoot(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x / (x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


@wrong_answer("RMSNorm", message="multiplies by the gain before normalising")
class RMSNormScalingBeforeNormalising(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        scaled = x * self.weight
        return scaled * torch.rsqrt(scaled.pow(2).mean(dim=-1, keepdim=True) + self.eps)


@wrong_answer("RMSNorm", message="divides by the mean of |x|")
class RMSNormOverTheMeanAbsoluteValue(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x / (x.abs().mean(dim=-1, keepdim=True) + self.eps) * self.weight


# Exercise 2: apply_rope ----------------------------------------------------------------------------------


@wrong_answer("apply_rope", message="rotates adjacent pairs")
def apply_rope_to_adjacent_pairs(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * base ** (-torch.arange(0, d_head, 2).float() / d_head)
    even, odd = x[..., 0::2], x[..., 1::2]
    turned = torch.stack([even * angles.cos() - odd * angles.sin(), even * angles.sin() + odd * angles.cos()], dim=-1)
    return turned.flatten(-2)


@wrong_answer("apply_rope", message="rotates the other way")
def apply_rope_turning_backwards(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * base ** (-torch.arange(0, d_head, 2).float() / d_head)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([first * angles.cos() + second * angles.sin(), second * angles.cos() - first * angles.sin()], -1)


@wrong_answer("apply_rope", message="uses the frequencies base^(-i/d)")
def apply_rope_with_frequencies_too_close(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * base ** (-torch.arange(d_head // 2).float() / d_head)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([first * angles.cos() - second * angles.sin(), first * angles.sin() + second * angles.cos()], -1)


@wrong_answer("apply_rope", message="instead of the positions it was given")
def apply_rope_counting_from_zero(x, positions, base=10000.0):
    d_head, seq = x.shape[-1], x.shape[-2]
    angles = torch.arange(seq)[:, None].float() * base ** (-torch.arange(0, d_head, 2).float() / d_head)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([first * angles.cos() - second * angles.sin(), first * angles.sin() + second * angles.cos()], -1)


@wrong_answer("apply_rope", message="ignores base")
def apply_rope_ignoring_the_base(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * 10000.0 ** (-torch.arange(0, d_head, 2).float() / d_head)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([first * angles.cos() - second * angles.sin(), first * angles.sin() + second * angles.cos()], -1)


@wrong_answer("apply_rope", message="lays out cos and sin for adjacent pairs")
def apply_rope_with_each_angle_repeated_in_place(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * base ** (-torch.arange(0, d_head, 2).float() / d_head)
    angles = angles.repeat_interleave(2, dim=-1)  # (seq, d_head): one angle per feature
    rotated_half = torch.cat([-x[..., d_head // 2 :], x[..., : d_head // 2]], dim=-1)
    return x * angles.cos() + rotated_half * angles.sin()


@wrong_answer("apply_rope", message="takes one frequency per feature")
def apply_rope_with_a_frequency_per_feature(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * base ** (-torch.arange(d_head).float() / d_head)  # (seq, d_head)
    rotated_half = torch.cat([-x[..., d_head // 2 :], x[..., : d_head // 2]], dim=-1)
    return x * angles.cos() + rotated_half * angles.sin()


@wrong_answer("apply_rope", message="swaps cos and sin")
def apply_rope_swapping_cos_and_sin(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * base ** (-torch.arange(0, d_head, 2).float() / d_head)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([first * angles.sin() - second * angles.cos(), first * angles.cos() + second * angles.sin()], -1)


@wrong_answer("apply_rope", message="puts the two halves of the result in the wrong order")
def apply_rope_with_the_halves_swapped(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * base ** (-torch.arange(0, d_head, 2).float() / d_head)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([first * angles.sin() + second * angles.cos(), first * angles.cos() - second * angles.sin()], -1)


@wrong_answer("apply_rope", message="as if every θ_i were 1")
def apply_rope_with_integer_exponents(x, positions, base=10000.0):
    d_head = x.shape[-1]
    theta = base ** (-(torch.arange(0, d_head, 2) // d_head)).float()  # (d_head / 2,)
    angles = positions[:, None].float() * theta
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([first * angles.cos() - second * angles.sin(), first * angles.sin() + second * angles.cos()], -1)


@wrong_answer("apply_rope", message="must be a table of shape (seq, d_head/2)")
def apply_rope_with_the_angles_transposed(x, positions, base=10000.0):
    d_head = x.shape[-1]
    theta = base ** (-torch.arange(0, d_head, 2).float() / d_head)  # (d_head / 2,)
    angles = theta[:, None] * positions.float()  # (d_head / 2, seq)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([first * angles.cos() - second * angles.sin(), first * angles.sin() + second * angles.cos()], -1)


@wrong_answer("apply_rope", message="does not require gradients")
def apply_rope_without_gradients(x, positions, base=10000.0):
    with torch.no_grad():  # "positions are not learned"
        d_head = x.shape[-1]
        angles = positions[:, None].float() * base ** (-torch.arange(0, d_head, 2).float() / d_head)
        first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
        cos, sin = angles.cos(), angles.sin()
        return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


@wrong_answer("apply_rope", message="uses the frequencies base^(+2i/d)")
def apply_rope_without_the_minus_sign(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * base ** (torch.arange(0, d_head, 2).float() / d_head)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


@wrong_answer("apply_rope", message="counts the pairs from i = 1")
def apply_rope_counting_pairs_from_one(x, positions, base=10000.0):
    d_head = x.shape[-1]
    i = torch.arange(1, d_head // 2 + 1).float()
    angles = positions[:, None].float() * base ** (-2 * i / d_head)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


@wrong_answer("apply_rope", message="gives the second half the wrong sign")
def apply_rope_with_a_minus_in_both_halves(x, positions, base=10000.0):
    d_head = x.shape[-1]
    angles = positions[:, None].float() * base ** (-torch.arange(0, d_head, 2).float() / d_head)
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([first * cos - second * sin, first * sin - second * cos], dim=-1)


@wrong_answer("apply_rope", message="but by other angles than m·θ_i")
def apply_rope_with_frequencies_one_over_one_plus(x, positions, base=10000.0):
    d_head = x.shape[-1]
    theta = 1.0 / (1 + base * torch.arange(0, d_head, 2).float() / d_head)  # base^(-2i/d) misread
    angles = positions[:, None].float() * theta
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


@wrong_answer("apply_rope", message="leaves pairs 2 to 3 as they are")
def apply_rope_turning_half_the_pairs(x, positions, base=10000.0):
    d_head = x.shape[-1]
    theta = base ** (-torch.arange(0, d_head // 2, 2).float() / d_head)  # (d_head/4,): the range stops at d/2
    theta = F.pad(theta, (0, d_head // 4))  # (d_head/2,), to fit the halves: the last pairs get θ = 0
    angles = positions[:, None].float() * theta
    first, second = x[..., : d_head // 2], x[..., d_head // 2 :]
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


@wrong_answer("apply_rope", message="turns only the first half of the features")
def apply_rope_to_the_first_half_of_the_features(x, positions, base=10000.0):
    rotary = x.shape[-1] // 2  # as GPT-NeoX's rotary_pct does: the rest passes through
    theta = base ** (-torch.arange(0, rotary, 2).float() / rotary)
    angles = positions[:, None].float() * theta
    first, second = x[..., : rotary // 2], x[..., rotary // 2 : rotary]
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([first * cos - second * sin, first * sin + second * cos, x[..., rotary:]], dim=-1)


# Exercise 3: SwiGLU --------------------------------------------------------------------------------------


@wrong_answer("SwiGLU", message="applies SiLU to up_proj(x) instead of gate_proj(x)")
class SwiGLUGatingTheWrongBranch(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(self.gate_proj(x) * F.silu(self.up_proj(x)))


@wrong_answer("SwiGLU", message="gates with the sigmoid alone")
class SwiGLUWithASigmoidGate(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(torch.sigmoid(self.gate_proj(x)) * self.up_proj(x))


@wrong_answer("SwiGLU", message="uses GELU")
class SwiGLUWithGELU(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x)) * self.up_proj(x))


@wrong_answer("SwiGLU", message="has a bias")
class SwiGLUWithBiases(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden)
        self.up_proj = nn.Linear(d_model, d_hidden)
        self.down_proj = nn.Linear(d_hidden, d_model)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


@wrong_answer("SwiGLU", message="adds the two branches")
class SwiGLUAddingTheBranches(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) + self.up_proj(x))


@wrong_answer("SwiGLU", message="applies SiLU to the product of the two branches")
class SwiGLUWithSiluAfterTheProduct(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x) * self.up_proj(x)))


@wrong_answer("SwiGLU", message="applies SiLU to both branches")
class SwiGLUWithSiluOnBothBranches(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * F.silu(self.up_proj(x)))


@wrong_answer("SwiGLU", message="applies SiLU to the output of down_proj")
class SwiGLUWithSiluAfterDown(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        return F.silu(self.down_proj(self.gate_proj(x) * self.up_proj(x)))


@wrong_answer("SwiGLU", message="uses hardswish")
class SwiGLUWithHardswish(nn.Module):
    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.up_proj = nn.Linear(d_model, d_hidden, bias=False)
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.hardswish(self.gate_proj(x)) * self.up_proj(x))


# Exercise 4: grouped_query_attention ---------------------------------------------------------------------


@wrong_answer("grouped_query_attention", message="repeats the key/value heads in the wrong order")
def grouped_query_attention_tiling_the_heads(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat(1, groups, 1, 1), v.repeat(1, groups, 1, 1), attn_mask=mask)


@wrong_answer("grouped_query_attention", message="repeats the key/value heads in the wrong order")
def grouped_query_attention_by_head_modulo(q, k, v, mask=None):
    kv_heads = k.shape[1]
    which = torch.arange(q.shape[1]) % kv_heads
    return F.scaled_dot_product_attention(q, k[:, which], v[:, which], attn_mask=mask)


@wrong_answer("grouped_query_attention", message="leaves the scores unscaled")
def grouped_query_attention_without_scaling(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0)


@wrong_answer("grouped_query_attention", message="uses the mask the wrong way round")
def grouped_query_attention_hiding_the_keys_the_mask_allows(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


@wrong_answer("grouped_query_attention", message="repeating along dim 2 would add positions instead")
def grouped_query_attention_repeating_along_the_positions(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=2), v.repeat_interleave(groups, dim=2)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@wrong_answer("grouped_query_attention", message="adds the bool mask to the scores")
def grouped_query_attention_adding_the_mask(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores + mask
    return torch.softmax(scores, dim=-1) @ v


@wrong_answer("grouped_query_attention", message="ignores the mask")
def grouped_query_attention_ignoring_the_mask(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    return F.scaled_dot_product_attention(q, k, v)


@wrong_answer("grouped_query_attention", message="sets the hidden scores to 0")
def grouped_query_attention_filling_with_zero(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, 0.0)
    return torch.softmax(scores, dim=-1) @ v


@wrong_answer("grouped_query_attention", message="takes the softmax over the queries")
def grouped_query_attention_with_softmax_over_queries(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-2) @ v


@wrong_answer("grouped_query_attention", message="divides the scores by d_head")
def grouped_query_attention_dividing_by_d_head(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1]
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


@wrong_answer("grouped_query_attention", message="hides the later keys although it was given no mask")
def grouped_query_attention_always_causal(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # "the block's mask is causal anyway"


@wrong_answer("grouped_query_attention", message="instead of the mask it was given")
def grouped_query_attention_causal_whenever_masked(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=mask is not None)


@wrong_answer("grouped_query_attention", message="divides the scores by √seq")
def grouped_query_attention_scaled_by_the_sequence(q, k, v, mask=None):
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-2] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


# Exercise 5: ModernBlock ---------------------------------------------------------------------------------


@wrong_answer("ModernBlock", message="pass eps on to both RMSNorm(d_model, eps)")
class ModernBlockIgnoringEps(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model)  # eps left at its default
        self.post_attention_layernorm = RMSNorm(d_model)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return x + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="are one and the same RMSNorm")
class ModernBlockSharingOneNorm(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return x + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="rotates the values too")
class ModernBlockRotatingTheValues(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k, v = (apply_rope(t, positions, self.base) for t in (q, k, v))
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return x + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="rotates the queries but not the keys")
class ModernBlockRotatingOnlyTheQueries(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        q = apply_rope(q, torch.arange(seq), self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return x + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="a position must not see later ones")
class ModernBlockWithoutTheCausalMask(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v)
        x = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return x + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="post-norm")
class ModernBlockPostNorm(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        q = self.q_proj(x).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = self.input_layernorm(x + self.o_proj(heads.transpose(1, 2).flatten(2)))
        return self.post_attention_layernorm(x + self.mlp(x))


@wrong_answer("ModernBlock", message="Llama's names for its parts")
class ModernBlockWithItsOwnNames(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.norm_1 = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.norm_2 = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.norm_1(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return x + self.mlp(self.norm_2(x))


@wrong_answer("ModernBlock", message="before they are split into heads")
class ModernBlockRotatingBeforeTheHeadSplit(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        positions = torch.arange(seq)
        q = apply_rope(self.q_proj(h), positions, self.base)  # (batch, seq, heads * d_head), turned in one piece
        k = apply_rope(self.k_proj(h), positions, self.base)
        q = q.view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = k.view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return x + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="merges the heads back with a reshape")
class ModernBlockMergingWithoutTheTranspose(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.reshape(batch, seq, -1))  # (batch, seq, d_model)
        return x + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="splits into heads with a view")
class ModernBlockSplittingWithoutTheTranspose(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, self.num_heads, seq, -1)  # (batch, heads, seq, d_head)
        k = self.k_proj(h).view(batch, self.num_kv_heads, seq, -1)
        v = self.v_proj(h).view(batch, self.num_kv_heads, seq, -1)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.reshape(batch, seq, -1))
        return x + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="not the block's base")
class ModernBlockWithTheDefaultRopeBase(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions), apply_rope(k, positions)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return x + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="feeds the MLP post_attention_layernorm(x)")
class ModernBlockNormalisingTheInputForTheMlp(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return h + self.mlp(self.post_attention_layernorm(x))


@wrong_answer("ModernBlock", message="adds the MLP's output to x")
class ModernBlockAddingTheMlpToTheInput(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(h).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        attended = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return x + self.mlp(self.post_attention_layernorm(attended))


@wrong_answer("ModernBlock", message="leaves out the residual connection around the attention")
class ModernBlockWithoutTheAttentionResidual(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = self.input_layernorm(x)
        q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = self.o_proj(heads.transpose(1, 2).flatten(2))
        return h + self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="leaves out the residual connection around the MLP")
class ModernBlockWithoutTheMlpResidual(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = self.input_layernorm(x)
        q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="leaves out input_layernorm")
class ModernBlockWithoutTheInputNorm(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = x
        q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return h + self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="float mask of ones and zeros")
class ModernBlockWithAFloatMask(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = self.input_layernorm(x)
        q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq).tril())
        h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return h + self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="mlp.gate_proj's weight has shape")
class ModernBlockWithAnMlpOfFourTimesDModel(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, 4 * d_model)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = self.input_layernorm(x)
        q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return h + self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="before moving the heads in front of the positions")
class ModernBlockRotatingBeforeTheTranspose(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = self.input_layernorm(x)
        positions = torch.arange(seq)
        q = apply_rope(self.q_proj(u).view(batch, seq, self.num_heads, -1), positions, self.base).transpose(1, 2)
        k = apply_rope(self.k_proj(u).view(batch, seq, self.num_kv_heads, -1), positions, self.base).transpose(1, 2)
        v = self.v_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return h + self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="does not require gradients")
class ModernBlockWithoutGradients(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        with torch.no_grad():  # "the check only compares values"
            batch, seq, _ = x.shape
            u = self.input_layernorm(x)
            q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
            k = self.k_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
            v = self.v_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
            positions = torch.arange(seq)
            q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
            heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
            h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
            return h + self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="split them into num_kv_heads heads")
class ModernBlockSplittingKeysIntoQueryHeads(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = self.input_layernorm(x)
        q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)  # the query heads' count
        v = self.v_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return h + self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="computes the values from x")
class ModernBlockWithValuesFromTheInput(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = self.input_layernorm(x)
        q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)  # x, not u
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        return h + self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="adds the attention's output to u = input_layernorm(x)")
class ModernBlockWithTheResidualFromTheNorm(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = self.input_layernorm(x)
        q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = u + self.o_proj(heads.transpose(1, 2).flatten(2))  # u, not x
        return h + self.mlp(self.post_attention_layernorm(h))


@wrong_answer("ModernBlock", message="adds the MLP's output to post_attention_layernorm(h)")
class ModernBlockWithTheMlpResidualFromTheNorm(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        u = self.input_layernorm(x)
        q = self.q_proj(u).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(u).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        h = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        h = self.post_attention_layernorm(h)  # the normalised stream carries on
        return h + self.mlp(h)


@wrong_answer("ModernBlock", message="adds each sublayer's output to the normalised stream")
class ModernBlockOverwritingXWithItsNorm(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.base = num_heads, num_kv_heads, base
        d_head = d_model // num_heads
        self.input_layernorm = RMSNorm(d_model, eps)
        self.q_proj = nn.Linear(d_model, num_heads * d_head, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * d_head, bias=False)
        self.o_proj = nn.Linear(num_heads * d_head, d_model, bias=False)
        self.post_attention_layernorm = RMSNorm(d_model, eps)
        self.mlp = SwiGLU(d_model, d_hidden)

    def forward(self, x):
        batch, seq, _ = x.shape
        x = self.input_layernorm(x)  # the input is lost: both residuals start from a norm
        q = self.q_proj(x).view(batch, seq, self.num_heads, -1).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.num_kv_heads, -1).transpose(1, 2)
        positions = torch.arange(seq)
        q, k = apply_rope(q, positions, self.base), apply_rope(k, positions, self.base)
        heads = grouped_query_attention(q, k, v, mask=torch.ones(seq, seq, dtype=torch.bool).tril())
        x = x + self.o_proj(heads.transpose(1, 2).flatten(2))
        x = self.post_attention_layernorm(x)
        return x + self.mlp(x)


@wrong_answer("apply_rope", message="Check the frequencies θ_i = base^(-2i/d)")
def apply_rope_with_angles_without_the_base(x, positions, base=10000.0):
    d_head = x.shape[-1]
    theta = torch.arange(0, d_head, 2, dtype=torch.float32) / d_head
    angles = positions[:, None].float() * theta
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : d_head // 2], x[..., d_head // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
