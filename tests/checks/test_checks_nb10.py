"""The checks of notebook 10 (the GPT block, the model, the next-token loss, sampling) accept the reference code
and correct answers written in other ways, grade each exercise on its own, vary with their seed, and explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py; the solution notebook passes the checks when CI
executes it.)
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder.submissions import solved_namespace
from tests.check_probes import assert_hidden_tests_differ
from tests.stubs import StubModule, raise_not_implemented
from transformer_course import checks
from transformer_course.checks import CheckFailed, NotImplementedYet, nb10
from transformer_course.reference import LayerNorm, MultiHeadAttention
from transformer_course.reference.nb10_gpt import GPT, GPTBlock

ASSIGNMENT = "10_gpt"


class MLPWithNamedLayers(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class BlockWithCourseNormsAndANamedMLP(nn.Module):
    """The reference LayerNorm, an MLP with named linears and F.gelu, the mask from torch.tril with a batch axis,
    the attention called by keyword."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.ln_1 = LayerNorm(d_model)
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_2 = LayerNorm(d_model)
        self.mlp = MLPWithNamedLayers(d_model)

    def forward(self, x):
        seq = x.shape[-2]
        visible = torch.tril(torch.ones(seq, seq)).bool()[None]  # (1, seq, seq)
        attended, _ = self.attention(x=self.ln_1(x), mask=visible)
        h = x + attended
        return h + self.mlp(self.ln_2(h))


class BlockWithTheMaskFromIndices(nn.Module):
    """The mask compared from position indices; the MLP's layers in an nn.ModuleDict, the exact GELU as a module."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1 = nn.LayerNorm(d_model)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.ModuleDict(
            {
                "up": nn.Linear(d_model, 4 * d_model),
                "act": nn.GELU(approximate="none"),
                "down": nn.Linear(4 * d_model, d_model),
            }
        )

    def forward(self, x):
        positions = torch.arange(x.size(1))
        may_attend = positions[None, :] <= positions[:, None]  # (seq, seq): key j no later than query i
        x = x + self.attention(self.ln_1(x), mask=may_attend)[0]
        mlp = self.mlp
        return x + mlp["down"](mlp["act"](mlp["up"](self.ln_2(x))))


class BlockCallingPyTorchsAttentionByKeyword(nn.Module):
    """nn.MultiheadAttention inside notebook 03's module called directly: query, key and value by position, the
    mask by name with PyTorch's convention (True where a position may not attend)."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        blocked = torch.ones(seq, seq, dtype=torch.bool).triu(1)  # (seq, seq): True = may not attend
        h = self.ln_1(x)
        x = x + self.attention.attention(h, h, h, attn_mask=blocked, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class BlockPassingTheContextAndTheMaskByPosition(nn.Module):
    """Notebook 03's module with all three arguments by position, forward(x, context, mask): right as it is."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        h = self.ln_1(x)
        x = x + self.attention(h, h, torch.ones(seq, seq, dtype=torch.bool).tril())[0]
        return x + self.mlp(self.ln_2(x))


class GPTTiedTheOtherWay(nn.Module):
    """The embedding takes the output layer's Parameter (initialised after tying), course LayerNorm, blocks added in
    a loop, positions broadcast with a batch axis."""

    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.context = block_size
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.token_embedding.weight = self.lm_head.weight
        self.position_embedding = nn.Embedding(block_size, d_model)
        for table in (self.token_embedding, self.position_embedding):
            nn.init.normal_(table.weight, mean=0.0, std=0.02)
        self.blocks = nn.ModuleList()
        for _ in range(num_layers):
            self.blocks.append(BlockWithTheMaskFromIndices(d_model, num_heads))
        self.ln_f = LayerNorm(d_model)

    def forward(self, ids):
        batch, seq = ids.shape
        if seq > self.context:
            raise ValueError("sequence longer than the context")
        positions = torch.arange(seq).expand(batch, seq)  # (batch, seq)
        x = self.token_embedding(ids) + self.position_embedding(positions)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def loss_by_reshape(logits, ids):
    vocab = logits.size(-1)
    return F.cross_entropy(logits[:, :-1, :].reshape(-1, vocab), ids[:, 1:].reshape(-1))


def loss_with_the_vocabulary_second(logits, ids):
    scores = logits[:, :-1].transpose(1, 2)  # (batch, vocab, seq - 1): F.cross_entropy's class axis is 1
    return F.cross_entropy(scores, ids[:, 1:])


def loss_summed_then_divided(logits, ids):
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # (batch, seq - 1)
    return losses.sum() / losses.numel()


def loss_by_log_softmax(logits, ids):
    log_p = torch.log_softmax(logits, dim=-1)[:, :-1]  # (batch, seq - 1, vocab)
    return -log_p.gather(2, ids[:, 1:].unsqueeze(-1)).mean()


def test_checks_accept_the_reference_block_and_model():
    nb10.check_gptblock(GPTBlock)
    nb10.check_gpt(GPT)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb10.check_gptblock, BlockWithCourseNormsAndANamedMLP),
        (nb10.check_gptblock, BlockWithTheMaskFromIndices),
        (nb10.check_gptblock, BlockCallingPyTorchsAttentionByKeyword),
        (nb10.check_gptblock, BlockPassingTheContextAndTheMaskByPosition),
        (nb10.check_gpt, GPTTiedTheOtherWay),
        (nb10.check_next_token_loss, loss_by_reshape),
        (nb10.check_next_token_loss, loss_with_the_vocabulary_second),
        (nb10.check_next_token_loss, loss_by_log_softmax),
        (nb10.check_next_token_loss, loss_summed_then_divided),
    ],
)
def test_checks_accept_correct_answers_written_differently(check, answer, seed):
    check(answer, seed=seed)


def test_the_solutions_pass_and_a_correct_gpt_gets_its_points_while_the_block_is_a_stub():
    namespace = solved_namespace(ASSIGNMENT)
    nb10.check_gptblock(namespace["GPTBlock"])
    nb10.check_next_token_loss(namespace["next_token_loss"])
    namespace["GPTBlock"] = StubModule
    nb10.check_gpt(namespace["GPT"])
    assert namespace["GPTBlock"] is StubModule  # the notebook's own name is put back


def test_without_stand_ins_the_gpt_check_names_the_learners_own_block(monkeypatch):
    monkeypatch.setattr(checks, "stand_ins", None)  # as in a student release
    namespace = solved_namespace(ASSIGNMENT)
    nb10.check_gpt(namespace["GPT"])  # the learner's correct block: full marks
    namespace["GPTBlock"] = StubModule
    with pytest.raises(CheckFailed, match="This check used your own GPTBlock"):
        nb10.check_gpt(namespace["GPT"])


GPT_TIED_THE_OTHER_WAY_AFTER_INITIALISING = """
class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.token_embedding.weight = self.lm_head.weight

    def forward(self, ids):
        if ids.shape[1] > self.block_size:
            raise ValueError("longer than block_size")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))
"""


def test_without_stand_ins_a_failing_gpt_is_sent_back_to_its_block_only_when_the_block_fails(monkeypatch):
    """At home the learner's own GPTBlock is used: the failure adds that it may be the cause only when the block
    fails its own check."""
    monkeypatch.setattr(checks, "stand_ins", None)  # as in a student release
    namespace = solved_namespace(ASSIGNMENT)
    exec(GPT_TIED_THE_OTHER_WAY_AFTER_INITIALISING, namespace)
    with pytest.raises(CheckFailed, match="nn.Linear's default initialisation") as failure:
        nb10.check_gpt(namespace["GPT"])
    assert "your own GPTBlock" not in str(failure.value)
    namespace["GPTBlock"] = namespace["GPT"]  # not a block: its check fails
    with pytest.raises(CheckFailed, match="This check used your own GPTBlock"):
        nb10.check_gpt(namespace["GPT"])


def test_without_stand_ins_generate_is_sent_back_to_next_token_probabilities_only_when_that_fails(monkeypatch):
    monkeypatch.setattr(checks, "stand_ins", None)  # as in a student release
    namespace = solved_namespace(ASSIGNMENT)
    exec("def generate(model, prompt_ids, max_new_tokens, **options):\n    return prompt_ids", namespace)
    with pytest.raises(CheckFailed, match="generate returned only|wrong shape") as failure:
        nb10.check_generate(namespace["generate"])
    assert "your own next_token_probabilities" not in str(failure.value)
    namespace["next_token_probabilities"] = raise_not_implemented
    with pytest.raises(CheckFailed, match="This check used your own next_token_probabilities"):
        nb10.check_generate(namespace["generate"])


@pytest.mark.parametrize(
    ("check", "stub"),
    [
        (nb10.check_gptblock, StubModule),
        (nb10.check_gpt, StubModule),
        (nb10.check_next_token_loss, raise_not_implemented),
    ],
)
def test_a_stub_is_reported_as_not_implemented_yet(check, stub):
    with pytest.raises(NotImplementedYet, match="is not implemented yet"):
        check(stub)


def test_a_block_whose_mlp_is_a_bare_function_is_told_what_to_hold():
    class BlockWithAFunctionalMLP(BlockWithCourseNormsAndANamedMLP):
        def __init__(self, d_model, num_heads):
            super().__init__(d_model, num_heads)
            self.mlp = nn.Identity()

    with pytest.raises(CheckFailed, match="four times wider than the model. Found: no nn.Linear"):
        nb10.check_gptblock(BlockWithAFunctionalMLP)


def test_a_model_that_moves_to_another_dtype_and_back_stays_tied():
    model = GPTTiedTheOtherWay(11, 8, 8, 2, 1).double().float()
    assert model.lm_head.weight is model.token_embedding.weight
    restored = GPTTiedTheOtherWay(11, 8, 8, 2, 1)
    restored.load_state_dict(model.state_dict())
    assert restored.lm_head.weight is restored.token_embedding.weight
    assert torch.equal(restored.lm_head.weight, model.token_embedding.weight)


class GPTWithOpenAIsPositionScale(GPT):
    """OpenAI's GPT-2 code draws the positions with std 0.01, half the notebook's 0.02: close enough to pass."""

    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__(vocab_size, block_size, d_model, num_heads, num_layers)
        nn.init.normal_(self.position_embedding.weight, std=0.01)


@pytest.mark.parametrize("seed", range(6))
def test_positions_drawn_with_std_one_hundredth_always_pass(seed):
    nb10.check_gpt(GPTWithOpenAIsPositionScale, seed=seed)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_a_mask_that_is_not_bool_is_named(dtype):
    class BlockWithANumericMask(BlockWithTheMaskFromIndices):
        def forward(self, x):
            seq = x.shape[1]
            causal = torch.ones(seq, seq, dtype=dtype).tril()  # 0/1 numbers, not bool
            x = x + self.attention(self.ln_1(x), mask=causal)[0]
            mlp = self.mlp
            return x + mlp["down"](mlp["act"](mlp["up"](self.ln_2(x))))

    with pytest.raises(CheckFailed, match=f"has dtype {dtype}; the mask must be a bool tensor"):
        nb10.check_gptblock(BlockWithANumericMask)


@pytest.mark.parametrize(("check", "correct"), [(nb10.check_gptblock, GPTBlock), (nb10.check_gpt, GPT)])
def test_every_hidden_test_gives_other_weights_and_inputs_than_the_visible_one(check, correct):
    assert_hidden_tests_differ(ASSIGNMENT, check, correct)


# Sampling: correct answers in other styles --------------------------------------------------------------


def probabilities_by_masking(logits, temperature=1.0, top_k=None, top_p=None):
    """The notebook's way: -inf logits for the removed tokens; top-p keeps a token while the more probable ones add
    up to less than top_p."""
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


def probabilities_by_renormalising(logits, temperature=1.0, top_k=None, top_p=None):
    """Works on probabilities: from the log-probabilities divided by T, zeros for the removed tokens, the
    shifted-mask style of top-p (remove where the total so far passes top_p, moved one place on), a division at the
    end; float64."""
    if temperature == 0:
        probs = torch.zeros_like(logits)
        probs[torch.arange(len(logits)), logits.argmax(dim=-1)] = 1.0
        return probs
    probs = (logits.double().log_softmax(dim=-1) / temperature).softmax(dim=-1)
    if top_k is not None and top_k < probs.shape[-1]:
        kth = torch.topk(probs, top_k, dim=-1).values[:, -1:]  # tied probabilities at the k-th place all stay
        probs = torch.where(probs >= kth, probs, 0.0)
    if top_p is not None:
        ordered, order = torch.sort(probs / probs.sum(dim=-1, keepdim=True), dim=-1, descending=True)
        past = torch.cumsum(ordered, dim=-1) > top_p
        remove = torch.zeros_like(past)
        remove[:, 1:] = past[:, :-1]
        probs = torch.where(remove.scatter(-1, order, remove), 0.0, probs)
    return (probs / probs.sum(dim=-1, keepdim=True)).to(logits.dtype)


def probabilities_row_by_row(logits, temperature=1.0, top_k=None, top_p=None):
    """Plain Python over each row's sorted tokens."""
    rows = []
    for row in logits:
        if temperature == 0:
            rows.append(torch.eye(len(row), dtype=row.dtype)[row.argmax()])
            continue
        scaled = row / temperature
        ranked = sorted(range(len(row)), key=lambda t: -scaled[t].item())
        kept = ranked[: top_k or len(ranked)]
        kept += [t for t in ranked[len(kept) :] if scaled[t] == scaled[kept[-1]]]  # ties at the k-th place stay
        if top_p is not None:
            probs = torch.softmax(scaled[kept], dim=0).tolist()
            total, count = 0.0, 0
            while count < len(kept) and (count == 0 or total < top_p):
                total += probs[count]
                count += 1
            kept = kept[:count]
        mask = torch.full_like(row, float("-inf"))
        mask[kept] = 0.0
        rows.append(torch.softmax(scaled + mask, dim=0))
    return torch.stack(rows)


def generate_by_concatenating(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :])[:, -1]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)  # noqa: F821 (the stand-in)
            ids = torch.cat([ids, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return ids


@torch.inference_mode()
def generate_into_a_buffer(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    """Fills a preallocated tensor; greedy without drawing at all; its own filtering."""
    batch, length = prompt_ids.shape
    out = torch.empty(batch, length + max_new_tokens, dtype=torch.long)
    out[:, :length] = prompt_ids
    for end in range(length, length + max_new_tokens):
        logits = model(out[:, max(0, end - model.block_size) : end])[:, -1, :]
        if temperature == 0:
            out[:, end] = logits.argmax(dim=-1)
        else:
            probs = probabilities_by_renormalising(logits, temperature, top_k, top_p)
            out[:, end] = torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)
    return out


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb10.check_next_token_probabilities, probabilities_by_masking),
        (nb10.check_next_token_probabilities, probabilities_by_renormalising),
        (nb10.check_next_token_probabilities, probabilities_row_by_row),
        (nb10.check_generate, generate_by_concatenating),
        (nb10.check_generate, generate_into_a_buffer),
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sampling_checks_accept_correct_answers_written_differently(check, answer, seed):
    check(answer, seed=seed)


@pytest.mark.parametrize("check", [nb10.check_next_token_probabilities, nb10.check_generate])
def test_a_sampling_stub_is_reported_as_not_implemented_yet(check):
    with pytest.raises(NotImplementedYet, match="is not implemented yet"):
        check(raise_not_implemented)


@pytest.mark.parametrize(
    ("check", "correct"),
    [
        (nb10.check_next_token_loss, loss_by_reshape),
        (nb10.check_next_token_probabilities, probabilities_by_masking),
        (nb10.check_generate, generate_by_concatenating),
    ],
)
def test_every_hidden_test_gives_a_function_other_inputs_than_the_visible_one(check, correct):
    """Other logits and ids for the loss, other logits for the probabilities, another prompt for generate."""
    assert_hidden_tests_differ(ASSIGNMENT, check, correct)


def test_the_oracle_keeps_the_smallest_set_that_reaches_top_p():
    """transformers' TopPLogitsWarper against the definition, at random and where a total equals top_p exactly
    (probabilities that are sums of powers of 2 add up without rounding)."""
    logits = torch.randn(50, 9, generator=torch.Generator().manual_seed(0)) * 2
    probs = logits.softmax(dim=-1)
    for top_p in (0.3, 0.6, 0.9):
        expected = nb10._top_p_set(probs.double(), top_p)
        assert torch.equal(nb10._warped_by_transformers(logits, heat=1.0, keep_k=None, keep_mass=top_p) > 0, expected)
    exact = torch.tensor([[0.5, 0.25, 0.125, 0.0625, 0.0625]]).log()
    assert (nb10._warped_by_transformers(exact, heat=1.0, keep_k=None, keep_mass=0.75) > 0).tolist() == [
        [True, True, False, False, False]
    ]
    assert nb10._top_p_set(exact.softmax(dim=-1).double(), 0.75).tolist() == [[True, True, False, False, False]]


def test_a_mask_row_that_allows_no_key_is_named_even_with_the_diagonal_kept():
    """Only the diagonal's absence earns the hint about tril(diagonal=-1); any other empty row is named as such."""

    class BlockWithAnEmptyFirstRow(BlockWithCourseNormsAndANamedMLP):
        def forward(self, x):
            seq = x.shape[1]
            causal = torch.ones(seq, seq, dtype=torch.bool).tril()
            causal[0] = False  # position 0 may attend to nothing
            x = x + self.attention(self.ln_1(x), mask=causal)[0]
            return x + self.mlp(self.ln_2(x))

    with pytest.raises(CheckFailed, match="row 0 of the mask given to self.attention is all False") as failure:
        nb10.check_gptblock(BlockWithAnEmptyFirstRow)
    assert "tril(diagonal=-1)" not in str(failure.value)


@pytest.mark.parametrize("seed", range(4))
def test_flat_logits_are_not_taken_for_a_softmax_of_probabilities(seed):
    """A softmax of a uniform distribution is uniform: on the check's flat logits (one row exactly flat, one nearly)
    a right answer is close to that wrong one, and must pass."""
    from transformer_course.reference.nb10_gpt import next_token_probabilities

    flat = nb10._flat_logits(seed)
    for temperature in (0.7, 1.0):
        probs = next_token_probabilities(flat, temperature)
        nb10._expect_distribution(probs, flat, temperature, None, None, "next_token_probabilities")


def test_a_block_that_fails_to_build_for_another_reason_is_not_told_its_sizes_are_swapped():
    class BlockThatCannotBuild(BlockWithCourseNormsAndANamedMLP):
        def __init__(self, d_model, num_heads):
            super().__init__(d_model, num_heads)
            raise AssertionError("something else")

    with pytest.raises(CheckFailed, match="raised AssertionError: something else") as failure:
        nb10.check_gptblock(BlockThatCannotBuild)
    assert "the other way round" not in str(failure.value)


def test_logits_changed_in_place_are_not_told_about_a_per_row_value():
    """A function that changes its logits in place is right row by row too: only a raised error earns that hint."""

    def next_token_probabilities(logits, temperature=1.0, top_k=None, top_p=None):
        if temperature == 0:
            return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
        logits /= temperature
        if top_k is not None:
            logits[logits < logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]] = float("-inf")
        return logits.softmax(dim=-1)

    with pytest.raises(CheckFailed, match="changed its input logits in place") as failure:
        nb10.check_next_token_probabilities(next_token_probabilities)
    assert "Given one row at a time" not in str(failure.value)
