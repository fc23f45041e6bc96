"""The course's datasets written out as files a learner can open (``python3.11 course.py data``).

The code of this package makes the data; the files are a copy of what it makes, written on request into the
repository's ``data/`` folder (ignored by git, so that the code stays the one source; data/README.md says what
each file holds). A tab separates the English sentence from its German translation; the words of a sentence are
separated by spaces, as the notebooks split them.
"""

from pathlib import Path

from . import documentation, translation

FOLDER = Path(__file__).resolve().parents[3] / "data"  # the repository's data/


def translation_lines(pairs: list[translation.Pair]) -> str:
    return "".join(f"{' '.join(pair.english)}\t{' '.join(pair.german)}\n" for pair in pairs)


def write_all(folder: Path = FOLDER) -> list[Path]:
    """Write every dataset into ``folder``; the paths written."""
    folder = Path(folder)  # before the data are made: a folder that is no path fails at once
    pairs, manual = translation.splits(), documentation.splits()
    contents = {
        "translation/train.tsv": translation_lines(pairs.train),
        "translation/valid.tsv": translation_lines(pairs.valid),
        "translation/test.tsv": translation_lines(pairs.test),
        "python-manual/train.txt": manual.train,
        "python-manual/valid.txt": manual.valid,
    }
    written = []
    for name, text in contents.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
