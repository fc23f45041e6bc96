"""Calibrate notebook 10's training: the validation loss of the byte-level GPT after a number of steps, against
the unigram and bigram baselines measured on the same validation targets, and the training speed.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/gpt_training.py [--steps 800] [--seed 0] [--d-model 128] ...

It trains reference.GPT, which computes what the notebook's solution computes (the checks compare both with
GPT-2), with notebook 10's batches, loss, schedule and training loop, on one thread. A benchmark, not a test: the
configuration and the figures quoted in notebook 10 come from here.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from transformer_course.data.bytes_corpus import VOCAB_SIZE, as_bytes, consecutive_windows, endless_windows
from transformer_course.data.documentation import splits
from transformer_course.reference import GPT
from transformer_course.training import train

# The notebook's configuration: model sizes, batch, schedule and number of steps.
CONFIGURATION = {
    "block_size": 64,
    "d_model": 96,
    "num_heads": 4,
    "num_layers": 3,
    "batch_size": 32,
    "peak": 2e-3,
    "warmup_steps": 100,
    "steps": 800,
}


def learning_rate(step: int, peak: float, warmup_steps: int, steps: int) -> float:
    """Linear warm-up, then a cosine decay to a tenth of the peak at the last step (the notebook's schedule)."""
    if step <= warmup_steps:
        return peak * step / warmup_steps
    progress = (step - warmup_steps) / max(1, steps - warmup_steps)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def baselines(train_ids: torch.Tensor, windows: torch.Tensor) -> dict[str, float]:
    """Cross-entropy (nats per byte) of the unigram and bigram models counted on the training bytes, with add-one
    smoothing, on the same targets as the model: every byte of a validation window after its first."""
    unigram_counts = torch.bincount(train_ids, minlength=VOCAB_SIZE).double() + 1  # (256,)
    pairs = train_ids[:-1] * VOCAB_SIZE + train_ids[1:]
    bigram_counts = torch.bincount(pairs, minlength=VOCAB_SIZE**2).view(VOCAB_SIZE, VOCAB_SIZE).double() + 1
    previous, target = windows[:, :-1].flatten(), windows[:, 1:].flatten()
    unigram = -(unigram_counts / unigram_counts.sum()).log()[target].mean()
    bigram = -(bigram_counts / bigram_counts.sum(dim=1, keepdim=True)).log()[previous, target].mean()
    return {"unigram": unigram.item(), "bigram": bigram.item()}


def loss_of_batch(model, windows: torch.Tensor) -> torch.Tensor:
    """The notebook's loss: the model reads all but the last byte of a window of block_size + 1, and its output at
    position t is scored against byte t + 1, so that every position is trained."""
    logits = model(windows[:, :-1])  # (batch, block_size, vocab)
    return F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten())


def validation_loss(model, windows: torch.Tensor, batch_size: int = 64) -> float:
    total = 0.0
    for start in range(0, len(windows), batch_size):
        batch = windows[start : start + batch_size]
        total += loss_of_batch(model, batch).item() * len(batch)
    return total / len(windows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, value in CONFIGURATION.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=250, help="steps between validation losses")
    arguments = vars(parser.parse_args())
    torch.set_num_threads(1)
    text = splits()
    train_ids, valid_ids = as_bytes(text.train), as_bytes(text.valid)
    windows = consecutive_windows(valid_ids, arguments["block_size"])
    base = baselines(train_ids, windows)
    print(f"{len(train_ids):,} training and {len(valid_ids):,} validation bytes; {len(windows)} validation windows")
    print(", ".join(f"{name} {loss:.3f} nats/byte ({loss / math.log(2):.3f} bits)" for name, loss in base.items()))
    torch.manual_seed(arguments["seed"])
    sizes = {name: arguments[name] for name in ("block_size", "d_model", "num_heads", "num_layers")}
    model = GPT(VOCAB_SIZE, **sizes)
    print(f"{arguments}: {sum(p.numel() for p in model.parameters()):,} parameters")
    started = time.perf_counter()
    history = train(
        model,
        endless_windows(train_ids, arguments["batch_size"], arguments["block_size"], seed=arguments["seed"]),
        loss_of_batch,
        lambda step: learning_rate(step, arguments["peak"], arguments["warmup_steps"], arguments["steps"]),
        steps=arguments["steps"],
        evaluate=lambda model: -validation_loss(model, windows),
        every=arguments["every"],
    )
    wall = time.perf_counter() - started
    print(f"{history.steps_per_second:.2f} steps/s, {history.training_seconds:.0f} s training, {wall:.0f} s in all")
    for step, score in history.scores.items():
        loss = -score
        print(
            f"step {step}: validation {loss:.3f} nats/byte ({loss / math.log(2):.3f} bits), "
            f"{100 * (1 - loss / base['bigram']):.1f}% below the bigram"
        )


if __name__ == "__main__":
    main()
