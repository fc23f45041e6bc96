"""The checks of notebook 08 accept correct answers written in other ways, and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py; the solution notebook passes the checks when CI
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


@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb08.check_shift_right, shift_by_copying),
        (nb08.check_sequence_loss, loss_by_pytorch),
        (nb08.check_sequence_loss, loss_with_the_smoothed_target_written_out),
        (nb08.check_sequence_loss, loss_with_the_vocabulary_on_dim_1),
        (nb08.check_learning_rate, schedule_as_a_tensor),
        (nb08.check_greedy_decode, greedy_one_sentence_at_a_time),
        (nb08.check_greedy_decode, greedy_into_a_preallocated_output),
        (nb08.check_beam_search, beam_search_one_hypothesis_at_a_time),
        (nb08.check_beam_search, beam_search_with_probabilities_kept_whole),
        (nb08.check_beam_search, beam_search_with_sorted_candidates),
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
