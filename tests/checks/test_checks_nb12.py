"""The checks of notebook 12 (RMSNorm, RoPE, SwiGLU, grouped-query attention, the modern block) accept the
solutions and correct answers written in other ways, grade each exercise on its own, vary with their seed, and
explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py; the solution notebook passes the checks when CI
executes it.)
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder.submissions import solved_namespace
from tests.check_probes import assert_hidden_tests_differ
from tests.stubs import StubModule, raise_not_implemented
from transformer_course import checks
from transformer_course.checks import CheckFailed, NotImplementedYet, nb12, stand_ins

ASSIGNMENT = "12_modern_block"
CHECKS = {
    "RMSNorm": nb12.check_rmsnorm,
    "apply_rope": nb12.check_apply_rope,
    "SwiGLU": nb12.check_swi_glu,
    "grouped_query_attention": nb12.check_grouped_query_attention,
    "ModernBlock": nb12.check_modern_block,
}


@pytest.mark.parametrize("exercise", list(CHECKS))
def test_the_solutions_pass(exercise):
    CHECKS[exercise](solved_namespace(ASSIGNMENT)[exercise], seed=2)


@pytest.mark.parametrize("name", ["RMSNorm", "apply_rope", "SwiGLU", "grouped_query_attention"])
def test_the_stand_ins_pass(name):
    CHECKS[name](getattr(stand_ins, name))


# Correct answers written in other ways ------------------------------------------------------------------


class RMSNormByTheNorm(nn.Module):
    """The root mean square as the vector's length over √d; eps kept under another name."""

    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.variance_epsilon = eps

    def forward(self, x):
        rms = torch.sqrt(torch.linalg.vector_norm(x, dim=-1, keepdim=True) ** 2 / x.shape[-1] + self.variance_epsilon)
        return self.weight * (x / rms)


class RMSNormWithEpsAsABuffer(nn.Module):
    """eps kept as a tensor buffer, which a state_dict holds but Llama's norm has not."""

    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.register_buffer("eps", torch.tensor(eps))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class RMSNormFromPyTorch(nn.RMSNorm):
    """PyTorch's own RMSNorm: its gain is already called weight and starts at ones."""

    def __init__(self, d_model, eps=1e-6):
        super().__init__(d_model, eps=eps)


def rope_by_rotate_half(x, positions, base=10000.0):
    """transformers' way: cos and sin repeated over both halves, and the halves swapped with a sign."""
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2).float() / d))
    angles = torch.outer(positions.float(), inv_freq).repeat(1, 2)  # (seq, d)
    swapped = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], dim=-1)
    return x * angles.cos() + swapped * angles.sin()


def rope_by_complex_numbers(x, positions, base=10000.0):
    """Each pair as one complex number, first half real and second half imaginary, turned by torch.polar."""
    half = x.shape[-1] // 2
    angles = positions[:, None].double() * base ** (-torch.arange(half, dtype=torch.float64) / half)  # (seq, d/2)
    turned = torch.complex(x[..., :half].double(), x[..., half:].double()) * torch.polar(
        torch.ones_like(angles), angles
    )
    return torch.cat([turned.real, turned.imag], dim=-1).to(x.dtype)


def rope_with_a_rotation_matrix(x, positions, base=10000.0):
    """A (seq, d, d) block rotation matrix applied by einsum."""
    d, half = x.shape[-1], x.shape[-1] // 2
    angles = positions[:, None].double() * base ** (-2 * torch.arange(half, dtype=torch.float64) / d)  # (seq, d/2)
    rotation = torch.zeros(len(positions), d, d, dtype=torch.float64)
    index = torch.arange(half)
    rotation[:, index, index] = angles.cos()
    rotation[:, index + half, index + half] = angles.cos()
    rotation[:, index, index + half] = -angles.sin()
    rotation[:, index + half, index] = angles.sin()
    return torch.einsum("sij,...sj->...si", rotation, x.double()).to(x.dtype)


class SwiGLUWithSigmoid(nn.Module):
    """SiLU written out, the layers made in a loop."""

    def __init__(self, d_model, d_hidden):
        super().__init__()
        for name, shape in (("gate_proj", (d_model, d_hidden)), ("up_proj", (d_model, d_hidden))):
            setattr(self, name, nn.Linear(*shape, bias=False))
        self.down_proj = nn.Linear(d_hidden, d_model, bias=False)

    def forward(self, x):
        gate = self.gate_proj(x)
        return self.down_proj(gate * torch.sigmoid(gate) * self.up_proj(x))


def gqa_by_expand_and_reshape(q, k, v, mask=None):
    """transformers' repeat_kv: a new axis expanded, then folded into the heads; the softmax by hand."""
    b, kv_heads, s, d = k.shape
    groups = q.shape[1] // kv_heads
    k = k[:, :, None].expand(b, kv_heads, groups, s, d).reshape(b, kv_heads * groups, s, d)
    v = v[:, :, None].expand(b, kv_heads, groups, s, d).reshape(b, kv_heads * groups, s, d)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    return scores.softmax(dim=-1) @ v


@torch.no_grad()  # attention has no weights of its own; the check does not ask for gradients here
def gqa_by_enable_gqa_without_gradients(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)


def gqa_by_grouped_einsum(q, k, v, mask=None):
    """The query heads viewed as (kv_heads, groups), so that no key is copied."""
    b, heads, s, d = q.shape
    grouped = q.view(b, k.shape[1], heads // k.shape[1], s, d)  # (batch, kv_heads, groups, seq, d)
    scores = torch.einsum("bkgqd,bksd->bkgqs", grouped, k) / d**0.5
    if mask is not None:  # broadcastable to (batch, heads, seq, seq): a causal mask, a padding mask (batch, 1, 1, seq)
        grouped_mask = torch.broadcast_to(mask, (b, heads, s, s)).reshape(b, k.shape[1], heads // k.shape[1], s, s)
        scores = scores.masked_fill(~grouped_mask, -math.inf)
    out = torch.einsum("bkgqs,bksd->bkgqd", scores.softmax(dim=-1), v)
    return out.reshape(b, heads, s, d)


class BlockWithUnflattenAndAnIndexMask(nn.Module):
    """Heads by unflatten, the mask compared from indices, the sizes read back from the layers."""

    def __init__(self, d_model, num_heads, num_kv_heads, d_hidden, eps=1e-6, base=10000.0):
        super().__init__()
        self.d_head, self.base = d_model // num_heads, base
        self.input_layernorm = stand_ins.RMSNorm(d_model, eps=eps)
        self.post_attention_layernorm = stand_ins.RMSNorm(d_model, eps=eps)
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)
        self.mlp = stand_ins.SwiGLU(d_model, d_hidden)

    def forward(self, x):
        u = self.input_layernorm(x)
        q, k, v = (
            proj(u).unflatten(-1, (-1, self.d_head)).transpose(1, 2) for proj in (self.q_proj, self.k_proj, self.v_proj)
        )
        positions = torch.arange(x.shape[1])
        q, k = (stand_ins.apply_rope(t, positions, base=self.base) for t in (q, k))
        visible = positions[None, :] <= positions[:, None]
        mixed = stand_ins.grouped_query_attention(q, k, v, visible)
        x = x + self.o_proj(mixed.transpose(1, 2).reshape(x.shape))
        return x + self.mlp(self.post_attention_layernorm(x))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb12.check_rmsnorm, RMSNormByTheNorm),
        (nb12.check_rmsnorm, RMSNormWithEpsAsABuffer),
        (nb12.check_rmsnorm, RMSNormFromPyTorch),
        (nb12.check_apply_rope, rope_by_rotate_half),
        (nb12.check_apply_rope, rope_with_a_rotation_matrix),
        (nb12.check_apply_rope, rope_by_complex_numbers),
        (nb12.check_swi_glu, SwiGLUWithSigmoid),
        (nb12.check_grouped_query_attention, gqa_by_expand_and_reshape),
        (nb12.check_grouped_query_attention, gqa_by_grouped_einsum),
        (nb12.check_grouped_query_attention, gqa_by_enable_gqa_without_gradients),
        (nb12.check_modern_block, BlockWithUnflattenAndAnIndexMask),
    ],
)
def test_checks_accept_correct_answers_written_differently(check, answer, seed):
    check(answer, seed=seed)


# Each exercise on its own; stubs ------------------------------------------------------------------------


def test_a_correct_block_gets_its_points_while_the_earlier_exercises_are_stubs():
    namespace = solved_namespace(ASSIGNMENT)
    namespace |= {"RMSNorm": StubModule, "SwiGLU": StubModule}
    namespace |= {"apply_rope": raise_not_implemented, "grouped_query_attention": raise_not_implemented}
    nb12.check_modern_block(namespace["ModernBlock"])
    assert namespace["RMSNorm"] is StubModule  # the notebook's own names are put back


def test_without_stand_ins_the_block_check_names_the_learners_own_parts(monkeypatch):
    monkeypatch.setattr(checks, "stand_ins", None)  # as in a student release
    namespace = solved_namespace(ASSIGNMENT)
    nb12.check_modern_block(namespace["ModernBlock"])  # the learner's correct parts: full marks
    namespace["apply_rope"] = raise_not_implemented
    with pytest.raises(CheckFailed, match="This check used your own apply_rope from earlier in the notebook"):
        nb12.check_modern_block(namespace["ModernBlock"])


def test_without_stand_ins_a_norm_that_keeps_eps_as_a_buffer_passes_in_the_block(monkeypatch):
    monkeypatch.setattr(checks, "stand_ins", None)  # as in a student release: the block holds the learner's norm
    namespace = solved_namespace(ASSIGNMENT)
    namespace["RMSNorm"] = RMSNormWithEpsAsABuffer
    nb12.check_modern_block(namespace["ModernBlock"])


@pytest.mark.parametrize(
    ("check", "stub"),
    [
        (nb12.check_rmsnorm, StubModule),
        (nb12.check_apply_rope, raise_not_implemented),
        (nb12.check_swi_glu, StubModule),
        (nb12.check_grouped_query_attention, raise_not_implemented),
        (nb12.check_modern_block, StubModule),
    ],
)
def test_a_stub_is_reported_as_not_implemented_yet(check, stub):
    with pytest.raises(NotImplementedYet, match="is not implemented yet"):
        check(stub)


# Seeds ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("check", "correct"),
    [
        (nb12.check_rmsnorm, stand_ins.RMSNorm),
        (nb12.check_swi_glu, stand_ins.SwiGLU),
        (nb12.check_modern_block, BlockWithUnflattenAndAnIndexMask),
        (nb12.check_apply_rope, rope_by_rotate_half),
        (nb12.check_grouped_query_attention, gqa_by_expand_and_reshape),
    ],
)
def test_every_hidden_test_gives_other_inputs_than_the_visible_one(check, correct):
    """Other inputs, and for RoPE other positions too (an int tensor, compared with the rest)."""
    assert_hidden_tests_differ(ASSIGNMENT, check, correct)


# The oracle ----------------------------------------------------------------------------------------------


def test_the_rotary_oracle_pairs_halves_and_turns_by_position_times_theta():
    x = torch.zeros(1, 1, 1, 4)
    x[..., 0] = 1.0  # the first feature of pair 0, whose partner is feature 2
    turned = nb12.rotary_oracle(x, torch.tensor([3]), rope_base=10000.0)
    assert torch.allclose(turned[0, 0, 0], torch.tensor([math.cos(3.0), 0.0, math.sin(3.0), 0.0]), atol=1e-6)


def test_the_block_oracle_is_causal_and_uses_the_weights_given():
    block = stand_ins_block()
    config = nb12.llama_config(16, 4, 2, 24, eps=1e-6, base=10000.0)
    twin = nb12._llama_twin(block, config, call="block")
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        out = nb12._run_llama(twin, config, x)
        changed = x.clone()
        changed[:, -1] += 1.0
        assert torch.allclose(nb12._run_llama(twin, config, changed)[:, :-1], out[:, :-1])
        assert torch.allclose(out, block(x), atol=1e-5)


def stand_ins_block() -> nn.Module:
    torch.manual_seed(0)
    return BlockWithUnflattenAndAnIndexMask(16, 4, 2, 24)


def test_an_unscaled_gqa_is_named_even_with_one_group_per_head():
    def unscaled(q, k, v, mask=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1.0, enable_gqa=True)

    with pytest.raises(CheckFailed, match="unscaled"):
        nb12.check_grouped_query_attention(unscaled)


def test_the_block_variants_change_only_what_they_name():
    """With nothing changed, the check's way of naming a block's mistakes computes the block itself; each layout
    mistake changes the outputs."""
    block = stand_ins_block()
    x = torch.randn(1, 5, 16)
    sizes = {"heads": 4, "kv_heads": 2, "base": 10000.0}
    with torch.no_grad():
        assert torch.allclose(nb12._block_variant(block, x, **sizes), block(x), atol=1e-5)
        for change in ({"split_view": True}, {"merge_view": True}, {"rope_base": 500.0}, {"mlp_reads": "x"}):
            assert not torch.allclose(nb12._block_variant(block, x, **sizes, **change), block(x), atol=1e-3), change


def test_a_head_merge_without_transpose_is_not_called_a_missing_causal_mask():
    class MergedByReshape(BlockWithUnflattenAndAnIndexMask):
        def forward(self, x):
            u = self.input_layernorm(x)
            q, k, v = (
                proj(u).unflatten(-1, (-1, self.d_head)).transpose(1, 2)
                for proj in (self.q_proj, self.k_proj, self.v_proj)
            )
            positions = torch.arange(x.shape[1])
            q, k = (stand_ins.apply_rope(t, positions, base=self.base) for t in (q, k))
            mixed = stand_ins.grouped_query_attention(q, k, v, positions[None, :] <= positions[:, None])
            x = x + self.o_proj(mixed.reshape(x.shape))  # the heads' axis before the positions': mixes them
            return x + self.mlp(self.post_attention_layernorm(x))

    with pytest.raises(CheckFailed, match="merges the heads back with a reshape") as failure:
        nb12.check_modern_block(MergedByReshape)
    assert "later ones" not in str(failure.value)


def test_the_new_block_variants_each_change_the_outputs():
    """What v_proj reads and what each residual starts from: each variant computes something else than the block."""
    block = stand_ins_block()
    x = torch.randn(1, 5, 16)
    sizes = {"heads": 4, "kv_heads": 2, "base": 10000.0}
    changes = ({"values_read": "x"}, {"attention_added_to": "u"}, {"mlp_added_to": "normed"})
    with torch.no_grad():
        for change in changes:
            assert not torch.allclose(nb12._block_variant(block, x, **sizes, **change), block(x), atol=1e-3), change


def test_a_block_that_fails_for_another_reason_is_not_told_to_split_k_and_v_otherwise():
    """The advice on num_kv_heads is given only when the block with as many key/value heads as query heads works."""

    class CrashingAlways(BlockWithUnflattenAndAnIndexMask):
        def forward(self, x):
            return x @ torch.ones(3, 3)  # a shape error whatever the heads

    with pytest.raises(CheckFailed) as failure:
        nb12.check_modern_block(CrashingAlways)
    assert "num_kv_heads heads" not in str(failure.value)


def test_a_rope_that_leaves_some_pairs_still_names_them():
    def every_other_pair(x, positions, base=10000.0):
        turned = rope_by_rotate_half(x, positions, base)
        half = x.shape[-1] // 2
        keep = torch.arange(x.shape[-1]) % half % 2 == 1  # pairs 1, 3, ...: both of their features
        return torch.where(keep, x, turned)

    with pytest.raises(CheckFailed, match=r"turns pairs? 0 and pair 2 by m·θ_i but leaves pair 1 and pair 3 as"):
        nb12.check_apply_rope(every_other_pair)


def test_pair_ranges_reads_as_runs():
    assert nb12._pair_ranges([0, 1, 3]) == "pairs 0 to 1 and pair 3"
    assert nb12._pair_ranges([2]) == "pair 2"
    assert nb12._pair_ranges([0, 2, 4, 5]) == "pair 0, pair 2 and pairs 4 to 5"
