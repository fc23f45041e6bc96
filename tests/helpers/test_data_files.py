"""data/: the files `course.py data` writes are what the notebooks read, and a text of one's own is cut into
training and validation paragraphs that notebook 10's pipeline takes."""

import pytest

from transformer_course.data import documentation, translation
from transformer_course.data.bytes_corpus import as_bytes, endless_windows
from transformer_course.data.files import write_all
from transformer_course.data.own_text import own_text


def test_the_written_files_hold_what_the_notebooks_read(tmp_path):
    written = {path.relative_to(tmp_path).as_posix(): path for path in write_all(tmp_path)}
    pairs, manual = translation.splits(), documentation.splits()
    for split in ("train", "valid", "test"):
        lines = written[f"translation/{split}.tsv"].read_text(encoding="utf-8").splitlines()
        read_back = [tuple(tuple(side.split(" ")) for side in line.split("\t")) for line in lines]
        assert read_back == [(pair.english, pair.german) for pair in getattr(pairs, split)]
    assert written["python-manual/train.txt"].read_text(encoding="utf-8") == manual.train
    assert written["python-manual/valid.txt"].read_text(encoding="utf-8") == manual.valid


def test_the_repository_ignores_the_data_files_but_not_their_readme():
    from transformer_course.data.files import FOLDER

    assert (FOLDER / "README.md").is_file()
    ignored = (FOLDER.parent / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "/data/*" in ignored and "!/data/README.md" in ignored


def paragraphs(count: int) -> str:
    return "\n\n".join(f"Paragraph {number}: ünïcode, € and words." for number in range(count))


@pytest.mark.parametrize("count", [2, 4, 5, 25])
def test_own_text_is_cut_by_paragraphs_into_training_and_validation(tmp_path, count):
    path = tmp_path / "my_text.txt"
    path.write_text(paragraphs(count), encoding="utf-8")
    text = own_text(path)
    train, valid = text.train.split("\n\n"), text.valid.split("\n\n")
    assert sorted(train + valid) == sorted(paragraphs(count).split("\n\n"))  # every paragraph, once
    chosen = range(4, count, 10) if count > 4 else [count - 1]  # every tenth from the fifth, or the last
    assert valid == [f"Paragraph {number}: ünïcode, € and words." for number in chosen]


def test_own_text_feeds_notebook_10s_windows(tmp_path):
    path = tmp_path / "my_text.txt"
    path.write_text(paragraphs(25), encoding="utf-8")
    text = own_text(path)
    (windows,) = next(endless_windows(as_bytes(text.train), batch_size=4, block_size=16, seed=0))
    assert tuple(windows.shape) == (4, 17)


def test_a_text_of_one_paragraph_is_refused_with_a_reason(tmp_path):
    path = tmp_path / "my_text.txt"
    path.write_text("One paragraph only.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="at least two"):
        own_text(path)
