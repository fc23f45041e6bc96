"""Measure the training speed of notebook 10's GPT (reference.GPT, made of PyTorch's layers) against Hugging Face's
GPT2LMHeadModel of the same configuration, holding the same weights.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/gpt_throughput.py [--rounds 5] [--steps 30] [--profile]

Both train on the same batches of notebook 10's text, alternating round after round within one process, so that
both see the same machine; the best round of each is reported, and their ratio. Their outputs are compared first:
the same weights must give the same logits. --profile prints where the time of one reference step goes. A
benchmark, not a test: the figure quoted in notebook 10 comes from here.
"""

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.gpt_training import CONFIGURATION
from transformer_course.checks.nb10 import gpt2_twin
from transformer_course.data.bytes_corpus import VOCAB_SIZE, as_bytes, random_windows
from transformer_course.data.documentation import splits
from transformer_course.reference import GPT


def loss_of(model, windows: torch.Tensor) -> torch.Tensor:
    logits = model(windows[:, :-1])  # the model reads all but the last byte; position t is scored on byte t + 1
    logits = logits if isinstance(logits, torch.Tensor) else logits.logits  # Hugging Face returns an output object
    return F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten())


def steps_per_second(model, batches: list[torch.Tensor]) -> float:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98))
    model.train()
    started = time.perf_counter()
    for windows in batches:
        loss = loss_of(model, windows)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return len(batches) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per model")
    parser.add_argument("--steps", type=int, default=30, help="training steps per round")
    parser.add_argument("--profile", action="store_true", help="also profile one training step of each model")
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    sizes = {name: CONFIGURATION[name] for name in ("block_size", "d_model", "num_heads", "num_layers")}
    torch.manual_seed(0)
    ours = GPT(VOCAB_SIZE, **sizes)
    theirs = gpt2_twin(ours)
    data = as_bytes(splits().train)
    generator = torch.Generator().manual_seed(0)
    batches = [random_windows(data, CONFIGURATION["batch_size"], sizes["block_size"], generator) for _ in range(20)]
    batches = (batches * (arguments.steps // len(batches) + 1))[: arguments.steps]
    with torch.no_grad():
        difference = (ours.eval()(batches[0][:, :-1]) - theirs.eval()(batches[0][:, :-1]).logits).abs().max()
    print(f"configuration {CONFIGURATION}; {sum(p.numel() for p in ours.parameters()):,} parameters")
    print(f"largest difference of the logits, same weights: {difference:.2e}")
    speeds = {"reference.GPT": [], "GPT2LMHeadModel": []}
    for round_number in range(1, arguments.rounds + 1):
        for name, model in (("reference.GPT", ours), ("GPT2LMHeadModel", theirs)):
            speeds[name].append(steps_per_second(model, batches))
        print(f"round {round_number}: " + ", ".join(f"{name} {runs[-1]:.2f}" for name, runs in speeds.items()))
    best = {name: max(runs) for name, runs in speeds.items()}
    print(", ".join(f"{name}: {speed:.2f} steps/s" for name, speed in best.items()))
    print(f"ratio reference / Hugging Face: {best['reference.GPT'] / best['GPT2LMHeadModel']:.2f}x")
    if arguments.profile:
        for name, model in (("reference.GPT", ours), ("GPT2LMHeadModel", theirs)):
            with torch.profiler.profile() as profile:
                steps_per_second(model, batches[:3])
            print(f"\n{name}, 3 steps:")
            print(profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()
