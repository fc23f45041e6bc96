"""Real English, written by people, that every Python installation already has: the reference manual's topics.

CPython ships them as ``pydoc_data.topics`` so that ``help("if")`` works offline: 79 topics, about 465,000
characters of prose about the language, with some grammar rules and code examples. Nothing is downloaded. The
standard library's source is also on every machine, but it is mostly code; these topics are mostly sentences.

The text is whatever the running Python carries, so figures measured on it can move a little between patch
releases of 3.11 (the course's were measured on 3.11.7).

The validation split is made of whole topics, chosen by a checksum of their names, so that the choice does not
depend on the order or the number of the other topics. The manual repeats itself: "typesseq" holds all of
"typesseq-mutable", for example. So a validation paragraph that also occurs in the training text is left out of
validation (about 6,000 of its 50,000 characters), and no paragraph is in both splits.
"""

import zlib
from dataclasses import dataclass
from pydoc_data.topics import topics as _TOPICS

# Topics whose name's CRC-32 is divisible by 11 go to validation: 6 topics, about 11% of the text on 3.11.7.
_VALIDATION_MODULUS = 11
# Between two topics, so that no topic's last line runs into the next one's title.
SEPARATOR = "\n\n"


@dataclass(frozen=True)
class TextSplits:
    train: str
    valid: str
    train_topics: tuple[str, ...]
    valid_topics: tuple[str, ...]


def is_validation_topic(name: str) -> bool:
    return zlib.crc32(name.encode("utf-8")) % _VALIDATION_MODULUS == 0


def topic_texts() -> dict[str, str]:
    """Every topic's text by name, in alphabetical order of the names."""
    return {name: _TOPICS[name] for name in sorted(_TOPICS)}


def splits() -> TextSplits:
    """The training and validation texts: topics joined by SEPARATOR in alphabetical order, without the
    validation paragraphs that the training text holds too."""
    texts = topic_texts()
    valid_topics = tuple(name for name in texts if is_validation_topic(name))
    train_topics = tuple(name for name in texts if not is_validation_topic(name))
    train = SEPARATOR.join(texts[name] for name in train_topics)
    seen_in_training = set(train.split(SEPARATOR))
    valid_paragraphs = SEPARATOR.join(texts[name] for name in valid_topics).split(SEPARATOR)
    return TextSplits(
        train=train,
        valid=SEPARATOR.join(paragraph for paragraph in valid_paragraphs if paragraph not in seen_in_training),
        train_topics=train_topics,
        valid_topics=valid_topics,
    )
