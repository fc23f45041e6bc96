"""Notebook 10's data: a text as UTF-8 bytes, random training windows and validation windows side by side."""

import pytest
import torch

from transformer_course.data.bytes_corpus import (
    VOCAB_SIZE,
    as_bytes,
    as_text,
    consecutive_windows,
    endless_windows,
    random_windows,
)

TEXT = "Byte-level: é, €, 🙂 and 漢字 take 2, 3, 4 and 3 bytes each. " * 20


def test_bytes_are_the_utf8_encoding_and_decode_back():
    ids = as_bytes(TEXT)
    assert ids.dtype == torch.int64 and ids.dim() == 1
    assert ids.tolist() == list(TEXT.encode("utf-8"))
    assert 0 <= ids.min() and ids.max() < VOCAB_SIZE == 256
    assert as_text(ids) == TEXT
    assert as_text(ids.tolist()) == TEXT


def test_a_character_cut_in_its_middle_shows_as_the_replacement_character():
    euro = as_bytes("€")  # 3 bytes
    assert as_text(euro[:2]) == "\ufffd"


@pytest.mark.parametrize(("batch_size", "block_size"), [(4, 8), (1, 1), (32, 64)])
def test_random_windows_have_the_shape_and_type_of_a_batch(batch_size, block_size):
    data = as_bytes(TEXT)
    windows = random_windows(data, batch_size, block_size, torch.Generator().manual_seed(0))
    assert windows.shape == (batch_size, block_size + 1)
    assert windows.dtype == torch.int64
    assert 0 <= windows.min() and windows.max() < VOCAB_SIZE


def test_every_random_window_is_a_run_of_consecutive_bytes_of_the_text():
    data = torch.arange(100)  # each id is its own position: a window of the text is a run of consecutive ids
    windows = random_windows(data, 50, 9, torch.Generator().manual_seed(1))
    assert (windows.diff(dim=1) == 1).all()
    assert windows.min() >= 0 and windows.max() <= 99


def test_random_windows_reach_both_ends_of_the_text():
    data = torch.arange(12)
    windows = random_windows(data, 500, 4, torch.Generator().manual_seed(2))
    assert set(windows[:, 0].tolist()) == set(range(12 - 4))  # every start from 0 to len - (block_size + 1)


def test_the_same_seed_gives_the_same_windows_and_another_seed_others():
    data = as_bytes(TEXT)
    first, again, other = (endless_windows(data, 8, 16, seed=seed) for seed in (0, 0, 1))
    for _ in range(3):
        (a,), (b,), (c,) = next(first), next(again), next(other)
        assert torch.equal(a, b)
        assert not torch.equal(a, c)


def test_endless_windows_leave_the_global_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    next(endless_windows(as_bytes(TEXT), 4, 8, seed=0))
    assert torch.equal(torch.rand(3), expected)


def test_a_text_shorter_than_a_window_is_refused():
    with pytest.raises(ValueError, match="a window needs block_size \\+ 1 = 9"):
        random_windows(torch.arange(8), 2, 8, torch.Generator())
    assert torch.equal(random_windows(torch.arange(9), 2, 8, torch.Generator()), torch.arange(9).expand(2, 9))


@pytest.mark.parametrize("length", [27, 30, 35])
def test_consecutive_windows_cover_the_text_side_by_side_without_overlap(length):
    data = torch.arange(length)
    windows = consecutive_windows(data, block_size=8)  # windows of 9
    assert windows.shape == (length // 9, 9) and windows.dtype == torch.int64
    assert torch.equal(windows.flatten(), data[: windows.numel()])  # in order, no id twice, none skipped
    assert length - windows.numel() < 9  # only an incomplete last window is left out


def test_consecutive_windows_make_each_id_after_a_windows_first_a_target_once():
    data = torch.arange(40)
    targets = consecutive_windows(data, block_size=4)[:, 1:].flatten()  # (windows * 4,)
    assert len(set(targets.tolist())) == len(targets) == 8 * 4
