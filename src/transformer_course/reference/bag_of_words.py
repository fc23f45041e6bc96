"""A small text classifier that checks of training loops hand to a learner's code.

Support code of no notebook, released with every assignment: it reveals no exercise (notebook 13's classifier reads
the first position through an encoder; this one averages word vectors). It lives among the reference blocks because
a class both sides of the autograder trust runs where it is handed: a check gives one to a learner's training loop,
the loop's own optimizer trains it in the learner's process, and the check compares the losses it reports with
PyTorch's optimizer run on a copy.
"""

import torch
from torch import nn

__all__ = ["BagOfWordsClassifier"]


class BagOfWordsClassifier(nn.Module):
    """Scores a text by the mean of its words' vectors, after dropout: (ids, padding_mask) → (batch, num_labels)."""

    def __init__(self, vocab_size: int, d_model: int, num_labels: int, dropout: float = 0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(d_model, num_labels)

    def forward(self, ids: torch.Tensor, padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        """ids, padding_mask (True = a real token): (batch, seq) → scores (batch, num_labels)."""
        vectors = self.dropout(self.embedding(ids))  # (batch, seq, d_model)
        if padding_mask is None:
            return self.output(vectors.mean(1))
        real = padding_mask.unsqueeze(-1).to(vectors.dtype)  # (batch, seq, 1)
        return self.output((vectors * real).sum(1) / real.sum(1).clamp(min=1))  # (batch, num_labels)
