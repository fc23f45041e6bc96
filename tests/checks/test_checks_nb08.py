"""The checks of notebook 08 accept correct answers written in other ways, and explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py; the solution notebook passes the checks when CI
executes it.)
"""

import math

import pytest
import torch
import torch.nn.functional as F

from tests.stubs import raise_not_implemented
from transformer_course.checks import CheckFailed, nb08
from transformer_course.data.translation import BOS, EOS, PAD
from transformer_course.reference import source_mask, target_mask


def shift_by_copying(target, bos_id):
    shifted = target.new_full(target.shape, bos_id)
    shifted[:, 1:] = target[:, :-1]
    return shifted


def loss_by_pytorch(logits, target, pad_id, smoothing=0.0):
    return F.cross_entropy(logits.flatten(0, 1), target.flatten(), ignore_index=pad_id, label_smoothing=smoothing)


def loss_with_the_smoothed_target_written_out(logits, target, pad_id, smoothing=0.0):
    """The target distribution q built in full: smoothing / vocab on every word, 1 - smoothing more on the right one."""
    vocab = logits.shape[-1]
    q = F.one_hot(target, vocab).to(logits.dtype) * (1 - smoothing) + smoothing / vocab  # (batch, n_tgt, vocab)
    per_token = -(q * logits.log_softmax(dim=-1)).sum(dim=-1)  # (batch, n_tgt)
    real = (target != pad_id).to(logits.dtype)
    return (per_token * real).sum() / real.sum()


def loss_with_the_vocabulary_on_dim_1(logits, target, pad_id, smoothing=0.0):
    return F.cross_entropy(logits.transpose(1, 2), target, ignore_index=pad_id, label_smoothing=smoothing)


def loss_in_double_precision(logits, target, pad_id, smoothing=0.0):
    """Nothing in the exercise asks for float32: a loss computed and returned in float64 is as good."""
    log_p = torch.log_softmax(logits.double(), dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_position = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_position[target != pad_id].mean()


def schedule_as_a_tensor(step, peak, warmup_steps):
    return torch.tensor(peak * min(step * warmup_steps**-1.5, step**-0.5) * warmup_steps**0.5)


def greedy_one_sentence_at_a_time(model, src, max_len):
    rows = []
    for sentence in src:
        sentence = sentence[None]
        memory = model.encode(sentence, source_mask(sentence, PAD))
        words = [BOS]
        while len(words) <= max_len and words[-1] != EOS:
            prefix = torch.tensor([words])
            logits = model.decode(prefix, memory, target_mask(prefix, PAD), source_mask(sentence, PAD))
            words.append(logits[0, -1].argmax().item())
        rows.append(words[1:])
    width = max(map(len, rows))
    return torch.tensor([row + [PAD] * (width - len(row)) for row in rows])


@torch.no_grad()
def greedy_into_a_preallocated_output(model, src, max_len):
    """Writes into a (batch, max_len + 1) tensor, with a causal mask made by hand, then trims the PAD columns."""
    src_mask = (src != PAD).unsqueeze(1)
    memory = model.encode(src, src_mask)
    out = torch.full((src.shape[0], max_len + 1), PAD, dtype=torch.long)
    out[:, 0] = BOS
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for t in range(1, max_len + 1):
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        word = model.decode(out[:, :t], memory, causal, src_mask)[:, -1].argmax(-1)
        out[:, t] = torch.where(done, PAD, word)
        done |= word == EOS
        if done.all():
            break
    out = out[:, 1:]
    width = int((out != PAD).any(dim=0).nonzero().max()) + 1
    return out[:, :width]


@torch.no_grad()
def beam_search_one_hypothesis_at_a_time(model, src, beam_size, max_len, alpha=0.6):
    """Decodes each hypothesis alone (a batch of one, so the memory needs no copies) and sorts in Python."""
    src = src.unsqueeze(0)
    mask = source_mask(src, PAD)
    memory = model.encode(src, mask)
    beams, done = [(0.0, [BOS])], []
    for _ in range(max_len):
        candidates = []
        for score, words in beams:
            prefix = torch.tensor([words])
            log_p = F.log_softmax(model.decode(prefix, memory, target_mask(prefix, PAD), mask)[0, -1], dim=-1)
            candidates += [(score + lp, words + [w]) for w, lp in enumerate(log_p.tolist())]
        candidates.sort(key=lambda c: c[0], reverse=True)
        beams = []
        for score, words in candidates[:beam_size]:
            (done if words[-1] == EOS else beams).append((score, words))
        if not beams:
            break
    _, words = max(done + beams, key=lambda c: c[0] / (len(c[1]) - 1) ** alpha)
    return words[1:]


def beam_search_with_probabilities_kept_whole(model, src, beam_size, max_len, alpha=0.6):
    """Ranks by the product of probabilities (the same order as their summed logs), one hypothesis at a time,
    and lets finished hypotheses keep their place in the beam while they rank among the best."""
    src = src[None]
    memory = model.encode(src, source_mask(src, PAD))
    beam = [([BOS], 1.0)]
    for _ in range(max_len):
        candidates = [hypothesis for hypothesis in beam if hypothesis[0][-1] == EOS]
        growing = [hypothesis for hypothesis in beam if hypothesis[0][-1] != EOS]
        if not growing:
            break
        for words, probability in growing:
            prefix = torch.tensor([words])
            logits = model.decode(prefix, memory, target_mask(prefix, PAD), source_mask(src, PAD))
            for word, p in enumerate(logits[0, -1].softmax(-1).tolist()):
                candidates.append((words + [word], probability * p))
        beam = sorted(candidates, key=lambda c: c[1], reverse=True)[:beam_size]
    best = max(beam, key=lambda c: math.log(c[1]) / (len(c[0]) - 1) ** alpha)
    return best[0][1:]


def beam_search_with_sorted_candidates(model, src, beam_size, max_len, alpha=0.6):
    """Sorts every extension in Python, decodes the hypotheses with the memory repeated (not expanded), and
    normalises by the length of the words without BOS counted from the ids."""
    src_mask = source_mask(src[None], PAD)
    memory = model.encode(src[None], src_mask)
    growing, done = [([BOS], 0.0)], []
    while growing and len(growing[0][0]) <= max_len:
        words = torch.tensor([hypothesis for hypothesis, _ in growing])
        logits = model.decode(words, memory.repeat(len(growing), 1, 1), target_mask(words, PAD), src_mask)
        log_p = torch.log_softmax(logits[:, -1], dim=-1).tolist()
        extensions = [
            (w + [v], s + row[v]) for (w, s), row in zip(growing, log_p, strict=True) for v in range(len(row))
        ]
        kept = sorted(extensions, key=lambda e: e[1], reverse=True)[:beam_size]
        done += [e for e in kept if e[0][-1] == EOS]
        growing = [e for e in kept if e[0][-1] != EOS]
    words, _ = max(done + growing, key=lambda e: e[1] / len(e[0][1:]) ** alpha)
    return words[1:]


@torch.no_grad()
def beam_search_with_a_full_beam_from_the_start(model, src, beam_size, max_len, alpha=0.6):
    """Starts from beam_size copies of BOS, all but one scored -inf, so that every step decodes a full beam (up to
    beam_size rows, as many as a beam holds), and keeps the hypotheses as tensors."""
    src = src[None]
    mask = source_mask(src, PAD)
    memory = model.encode(src, mask)
    words = torch.full((beam_size, 1), BOS)  # (hypotheses, n)
    scores = torch.full((beam_size,), -math.inf)
    scores[0] = 0.0
    finished = []
    for _ in range(max_len):
        logits = model.decode(words, memory.expand(len(words), -1, -1), target_mask(words, PAD), mask)
        totals = scores[:, None] + logits[:, -1].log_softmax(dim=-1)  # (hypotheses, vocab)
        top = totals.flatten().topk(len(words))
        rows, new_words = top.indices // totals.shape[1], top.indices % totals.shape[1]
        words = torch.cat([words[rows], new_words[:, None]], dim=1)
        done = new_words == EOS
        finished += [
            (row[1:].tolist(), score) for row, score in zip(words[done], top.values[done].tolist(), strict=True)
        ]
        words, scores = words[~done], top.values[~done]
        if not len(words):
            break
    candidates = finished + [(row[1:].tolist(), score) for row, score in zip(words, scores.tolist(), strict=True)]
    return max(candidates, key=lambda c: c[1] / len(c[0]) ** alpha)[0]


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb08.check_shift_right, shift_by_copying),
        (nb08.check_sequence_loss, loss_by_pytorch),
        (nb08.check_sequence_loss, loss_with_the_smoothed_target_written_out),
        (nb08.check_sequence_loss, loss_with_the_vocabulary_on_dim_1),
        (nb08.check_sequence_loss, loss_in_double_precision),
        (nb08.check_learning_rate, schedule_as_a_tensor),
        (nb08.check_greedy_decode, greedy_one_sentence_at_a_time),
        (nb08.check_greedy_decode, greedy_into_a_preallocated_output),
        (nb08.check_beam_search, beam_search_one_hypothesis_at_a_time),
        (nb08.check_beam_search, beam_search_with_probabilities_kept_whole),
        (nb08.check_beam_search, beam_search_with_sorted_candidates),
        (nb08.check_beam_search, beam_search_with_a_full_beam_from_the_start),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_checks_accept_correct_answers_written_differently(check, answer, seed):
    if check is nb08.check_learning_rate:
        check(answer, peak=2.0, warmup_steps=10 + seed)
    else:
        check(answer, seed=seed)


@pytest.mark.parametrize(
    "check",
    [
        nb08.check_shift_right,
        nb08.check_sequence_loss,
        nb08.check_learning_rate,
        nb08.check_greedy_decode,
        nb08.check_beam_search,
    ],
)
def test_a_stub_is_reported_as_not_implemented_yet(check):
    with pytest.raises(CheckFailed, match="is not implemented yet"):
        check(raise_not_implemented)


def test_greedy_check_names_a_result_of_the_wrong_type():
    with pytest.raises(CheckFailed, match="must return a torch.Tensor"):
        nb08.check_greedy_decode(lambda model, src, max_len: [[EOS]] * len(src))


def test_the_scripted_beam_models_logits_are_not_log_probabilities():
    """Their rows are shifted by different constants, as a real model's are, so that summing raw logits fails."""
    model = nb08._TableModel(*nb08._GREEDY_TRAP)
    words = torch.tensor([[BOS, 4, 5], [BOS, 5, 6]])
    logits = model.decode(words, torch.full((2, 3, 1), 4.0), target_mask(words, PAD), None)
    totals = logits.logsumexp(dim=-1)  # (2, 3): 0 everywhere for log-probabilities
    assert totals.flatten().unique().numel() > 3


def loss_by_nll_of_log_softmax(logits, target, pad_id, smoothing=0.0):
    """Without smoothing, F.nll_loss on log-probabilities with the vocabulary moved to dim 1 by permute."""
    log_p = logits.log_softmax(dim=-1).permute(0, 2, 1)  # (batch, vocab, n_tgt)
    hard = F.nll_loss(log_p, target, ignore_index=pad_id)
    uniform = -log_p.mean(dim=1)[target != pad_id].mean()
    return (1 - smoothing) * hard + smoothing * uniform


def test_a_loss_with_the_vocabulary_moved_by_permute_is_accepted():
    nb08.check_sequence_loss(loss_by_nll_of_log_softmax)
    nb08.check_sequence_loss(loss_by_nll_of_log_softmax, seed=1)


def test_a_loss_that_mixes_positions_is_told_so_even_when_its_formula_is_not_a_named_mistake():
    def mixed(logits, target, pad_id, smoothing=0.0):  # normalised over the positions, and summed, not averaged
        log_p = logits.log_softmax(dim=1)
        right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        return ((1 - smoothing) * right + smoothing * -log_p.mean(dim=-1))[target != pad_id].sum()

    with pytest.raises(CheckFailed, match="your loss mixes positions"):
        nb08.check_sequence_loss(mixed)


def test_an_unexplained_crash_of_greedy_decoding_is_shown_as_raised():
    def crashing(model, src, max_len):
        raise ValueError("something else")

    with pytest.raises(CheckFailed, match=r"raised ValueError: something else$"):
        nb08.check_greedy_decode(crashing)


def test_a_beam_search_that_drops_the_last_word_of_a_hypothesis_it_extended_is_told_so():
    """Not the best hypothesis without its EOS: the general message, which names the prefix the search decoded."""
    model = nb08._TableModel(*nb08._GREEDY_TRAP)
    with torch.no_grad():
        beam_search_one_hypothesis_at_a_time(model, torch.tensor([4, 5, 6]), 2, 4, 0.0)
    with pytest.raises(CheckFailed, match=r"although your search extended it: model.decode got BOS followed by \[4\]"):
        nb08._explain_early_stop(
            beam_search_one_hypothesis_at_a_time, model, [4], "beam_search(...)", max_len=4, alpha=0.0
        )


def test_a_beam_that_never_held_the_best_hypothesis_is_not_told_its_choice_was_wrong():
    """Greedy decoding never decodes BOS 5 6, the prefix of the best hypothesis of the greedy trap."""
    model = nb08._TableModel(*nb08._GREEDY_TRAP)
    with torch.no_grad():
        beam_search_one_hypothesis_at_a_time(model, torch.tensor([4, 5, 6]), 1, 4, 0.0)
    assert not nb08._kept_by_a_beam(model, [5, 6, EOS], beam_size=2)
