"""Scoring translations: exact match, token accuracy, side-by-side examples and a word-by-word baseline."""

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import torch

from .data.translation import Pair, Vocabulary, padded

Sentence = Sequence[str]


def translate_all(
    decode: Callable[[torch.Tensor], Iterable[Sequence[int]]],
    sentences: Sequence[Sentence],
    source: Vocabulary,
    target: Vocabulary,
    batch_size: int = 250,
) -> list[list[str]]:
    """Translate sentences in batches: ``decode`` maps source ids (batch, n_src) to one row of target ids per
    sentence (a tensor or lists); each row is read up to its EOS."""
    translations = []
    for start in range(0, len(sentences), batch_size):
        src = padded([source.encode(sentence) for sentence in sentences[start : start + batch_size]])
        with torch.no_grad():
            translations += [target.decode(row) for row in decode(src)]
    return translations


def exact_match(predictions: Sequence[Sentence], references: Sequence[Sentence]) -> float:
    """The fraction of sentences translated exactly, every word and the length."""
    return sum(list(p) == list(r) for p, r in zip(predictions, references, strict=True)) / len(references)


def token_accuracy(predictions: Sequence[Sentence], references: Sequence[Sentence]) -> float:
    """The fraction of reference words, and sentence ends, that the prediction has at the same place."""
    right = total = 0
    for prediction, reference in zip(predictions, references, strict=True):
        prediction, reference = [*prediction, "<eos>"], [*reference, "<eos>"]
        right += sum(p == r for p, r in zip(prediction, reference, strict=False))
        total += len(reference)
    return right / total


def report(predictions: Sequence[Sentence], references: Sequence[Sentence]) -> str:
    return (
        f"exact match {100 * exact_match(predictions, references):.1f}%, "
        f"token accuracy {100 * token_accuracy(predictions, references):.1f}%"
    )


def side_by_side(pairs: Sequence[Pair], predictions: Sequence[Sentence]) -> str:
    """Source, prediction and reference of each pair, marked ✔ when the prediction is exact."""
    lines = []
    for pair, prediction in zip(pairs, predictions, strict=True):
        mark = "✔" if list(prediction) == list(pair.german) else "✘"
        lines += [
            f"  English    {' '.join(pair.english)}",
            f"{mark} model      {' '.join(prediction)}",
            f"  reference  {' '.join(pair.german)}",
            "",
        ]
    return "\n".join(lines)


def word_by_word(pairs: Sequence[Pair]) -> Callable[[Sentence], list[str]]:
    """A simple dictionary baseline: each English word becomes the German word that appears most often in the
    same sentence pairs (by the Dice coefficient), in English word order."""
    english, german, together = Counter(), Counter(), Counter()
    for pair in pairs:
        source_words, target_words = set(pair.english), set(pair.german)
        english.update(source_words)
        german.update(target_words)
        together.update((e, g) for e in source_words for g in target_words)
    dictionary = {}
    for (e, g), count in together.items():
        dice = 2 * count / (english[e] + german[g])
        if dice > dictionary.get(e, ("", 0.0))[1]:
            dictionary[e] = (g, dice)
    return lambda sentence: [dictionary[word][0] for word in sentence if word in dictionary]
