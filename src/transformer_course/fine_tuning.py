"""Notebook 13's fine-tuning: a learner's SequenceClassifier set up from the pretrained encoder or from scratch,
the batches of a few labelled paragraphs that the learner's training loop reads, and the score on held-out ones.

Both start from weights drawn as BERT draws them (``BertForSequenceClassification`` built under a seed, its weights
copied in), not from the learner's own initialisation: the order in which a learner's ``__init__`` creates its
parts changes which random numbers each part gets, and the comparison must not depend on it.
"""

import os

import torch
from torch import nn

from .data.manual_words import PAD
from .pretrained import SEGMENT, bert_names, load_pretrained, pretrained_config

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is built from a configuration: nothing may be fetched


def bert_initialised(classifier: nn.Module, seed: int, from_pretrained: bool) -> nn.Module:
    """The classifier with the weights of a BertForSequenceClassification made under ``seed`` (BERT's initialisation:
    normal, standard deviation 0.02); its encoder then gets the pretrained weights if ``from_pretrained``."""
    from transformers import BertConfig, BertForSequenceClassification  # only where a classifier is built

    num_labels = classifier.classifier.out_features
    pretrained = {key: value for key, value in pretrained_config().items() if key not in ("id2label", "label2id")}
    config = BertConfig.from_dict(pretrained | {"num_labels": num_labels})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        state = BertForSequenceClassification(config).state_dict()
    with torch.no_grad():
        for name, target in bert_names(classifier.encoder).items():
            if name.startswith("bert."):
                target.copy_(state[name])
        classifier.encoder.position_embedding.weight.add_(state[SEGMENT][0])
        for part, name in ((classifier.pooler, "bert.pooler.dense"), (classifier.classifier, "classifier")):
            part.weight.copy_(state[f"{name}.weight"])
            part.bias.copy_(state[f"{name}.bias"])
    if from_pretrained:
        load_pretrained(classifier.encoder)
    return classifier


def labelled_batches(
    ids: torch.Tensor, labels: torch.Tensor, steps: int, batch_size: int = 16, seed: int = 0
) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """``steps`` batches of (ids, padding_mask, labels), each drawn at random from the labelled (ids, labels)."""
    generator = torch.Generator().manual_seed(seed)
    drawn = []
    for _ in range(steps):
        batch = torch.randperm(len(ids), generator=generator)[:batch_size]
        drawn.append((ids[batch], ids[batch] != PAD, labels[batch]))
    return drawn


@torch.no_grad()
def accuracy(classifier: nn.Module, ids: torch.Tensor, labels: torch.Tensor) -> float:
    """The share of the paragraphs whose highest score is their label's."""
    return (classifier(ids, ids != PAD).argmax(-1) == labels).float().mean().item()
