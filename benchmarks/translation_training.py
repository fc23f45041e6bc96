"""Measure notebook 08's training on this machine: accuracy against training time, the speed of the course's
model against torch.nn.Transformer with the same configuration and weights, and that a run repeats exactly.

    .venv/bin/python benchmarks/translation_training.py [--seconds 120] [--rounds 5]

The learner's functions are taken from the solution notebook, so this measures what the notebook runs. A
benchmark, not a test: the figures quoted in README.md come from here.
"""

import argparse
import copy
import sys
import time
import warnings
from pathlib import Path

import nbformat
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from autograder.pipeline import SOLUTIONS  # noqa: E402
from autograder.submissions import solution_code  # noqa: E402
from transformer_course import reference  # noqa: E402
from transformer_course.checks.nb06 import load_stack  # noqa: E402
from transformer_course.data.translation import PAD, Vocabulary, endless_batches, splits  # noqa: E402
from transformer_course.evaluation import exact_match, token_accuracy, translate_all  # noqa: E402

ASSIGNMENT = "08_training_and_decoding"
CONFIGURATION = {"d_model": 64, "num_heads": 4, "d_ff": 256, "num_layers": 2}


def notebook_functions() -> dict:
    """The solution notebook's set-up cell, its solutions and its loss of one batch, run as the notebook runs
    them."""
    notebook = nbformat.read(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    code = {cell.id: cell.source for cell in notebook.cells if cell.cell_type == "code"}
    namespace: dict = {}
    for source in (code["imports"], *solution_code(ASSIGNMENT).values(), code["loss-of-batch"]):
        exec(source, namespace)
    return namespace


class PyTorchTransformer(nn.Module):
    """The same model built on nn.Transformer, used the way PyTorch documents it (key padding masks)."""

    def __init__(self, model: reference.Transformer):
        super().__init__()
        self.embeddings = copy.deepcopy(nn.ModuleList([model.src_embedding, model.tgt_embedding]))
        self.output = copy.deepcopy(model.output)
        self.d_model, layers = model.d_model, len(model.encoder.layers)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.transformer = nn.Transformer(
                self.d_model, CONFIGURATION["num_heads"], layers, layers, CONFIGURATION["d_ff"], dropout=0.0,
                batch_first=True,
            )  # fmt: skip
        self.transformer.encoder.norm = self.transformer.decoder.norm = None  # post-LN stacks have no final norm
        load_stack(model.encoder, self.transformer.encoder, reference.encoder_layer_parameters)
        load_stack(model.decoder, self.transformer.decoder, reference.decoder_layer_parameters)

    def embed(self, tokens, table):
        return table(tokens) * self.d_model**0.5 + reference.sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        """Takes the course's masks like reference.Transformer, but builds PyTorch's own from the tokens."""
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        hidden = self.transformer(
            self.embed(src, self.embeddings[0]), self.embed(tgt, self.embeddings[1]), tgt_mask=causal,
            src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt == PAD, memory_key_padding_mask=src == PAD,
            tgt_is_causal=True,
        )  # fmt: skip
        return self.output(hidden)


def accuracy_against_time(learner: dict, data, source, target, seconds: float) -> None:
    torch.manual_seed(0)
    model = reference.Transformer(len(source), len(target), **CONFIGURATION)
    optimizer = torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)
    stream = endless_batches(data.train, source, target, batch_size=64, seed=0)
    english, german = [p.english for p in data.test], [p.german for p in data.test]
    print(f"{'step':>6} {'training s':>11} {'test exact match':>17} {'token accuracy':>15}")
    trained, step = 0.0, 0
    while trained < seconds:
        started = time.perf_counter()
        for _ in range(250):
            step += 1
            for group in optimizer.param_groups:
                group["lr"] = learner["learning_rate"](step, 1e-3, 400)
            model.train()
            loss = learner["loss_of_batch"](model, *next(stream))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        trained += time.perf_counter() - started
        model.eval()
        predictions = translate_all(lambda src: learner["greedy_decode"](model, src, 21), english, source, target)
        print(f"{step:6d} {trained:11.1f} {100 * exact_match(predictions, german):16.1f}% "
              f"{100 * token_accuracy(predictions, german):14.1f}%")  # fmt: skip


def steps_per_second(model, loss_of_batch, batches) -> float:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98))
    started = time.perf_counter()
    for src, tgt in batches:
        loss = loss_of_batch(model, src, tgt)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return len(batches) / (time.perf_counter() - started)


def throughput(learner: dict, data, source, target, rounds: int) -> None:
    torch.manual_seed(0)
    ours = reference.Transformer(len(source), len(target), **CONFIGURATION)
    theirs = PyTorchTransformer(ours)
    stream = endless_batches(data.train, source, target, batch_size=64, seed=1)
    batches = [next(stream) for _ in range(100)]
    src, tgt = batches[0]
    decoder_input = learner["shift_right"](tgt, learner["BOS"])
    masks = (reference.source_mask(src, PAD), reference.target_mask(decoder_input, PAD))
    with torch.no_grad():
        same = torch.allclose(ours(src, decoder_input, *masks), theirs(src, decoder_input, *masks), atol=1e-5)
    print(f"same logits from both models before training: {same}")
    speeds = {"course model (reference.Transformer)": [], "torch.nn.Transformer": []}
    for _ in range(rounds):  # alternating, so that both see the same machine load
        for runs, model in zip(speeds.values(), (ours, theirs), strict=True):
            runs.append(steps_per_second(model, learner["loss_of_batch"], batches))
    for name, runs in speeds.items():
        print(f"{name:38s} {max(runs):5.1f} steps/s (best of {rounds} rounds of 100 steps)")
    ratio = max(speeds["course model (reference.Transformer)"]) / max(speeds["torch.nn.Transformer"])
    print(f"ratio course / nn.Transformer: {ratio:.2f}")


def repeatability(learner: dict, data, source, target) -> None:
    def losses() -> list[float]:
        torch.manual_seed(0)
        model = reference.Transformer(len(source), len(target), **CONFIGURATION)
        stream = endless_batches(data.train, source, target, batch_size=64, seed=0)
        schedule = lambda step: learner["learning_rate"](step, 1e-3, 400)  # noqa: E731
        history = learner["train"](model, stream, learner["loss_of_batch"], schedule, steps=100)
        return history.losses

    print(f"two runs of 100 steps give the same loss curve: {losses() == losses()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120, help="training time to measure accuracy over")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of the speed comparison")
    arguments = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    learner = notebook_functions()
    data = splits()
    source, target = Vocabulary([p.english for p in data.train]), Vocabulary([p.german for p in data.train])
    throughput(learner, data, source, target, arguments.rounds)
    repeatability(learner, data, source, target)
    accuracy_against_time(learner, data, source, target, arguments.seconds)


if __name__ == "__main__":
    main()
