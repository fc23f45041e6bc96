"""The checks of notebook 13 (the masking, the encoder with its head, the masked loss, the classifier, the
fine-tuning loop) accept the solutions and correct answers written in other ways, grade each exercise on its own,
vary with their seed, and explain stubs.

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
from transformer_course.checks import NotImplementedYet, nb13, stand_ins
from transformer_course.reference import Encoder

ASSIGNMENT = "13_encoder_only"
CHECKS = {
    "mask_tokens": nb13.check_mask_tokens,
    "EncoderForMaskedLM": nb13.check_encoder_for_masked_lm,
    "masked_lm_loss": nb13.check_masked_lm_loss,
    "SequenceClassifier": nb13.check_sequence_classifier,
    "fine_tune": nb13.check_fine_tune,
}


@pytest.mark.parametrize("exercise", list(CHECKS))
def test_the_solutions_pass(exercise):
    CHECKS[exercise](solved_namespace(ASSIGNMENT)[exercise], seed=2)


def test_the_stand_in_passes():
    nb13.check_encoder_for_masked_lm(stand_ins.EncoderForMaskedLM)


# Correct answers written in other ways ------------------------------------------------------------------


def mask_tokens_as_the_collator_does(ids, can_mask, mask_id, vocab_size, probability=0.15):
    """Bernoulli draws, as DataCollatorForLanguageModeling makes them, and indexed assignment on a copy."""
    inputs, labels = ids.clone(), ids.clone()
    chosen = torch.bernoulli(torch.full(ids.shape, probability)).bool() & can_mask
    labels[~chosen] = -100
    replaced = torch.bernoulli(torch.full(ids.shape, 0.8)).bool() & chosen
    inputs[replaced] = mask_id
    randomised = torch.bernoulli(torch.full(ids.shape, 0.5)).bool() & chosen & ~replaced
    inputs[randomised] = torch.randint(vocab_size, ids.shape)[randomised]
    return inputs, labels


def mask_tokens_exactly_so_many(ids, can_mask, mask_id, vocab_size, probability=0.15):
    """Exactly round(probability · n) positions of each sequence's n maskable ones, and the 80/10/10 split by a
    random permutation of the chosen ones."""
    inputs, labels = ids.clone(), torch.full_like(ids, -100)
    for row in range(ids.shape[0]):
        open_positions = can_mask[row].nonzero().flatten()
        count = round(probability * len(open_positions))
        chosen = open_positions[torch.randperm(len(open_positions))[:count]]
        labels[row, chosen] = ids[row, chosen]
        fate = torch.rand(count)
        inputs[row, chosen[fate < 0.8]] = mask_id
        randomised = chosen[(fate >= 0.8) & (fate < 0.9)]
        inputs[row, randomised] = torch.randint(5, vocab_size, (len(randomised),))  # no special token
    return inputs, labels


class EncoderWithPyTorchNorms(nn.Module):
    """nn.LayerNorm for the course's LayerNorm, the head as F.linear, the positions from the table's rows."""

    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))
        self.head_norm = nn.LayerNorm(d_model)
        self.head_transform = nn.Linear(d_model, d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.embedding_norm = nn.LayerNorm(d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.token_embedding = nn.Embedding(vocab_size, d_model)

    def encode(self, ids, padding_mask=None):
        x = self.token_embedding(ids) + self.position_embedding.weight[: ids.shape[1]]
        mask = None if padding_mask is None else padding_mask.unsqueeze(1)
        return self.encoder(self.embedding_norm(x), mask=mask)

    @torch.no_grad()
    def predict(self, ids):
        return self(ids).argmax(-1)

    def forward(self, ids, padding_mask=None):
        return F.linear(
            self.head_norm(F.relu(self.head_transform(self.encode(ids, padding_mask)))),
            self.token_embedding.weight,
            self.head_bias,
        )


def masked_lm_loss_by_hand(logits, labels):
    """The log-probabilities of the chosen positions picked by a boolean index, then their mean."""
    chosen = labels != -100
    return -logits[chosen].log_softmax(-1).gather(-1, labels[chosen].unsqueeze(-1)).mean()


class ClassifierWithSequential(nn.Module):
    """The pooler as the first layer of an nn.Sequential would hide its name: so a named one, and tanh as a module."""

    def __init__(self, num_labels, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.encoder = EncoderForMaskedLM(vocab_size, max_len, d_model, num_heads, d_ff, num_layers)
        self.pooler = nn.Linear(d_model, d_model)
        self.activation = nn.Tanh()
        self.classifier = nn.Linear(d_model, num_labels)

    def forward(self, ids, padding_mask=None):
        return self.classifier(self.activation(self.pooler(self.encoder.encode(ids, padding_mask)[:, 0, :])))


EncoderForMaskedLM = stand_ins.EncoderForMaskedLM  # the classifier above finds it here, as in a notebook


@torch.enable_grad()
def fine_tune_another_way(classifier, batches, learning_rate, weight_decay=0.01):
    """nn.CrossEntropyLoss, the model's own zero_grad after the forward (set_to_none=False), float(), a tuple."""
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(
        [p for p in classifier.parameters()], learning_rate, betas=(0.9, 0.999), weight_decay=weight_decay
    )
    losses = []
    for step, (ids, padding_mask, labels) in enumerate(batches):
        classifier.train(True)
        scores = classifier(ids, padding_mask=padding_mask)
        loss = criterion(scores, labels)
        classifier.zero_grad(set_to_none=step % 2 == 0)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return tuple(losses)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("check", "answer"),
    [
        (nb13.check_mask_tokens, mask_tokens_as_the_collator_does),
        (nb13.check_mask_tokens, mask_tokens_exactly_so_many),
        (nb13.check_encoder_for_masked_lm, EncoderWithPyTorchNorms),
        (nb13.check_masked_lm_loss, masked_lm_loss_by_hand),
        (nb13.check_sequence_classifier, ClassifierWithSequential),
        (nb13.check_fine_tune, fine_tune_another_way),
    ],
    ids=["bernoulli", "exact-count", "nn-layer-norm", "loss-by-hand", "tanh-module", "loop-another-way"],
)
def test_checks_accept_correct_answers_written_differently(check, answer, seed):
    check(answer, seed=seed)


@pytest.mark.parametrize(
    ("check", "stub"),
    [
        (nb13.check_mask_tokens, raise_not_implemented),
        (nb13.check_encoder_for_masked_lm, StubModule),
        (nb13.check_masked_lm_loss, raise_not_implemented),
        (nb13.check_sequence_classifier, StubModule),
        (nb13.check_fine_tune, raise_not_implemented),
    ],
)
def test_a_stub_is_reported_as_not_implemented_yet(check, stub):
    with pytest.raises(NotImplementedYet):
        check(stub)


@pytest.mark.parametrize(
    ("check", "correct"),
    [
        (nb13.check_mask_tokens, mask_tokens_as_the_collator_does),
        (nb13.check_encoder_for_masked_lm, stand_ins.EncoderForMaskedLM),
        (nb13.check_masked_lm_loss, masked_lm_loss_by_hand),
        (nb13.check_sequence_classifier, ClassifierWithSequential),
        (nb13.check_fine_tune, fine_tune_another_way),
    ],
)
def test_every_hidden_test_gives_other_inputs_than_the_visible_one(check, correct):
    assert_hidden_tests_differ(ASSIGNMENT, check, correct)


def test_the_collator_oracle_masks_at_the_rates_it_is_given():
    ids, can_mask, vocab, mask_id = nb13._masking_case(0)
    inputs, labels = nb13.collator_masking(ids, can_mask, vocab=vocab, mask=mask_id, rate=0.3, seed=0)
    shares = nb13._shares(ids, can_mask, inputs, labels, mask_id)
    assert abs(shares["chosen"] - 0.3) < 0.02
    assert abs(shares["mask"] - 0.8) < 0.03 and abs(shares["random"] - 0.1) < 0.03
    assert not ((labels != -100) & ~can_mask).any()


def test_the_masked_lm_oracle_ties_its_head_to_the_embedding():
    sizes = {"vocab": 20, "max_len": 8, "d_model": 8, "heads": 2, "d_ff": 16, "layers": 1}
    model = stand_ins.EncoderForMaskedLM(20, 8, 8, 2, 16, 1)
    twin = nb13.masked_lm_twin(model, sizes)
    assert torch.equal(twin.cls.predictions.decoder.weight, model.token_embedding.weight.detach())
    ids = torch.randint(20, (2, 6))
    with torch.no_grad():
        assert torch.allclose(twin(input_ids=ids).logits, model(ids), atol=1e-5)
