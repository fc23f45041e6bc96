"""A text as a language model reads it in notebook 10: its UTF-8 bytes, cut into windows of block_size + 1 bytes.

A window of n + 1 bytes trains n predictions at once: the model reads its first n bytes, and every byte but the
first is a target, the one after the position that predicts it. So every one of the model's block_size positions is
trained. Training draws windows at random places, from a seeded generator, so that a run repeats exactly;
validation reads the text once, in windows side by side.
"""

from collections.abc import Iterator

import torch

VOCAB_SIZE = 256  # one token per byte value


def as_bytes(text: str) -> torch.Tensor:
    """The text's UTF-8 bytes as a 1-D int64 tensor of ids 0 to 255."""
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.int64)


def as_text(ids) -> str:
    """Bytes back to text; a character cut in the middle of its bytes shows as the replacement character."""
    values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
    return bytes(values).decode("utf-8", errors="replace")


def random_windows(data: torch.Tensor, batch_size: int, block_size: int, generator: torch.Generator) -> torch.Tensor:
    """batch_size windows of block_size + 1 consecutive ids, starting at random places: (batch, block_size + 1)."""
    if len(data) < block_size + 1:
        raise ValueError(f"the text has {len(data)} ids; a window needs block_size + 1 = {block_size + 1}")
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)  # (batch,)
    offsets = torch.arange(block_size + 1)  # (block_size + 1,)
    return data[starts[:, None] + offsets]  # (batch, block_size + 1)


def endless_windows(data: torch.Tensor, batch_size: int, block_size: int, seed: int) -> Iterator[tuple[torch.Tensor]]:
    """Random batches of windows for ever, as one-element tuples (what ``training.train`` passes on to the loss)."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield (random_windows(data, batch_size, block_size, generator),)


def consecutive_windows(data: torch.Tensor, block_size: int) -> torch.Tensor:
    """The text in windows of block_size + 1 ids side by side, (windows, block_size + 1): no id is in two windows,
    and each id after the first of its window is a target once; the last, incomplete window is left out."""
    count = len(data) // (block_size + 1)
    return data[: count * (block_size + 1)].view(count, block_size + 1)
