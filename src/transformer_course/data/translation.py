"""A small English → German-like translation corpus, made by rules from a seed (nothing is downloaded).

The rules are those of German that a word-by-word translation gets wrong:
- agreement: an article and an adjective change with the noun's gender (der Hund, die Katze, das Kind), its
  case (der Hund sieht … / … sieht den Hund / mit dem Hund) and definiteness (der alte Hund, ein alter Hund);
- verb-final subordinate clauses: "because the cat sees a bird" → "weil die Katze einen Vogel sieht";
- verb second: after a fronted adverb or clause the verb comes before the subject
  ("today the dog sleeps" → "heute schläft der Hund");
- a time adverb moves from the end of the English clause to just after the German verb.

Every sentence is singular and in the present tense, at most 20 words long in either language.
"""

import itertools
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

# Nouns: English, German, gender (m, f, n) and whether they can be the subject of seeing, sleeping, ...
NOUNS = (
    ("dog", "Hund", "m", True), ("bird", "Vogel", "m", True), ("man", "Mann", "m", True),
    ("teacher", "Lehrer", "m", True), ("friend", "Freund", "m", True), ("cook", "Koch", "m", True),
    ("king", "König", "m", True), ("tree", "Baum", "m", False), ("garden", "Garten", "m", False),
    ("table", "Tisch", "m", False), ("apple", "Apfel", "m", False),
    ("cat", "Katze", "f", True), ("woman", "Frau", "f", True), ("mouse", "Maus", "f", True),
    ("cow", "Kuh", "f", True), ("sister", "Schwester", "f", True), ("queen", "Königin", "f", True),
    ("doctor", "Ärztin", "f", True), ("door", "Tür", "f", False), ("lamp", "Lampe", "f", False),
    ("flower", "Blume", "f", False), ("city", "Stadt", "f", False),
    ("child", "Kind", "n", True), ("horse", "Pferd", "n", True), ("girl", "Mädchen", "n", True),
    ("sheep", "Schaf", "n", True), ("house", "Haus", "n", False), ("book", "Buch", "n", False),
    ("boat", "Boot", "n", False), ("picture", "Bild", "n", False), ("window", "Fenster", "n", False),
    ("bread", "Brot", "n", False),
)  # fmt: skip
ADJECTIVES = (
    ("big", "groß"), ("small", "klein"), ("old", "alt"), ("young", "jung"), ("red", "rot"), ("green", "grün"),
    ("happy", "glücklich"), ("tired", "müde"), ("quick", "schnell"), ("quiet", "still"), ("good", "gut"),
    ("new", "neu"),
)  # fmt: skip
INTRANSITIVE_VERBS = (
    ("sleeps", "schläft"), ("runs", "läuft"), ("laughs", "lacht"), ("waits", "wartet"), ("sings", "singt"),
    ("dances", "tanzt"), ("swims", "schwimmt"), ("works", "arbeitet"), ("plays", "spielt"), ("cries", "weint"),
)  # fmt: skip
TRANSITIVE_VERBS = (
    ("sees", "sieht"), ("finds", "findet"), ("likes", "mag"), ("hears", "hört"), ("visits", "besucht"),
    ("paints", "malt"), ("catches", "fängt"), ("feeds", "füttert"), ("knows", "kennt"), ("washes", "wäscht"),
    ("carries", "trägt"), ("buys", "kauft"),
)  # fmt: skip
ADVERBS = (
    ("today", "heute"), ("now", "jetzt"), ("often", "oft"), ("later", "später"), ("sometimes", "manchmal"),
    ("again", "wieder"),
)  # fmt: skip
# Prepositions that take the dative; "next to" is two English words for one German word.
PREPOSITIONS = ((("with",), "mit"), (("from",), "von"), (("behind",), "hinter"), (("next", "to"), "neben"))
CONJUNCTIONS = (("because", "weil"), ("while", "während"), ("although", "obwohl"), ("when", "wenn"))

# Articles by definiteness, case and gender.
ARTICLES = {
    ("definite", "nominative"): {"m": "der", "f": "die", "n": "das"},
    ("definite", "accusative"): {"m": "den", "f": "die", "n": "das"},
    ("definite", "dative"): {"m": "dem", "f": "der", "n": "dem"},
    ("indefinite", "nominative"): {"m": "ein", "f": "eine", "n": "ein"},
    ("indefinite", "accusative"): {"m": "einen", "f": "eine", "n": "ein"},
    ("indefinite", "dative"): {"m": "einem", "f": "einer", "n": "einem"},
}
# Adjective endings after an article: "weak" after der/die/das, "mixed" after ein/eine (it shows the gender
# that ein leaves open: ein alter Hund, ein altes Haus).
ADJECTIVE_ENDINGS = {
    ("definite", "nominative"): {"m": "e", "f": "e", "n": "e"},
    ("definite", "accusative"): {"m": "en", "f": "e", "n": "e"},
    ("definite", "dative"): {"m": "en", "f": "en", "n": "en"},
    ("indefinite", "nominative"): {"m": "er", "f": "e", "n": "es"},
    ("indefinite", "accusative"): {"m": "en", "f": "e", "n": "es"},
    ("indefinite", "dative"): {"m": "en", "f": "en", "n": "en"},
}

MAX_WORDS = 20
PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")


@dataclass(frozen=True)
class Pair:
    """A sentence and its translation, as tuples of words."""

    english: tuple[str, ...]
    german: tuple[str, ...]


@dataclass(frozen=True)
class _Clause:
    subject: Pair
    verb: Pair
    rest: Pair  # the object and the prepositional phrase, in the same order in both languages


def _noun_phrase(rng: random.Random, case: str, animate: bool = False) -> Pair:
    english_noun, german_noun, gender, _ = rng.choice([noun for noun in NOUNS if noun[3] or not animate])
    definiteness = rng.choice(("definite", "indefinite"))
    english = ["the" if definiteness == "definite" else "a"]
    german = [ARTICLES[definiteness, case][gender]]
    if rng.random() < 0.4:
        english_adjective, stem = rng.choice(ADJECTIVES)
        ending = ADJECTIVE_ENDINGS[definiteness, case][gender]
        english.append(english_adjective)
        german.append(stem + ending[1:] if stem.endswith("e") else stem + ending)  # müde + e is müde
    english.append(english_noun)
    if english[0] == "a" and english[1][0] in "aeiou":
        english[0] = "an"
    return Pair(tuple(english), (*german, german_noun))


def _clause(rng: random.Random) -> _Clause:
    subject = _noun_phrase(rng, "nominative", animate=True)
    transitive = rng.random() < 0.55
    english_verb, german_verb = rng.choice(TRANSITIVE_VERBS if transitive else INTRANSITIVE_VERBS)
    rest = _noun_phrase(rng, "accusative") if transitive else Pair((), ())
    if rng.random() < 0.3:
        english_preposition, german_preposition = rng.choice(PREPOSITIONS)
        place = _noun_phrase(rng, "dative")
        rest = Pair(
            (*rest.english, *english_preposition, *place.english), (*rest.german, german_preposition, *place.german)
        )
    return _Clause(subject, Pair((english_verb,), (german_verb,)), rest)


def _main_clause(clause: _Clause, adverb: Pair | None = None, inverted: bool = False) -> Pair:
    """Subject, verb, rest; with inverted=True the verb comes first (after a fronted adverb or clause).
    A time adverb ends the English clause and follows the German verb."""
    subject, verb, rest = clause.subject, clause.verb, clause.rest
    adverb = adverb or Pair((), ())
    english = (*subject.english, *verb.english, *rest.english, *adverb.english)
    if inverted:
        return Pair(english, (*verb.german, *subject.german, *adverb.german, *rest.german))
    return Pair(english, (*subject.german, *verb.german, *adverb.german, *rest.german))


def _subordinate_clause(clause: _Clause, conjunction: tuple[str, str]) -> Pair:
    """The conjunction, then the clause; the German verb goes to the end."""
    subject, verb, rest = clause.subject, clause.verb, clause.rest
    return Pair(
        (conjunction[0], *subject.english, *verb.english, *rest.english),
        (conjunction[1], *subject.german, *rest.german, *verb.german),
    )


def sentence_pair(rng: random.Random) -> Pair:
    """One random sentence pair, of one of four shapes: a main clause (with an adverb at the end or not),
    an adverb in front, a main clause with a subordinate clause after it, or a subordinate clause in front."""
    shape = rng.random()
    if shape < 0.35:
        english_adverb, german_adverb = rng.choice(ADVERBS)
        adverb = Pair((english_adverb,), (german_adverb,)) if rng.random() < 0.4 else None
        return _main_clause(_clause(rng), adverb)
    if shape < 0.5:
        english_adverb, german_adverb = rng.choice(ADVERBS)
        main = _main_clause(_clause(rng), inverted=True)
        return Pair((english_adverb, *main.english), (german_adverb, *main.german))
    conjunction = rng.choice(CONJUNCTIONS)
    if shape < 0.75:
        main, subordinate = _main_clause(_clause(rng)), _subordinate_clause(_clause(rng), conjunction)
        return Pair((*main.english, *subordinate.english), (*main.german, ",", *subordinate.german))
    subordinate, main = _subordinate_clause(_clause(rng), conjunction), _main_clause(_clause(rng), inverted=True)
    return Pair((*subordinate.english, ",", *main.english), (*subordinate.german, ",", *main.german))


def corpus(size: int = 20_000, seed: int = 0) -> list[Pair]:
    """``size`` different sentence pairs of at most MAX_WORDS words, the same for the same seed."""
    rng = random.Random(seed)
    pairs: dict[tuple[str, ...], Pair] = {}
    while len(pairs) < size:
        pair = sentence_pair(rng)
        if max(len(pair.english), len(pair.german)) <= MAX_WORDS:
            pairs.setdefault(pair.english, pair)
    return list(pairs.values())


@dataclass(frozen=True)
class Splits:
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]


def splits(size: int = 20_000, valid: int = 2_000, test: int = 2_000, seed: int = 0) -> Splits:
    """The corpus cut into training, validation and test sentences; no sentence is in two splits."""
    pairs = corpus(size, seed)
    return Splits(train=pairs[valid + test :], valid=pairs[:valid], test=pairs[valid : valid + test])


class Vocabulary:
    """Words ↔ ids. Ids 0-3 are <pad>, <bos>, <eos> and <unk> (PAD, BOS, EOS, UNK); the rest are the words
    of the sentences it was built from, in order of first appearance."""

    def __init__(self, sentences: Sequence[Sequence[str]]):
        self.words = list(SPECIAL_TOKENS)
        self.words += sorted({word for sentence in sentences for word in sentence}, key=self._first_seen(sentences))
        self.ids = {word: index for index, word in enumerate(self.words)}

    @staticmethod
    def _first_seen(sentences: Sequence[Sequence[str]]):
        order: dict[str, int] = {}
        for sentence in sentences:
            for word in sentence:
                order.setdefault(word, len(order))
        return order.__getitem__

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, words: Sequence[str]) -> list[int]:
        """The ids of the words followed by EOS; words the vocabulary has not seen become UNK."""
        return [self.ids.get(word, UNK) for word in words] + [EOS]

    def decode(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        """The words of ids up to the first EOS, without BOS or padding."""
        words = []
        for index in ids.tolist() if isinstance(ids, torch.Tensor) else ids:
            if index == EOS:
                break
            if index not in (PAD, BOS):
                words.append(self.words[index])
        return words


def padded(sequences: Sequence[Sequence[int]]) -> torch.Tensor:
    """Sequences of ids as one (batch, longest) int64 tensor, padded with PAD."""
    batch = torch.full((len(sequences), max(map(len, sequences))), PAD, dtype=torch.int64)
    for row, sequence in enumerate(sequences):
        batch[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.int64)
    return batch


def encoded(pairs: Sequence[Pair], source: Vocabulary, target: Vocabulary) -> tuple[torch.Tensor, torch.Tensor]:
    """Source ids (batch, n_src) and target ids (batch, n_tgt) of the pairs, each ending in EOS, padded."""
    return padded([source.encode(p.english) for p in pairs]), padded([target.encode(p.german) for p in pairs])


def batches(
    pairs: Sequence[Pair], source: Vocabulary, target: Vocabulary, batch_size: int, seed: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """One pass over the pairs in shuffled batches of sentences of similar length (less padding).

    Shuffles, sorts each stretch of 50 batches by source length, cuts it into batches, and shuffles the
    batches; the same seed gives the same batches. Yields (src, tgt) as from :func:`encoded`.
    """
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    stretch = 50 * batch_size
    groups = []
    for start in range(0, len(order), stretch):
        by_length = sorted(order[start : start + stretch], key=lambda i: len(pairs[i].english))
        groups += [by_length[i : i + batch_size] for i in range(0, len(by_length), batch_size)]
    rng.shuffle(groups)
    for group in groups:
        yield encoded([pairs[i] for i in group], source, target)


def endless_batches(
    pairs: Sequence[Pair], source: Vocabulary, target: Vocabulary, batch_size: int, seed: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Batches as from :func:`batches`, pass after pass (each pass shuffled with its own seed)."""
    for epoch in itertools.count():
        yield from batches(pairs, source, target, batch_size, seed=seed + epoch)
