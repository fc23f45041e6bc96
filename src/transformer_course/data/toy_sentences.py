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
    rows = [_WORD_VECTORS[word] for word in words]
    vectors = torch.tensor(rows).reshape(len(words), len(FEATURES))  # (seq, features), also for no words
    return words, vectors


def embed_batch(sentences: list[str]) -> tuple[list[list[str]], torch.Tensor, torch.Tensor]:
    """Embed sentences of different lengths into one zero-padded batch.

    Returns the words of each sentence, vectors (batch, max_len, len(FEATURES)) with zero vectors after each
    sentence's end, and the lengths (batch,) as int64.
    """
    embedded = [embed_sentence(sentence) for sentence in sentences]
    max_len = max((len(words) for words, _ in embedded), default=0)
    vectors = torch.zeros(len(sentences), max_len, len(FEATURES))  # (batch, max_len, features)
    for row, (words, sentence_vectors) in enumerate(embedded):
        vectors[row, : len(words)] = sentence_vectors
    lengths = torch.tensor([len(words) for words, _ in embedded], dtype=torch.int64)  # (batch,)
    return [words for words, _ in embedded], vectors, lengths
