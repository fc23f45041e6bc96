"""The checks of notebook 11 (the KV cache, cached decoding, blockwise attention) accept the solutions and correct
answers written in other ways, grade each exercise on its own, vary with their seed, and explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py; the solution notebook passes the checks when CI
executes it.)
"""

import math

import pytest
import torch
import torch.nn.functional as F

from autograder.submissions import solved_namespace
from tests.check_probes import assert_hidden_tests_differ, calls_of, hidden_seeds
from tests.stubs import StubModule, raise_not_implemented
from transformer_course import checks
from transformer_course.checks import CheckFailed, NotImplementedYet, nb11, stand_ins

ASSIGNMENT = "11_fast_inference"


CHECKS = {
    "KVCache": nb11.check_kvcache,
    "cached_block_forward": nb11.check_cached_block_forward,
    "cached_logits": nb11.check_cached_logits,
    "generate_cached": nb11.check_generate_cached,
    "blockwise_attention": nb11.check_blockwise_attention,
}


@pytest.mark.parametrize("exercise", list(CHECKS))
def test_the_solutions_pass(exercise):
    CHECKS[exercise](solved_namespace(ASSIGNMENT)[exercise], seed=1)


@pytest.mark.parametrize("name", ["KVCache", "cached_block_forward", "cached_logits"])
def test_the_stand_ins_pass(name):
    CHECKS[name](getattr(stand_ins, name))


def test_the_checks_cache_is_not_an_answer_to_the_cache_exercise():
    with pytest.raises(CheckFailed, match="raised TypeError"):
        nb11.check_kvcache(nb11.RecordingCache)


# Correct answers written in other ways ------------------------------------------------------------------


class PreallocatedCache:
    """One buffer per tensor that doubles when full, filled in place; append returns views of its filled part."""

    def __init__(self):
        self.buffers, self.length = None, 0

    def __len__(self):
        return self.length

    def append(self, keys, values):
        new = keys.shape[2]
        if self.buffers is None or self.length + new > self.buffers[0].shape[2]:
            size = max(2 * (self.length + new), 4)
            grown = [t.new_zeros(*t.shape[:2], size, t.shape[3]) for t in (keys, values)]
            if self.buffers is not None:
                for buffer, old in zip(grown, self.buffers, strict=True):
                    buffer[:, :, : self.length] = old[:, :, : self.length]
            self.buffers = grown
        for buffer, part in zip(self.buffers, (keys, values), strict=True):
            buffer[:, :, self.length : self.length + new] = part
        self.length += new
        return tuple(buffer[:, :, : self.length] for buffer in self.buffers)


class ListCache:
    """The parts kept in lists, joined at every append."""

    def __init__(self):
        self.parts = ([], [])

    def __len__(self):
        return sum(part.shape[-2] for part in self.parts[0])

    def append(self, keys, values):
        self.parts[0].append(keys)
        self.parts[1].append(values)
        return torch.cat(self.parts[0], dim=-2), torch.cat(self.parts[1], dim=-2)


def block_with_einsum_and_an_additive_mask(block, x, cache):
    """Scores by einsum, a float mask added, the softmax and the weighted sum by hand."""
    cached = len(cache)
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, keys) / math.sqrt(q.shape[-1])
    key_positions = torch.arange(keys.shape[2])
    query_positions = cached + torch.arange(x.shape[1])[:, None]
    scores = scores + torch.where(key_positions <= query_positions, 0.0, -math.inf)
    mixed = torch.einsum("bhqk,bhkd->bhqd", scores.softmax(dim=-1), values)
    h = x + block.attention.project_output(mixed)
    return h + block.mlp(block.ln_2(h))


def block_reading_the_length_after_appending(block, x, cache):
    """len(cache) read after the append, the new positions taken off; the mask compared from positions."""
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    first_new = len(cache) - x.shape[1]
    visible = torch.arange(keys.shape[2]) <= first_new + torch.arange(x.shape[1])[:, None]  # (new, cached + new)
    h = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return h + block.mlp(block.ln_2(h))


def logits_by_indexing_the_table(model, ids, caches):
    """Positions read from the table's rows by index, the blocks walked by position in the list."""
    start = len(caches[0])
    x = model.token_embedding(ids) + model.position_embedding.weight[start : start + ids.shape[1]]
    for index in range(len(model.blocks)):
        x = stand_ins.cached_block_forward(model.blocks[index], x, caches[index])
    return model.lm_head(model.ln_f(x))


def generate_with_the_prompt_first(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """The prompt run before the loop; the loop's last step computes no logits it would not use."""
    caches = [stand_ins.KVCache() for _ in model.blocks]
    tokens = [prompt_ids]
    with torch.no_grad():
        logits = stand_ins.cached_logits(model, prompt_ids, caches)[:, -1]
        for step in range(max_new_tokens):
            probabilities = stand_ins.next_token_probabilities(logits, temperature, top_k, top_p)
            tokens.append(torch.multinomial(probabilities, 1, generator=generator))
            if step + 1 < max_new_tokens:
                logits = stand_ins.cached_logits(model, tokens[-1], caches)[:, -1]
    return torch.cat(tokens, dim=1)


def generate_with_the_temperature_applied_first(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """The logits divided by the temperature before next_token_probabilities, which then gets 1.0 and the filters by
    name; greedy decoding by argmax: other arguments than generate_cached's, the same tokens."""
    caches = [stand_ins.KVCache() for _ in model.blocks]
    ids = newest = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = stand_ins.cached_logits(model, newest, caches)[:, -1]
            if temperature == 0:
                newest = logits.argmax(dim=-1, keepdim=True)
            else:
                probabilities = stand_ins.next_token_probabilities(logits / temperature, 1.0, top_p=top_p, top_k=top_k)
                newest = torch.multinomial(probabilities, 1, generator=generator)
            ids = torch.cat([ids, newest], dim=1)
    return ids


def blockwise_by_einsum_and_where(q, k, v, mask=None, is_causal=False, block_size=64):
    """torch.where for the masks, the maximum detached (it cancels out), sums kept without the singleton axis."""
    n_q = q.shape[-2]
    m = torch.full(q.shape[:-1], -math.inf)
    total = torch.zeros(q.shape[:-1])
    out = torch.zeros(*q.shape[:-1], v.shape[-1])
    for start in range(0, k.shape[-2], block_size):
        kb, vb = k[..., start : start + block_size, :], v[..., start : start + block_size, :]
        s = torch.einsum("...qd,...kd->...qk", q, kb) * q.shape[-1] ** -0.5
        visible = torch.ones(s.shape[-2:], dtype=torch.bool)
        if mask is not None:
            visible = visible & mask[..., start : start + block_size]
        if is_causal:
            visible = visible & (start + torch.arange(kb.shape[-2]) <= torch.arange(n_q)[:, None])
        s = torch.where(visible, s, -math.inf)
        m_new = torch.maximum(m, s.amax(dim=-1)).detach()
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - safe[..., None])
        scale = torch.exp(m - safe)
        total = total * scale + p.sum(dim=-1)
        out = out * scale[..., None] + torch.einsum("...qk,...kd->...qd", p, vb)
        m = m_new
    return out / torch.where(total > 0, total, torch.ones_like(total))[..., None]


def blockwise_over_query_blocks_too(q, k, v, mask=None, is_causal=False, block_size=64):
    """Queries in blocks as well, each query block running the key loop; the outputs joined at the end."""
    if mask is not None:
        mask = mask.expand(*mask.shape[:-2], q.shape[-2], k.shape[-2])  # a view: the query axis can be sliced
    outputs = []
    for q_start in range(0, q.shape[-2], block_size):
        q_block = q[..., q_start : q_start + block_size, :]
        rows = torch.arange(q_start, q_start + q_block.shape[-2])[:, None]
        m = torch.full((*q_block.shape[:-1], 1), -math.inf)
        total = torch.zeros(*q_block.shape[:-1], 1)
        out = torch.zeros(*q_block.shape[:-1], v.shape[-1])
        for start in range(0, k.shape[-2], block_size):
            end = min(start + block_size, k.shape[-2])
            s = q_block @ k[..., start:end, :].mT / math.sqrt(q.shape[-1])
            if mask is not None:
                s = s.masked_fill(~mask[..., q_start : q_start + block_size, start:end], -math.inf)
            if is_causal:
                s = s.masked_fill(torch.arange(start, end) > rows, -math.inf)
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            safe = m_new.nan_to_num(neginf=0.0)
            p = (s - safe).exp()
            scale = (m - safe).exp()
            total, out, m = total * scale + p.sum(-1, keepdim=True), out * scale + p @ v[..., start:end, :], m_new
        outputs.append(out / total.clamp_min(torch.finfo(total.dtype).tiny))
    return torch.cat(outputs, dim=-2)


def blockwise_with_the_keys_transposed_once(q, k, v, mask=None, is_causal=False, block_size=64):
    """kᵀ made contiguous once, (..., d_k, n_k), its columns sliced per block: a copy of an input, no scores."""
    keys_t = k.transpose(-2, -1).contiguous()
    n_q = q.shape[-2]
    m = torch.full((*q.shape[:-1], 1), -math.inf)
    total = torch.zeros(*q.shape[:-1], 1)
    out = torch.zeros(*q.shape[:-1], v.shape[-1])
    for start in range(0, k.shape[-2], block_size):
        end = min(start + block_size, k.shape[-2])
        s = q @ keys_t[..., start:end] / math.sqrt(q.shape[-1])
        if mask is not None:
            s = s.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            s = s.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        safe = m_new.masked_fill(m_new == -math.inf, 0.0)
        p = (s - safe).exp()
        scale = (m - safe).exp()
        total, out, m = total * scale + p.sum(-1, keepdim=True), out * scale + p @ v[..., start:end, :], m_new
    return out / total.masked_fill(total == 0, 1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb11.check_kvcache, PreallocatedCache),
        (nb11.check_kvcache, ListCache),
        (nb11.check_cached_block_forward, block_with_einsum_and_an_additive_mask),
        (nb11.check_cached_block_forward, block_reading_the_length_after_appending),
        (nb11.check_cached_logits, logits_by_indexing_the_table),
        (nb11.check_generate_cached, generate_with_the_prompt_first),
        (nb11.check_generate_cached, generate_with_the_temperature_applied_first),
        (nb11.check_blockwise_attention, blockwise_by_einsum_and_where),
        (nb11.check_blockwise_attention, blockwise_over_query_blocks_too),
        (nb11.check_blockwise_attention, blockwise_with_the_keys_transposed_once),
    ],
)
def test_checks_accept_correct_answers_written_differently(check, answer, seed):
    check(answer, seed=seed)


# Each exercise on its own; stubs ------------------------------------------------------------------------


def test_a_correct_later_exercise_gets_its_points_while_the_earlier_ones_are_stubs():
    namespace = solved_namespace(ASSIGNMENT)
    cached_logits = namespace["cached_logits"]
    namespace["KVCache"] = StubModule
    namespace["cached_block_forward"] = raise_not_implemented
    nb11.check_cached_logits(cached_logits)
    namespace["cached_logits"] = raise_not_implemented
    nb11.check_generate_cached(namespace["generate_cached"])
    assert namespace["KVCache"] is StubModule  # the notebook's own names are put back


def test_without_stand_ins_the_generation_check_names_the_learners_own_part_that_fails_its_check(monkeypatch):
    monkeypatch.setattr(checks, "stand_ins", None)  # as in a student release
    namespace = solved_namespace(ASSIGNMENT)
    nb11.check_generate_cached(namespace["generate_cached"])  # the learner's correct parts: full marks
    namespace["cached_logits"] = raise_not_implemented
    with pytest.raises(CheckFailed, match="This check used your own cached_logits from earlier") as failure:
        nb11.check_generate_cached(namespace["generate_cached"])
    assert "KVCache" not in str(failure.value)  # the learner's, which passes its own check
    assert "next_token_probabilities" not in str(failure.value)  # the reference's, which the notebook imports


def test_without_stand_ins_a_cache_shared_by_the_blocks_is_named(monkeypatch):
    monkeypatch.setattr(checks, "stand_ins", None)  # as in a student release: the learner's own KVCache is counted
    namespace = solved_namespace(ASSIGNMENT)
    exec(
        "def generate_cached(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, "
        "generator=None):\n"
        "    caches = [KVCache()] * len(model.blocks)\n"
        "    ids = newest = prompt_ids\n"
        "    with torch.no_grad():\n"
        "        for _ in range(max_new_tokens):\n"
        "            logits = cached_logits(model, newest, caches)[:, -1]\n"
        "            probabilities = next_token_probabilities(logits, temperature, top_k, top_p)\n"
        "            newest = torch.multinomial(probabilities, 1, generator=generator)\n"
        "            ids = torch.cat([ids, newest], dim=1)\n"
        "    return ids\n",
        namespace,
    )
    own = namespace["KVCache"]
    with pytest.raises(CheckFailed, match="repeats one and the same cache"):
        nb11.check_generate_cached(namespace["generate_cached"])
    assert namespace["KVCache"] is own  # the counting stand-in for the name is taken back


@pytest.mark.parametrize(
    ("check", "stub"),
    [
        (nb11.check_kvcache, StubModule),
        (nb11.check_cached_block_forward, raise_not_implemented),
        (nb11.check_cached_logits, raise_not_implemented),
        (nb11.check_generate_cached, raise_not_implemented),
        (nb11.check_blockwise_attention, raise_not_implemented),
    ],
)
def test_a_stub_is_reported_as_not_implemented_yet(check, stub):
    with pytest.raises(NotImplementedYet, match="is not implemented yet"):
        check(stub)


# Seeds ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("check", "correct"),
    [
        (nb11.check_cached_block_forward, stand_ins.cached_block_forward),
        (nb11.check_cached_logits, stand_ins.cached_logits),
        (nb11.check_generate_cached, generate_with_the_prompt_first),
        (nb11.check_blockwise_attention, blockwise_by_einsum_and_where),
    ],
)
def test_every_hidden_test_gives_a_function_other_inputs_than_the_visible_one(check, correct):
    """Another x for the block, other ids for the logits, another prompt for generation, other q, k, v."""
    assert_hidden_tests_differ(ASSIGNMENT, check, correct)


def test_every_hidden_test_of_the_cache_appends_other_keys():
    def appended(seed):
        class Recorded(ListCache):
            def append(self, keys, values):
                calls.append(keys.clone())
                return super().append(keys, values)

        calls = []
        nb11.check_kvcache(Recorded, seed=seed)
        return calls

    seeds = hidden_seeds(ASSIGNMENT, "check_kvcache")
    assert seeds
    for seed in seeds:
        assert not any(map(torch.equal, appended(0), appended(seed))), f"seed={seed} appends the same keys"


def test_the_blockwise_check_calls_with_other_masks_for_each_seed():
    def masks(seed):
        return [
            call.get("mask") for call in calls_of(nb11.check_blockwise_attention, blockwise_by_einsum_and_where, seed)
        ]

    visible = [mask for mask in masks(0) if mask is not None]
    for seed in hidden_seeds(ASSIGNMENT, "check_blockwise_attention"):
        hidden = [mask for mask in masks(seed) if mask is not None]
        assert not any(map(torch.equal, visible, hidden)), f"seed={seed} gives the same masks"


# The oracles -------------------------------------------------------------------------------------------


def test_pytorch_attention_gives_a_query_that_sees_no_key_zeros_and_zero_gradients():
    q, k, v = (torch.randn(1, 1, 3, 4, requires_grad=True) for _ in range(3))
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True]])
    out = checks.pytorch_attention(q, k, v, mask=mask, scale=None)[0]
    assert torch.equal(out[0, 0, 1], torch.zeros(4))
    gradients = torch.autograd.grad(out.sum(), (q, k, v))
    assert all(torch.isfinite(g).all() for g in gradients)
    assert torch.equal(gradients[0][0, 0, 1], torch.zeros(4))


def test_the_memory_probe_sees_the_square_matrix_of_attention_written_out():
    def written_out(q, k, v, mask=None, is_causal=False, block_size=64):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(q.shape[-2], k.shape[-2]).tril().bool())

    with pytest.raises(CheckFailed, match="the n × n"):
        nb11._check_no_square_matrix(written_out, seed=0)


class CacheWithNoneDefaults:
    """Optional starting tensors as default arguments, None: not shared, since None is never changed in place."""

    def __init__(self, keys=None, values=None):
        self.keys, self.values = keys, values

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, keys, values):
        self.keys = keys if self.keys is None else torch.cat([self.keys, keys], dim=2)
        self.values = values if self.values is None else torch.cat([self.values, values], dim=2)
        return self.keys, self.values


def test_a_cache_with_none_as_its_default_arguments_passes():
    nb11.check_kvcache(CacheWithNoneDefaults)


def test_the_block_variants_with_nothing_changed_compute_the_block():
    """The check names a block's mistakes by computing them; with the right mask and nothing else changed, that
    computation is the block itself."""
    torch.manual_seed(0)
    block = nb11.perturbed(nb11.GPTBlock(nb11.D_MODEL, nb11.HEADS), 0)
    x = torch.randn(2, 7, nb11.D_MODEL)
    visible = torch.ones(4, 7, dtype=torch.bool).tril(3)
    with torch.no_grad():
        assert torch.allclose(nb11._attention_of_new(block, x, 3, 7, visible=visible), block(x)[:, 3:7], atol=1e-5)


@pytest.mark.parametrize(
    "options",
    [
        {"temperature": 0.8, "top_k": None, "top_p": None},
        {"temperature": 1.0, "top_k": 5, "top_p": None},
        {"temperature": 1.0, "top_k": None, "top_p": 0.8},
        {"temperature": 0.7, "top_k": 9, "top_p": 0.6},
    ],
)
def test_the_draws_oracle_gives_notebook_10s_distribution(options):
    """The generation check replays notebook 10's draws from its own closed form: equal to the reference's
    distribution, so that a correct answer gets the same tokens from the same generator."""
    logits = 3 * torch.randn(64, nb11.VOCAB, generator=torch.Generator().manual_seed(0))
    ours = nb11._next_token_distribution(logits, **options)
    reference = stand_ins.next_token_probabilities(logits, options["temperature"], options["top_k"], options["top_p"])
    assert torch.allclose(ours, reference, atol=1e-7)
    assert torch.equal(ours > 0, reference > 0)


def test_the_block_check_tells_d_head_from_its_square_root_and_from_the_square_root_of_d_model():
    """Dividing the scores by d_head, √d_head or √d_model gives three different results only if the check's sizes
    keep them apart: with d_head = √d_model, one mistake would be named as the other."""
    d_head = nb11.D_MODEL // nb11.HEADS
    assert len({d_head, math.sqrt(d_head), math.sqrt(nb11.D_MODEL)}) == 3


def test_a_generation_that_crashes_after_the_prompt_for_another_reason_is_not_told_about_the_axis():
    """The newest token given with its axis, the temperature divided without a branch for 0: multinomial refuses
    the nan probabilities right after the prompt. Nothing about the newest token's axis is true here."""
    namespace = solved_namespace(ASSIGNMENT)
    exec(
        "def generate_cached(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, "
        "generator=None):\n"
        "    caches = [KVCache() for _ in model.blocks]\n"
        "    ids = newest = prompt_ids\n"
        "    with torch.no_grad():\n"
        "        for _ in range(max_new_tokens):\n"
        "            logits = cached_logits(model, newest, caches)[:, -1] / temperature\n"
        "            probabilities = next_token_probabilities(logits, 1.0, top_k, top_p)\n"
        "            newest = torch.multinomial(probabilities, 1, generator=generator)\n"
        "            ids = torch.cat([ids, newest], dim=1)\n"
        "    return ids\n",
        namespace,
    )
    with pytest.raises(CheckFailed, match="raised RuntimeError") as failure:
        nb11.check_generate_cached(namespace["generate_cached"])
    assert "axis" not in str(failure.value)
    assert "next_token_probabilities's order" not in str(failure.value)
