"""Hand-made word vectors for a few tiny sentences, small enough to read off a heatmap.

Every feature has a name, so that a learner can say why one word attends to another.
"""

import torch

FEATURES = ("person", "action", "thing", "direction")

# One row per word, one column per feature of FEATURES. Jack and Jill differ only in sign of "direction",
# so that they are alike but not the same.
_WORD_VECTORS = {
    "Jack": (2.0, 0.0, 0.0, 0.6),
    "Jill": (2.0, 0.0, 0.0, -0.6),
    "gave": (0.0, 2.0, 0.4, 0.0),
    "water": (0.0, 0.4, 2.0, 0.0),
    "to": (0.0, 0.0, 0.0, 1.2),
}

VOCABULARY = tuple(_WORD_VECTORS)


def embed_sentence(sentence: str) -> tuple[list[str], torch.Tensor]:
    """Split ``sentence`` on spaces and return its words and their vectors, shape (seq, len(FEATURES))."""
    words = sentence.split()
    unknown = [word for word in words if word not in _WORD_VECTORS]
    if unknown:
        raise KeyError(f"no toy vector for {unknown}; the toy vocabulary is {list(VOCABULARY)}")
    vectors = torch.tensor([_WORD_VECTORS[word] for word in words])  # (seq, features)
    return words, vectors
