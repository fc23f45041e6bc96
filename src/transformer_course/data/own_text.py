"""A text of your own to train notebook 10's model on: a UTF-8 file, cut into training and validation text.

The cut is by paragraphs (blocks separated by a blank line), as the manual's is by topics, so that no stretch of
text is in both splits: every tenth paragraph goes to validation, starting with the fifth, which spreads the
validation text over the whole file; a file of fewer than five paragraphs gives its last one to validation. A
file of fewer than two paragraphs cannot be cut so.
"""

from pathlib import Path

from .documentation import SEPARATOR, TextSplits

VALID_EVERY = 10  # one paragraph in VALID_EVERY is validation text
VALID_FIRST = 4  # the first validation paragraph (counting from 0)


def own_text(path: str | Path) -> TextSplits:
    """The training and validation texts of the file at ``path``, cut by paragraphs (see the module's note)."""
    path = Path(path)
    paragraphs = [paragraph.strip("\n") for paragraph in path.read_text(encoding="utf-8").split(SEPARATOR)]
    paragraphs = [paragraph for paragraph in paragraphs if paragraph.strip()]
    if len(paragraphs) < 2:
        raise ValueError(
            f"{path} holds {len(paragraphs)} paragraph(s); training and validation text need at least two, "
            "separated by a blank line"
        )
    chosen = {index for index in range(len(paragraphs)) if index % VALID_EVERY == VALID_FIRST}
    chosen = chosen or {len(paragraphs) - 1}  # fewer than five paragraphs
    return TextSplits(
        train=SEPARATOR.join(p for index, p in enumerate(paragraphs) if index not in chosen),
        valid=SEPARATOR.join(p for index, p in enumerate(paragraphs) if index in chosen),
        train_topics=(path.name,),
        valid_topics=(path.name,),
    )
