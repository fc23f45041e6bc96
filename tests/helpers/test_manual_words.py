"""Notebook 13's data: the manual's words, its labelled paragraphs and the pretraining text that leaves the held-out
ones out; and the fine-tuning's start, which must not depend on how a learner's classifier is written."""

import torch
from torch import nn

from transformer_course.checks import stand_ins
from transformer_course.data.manual_words import (
    CLS,
    GROUPS,
    PAD,
    SEP,
    SPECIAL_TOKENS,
    Vocabulary,
    labelled_paragraphs,
    labelled_sample,
    pretraining_text,
    words,
)
from transformer_course.fine_tuning import accuracy, bert_initialised
from transformer_course.pretrained import pretrained_sizes


def test_words_are_lowercased_runs_of_letters_numbers_and_single_punctuation():
    assert words('The "__init__" method, 3 times.') == ["the", '"', "__init__", '"', "method", ",", "3", "times", "."]


def test_the_splits_are_disjoint_and_the_pretraining_text_holds_no_held_out_paragraph():
    splits = labelled_paragraphs()
    paragraphs = {name: {paragraph for paragraph, _ in items} for name, items in splits.items()}
    assert not paragraphs["pool"] & paragraphs["test"] and not paragraphs["valid"] & paragraphs["test"]
    text = pretraining_text()
    assert not any(paragraph in text for paragraph in paragraphs["test"] | paragraphs["valid"])
    assert {label for _, label in splits["test"]} == set(range(len(GROUPS)))


def test_a_batch_starts_with_cls_ends_with_sep_and_pads():
    vocabulary = Vocabulary()
    assert vocabulary.words[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    batch = vocabulary.batch(["the return statement", "x " * 100], length=8)
    assert batch.shape == (2, 8)
    assert batch[0].tolist()[:5] == [CLS, *vocabulary.encode("the return statement"), SEP]
    assert (batch[0, 5:] == PAD).all() and batch[1, -1] == SEP


def test_a_labelled_sample_is_balanced_and_repeatable():
    pool = labelled_paragraphs()["pool"]
    sample = labelled_sample(pool, 30, seed=1)
    counts = torch.bincount(torch.tensor([label for _, label in sample]), minlength=len(GROUPS))
    assert counts.sum() == 30 and counts.max() - counts.min() <= 1
    assert sample == labelled_sample(pool, 30, seed=1) and sample != labelled_sample(pool, 30, seed=2)


class ClassifierBuiltInAnotherOrder(nn.Module):
    """The notebook's SequenceClassifier with its parts created in the opposite order."""

    def __init__(self, num_labels, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.classifier = nn.Linear(d_model, num_labels)
        self.pooler = nn.Linear(d_model, d_model)
        self.encoder = stand_ins.EncoderForMaskedLM(vocab_size, max_len, d_model, num_heads, d_ff, num_layers)

    def forward(self, ids, padding_mask=None):
        return self.classifier(torch.tanh(self.pooler(self.encoder.encode(ids, padding_mask)[:, 0])))


class Classifier(ClassifierBuiltInAnotherOrder):
    def __init__(self, num_labels, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        nn.Module.__init__(self)
        self.encoder = stand_ins.EncoderForMaskedLM(vocab_size, max_len, d_model, num_heads, d_ff, num_layers)
        self.pooler = nn.Linear(d_model, d_model)
        self.classifier = nn.Linear(d_model, num_labels)


def test_fine_tuning_starts_from_the_same_weights_whatever_order_a_classifier_makes_its_parts_in():
    sizes = pretrained_sizes()
    ids = Vocabulary().batch(["the for statement", "a list is a sequence"], sizes["max_len"])
    for from_pretrained in (False, True):
        scores = []
        for kind, seed in ((Classifier, 5), (ClassifierBuiltInAnotherOrder, 0)):
            torch.manual_seed(seed)
            model = bert_initialised(kind(4, *sizes.values()), seed=1, from_pretrained=from_pretrained)
            with torch.no_grad():
                scores.append(model.eval()(ids, ids != PAD))
        assert torch.allclose(scores[0], scores[1], atol=1e-5)
    assert 0.0 <= accuracy(model, ids, torch.tensor([0, 3])) <= 1.0
