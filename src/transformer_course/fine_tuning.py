"""Notebook 13's fine-tuning: a learner's SequenceClassifier trained on a few labelled paragraphs, from the pretrained
encoder or from scratch, and scored on held-out ones.

Both start from weights drawn as BERT draws them (``BertForSequenceClassification`` built under a seed, its weights
copied in), not from the learner's own initialisation: the order in which a learner's ``__init__`` creates its
parts changes which random numbers each part gets, and the comparison must not depend on it.
"""

import os

import torch
import torch.nn.functional as F
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


def fine_tune(
    classifier: nn.Module,
    ids: torch.Tensor,
    labels: torch.Tensor,
    steps: int,
    learning_rate: float,
    batch_size: int = 16,
    seed: int = 0,
) -> nn.Module:
    """Train every weight with AdamW on batches drawn from the labelled (ids, labels); returns it in eval mode."""
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=0.01)
    generator = torch.Generator().manual_seed(seed)
    classifier.train()
    for _ in range(steps):
        batch = torch.randperm(len(ids), generator=generator)[:batch_size]
        loss = F.cross_entropy(classifier(ids[batch], ids[batch] != PAD), labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return classifier.eval()


@torch.no_grad()
def accuracy(classifier: nn.Module, ids: torch.Tensor, labels: torch.Tensor) -> float:
    """The share of the paragraphs whose highest score is their label's."""
    return (classifier(ids, ids != PAD).argmax(-1) == labels).float().mean().item()
