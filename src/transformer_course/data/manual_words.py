"""Words of the Python reference manual for a small BERT: a vocabulary, masked-language-modelling text and a
labelled task with few labels.

The task: which of four groups of topics (statements, expressions, the data model, built-in types) a paragraph
of the manual comes from. Only paragraphs that occur once in the manual, of at least 20 words, are labelled;
a checksum of each paragraph's text puts it in the test split, the validation split (for choices) or the pool
that labelled training sets are drawn from, so the splits do not depend on the order of the topics.

Pretraining must not see the test or validation paragraphs, not even unlabelled: the pretraining text is every
topic's text without them, and the vocabulary is built from that text alone. Words are lowercased; a word is a
run of letters and underscores (so "__init__" is one word), a number, or one punctuation character.
"""

import random
import re
import zlib
from collections import Counter

import torch

from transformer_course.data.documentation import SEPARATOR, topic_texts

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD, UNK, CLS, SEP, MASK = range(5)
VOCABULARY_SIZE = 4000  # the most frequent words of the pretraining text, special tokens included
MIN_WORDS = 20  # a labelled paragraph has at least this many words
GROUPS = {
    "statements": (
        "assert assignment augassign async break class compound continue del for function global if import "
        "nonlocal pass raise return try while with yield"
    ).split(),
    "expressions": (
        "atom-identifiers atom-literals attribute-references await binary bitwise booleans calls comparisons "
        "exprlists in lambda operator-summary power shifting slicings subscriptions unary"
    ).split(),
    "data model": (
        "attribute-access callable-types context-managers customization numeric-types objects sequence-types "
        "specialattrs specialnames types"
    ).split(),
    "built-in types": (
        "dict floating formatstrings imaginary integers lists numbers string-methods strings truth typesfunctions "
        "typesmapping typesmethods typesmodules typesseq typesseq-mutable"
    ).split(),
}
_WORD = re.compile(r"[a-z_]+|\d+|[^\sa-z_\d]")


def words(text: str) -> list[str]:
    """The lowercased words, numbers and punctuation characters of a text."""
    return _WORD.findall(text.lower())


def split_of(paragraph: str) -> str:
    """'test' (about 30%), 'valid' (about 15%) or 'pool', by a checksum of the paragraph's text."""
    bucket = zlib.crc32(paragraph.encode("utf-8")) % 20
    return "test" if bucket < 6 else "valid" if bucket < 9 else "pool"


def labelled_paragraphs() -> dict[str, list[tuple[str, int]]]:
    """(paragraph, group index) pairs by split: 'pool', 'valid' and 'test', each in the manual's order."""
    texts = topic_texts()
    occurrences = Counter(p.strip() for text in texts.values() for p in text.split(SEPARATOR))
    result: dict[str, list[tuple[str, int]]] = {"pool": [], "valid": [], "test": []}
    for label, topics in enumerate(GROUPS.values()):
        for topic in topics:
            for paragraph in texts[topic].split(SEPARATOR):
                paragraph = paragraph.strip()
                if occurrences[paragraph] == 1 and len(words(paragraph)) >= MIN_WORDS:
                    result[split_of(paragraph)].append((paragraph, label))
    return result


def pretraining_text() -> str:
    """Every topic's text without the labelled test and validation paragraphs."""
    held_out = {p for split in ("test", "valid") for p, _ in labelled_paragraphs()[split]}
    paragraphs = (p for text in topic_texts().values() for p in text.split(SEPARATOR))
    return SEPARATOR.join(p for p in paragraphs if p.strip() not in held_out)


class Vocabulary:
    """Word ↔ id: the special tokens, then the pretraining text's most frequent words (ties in alphabetical
    order); any other word is [UNK]."""

    def __init__(self, size: int = VOCABULARY_SIZE):
        counts = Counter(words(pretraining_text()))
        ranked = sorted(counts, key=lambda word: (-counts[word], word))
        self.words = list(SPECIAL_TOKENS) + ranked[: size - len(SPECIAL_TOKENS)]
        self.ids = {word: i for i, word in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        """Ids of the text's words, without special tokens."""
        return [self.ids.get(word, UNK) for word in words(text)]

    def decode(self, ids) -> str:
        return " ".join(self.words[int(i)] for i in ids)

    def batch(self, texts: list[str], length: int) -> torch.Tensor:
        """[CLS] words… [SEP], cut to length tokens and padded with [PAD]: a (len(texts), length) tensor."""
        rows = torch.full((len(texts), length), PAD)
        for row, text in zip(rows, texts, strict=True):
            ids = [CLS] + self.encode(text)[: length - 2] + [SEP]
            row[: len(ids)] = torch.tensor(ids)
        return rows


def labelled_sample(pool: list[tuple[str, int]], count: int, seed: int) -> list[tuple[str, int]]:
    """count paragraphs drawn from the pool, balanced: count // 4 of each group, one more for the first
    count % 4 groups of a shuffled order; shuffled."""
    rng = random.Random(seed)
    groups = list(range(len(GROUPS)))
    rng.shuffle(groups)
    sample = []
    for rank, label in enumerate(groups):
        members = [item for item in pool if item[1] == label]
        sample += rng.sample(members, count // len(groups) + (rank < count % len(groups)))
    rng.shuffle(sample)
    return sample
