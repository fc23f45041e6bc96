"""Measure how many PyTorch threads notebook 08's training should use: its steps per second with 1 thread and with
one per core, on an idle machine and on one where another process keeps a core busy (a browser, a second
notebook, a grading job).

    .venv/bin/python benchmarks/training_threads.py [--rounds 3] [--steps 60]

The thread counts alternate within one process, round after round, so that both see the same machine. The busy
neighbour is a process that spins on one core for as long as it is alive. A benchmark, not a test: the figures
quoted in notebook 08 and benchmarks/RESULTS.md come from here.
"""

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.translation_training import CONFIGURATION, notebook_functions
from transformer_course import reference
from transformer_course.data.translation import Vocabulary, endless_batches, splits


def spin() -> None:
    """A neighbour that keeps one core busy."""
    while True:
        pass


def steps_per_second(model, loss_of_batch, batches, threads: int) -> float:
    torch.set_num_threads(threads)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98))
    started = time.perf_counter()
    for src, tgt in batches:
        loss = loss_of_batch(model, src, tgt)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return len(batches) / (time.perf_counter() - started)


def measure(model, loss_of_batch, batches, thread_counts: list[int], rounds: int) -> dict[int, float]:
    """The best steps per second of each thread count over ``rounds`` alternating rounds."""
    speeds = {threads: [] for threads in thread_counts}
    for _ in range(rounds):
        for threads in thread_counts:
            speeds[threads].append(steps_per_second(model, loss_of_batch, batches, threads))
    return {threads: max(runs) for threads, runs in speeds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per thread count")
    parser.add_argument("--steps", type=int, default=60, help="training steps per round")
    arguments = parser.parse_args()
    cores = os.cpu_count() or 1
    thread_counts = sorted({1, cores})
    print(f"torch {torch.__version__}, {cores} cores; steps/s of notebook 08's model (batch 64), best of "
          f"{arguments.rounds} rounds of {arguments.steps} steps")  # fmt: skip
    learner = notebook_functions()
    data = splits()
    source, target = Vocabulary([p.english for p in data.train]), Vocabulary([p.german for p in data.train])
    torch.manual_seed(0)
    model = reference.Transformer(len(source), len(target), **CONFIGURATION)
    stream = endless_batches(data.train, source, target, batch_size=64, seed=1)
    batches = [next(stream) for _ in range(arguments.steps)]
    idle = measure(model, learner["loss_of_batch"], batches, thread_counts, arguments.rounds)
    neighbour = multiprocessing.get_context("spawn").Process(target=spin, daemon=True)
    neighbour.start()
    try:
        busy = measure(model, learner["loss_of_batch"], batches, thread_counts, arguments.rounds)
    finally:
        neighbour.terminate()
    print(f"{'threads':>8} {'idle':>10} {'one core busy':>14}")
    for threads in thread_counts:
        print(f"{threads:8d} {idle[threads]:10.1f} {busy[threads]:14.1f}")


if __name__ == "__main__":
    main()
